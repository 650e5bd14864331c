//! Bytes and documents per reading: day buckets vs one document per reading, with
//! short and long field names. Prints the table BENCHMARKS.md records.
//!
//! Every figure is a real BSON size: the documents are written to the server, read
//! back as raw BSON and their bytes summed (indexes not included). The ratios do not
//! depend on the server's speed.
//!
//! Run: `cargo run -p docshape-examples --example bench_bucket`
//! (`MONGODB_URI` to use a real mongod; otherwise the local SecantusDB).

use docshape::bson;
use docshape::bson::{doc, oid::ObjectId, DateTime, RawDocumentBuf};
use docshape::bucket::Bucket;
use docshape::{Embedded, Model};
use docshape_examples::fresh_database;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Short {
    t: DateTime,
    v: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Long {
    timestamp: DateTime,
    temperature_celsius: f64,
}

#[derive(Debug, Serialize, Deserialize, Model)]
#[model(collection = "bucket_short")]
#[bucket(series = sensor_id, period = day, per = "day", max = 1440, items = readings, time = t)]
struct BucketShort {
    #[serde(rename = "_id")]
    id: String,
    #[validate(max_length = 64)]
    sensor_id: String,
    day: String,
    count: i32,
    readings: Vec<Short>,
}

#[derive(Debug, Serialize, Deserialize, Model)]
#[model(collection = "bucket_long")]
#[bucket(series = sensor_id, period = day, per = "day", max = 1440, items = readings, time = timestamp)]
struct BucketLong {
    #[serde(rename = "_id")]
    id: String,
    #[validate(max_length = 64)]
    sensor_id: String,
    day: String,
    count: i32,
    readings: Vec<Long>,
}

/// 2026-08-05T00:00:00Z.
const T0: i64 = 1_785_888_000_000;
const DAYS: i64 = 7;
/// A reading a minute.
const READINGS: i64 = DAYS * 1440;
const SENSOR: &str = "sensor_9";

fn t(i: i64) -> DateTime {
    DateTime::from_millis(T0 + i * 60_000)
}

fn v(i: i64) -> f64 {
    20.0 + (i % 97) as f64 / 10.0
}

/// (documents, bytes) of a collection, read back as raw BSON.
async fn measure(db: &mongodb::Database, name: &str) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let docs: Vec<RawDocumentBuf> =
        db.collection::<RawDocumentBuf>(name).find(doc! {}).await?.try_collect().await?;
    Ok((docs.len() as u64, docs.iter().map(|d| d.as_bytes().len() as u64).sum()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_bench_bucket").await?;
    docshape::sync::<BucketShort>(&db).await?;
    docshape::sync::<BucketLong>(&db).await?;

    let short: Vec<Short> = (0..READINGS).map(|i| Short { t: t(i), v: v(i) }).collect();
    let long: Vec<Long> =
        (0..READINGS).map(|i| Long { timestamp: t(i), temperature_celsius: v(i) }).collect();
    let a = BucketShort::append_many(&db, SENSOR, &short).await?;
    let b = BucketLong::append_many(&db, SENSOR, &long).await?;

    // One document per reading: `{_id: ObjectId, sensor_id, t, v}`.
    let per_short: Vec<bson::Document> = (0..READINGS)
        .map(|i| doc! { "_id": ObjectId::new(), "sensor_id": SENSOR, "t": t(i), "v": v(i) })
        .collect();
    let per_long: Vec<bson::Document> = (0..READINGS)
        .map(|i| doc! { "_id": ObjectId::new(), "sensor_id": SENSOR, "timestamp": t(i), "temperature_celsius": v(i) })
        .collect();
    for chunk in per_short.chunks(2000) {
        db.collection::<bson::Document>("per_reading_short").insert_many(chunk).await?;
    }
    for chunk in per_long.chunks(2000) {
        db.collection::<bson::Document>("per_reading_long").insert_many(chunk).await?;
    }

    println!("{READINGS} readings of one sensor, one a minute for {DAYS} days (8-character sensor id).");
    println!();
    println!("| layout | field names | documents | documents per reading | total bytes | bytes per reading | vs bucketed, short names |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    let rows = [
        ("day buckets (`max = 1440`)", "`t`, `v`", "bucket_short"),
        ("day buckets (`max = 1440`)", "`timestamp`, `temperature_celsius`", "bucket_long"),
        ("one document per reading", "`t`, `v`", "per_reading_short"),
        ("one document per reading", "`timestamp`, `temperature_celsius`", "per_reading_long"),
    ];
    let mut base = None;
    for (layout, names, coll) in rows {
        let (docs, bytes) = measure(&db, coll).await?;
        let per = bytes as f64 / READINGS as f64;
        let base = *base.get_or_insert(per);
        println!(
            "| {layout} | {names} | {docs} | {:.5} | {bytes} | {per:.2} | {:.2}x |",
            docs as f64 / READINGS as f64,
            per / base
        );
    }
    println!();
    println!(
        "Writes: the batched bucket appends took {} and {} update commands for {READINGS} readings ({} per bucket).",
        a.updates,
        b.updates,
        if a.updates as i64 == DAYS { "one" } else { "not one" }
    );
    println!(
        "Compile-time bound of a full bucket: {} bytes (short names), {} bytes (long names).",
        BucketShort::MAX_BUCKET_BYTES,
        BucketLong::MAX_BUCKET_BYTES
    );
    let (_, full) = measure(&db, "bucket_short").await?;
    println!("Real full bucket, short names: {} bytes on average.", full / DAYS as u64);
    Ok(())
}
