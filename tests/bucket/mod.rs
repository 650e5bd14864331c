//! The bucket pattern on a real server: concurrent appends lose and duplicate nothing
//! and never overfill a bucket; one `update` per append (counted by driver command
//! monitoring); ceil(N / max) buckets; range reads in time order from the overlapping
//! buckets only; both seed id forms; the compile-time size bound against real encoded
//! sizes.

use std::collections::HashSet;

use docshape::bson::{doc, DateTime, Document, RawDocumentBuf};
use docshape::bucket::{Bucket, BucketError};
use docshape::size::MaxBsonSize;
use docshape::{Embedded, Model};
use docshape_examples::bucket::{Reading, SensorDay};
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::Database;
use serde::{Deserialize, Serialize};

/// The concurrency test's bucket: `max = 1000`.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "contended")]
#[bucket(series = sensor_id, period = day, per = "day", max = 200, items = readings, time = t)]
pub struct Contended {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub sensor_id: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
}

/// A small bucket, to cross many bucket boundaries cheaply.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "small")]
#[bucket(series = sensor_id, period = day, per = "day", max = 10, items = readings, time = t)]
pub struct Small {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub sensor_id: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
}

/// patrones-es: `{ ts, temp }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Lectura {
    pub ts: DateTime,
    pub temp: f64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// patrones-es's compound id `{dispositivoId, hora}`, plus `seq` on overflow buckets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct HoraId {
    #[serde(rename = "dispositivoId")]
    #[validate(max_length = 64)]
    pub dispositivo_id: String,
    pub hora: DateTime,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seq: i64,
}

/// patrones-es: one bucket per device per hour.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "lecturas_por_hora")]
#[bucket(series = "dispositivoId", period = hora, per = "hour", max = 60, items = lecturas, time = ts, count = conteo)]
pub struct DispositivoHora {
    #[serde(rename = "_id")]
    pub id: HoraId,
    #[serde(rename = "dispositivoId")]
    #[validate(max_length = 64)]
    pub dispositivo_id: String,
    pub hora: DateTime,
    pub conteo: i32,
    pub lecturas: Vec<Lectura>,
}

const DAY: i64 = 86_400_000;
/// 2026-08-05T00:00:00Z.
const T0: i64 = 1_785_888_000_000;

