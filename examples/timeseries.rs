//! The seed's sensor day both ways: as day buckets (`#[bucket]`, `SensorDay`) and as a
//! time-series collection the server buckets itself (`timeseries(...)`,
//! `SensorReading`). The same 1,440 readings go into each, and the same hour comes
//! back from each.
//!
//! Which to choose is in the design-decision table this example prints: a bucket when
//! the application reads a period's readings as one array, keeps aggregates beside
//! them, caps a period, or runs on a server before 5.0; a time-series collection for
//! server-side compression, expiry per reading (`expire_after`) and ad-hoc aggregation
//! over any time range.
//!
//! The models are in this crate's `lib.rs` (modules `bucket` and `timeseries`), shared
//! with the tests and benchmarks.
//!
//! Run: `cargo run -p docshape-examples --example timeseries`

use docshape::bson::{doc, DateTime, Document};
use docshape::Model;
use docshape_examples::bucket::{Reading, SensorDay};
use docshape_examples::fresh_database;
use docshape_examples::timeseries::SensorReading;

/// 2026-08-05T00:00:00Z.
const DAY_START: i64 = 1_785_888_000_000;

fn at(minute: i64) -> DateTime {
    DateTime::from_millis(DAY_START + minute * 60_000)
}

fn value(minute: i64) -> f64 {
    let v = 20.0 + ((minute % 1440) as f64 / 1440.0 * std::f64::consts::TAU).sin() * 3.0;
    (v * 10.0).round() / 10.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_timeseries").await?;

    println!("== a time-series collection: sync creates it with its options");
    let report = docshape::sync::<SensorReading>(&db).await?;
    println!("{report}");
    let listed =
        db.run_command(doc! { "listCollections": 1, "filter": { "name": "sensor_readings" } }).await?;
    let options = listed.get_document("cursor")?.get_array("firstBatch")?[0]
        .as_document()
        .and_then(|e| e.get_document("options").ok())
        .cloned()
        .unwrap_or_default();
    println!("options on the server: {options}");
    assert!(options.contains_key("timeseries"), "created as a time-series collection");
    assert!(docshape::sync::<SensorReading>(&db).await?.is_unchanged(), "a second sync changes nothing");

    println!("== 1,440 readings of sensor_9, one document each, in batches of 60");
    let readings: Vec<SensorReading> =
        (0..1440).map(|m| SensorReading { sensor_id: "sensor_9".into(), t: at(m), v: value(m) }).collect();
    let mut stored = 0;
    for chunk in readings.chunks(60) {
        stored += docshape::timeseries::insert_many(&db, chunk).await?.count;
    }
    println!("{stored} readings stored in {} insert commands", readings.len().div_ceil(60));
    assert_eq!(stored, 1440);

    println!("== one hour back, through the row over the meta field and a time range");
    let hour = SensorReading::readings_of_sensor("sensor_9", at(600)..at(660)).all(&db).await?;
    println!(
        "{} readings from {} to {}",
        hour.len(),
        hour.first().map(|r| r.t.to_string()).unwrap_or_default(),
        hour.last().map(|r| r.t.to_string()).unwrap_or_default()
    );
    assert_eq!(hour.len(), 60);
    assert!(hour.iter().zip(600..).all(|(r, m)| r.t == at(m) && r.v == value(m)));

    println!("== the same day as buckets: one document per sensor per day");
    docshape::sync::<SensorDay>(&db).await?;
    let day: Vec<Reading> = (0..1440).map(|m| Reading { t: at(m), v: value(m) }).collect();
    let appended = SensorDay::append_many(&db, "sensor_9", &day).await?;
    println!("{} readings: {} updates, {} bucket(s)", appended.items, appended.updates, appended.created);
    let from_buckets = SensorDay::read_range(&db, "sensor_9", at(600), at(660)).await?;
    assert_eq!(from_buckets.len(), 60, "the same hour from the buckets");
    assert!(from_buckets.iter().zip(&hour).all(|(b, t)| b.t == t.t && b.v == t.v));
    let buckets = db.collection::<Document>(SensorDay::COLLECTION).count_documents(doc! {}).await?;
    let documents = db.collection::<Document>(SensorReading::COLLECTION).count_documents(doc! {}).await?;
    println!("{buckets} bucket document(s) against {documents} reading documents (which mongod groups into buckets of its own)");

    println!("== why each: the design-decision table");
    let table = docshape::relation::design_decisions(&[
        (SensorDay::COLLECTION, SensorDay::RELATIONS),
        (SensorReading::COLLECTION, SensorReading::RELATIONS),
    ]);
    print!("{table}");
    assert!(table.contains("| sensor_readings | t | timeseries |"), "{table}");
    assert!(table.contains("bucket, not a time-series collection"), "{table}");
    println!("done");
    Ok(())
}
