//! Time-series collections on a real server: `sync` creates the collection with the
//! model's options (TTL included) and changes nothing the second time, refuses a plain
//! collection of the same name, never drops the server's own meta/time index; readings
//! go in through `insert_many` and come back through the row over `meta` and a `time`
//! range; `check` reports drift of the options.

use docshape::bson::{doc, DateTime, Document};
use docshape::check::Drift;
use docshape::sync::{SyncChange, SyncNote};
use docshape::timeseries::TimeSeriesError;
use docshape::{Embedded, Model, SyncOptions};
use docshape_examples::timeseries::SensorReading;
use docshape_testkit as testkit;
use mongodb::Database;
use serde::{Deserialize, Serialize};

/// 2026-08-05T00:00:00Z.
const DAY_START: i64 = 1_785_888_000_000;

fn reading(sensor: &str, minute: i64) -> SensorReading {
    SensorReading {
        sensor_id: sensor.to_owned(),
        t: DateTime::from_millis(DAY_START + minute * 60_000),
        v: 20.0 + minute as f64 / 100.0,
    }
}

async fn entry(db: &Database, name: &str) -> Document {
    let reply = db.run_command(doc! { "listCollections": 1, "filter": { "name": name } }).await.unwrap();
    reply.get_document("cursor").unwrap().get_array("firstBatch").unwrap()[0].as_document().unwrap().clone()
}