fn at(ms: i64) -> DateTime {
    DateTime::from_millis(ms)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

async fn all<T: Model + serde::de::DeserializeOwned + Send + Sync>(db: &Database) -> Vec<T> {
    T::collection(db).find(doc! {}).sort(doc! { "_id": 1 }).await.unwrap().try_collect().await.unwrap()
}

/// `writers` tasks append `each` items apiece to one series and one day, in calls of
/// 1 to `batch` items; then every bucket is checked: no item lost or stored twice, none
/// above `max`, `count` equal to the array length.
fn concurrent_writers<B>(hint: &str, writers: i64, each: i64, batch: i64, max: usize)
where
    B: Bucket<Series = String, Item = Reading> + Clone + 'static,
    B: HasReadings,
{
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database(hint).await.unwrap();
        docshape::sync::<B>(&db).await.unwrap();
        let mut tasks = Vec::new();
        for w in 0..writers {
            let db: Database = (*db).clone();
            tasks.push(tokio::spawn(async move {
                let mut i = 0;
                while i < each {
                    // A deterministic mix of call sizes, different per writer.
                    let n = 1 + (w * 7 + i * 13) % batch;
                    let items: Vec<Reading> = (i..(i + n).min(each))
                        .map(|j| Reading { t: at(T0 + (w * each + j) % DAY), v: (w * each + j) as f64 })
                        .collect();
                    i += items.len() as i64;
                    docshape::bucket::append_many::<B>(&db, &"sensor_9".to_owned(), &items).await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let buckets: Vec<B> = all(&db).await;
        let mut seen = HashSet::new();
        let mut total = 0;
        let mut full = 0;
        for b in &buckets {
            let (id, count, readings) = b.parts();
            assert!(count as usize <= max, "bucket {id} holds {count}");
            assert_eq!(count as usize, readings.len(), "bucket {id}: count and array length differ");
            full += usize::from(count as usize == max);
            for r in readings {
                assert!(seen.insert(r.v as i64), "reading {} stored twice", r.v);
            }
            total += readings.len();
        }
        assert_eq!(total as i64, writers * each, "items lost");
        assert_eq!(seen.len() as i64, writers * each);
        let least = (writers * each) as usize / max;
        assert!(
            buckets.len() >= least,
            "{} buckets for {} items at max {max}",
            buckets.len(),
            writers * each
        );
        let ids: Vec<String> = buckets.iter().map(|b| b.parts().0).collect();
        assert!(ids.iter().any(|id| id == "sensor_9:2026-08-05"), "{ids:?}");
        assert!(ids.iter().all(|id| id.starts_with("sensor_9:2026-08-05")));
        eprintln!("{writers} writers x {each} items: {} buckets, {full} full", buckets.len());
    });
}

/// What the concurrency checks read from a bucket.
trait HasReadings {
    fn parts(&self) -> (String, i32, &[Reading]);
}

impl HasReadings for Contended {
    fn parts(&self) -> (String, i32, &[Reading]) {
        (self.id.clone(), self.count, &self.readings)
    }
}

impl HasReadings for Small {
    fn parts(&self) -> (String, i32, &[Reading]) {
        (self.id.clone(), self.count, &self.readings)
    }
}

#[test]
fn eight_concurrent_writers_of_1000_items_lose_and_duplicate_nothing_and_never_overfill() {
    // Calls of 1 to 40 items: single appends and batches that split across a full
    // bucket's remaining room, all under contention; 8,000 items fill 40 buckets of 200.
    concurrent_writers::<Contended>("bucket_concurrent", 8, 1_000, 40, 200);
}

#[test]
fn eight_concurrent_single_item_writers_cross_many_full_buckets() {
    // One item a call, buckets of 10: every writer keeps hitting full buckets.
    concurrent_writers::<Small>("bucket_concurrent_single", 8, 250, 1, 10);
}

#[test]
fn a_single_writer_makes_ceil_n_over_max_buckets_with_one_update_per_append() {
    let rt = runtime();
    rt.block_on(async {
        let (db, log) = testkit::monitored("bucket_single").await.unwrap();
        docshape::sync::<Small>(&db).await.unwrap();
        const N: i64 = 95;
        let mut per_append = Vec::new();
        for i in 0..N {
            log.clear();
            let r = Reading { t: at(T0 + i * 1000), v: i as f64 };
            let report = Small::append(&db, "s1", &r).await.unwrap();
            let commands = log.names();
            assert_eq!(commands.iter().filter(|c| *c == "update").count(), report.updates);
            per_append.push(commands);
        }
        let buckets: Vec<Small> = all(&db).await;
        assert_eq!(buckets.len() as i64, (N + 9) / 10, "ceil(95 / 10) buckets");
        for (seq, b) in buckets.iter().enumerate() {
            let expected = (N - seq as i64 * 10).min(10);
            assert_eq!(b.count as i64, expected);
            assert_eq!(b.readings.len() as i64, expected);
        }
        // Every append is exactly one update, the ones that start a new bucket too:
        // the append that filled a bucket knew it, so the next goes straight on.
        for (i, commands) in per_append.iter().enumerate() {
            assert_eq!(commands, &["update"], "append {i}");
        }

        // A bucket this process knows nothing about (another process filled it):
        // the guarded upsert hits the duplicate key, one find sees it full, and the
        // item goes to the next bucket; after that, one update again.
        let ten: Vec<Document> = (0..10).map(|i| doc! { "t": at(T0 + DAY + i), "v": 0.0 }).collect();
        db.collection::<Document>("small")
            .insert_one(doc! { "_id": "s1:2026-08-06", "sensor_id": "s1", "day": "2026-08-06", "count": 10, "readings": ten })
            .await
            .unwrap();
        let mut commands = Vec::new();
        for i in 0..3 {
            log.clear();
            Small::append(&db, "s1", &Reading { t: at(T0 + DAY + 100 + i), v: 1.0 }).await.unwrap();
            commands.push(log.names());
        }
        assert_eq!(commands, [vec!["update", "find", "update"], vec!["update"], vec!["update"]]);
        let next = Small::collection(&db).find_one(doc! { "_id": "s1:2026-08-06#1" }).await.unwrap().unwrap();
        assert_eq!(next.count, 3);
    });
}

#[test]
fn batched_appends_fill_buckets_in_one_update_each_and_group_by_period() {
    let rt = runtime();
    rt.block_on(async {
        let (db, log) = testkit::monitored("bucket_batch").await.unwrap();
        docshape::sync::<SensorDay>(&db).await.unwrap();
        // Three days, 2 readings a minute: 2,880 a day, so each day fills two
        // buckets of 1,440 exactly.
        let readings: Vec<Reading> =
            (0..3 * 2880).map(|i| Reading { t: at(T0 + i * 30_000), v: (i % 100) as f64 }).collect();
        log.clear();
        let report = SensorDay::append_many(&db, "sensor_9", &readings).await.unwrap();
        assert_eq!(report.items, readings.len());
        assert_eq!(log.names().iter().filter(|c| *c == "update").count(), 6, "one update per bucket");
        let buckets: Vec<SensorDay> = all(&db).await;
        let ids: Vec<&str> = buckets.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "sensor_9:2026-08-05",
                "sensor_9:2026-08-05#1",
                "sensor_9:2026-08-06",
                "sensor_9:2026-08-06#1",
                "sensor_9:2026-08-07",
                "sensor_9:2026-08-07#1"
            ]
        );
        for b in &buckets {
            assert_eq!(b.count, 1440);
            assert_eq!(b.readings.len(), 1440);
            // The aggregates, maintained by the same updates.
            let sum: f64 = b.readings.iter().map(|r| r.v).sum();
            assert_eq!(b.sum_v, sum);
            assert_eq!(b.min_v, 0.0);
            assert_eq!(b.max_v, 99.0);
        }

        // A batch larger than the room left: the open bucket is filled first.
        let more: Vec<Reading> = (0..1435).map(|i| Reading { t: at(T0 + 10 * DAY + i), v: 1.0 }).collect();
        SensorDay::append_many(&db, "sensor_9", &more).await.unwrap();
        let tail: Vec<Reading> =
            (0..10).map(|i| Reading { t: at(T0 + 10 * DAY + 5000 + i), v: 2.0 }).collect();
        log.clear();
        let report = SensorDay::append_many(&db, "sensor_9", &tail).await.unwrap();
        // The open bucket's count is known from the previous call: 5 go there, 5 on.
        assert_eq!(log.names(), ["update", "update"]);
        assert_eq!((report.updates, report.finds, report.created), (2, 0, 1));
        let day = SensorDay::buckets_in(&db, "sensor_9", at(T0 + 10 * DAY), at(T0 + 11 * DAY)).await.unwrap();
        let counts: Vec<i32> = day.iter().map(|b| b.count).collect();
        assert_eq!(counts, [1440, 5]);
        assert_eq!(day[0].sum_v, 1435.0 + 10.0);
        assert_eq!(day[1].min_v, 2.0);
    });
}

#[test]
fn range_reads_touch_only_overlapping_buckets_and_return_items_in_time_order() {
    let rt = runtime();
    rt.block_on(async {
        let (db, log) = testkit::monitored("bucket_range").await.unwrap();
        docshape::sync::<Small>(&db).await.unwrap();
        // Out of order, over five days, two sensors.
        let mut readings: Vec<Reading> = (0..60).map(|i| Reading { t: at(T0 + (i * 7919 % 60) * DAY / 12), v: i as f64 }).collect();
        readings.reverse();
        Small::append_many(&db, "a", &readings).await.unwrap();
        Small::append_many(&db, "b", &readings).await.unwrap();
        let (from, to) = (at(T0 + DAY + DAY / 3), at(T0 + 3 * DAY + DAY / 2));
        log.clear();
        let got = Small::read_range(&db, "a", from, to).await.unwrap();
        let mut expected: Vec<Reading> = readings.iter().filter(|r| from <= r.t && r.t < to).cloned().collect();
        expected.sort_by_key(|r| r.t);
        assert_eq!(got, expected);
        assert!(got.windows(2).all(|w| w[0].t <= w[1].t));
        // One find, on the series and the overlapping days only.
        let finds: Vec<Document> =
            log.named("find");
        assert_eq!(finds.len(), 1);
        assert_eq!(
            finds[0].get_document("filter").unwrap(),
            &doc! { "sensor_id": { "$eq": "a" }, "day": { "$gte": "2026-08-06", "$lte": "2026-08-08" } }
        );
        // It is served by the generated `{sensor_id: 1, day: 1}` index.
        let explain = db
            .run_command(doc! { "explain": { "find": "small", "filter": { "sensor_id": "a", "day": { "$gte": "2026-08-06", "$lte": "2026-08-08" } } } })
            .await
            .unwrap();
        assert!(explain.to_string().contains("sensor_id_1_day_1"), "{explain}");
        assert!(matches!(
            Small::read_range(&db, "a", to, from).await,
            Err(BucketError::EmptyRange)
        ));
    });
}

#[test]
fn compound_ids_follow_patrones_es_and_overflow_with_seq() {
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("bucket_compound").await.unwrap();
        docshape::sync::<DispositivoHora>(&db).await.unwrap();
        // 10:00:05, 10:00:10, ... : 70 readings in hour 10 (one overflow bucket), 5 in hour 11.
        let t10 = T0 + 10 * 3_600_000;
        let mut lecturas: Vec<Lectura> =
            (1..=70).map(|i| Lectura { ts: at(t10 + i * 5000), temp: 22.0 }).collect();
        lecturas.extend((0..5).map(|i| Lectura { ts: at(t10 + 3_600_000 + i * 1000), temp: 23.0 }));
        for l in &lecturas {
            DispositivoHora::append(&db, "sensor-1", l).await.unwrap();
        }
        let buckets: Vec<DispositivoHora> = DispositivoHora::collection(&db)
            .find(doc! {})
            .sort(doc! { "hora": 1, "conteo": -1 })
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let hora = |ms| at(ms);
        let ids: Vec<HoraId> = buckets.iter().map(|b| b.id.clone()).collect();
        assert_eq!(
            ids,
            [
                HoraId { dispositivo_id: "sensor-1".into(), hora: hora(t10), seq: 0 },
                HoraId { dispositivo_id: "sensor-1".into(), hora: hora(t10), seq: 1 },
                HoraId { dispositivo_id: "sensor-1".into(), hora: hora(t10 + 3_600_000), seq: 0 },
            ]
        );
        // The first bucket's `_id` is exactly the seed's: `{dispositivoId, hora}`.
        let raw = db
            .collection::<Document>("lecturas_por_hora")
            .find_one(doc! { "conteo": 60 })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            raw.get_document("_id").unwrap(),
            &doc! { "dispositivoId": "sensor-1", "hora": hora(t10) }
        );
        assert_eq!(raw.get_str("dispositivoId").unwrap(), "sensor-1");
        let counts: Vec<i32> = buckets.iter().map(|b| b.conteo).collect();
        assert_eq!(counts, [60, 10, 5]);
        let all = DispositivoHora::read_range(&db, "sensor-1", at(T0), at(T0 + DAY)).await.unwrap();
        assert_eq!(all, lecturas);
    });
}

