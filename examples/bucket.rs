//! The bucket pattern, patterns-en's form: one document per sensor per day,
//! `_id: "sensor_9:2026-08-05"`, instead of one ever-growing `readings` array.
//!
//! Each reading is appended with one `update` (an upsert guarded by `count`), a day's
//! bucket never holds more than `max` readings (a further bucket of the same day takes
//! the rest), per-bucket aggregates are kept by the same update, and a range read
//! touches only the buckets of the days it overlaps. The compiler has already checked
//! that a full bucket fits in 16 MB.
//!
//! The models, `Reading` and `SensorDay`, are in this crate's `lib.rs` (module
//! `bucket`), shared with the tests and benchmarks.
//!
//! Run: `cargo run --example bucket`

use docshape::bson;
use docshape::bson::{doc, DateTime};
use docshape::bucket::Bucket;
use docshape::size::MaxBsonSize;
use docshape_examples::bucket::{Reading, SensorDay};
use docshape_examples::fresh_database;

/// 2026-08-05T00:00:00Z.
const DAY_START: i64 = 1_785_888_000_000;

fn reading(minute: i64) -> Reading {
    // A daily cycle around 20 degrees.
    let v = 20.0 + ((minute % 1440) as f64 / 1440.0 * std::f64::consts::TAU).sin() * 3.0;
    Reading { t: DateTime::from_millis(DAY_START + minute * 60_000), v: (v * 10.0).round() / 10.0 }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_sensors").await?;
    let report = docshape::sync::<SensorDay>(&db).await?;
    println!("{report}");
    println!(
        "a reading is at most {} bytes; a full bucket at most {} bytes (checked against 16 MB at compile time)",
        Reading::MAX_BSON_SIZE.unwrap_or_default(),
        SensorDay::MAX_BUCKET_BYTES
    );

    println!("== one reading at a time: one update each");
    for minute in 0..5 {
        let appended = SensorDay::append(&db, "sensor_9", &reading(minute)).await?;
        println!("minute {minute}: {} update(s), {} bucket(s) created", appended.updates, appended.created);
    }

    println!("== the rest of two days and a bit, in one batch");
    let batch: Vec<Reading> = (5..2 * 1440 + 30).map(reading).collect();
    let appended = SensorDay::append_many(&db, "sensor_9", &batch).await?;
    println!(
        "{} readings: {} updates, {} buckets created",
        appended.items, appended.updates, appended.created
    );

    println!("== a late reading for a full day goes to a further bucket of that day");
    let late = Reading { t: DateTime::from_millis(DAY_START + 1000), v: 99.9 };
    let appended = SensorDay::append(&db, "sensor_9", &late).await?;
    println!("{} updates and {} find (the full bucket's count)", appended.updates, appended.finds);

    println!("== the buckets");
    let buckets = SensorDay::buckets_in(
        &db,
        "sensor_9",
        DateTime::from_millis(DAY_START),
        DateTime::from_millis(DAY_START + 3 * 86_400_000),
    )
    .await?;
    for b in &buckets {
        println!(
            "{:<24} day {} count {:>4}  min {:>5.1}  max {:>5.1}  mean {:>5.2}",
            b.id,
            b.day,
            b.count,
            b.min_v,
            b.max_v,
            b.sum_v / f64::from(b.count)
        );
        assert_eq!(b.count as usize, b.readings.len());
    }

    println!("== readings from 23:58 on day one to 00:02 on day two, in time order");
    let from = DateTime::from_millis(DAY_START + (1440 - 2) * 60_000);
    let to = DateTime::from_millis(DAY_START + (1440 + 2) * 60_000);
    for r in SensorDay::read_range(&db, "sensor_9", from, to).await? {
        println!("{}  {:.1}", r.t.try_to_rfc3339_string()?, r.v);
    }
    let stored = db.collection::<bson::Document>("sensor_days").count_documents(doc! {}).await?;
    println!("{} readings in {stored} documents", 2 * 1440 + 30 + 1);
    Ok(())
}
