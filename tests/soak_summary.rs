//! A soak of the summaries' async path: docshape writers add items to 50 orders of 5
//! sellers every 100 ms for 60 s while two workers of the refresh queue
//! (`denormalized::Worker`, the one worker of copies and summaries) run, and the
//! oldest pending summary job's age is sampled every second.
//!
//! A binary of its own, like `soak`: cargo runs the tests of one binary side by side,
//! and beside the copies' soak on two cores each soak measured the other's load (the
//! copies' 10 s bound was missed by 0.1 s while this one ran).

// clippy's `duplicated_attributes` reads the same key in two `#[access]` rows as a
// repeated attribute.
#![allow(clippy::duplicated_attributes)]

use std::time::{Duration, Instant};

use docshape::Model;
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};
use tokio::time::MissedTickBehavior;

/// The source of the summaries' soak.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "soak_orders")]
#[access(name = "add_item", filter(_id), update(push(items)))]
#[access(name = "set_items", filter(_id), update(set(items)))]
struct SoakOrder {
    #[serde(rename = "_id")]
    id: String,
    #[embed(max = 100, reason = "the soak trims carts before they fill")]
    items: Vec<SoakItem>,
}

#[derive(Debug, Clone, Serialize, Deserialize, docshape::Embedded)]
struct SoakItem {
    seller_id: String,
    qty: i64,
}

/// Totals by seller, at most 10 s stale.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "soak_seller_units")]
#[summary(of = SoakOrder, group(items.seller_id), refresh = "async", max_stale = "10s")]
struct SoakSellerUnits {
    #[serde(rename = "_id")]
    seller_id: String,
    #[summary(count)]
    orders: i64,
    #[summary(sum = "items.qty")]
    units: i64,
}

/// Docshape writers add items to 50 orders of 5 sellers
/// every 100 ms for 60 s while two refresh-queue workers run; every second the oldest
/// pending summary job's age is sampled (a summary is stale by at most that). It fails
/// when a sample exceeds `max_stale`, or when the drained summary drifts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_summary_stays_within_max_stale() {
    const MAX_STALE: Duration = Duration::from_secs(10);
    let db = testkit::database("soak_summary").await.unwrap();
    for i in 0..50 {
        let order = SoakOrder { id: format!("o{i}"), items: Vec::new() };
        docshape::relation::insert_one(&db, &mut order.clone()).await.unwrap();
    }
    let spec = docshape::summary::summary("soak_seller_units").unwrap();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let workers: Vec<_> = (0..2)
        .map(|i| {
            let (db, mut stop) = ((*db).clone(), stop_rx.clone());
            tokio::spawn(async move {
                let worker = docshape::denormalized::Worker::new(&db).id(format!("soak-{i}"));
                tokio::select! {
                    run = worker.run(Duration::from_millis(50)) => run,
                    _ = stop.wait_for(|s| *s) => Ok(()),
                }
            })
        })
        .collect();
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let (mut n, mut worst, mut samples, mut last_sample) =
        (0_u64, Duration::ZERO, Vec::new(), Instant::now());
    while started.elapsed() < Duration::from_secs(60) {
        tick.tick().await;
        let id = format!("o{}", n % 50);
        let item = SoakItem { seller_id: format!("s{}", n % 5), qty: 1 + (n % 3) as i64 };
        if n % 40 == 39 {
            SoakOrder::set_items(&id, Vec::<SoakItem>::new()).run(&db).await.unwrap();
        } else {
            SoakOrder::add_item(&id, item).run(&db).await.unwrap();
        }
        n += 1;
        if last_sample.elapsed() >= Duration::from_secs(1) {
            last_sample = Instant::now();
            let lag = docshape::denormalized::lag(&db).await.unwrap();
            let oldest = lag.by_summary.get("soak_seller_units").and_then(|l| l.oldest_enqueued_at);
            let age = oldest.map_or(Duration::ZERO, |enqueued| {
                let now = docshape::bson::DateTime::now().timestamp_millis();
                Duration::from_millis(u64::try_from(now - enqueued.timestamp_millis()).unwrap_or(0))
            });
            worst = worst.max(age);
            samples.push(age);
        }
    }
    stop_tx.send(true).unwrap();
    for w in workers {
        w.await.unwrap().unwrap();
    }
    // Stopped mid-job, a worker leaves its jobs leased: resumed under its id.
    for i in 0..2 {
        docshape::denormalized::Worker::new(&db).id(format!("soak-{i}")).run_until_empty().await.unwrap();
    }
    assert_eq!(docshape::denormalized::lag(&db).await.unwrap().pending, 0);
    samples.sort();
    let p99 = samples[samples.len() * 99 / 100];
    let p50 = samples[samples.len() / 2];
    println!(
        "summary soak: {n} writes, {} samples, oldest pending p50 {p50:?}, p99 {p99:?}, worst {worst:?} (max_stale {MAX_STALE:?})",
        samples.len()
    );
    assert!(worst <= MAX_STALE, "a summary was {worst:?} stale");
    let report = docshape::summary::check(&db, spec).await.unwrap();
    assert!(report.drifted.is_empty(), "{:?}", report.drifted);
}