#[test]
fn the_size_bound_holds_every_full_bucket_and_is_tight_for_fixed_size_items() {
    // The estimate of a reading is exact: 4 + (1 + 2 + 8) * 2 + 1.
    assert_eq!(Reading::MAX_BSON_SIZE, Some(27));
    assert_eq!(docshape::bson_compat::to_vec(&Reading { t: at(0), v: 0.0 }).unwrap().len(), 27);
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("bucket_size").await.unwrap();
        docshape::sync::<SensorDay>(&db).await.unwrap();
        docshape::sync::<DispositivoHora>(&db).await.unwrap();
        // The longest sensor id the validator admits, in 4-byte characters (the
        // estimate's worst case for a string), and a full day.
        let sensor = "😀".repeat(64);
        let readings: Vec<Reading> =
            (0..1440).map(|i| Reading { t: at(T0 + i * 60_000), v: i as f64 / 7.0 }).collect();
        SensorDay::append_many(&db, sensor.clone(), &readings).await.unwrap();
        let raw = db.collection::<RawDocumentBuf>("sensor_days").find_one(doc! {}).await.unwrap().unwrap();
        let real = raw.as_bytes().len();
        let estimate = SensorDay::MAX_BUCKET_BYTES;
        eprintln!("SensorDay full bucket: {real} bytes; estimate {estimate}");
        assert!(real <= estimate, "the estimate {estimate} is below a real bucket of {real} bytes");
        assert!(estimate as f64 <= real as f64 * 1.10, "estimate {estimate} more than 10% above {real}");

        let lecturas: Vec<Lectura> =
            (0..60).map(|i| Lectura { ts: at(T0 + i * 60_000), temp: 20.5 }).collect();
        DispositivoHora::append_many(&db, "😀".repeat(64), &lecturas).await.unwrap();
        let raw =
            db.collection::<RawDocumentBuf>("lecturas_por_hora").find_one(doc! {}).await.unwrap().unwrap();
        let real = raw.as_bytes().len();
        let estimate = DispositivoHora::MAX_BUCKET_BYTES;
        eprintln!("DispositivoHora full bucket: {real} bytes; estimate {estimate}");
        assert!(real <= estimate);
        assert!(estimate as f64 <= real as f64 * 1.10, "estimate {estimate} more than 10% above {real}");
    });
}