async fn index_keys(db: &Database, name: &str) -> Vec<(String, Document)> {
    let reply = db.run_command(doc! { "listIndexes": name }).await.unwrap();
    reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .filter_map(|i| i.as_document())
        .map(|i| (i.get_str("name").unwrap().to_owned(), i.get_document("key").unwrap().clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_creates_the_collection_with_its_options_and_then_changes_nothing() {
    let db = testkit::database("ts_create").await.unwrap();
    let report = docshape::sync::<SensorReading>(&db).await.unwrap();
    assert!(
        matches!(report.changes.first(), Some(SyncChange::CreatedTimeSeries { options }) if options.contains_key("timeseries")),
        "{report}"
    );
    let options = entry(&db, "sensor_readings").await.get_document("options").unwrap().clone();
    let ts = options.get_document("timeseries").unwrap();
    assert_eq!(ts.get_str("timeField").unwrap(), "t");
    assert_eq!(ts.get_str("metaField").unwrap(), "sensor_id");
    assert_eq!(ts.get_str("granularity").unwrap(), "minutes");
    // The TTL option: 30 days, per reading.
    assert_eq!(
        options.get("expireAfterSeconds").and_then(|e| e.as_i64().or(e.as_i32().map(i64::from))),
        Some(2_592_000)
    );
    // No validator: mongod takes no schema validation on a time-series collection.
    assert!(!options.contains_key("validator"), "{options}");
    // The meta/time index the row is served by (mongod 6.3 and newer builds it with the
    // collection; `sync` builds it on a server that does not).
    let keys = index_keys(&db, "sensor_readings").await;
    assert!(keys.iter().any(|(_, k)| k == &doc! { "sensor_id": 1, "t": 1 }), "{keys:?}");

    let again = docshape::sync::<SensorReading>(&db).await.unwrap();
    assert!(again.is_unchanged(), "a second sync changes nothing: {again}");
    assert!(again.notes.is_empty(), "and notes nothing: {again}");
    let check = docshape::check::<SensorReading>(&db).await.unwrap();
    assert!(check.is_clean(), "{check}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readings_go_in_by_insert_many_and_come_back_by_meta_and_time_range() {
    let db = testkit::database("ts_rows").await.unwrap();
    docshape::sync::<SensorReading>(&db).await.unwrap();
    let mut readings: Vec<SensorReading> = (0..1440).map(|m| reading("sensor_9", m)).collect();
    readings.extend((0..100).map(|m| reading("sensor_7", m)));
    let inserted = docshape::timeseries::insert_many(&db, &readings).await.unwrap();
    assert_eq!(inserted.count, 1540);

    let from = DateTime::from_millis(DAY_START + 60 * 60_000);
    let to = DateTime::from_millis(DAY_START + 120 * 60_000);
    let hour = SensorReading::readings_of_sensor("sensor_9", from..to).all(&db).await.unwrap();
    assert_eq!(hour.len(), 60, "one hour of one sensor");
    assert!(hour.iter().all(|r| r.sensor_id == "sensor_9"));
    assert!(hour.windows(2).all(|w| w[0].t < w[1].t), "in time order");
    assert_eq!(hour[0], reading("sensor_9", 60));
    assert_eq!(SensorReading::readings_of_sensor("sensor_7", ..).count(&db).await.unwrap(), 100);
    // A hostile series value stays a value: it matches no reading.
    let hostile = SensorReading::readings_of_sensor("{\"$ne\": \"x\"}", ..).count(&db).await.unwrap();
    assert_eq!(hostile, 0);
    // The row's plan: mongod serves it by the meta/time index (the local server's plan
    // is not mongod's; the declared index is what the compile-time rule checked).
    assert_eq!(SensorReading::ACCESS_PATTERNS[0].index, Some("sensor_id_1_t_1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_many_is_refused_for_a_model_that_is_no_time_series() {
    use docshape_examples::bucket::SensorDay;
    let db = testkit::database("ts_not").await.unwrap();
    let e = docshape::timeseries::insert_many::<SensorDay>(&db, &[]).await.unwrap_err();
    assert!(matches!(e, TimeSeriesError::NotTimeSeries { collection: "sensor_days" }), "{e}");
    assert!(e.to_string().contains("timeseries(time = ..."), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_collection_of_the_same_name_is_refused_with_the_migration() {
    let db = testkit::database("ts_plain").await.unwrap();
    db.create_collection("sensor_readings").await.unwrap();
    db.collection::<Document>("sensor_readings").insert_one(doc! { "x": 1 }).await.unwrap();
    let e = docshape::sync::<SensorReading>(&db).await.unwrap_err();
    assert!(
        matches!(&e, docshape::Error::NotTimeSeries { collection } if collection == "sensor_readings"),
        "{e}"
    );
    let text = e.to_string();
    assert!(text.contains("$out") && text.contains("rename"), "names the migration: {text}");
    // Nothing changed: still a plain collection with its document and no new index.
    let options = entry(&db, "sensor_readings").await.get_document("options").unwrap().clone();
    assert!(!options.contains_key("timeseries"), "{options}");
    assert_eq!(index_keys(&db, "sensor_readings").await.len(), 1);
    // `check` reports it as drift rather than failing.
    let check = docshape::check::<SensorReading>(&db).await.unwrap();
    assert!(check.drift.iter().any(|d| matches!(d, Drift::TimeSeries { server: None, .. })), "{check}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_own_time_series_index_is_never_dropped() {
    let db = testkit::database("ts_index").await.unwrap();
    // The collection as mongod 6.3 and newer makes it: with its meta/time index, here
    // under a name docshape does not use.
    db.run_command(doc! {
        "create": "sensor_readings",
        "timeseries": { "timeField": "t", "metaField": "sensor_id", "granularity": "minutes" },
        "expireAfterSeconds": 2_592_000_i64,
    })
    .await
    .unwrap();
    db.run_command(doc! {
        "createIndexes": "sensor_readings",
        "indexes": [{ "key": { "sensor_id": 1, "t": 1 }, "name": "server_meta_time" }],
    })
    .await
    .unwrap();
    let options = SyncOptions::default().drop_extra_indexes(true).rebuild_changed_indexes(true);
    let report = docshape::sync_with::<SensorReading>(&db, options).await.unwrap();
    assert!(report.is_unchanged(), "{report}");
    assert!(report.notes.is_empty(), "{report}");
    let keys = index_keys(&db, "sensor_readings").await;
    assert!(keys.iter().any(|(n, _)| n == "server_meta_time"), "left alone: {keys:?}");
    assert!(!keys.iter().any(|(n, _)| n == "sensor_id_1_t_1"), "and not built twice: {keys:?}");
    // Another extra index is still dropped as asked.
    db.run_command(
        doc! { "createIndexes": "sensor_readings", "indexes": [{ "key": { "v": 1 }, "name": "v_1" }] },
    )
    .await
    .unwrap();
    let report = docshape::sync_with::<SensorReading>(&db, options).await.unwrap();
    assert_eq!(report.changes, vec![SyncChange::DroppedIndex { name: "v_1".into() }]);
    let keys = index_keys(&db, "sensor_readings").await;
    assert!(keys.iter().any(|(n, _)| n == "server_meta_time"), "{keys:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_drift_is_reported_and_what_can_change_is_synced() {
    let db = testkit::database("ts_drift").await.unwrap();
    // Finer buckets than the model's and no expiry: both can change in place (a
    // granularity only ever gets coarser).
    db.run_command(doc! {
        "create": "sensor_readings",
        "timeseries": { "timeField": "t", "metaField": "sensor_id", "granularity": "seconds" },
    })
    .await
    .unwrap();
    let check = docshape::check::<SensorReading>(&db).await.unwrap();
    assert!(check.drift.iter().any(|d| matches!(d, Drift::TimeSeries { server: Some(_), .. })), "{check}");
    let plan = docshape::sync::plan::<SensorReading>(&db, Default::default()).await.unwrap();
    assert!(
        plan.report.changes.iter().any(|c| matches!(c, SyncChange::TimeSeriesChanged { .. })),
        "{}",
        plan.report
    );

    // Another meta field cannot change in place: a typed refusal, nothing changed.
    let db = testkit::database("ts_drift_meta").await.unwrap();
    db.run_command(doc! {
        "create": "sensor_readings",
        "timeseries": { "timeField": "t", "metaField": "device", "granularity": "minutes" },
    })
    .await
    .unwrap();
    let plan = docshape::sync::plan::<SensorReading>(&db, Default::default()).await.unwrap();
    assert!(plan
        .report
        .notes
        .iter()
        .any(|n| matches!(n, SyncNote::TimeSeriesDiffers { server: Some(_), .. })));
    let e = docshape::sync::<SensorReading>(&db).await.unwrap_err();
    assert!(matches!(e, docshape::Error::TimeSeriesDiffers { .. }), "{e}");
    assert!(index_keys(&db, "sensor_readings").await.iter().all(|(_, k)| !k.contains_key("sensor_id")));
}

/// The series' key as a sub-document: a device and its site.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Source {
    #[validate(max_length = 32)]
    pub device: String,
    #[validate(max_length = 32)]
    pub site: String,
}

/// Readings whose meta field is an embedded struct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "site_readings", timeseries(time = at, meta = source, bucket_span = "1h"))]
#[access(name = "of_source", filter(source), range(at), sort(at), freq = "1 r/s")]
pub struct SiteReading {
    pub source: Source,
    pub at: DateTime,
    pub kwh: f64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_meta_is_the_series_key() {
    let db = testkit::database("ts_embedded_meta").await.unwrap();
    let report = docshape::sync::<SiteReading>(&db).await.unwrap();
    let Some(SyncChange::CreatedTimeSeries { options }) = report.changes.first() else { panic!("{report}") };
    let ts = options.get_document("timeseries").unwrap();
    assert_eq!(ts.get_str("metaField").unwrap(), "source");
    assert_eq!(ts.get_i64("bucketMaxSpanSeconds").unwrap(), 3600);
    assert_eq!(ts.get_i64("bucketRoundingSeconds").unwrap(), 3600);
    assert!(!ts.contains_key("granularity"));
    let keys = index_keys(&db, "site_readings").await;
    assert!(keys.iter().any(|(_, k)| k == &doc! { "source": 1, "at": 1 }), "{keys:?}");
    let a = Source { device: "meter-1".into(), site: "north".into() };
    let b = Source { device: "meter-1".into(), site: "south".into() };
    let readings: Vec<SiteReading> = (0..10)
        .flat_map(|i| {
            let at = DateTime::from_millis(DAY_START + i * 60_000);
            [
                SiteReading { source: a.clone(), at, kwh: i as f64 },
                SiteReading { source: b.clone(), at, kwh: 0.5 },
            ]
        })
        .collect();
    assert_eq!(docshape::timeseries::insert_many(&db, &readings).await.unwrap().count, 20);
    let north = SiteReading::of_source(a.clone(), ..).all(&db).await.unwrap();
    assert_eq!(north.len(), 10);
    assert!(north.iter().all(|r| r.source == a));
    assert_eq!(north.iter().map(|r| r.kwh).sum::<f64>(), 45.0);
    assert!(docshape::sync::<SiteReading>(&db).await.unwrap().is_unchanged());
}
