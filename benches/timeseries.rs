//! The seed's sensor day both ways: day buckets (`#[bucket]`, `SensorDay`, one
//! `update` per batch of readings) against a time-series collection
//! (`timeseries(...)`, `SensorReading`, one document per reading through
//! `timeseries::insert_many`): same server, same client, same process, rounds
//! interleaved, the order swapped every round.
//!
//! Two figures per side: readings appended per second (a whole day of 1,440 readings
//! for each of `--sensors` sensors, written in batches of `--batch` readings) and
//! bytes per reading, as the server reports them (`collStats`: `size`, the documents'
//! BSON, and `storageSize`, on disk). The ratio time-series / bucket of each is printed.
//!
//! What the local server cannot tell: SecantusDB accepts the time-series options but
//! stores one document per reading, uncompressed and unbucketed, so its bytes per
//! reading for the time-series side are the readings' own BSON, not what mongod stores
//! (mongod groups a series' readings into compressed column buckets, typically several
//! times smaller than one document each), and its append rate is that of plain
//! inserts. Run with `MONGODB_URI` pointing at a mongod for figures that say how the
//! two compare on the real server.
//!
//! `cargo bench -p docshape-benches --bench timeseries` measures 3 rounds of 20
//! sensors (`-- --rounds 5 --sensors 50 --batch 60` to change them). Under `cargo
//! test` it runs one round of 2 sensors, to show that it works.

use std::time::{Duration, Instant};

use docshape::bson::{doc, DateTime, Document};
use docshape_examples::bucket::{Reading, SensorDay};
use docshape_examples::timeseries::SensorReading;
use docshape_testkit as testkit;
use mongodb::Database;

/// 2026-08-05T00:00:00Z.
const DAY_START: i64 = 1_785_888_000_000;
/// A reading a minute.
const PER_DAY: i64 = 1440;

fn value(minute: i64) -> f64 {
    20.0 + ((minute % PER_DAY) as f64 / PER_DAY as f64 * std::f64::consts::TAU).sin() * 3.0
}

/// One side's round: how long the appends took and the bytes the server reports.
struct Round {
    took: Duration,
    readings: u64,
    size: f64,
    storage: f64,
}

async fn stats(db: &Database, collection: &str) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let s = db.run_command(doc! { "collStats": collection }).await?;
    let number = |k: &str| {
        s.get(k).and_then(|v| v.as_f64().or(v.as_i64().map(|n| n as f64)).or(v.as_i32().map(f64::from)))
    };
    Ok((number("size").unwrap_or(0.0), number("storageSize").unwrap_or(0.0)))
}

async fn buckets(db: &Database, sensors: i64, batch: usize) -> Result<Round, Box<dyn std::error::Error>> {
    db.collection::<Document>("sensor_days").drop().await?;
    docshape::sync::<SensorDay>(db).await?;
    let start = Instant::now();
    for s in 0..sensors {
        let sensor = format!("sensor_{s}");
        let day: Vec<Reading> = (0..PER_DAY)
            .map(|m| Reading { t: DateTime::from_millis(DAY_START + m * 60_000), v: value(m) })
            .collect();
        for chunk in day.chunks(batch) {
            SensorDay::append_many(db, &sensor, chunk).await?;
        }
    }
    let took = start.elapsed();
    let (size, storage) = stats(db, "sensor_days").await?;
    Ok(Round { took, readings: (sensors * PER_DAY) as u64, size, storage })
}

async fn timeseries(db: &Database, sensors: i64, batch: usize) -> Result<Round, Box<dyn std::error::Error>> {
    db.collection::<Document>("sensor_readings").drop().await?;
    docshape::sync::<SensorReading>(db).await?;
    let start = Instant::now();
    for s in 0..sensors {
        let sensor = format!("sensor_{s}");
        let day: Vec<SensorReading> = (0..PER_DAY)
            .map(|m| SensorReading {
                sensor_id: sensor.clone(),
                t: DateTime::from_millis(DAY_START + m * 60_000),
                v: value(m),
            })
            .collect();
        for chunk in day.chunks(batch) {
            let inserted = docshape::timeseries::insert_many(db, chunk).await?;
            assert_eq!(inserted.count, chunk.len());
        }
    }
    let took = start.elapsed();
    let (size, storage) = stats(db, "sensor_readings").await?;
    Ok(Round { took, readings: (sensors * PER_DAY) as u64, size, storage })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let measuring = args.iter().any(|a| a == "--bench");
    let given = |name: &str| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse::<i64>().ok())
    };
    let (rounds, sensors) = if measuring { (3, 20) } else { (1, 2) };
    let rounds = given("--rounds").unwrap_or(rounds);
    let sensors = given("--sensors").unwrap_or(sensors);
    let batch = given("--batch").unwrap_or(60).max(1) as usize;
    let server = testkit::server()?;
    let client = server.client().await?;
    let db = client.database("docshape_bench_timeseries");
    db.drop().await?;
    let (mut b, mut t) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            b.push(buckets(&db, sensors, batch).await?);
            t.push(timeseries(&db, sensors, batch).await?);
        } else {
            t.push(timeseries(&db, sensors, batch).await?);
            b.push(buckets(&db, sensors, batch).await?);
        }
    }
    let rate = |r: &Round| r.readings as f64 / r.took.as_secs_f64();
    let per = |r: &Round, bytes: f64| bytes / r.readings as f64;
    let (b_rate, t_rate) = (median(b.iter().map(rate).collect()), median(t.iter().map(rate).collect()));
    let (b_size, t_size) = (
        median(b.iter().map(|r| per(r, r.size)).collect()),
        median(t.iter().map(|r| per(r, r.size)).collect()),
    );
    let (b_disk, t_disk) = (
        median(b.iter().map(|r| per(r, r.storage)).collect()),
        median(t.iter().map(|r| per(r, r.storage)).collect()),
    );
    println!(
        "server: {}",
        if server.is_external() { "MONGODB_URI" } else { "local SecantusDB (not mongod: see the header)" }
    );
    println!("{rounds} round(s), {sensors} sensor(s) x {PER_DAY} readings, batches of {batch}");
    println!("| | day buckets | time-series | time-series / buckets |");
    println!("|---|---:|---:|---:|");
    println!("| readings appended per second | {b_rate:.0} | {t_rate:.0} | {:.2}x |", t_rate / b_rate);
    println!("| BSON bytes per reading (`size`) | {b_size:.1} | {t_size:.1} | {:.2}x |", t_size / b_size);
    println!(
        "| bytes on disk per reading (`storageSize`) | {b_disk:.1} | {t_disk:.1} | {:.2}x |",
        t_disk / b_disk.max(f64::MIN_POSITIVE)
    );
    assert!(b_rate > 0.0 && t_rate > 0.0 && b_size > 0.0 && t_size > 0.0, "every side wrote readings");
    db.drop().await?;
    Ok(())
}