#[test]
fn validators_carry_the_bucket_bounds_and_the_server_enforces_them() {
    let v = SensorDay::validator();
    let props = v.get_document("$jsonSchema").unwrap().get_document("properties").unwrap();
    assert_eq!(props.get_document("readings").unwrap().get_i64("maxItems").unwrap(), 1440);
    let count = props.get_document("count").unwrap();
    assert_eq!(count.get_i32("minimum").unwrap(), 0);
    assert_eq!(count.get_i32("maximum").unwrap(), 1440);

    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("bucket_validator").await.unwrap();
        docshape::sync::<Small>(&db).await.unwrap();
        let raw = db.collection::<Document>("small");
        let eleven: Vec<Document> = (0..11).map(|i| doc! { "t": at(i), "v": 1.0 }).collect();
        let over = doc! { "_id": "x:2026-08-05", "sensor_id": "x", "day": "2026-08-05", "count": 11, "readings": eleven };
        let e = raw.insert_one(over).await.unwrap_err();
        assert!(e.to_string().contains("121") || e.to_string().contains("validation"), "{e}");
    });
}

#[test]
fn bad_input_is_a_typed_error() {
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("bucket_errors").await.unwrap();
        let far = Reading { t: DateTime::MAX, v: 1.0 };
        assert!(matches!(Small::append(&db, "s", &far).await, Err(BucketError::DateOutOfRange(_))));
        let none: [Reading; 0] = [];
        assert_eq!(Small::append_many(&db, "s", &none).await.unwrap().updates, 0);
        // Nothing was written.
        assert_eq!(db.collection::<Document>("small").count_documents(doc! {}).await.unwrap(), 0);
    });
}

#[test]
fn spec_constants() {
    assert_eq!(<SensorDay as Bucket>::BUCKET.per, docshape::bucket::Per::Day);
    assert_eq!(<DispositivoHora as Bucket>::BUCKET.id, docshape::bucket::IdForm::Compound);
    assert_eq!(<SensorDay as Bucket>::BUCKET.id, docshape::bucket::IdForm::String);
    assert_eq!(<DispositivoHora as Bucket>::BUCKET.count, "conteo");
    assert_eq!(<DispositivoHora as Bucket>::BUCKET.period_kind, docshape::bucket::PeriodKind::Date);
    let index: Vec<&str> = DispositivoHora::INDEXES.iter().map(|i| i.name).collect();
    assert_eq!(index, ["dispositivoId_1_hora_1"]);
}

mod adversarial;
mod cap;
mod hostile;
mod literal;
