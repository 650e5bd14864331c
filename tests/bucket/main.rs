//! The bucket and outlier patterns on a real server: concurrent appends lose and
//! duplicate nothing and never overfill a bucket; one `update` per append (counted
//! by driver command monitoring); ceil(N / max) buckets; range reads in time order
//! from the overlapping buckets only; both seed id forms; the compile-time size bound
//! against real encoded sizes; outliers that spill, flag and merge.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use bson::{doc, DateTime, Document, RawDocumentBuf};
use docshape::bucket::{Bucket, BucketError};
use docshape::size::MaxBsonSize;
use docshape::{testkit, Embedded, Model};
use futures_util::TryStreamExt;
use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;
use mongodb::Database;
use serde::{Deserialize, Serialize};

/// patterns-en's reading: `{ t, v }` (with a full date: a time of day alone cannot be
/// placed in a day or filtered by range).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Reading {
    pub t: DateTime,
    pub v: f64,
}

/// patterns-en: one bucket per sensor per day, `_id: "sensor_9:2026-08-05"`.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sensor_days")]
#[bucket(series = sensor_id, period = day, per = "day", max = 1440, items = readings, time = t)]
pub struct SensorDay {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub sensor_id: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
    #[bucket(sum = "v")]
    pub sum_v: f64,
    #[bucket(min = "v")]
    pub min_v: f64,
    #[bucket(max = "v")]
    pub max_v: f64,
}

/// The concurrency test's bucket: `max = 1000`.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "contended")]
#[bucket(series = sensor_id, period = day, per = "day", max = 1000, items = readings, time = t)]
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

/// patrones-es's outlier: users with millions of followers.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "usuarios")]
pub struct Usuario {
    #[serde(rename = "_id")]
    pub id: i64,
    #[validate(max_length = 100)]
    pub nombre: String,
    #[outlier(threshold = 100, overflow = "seguidores_extra", flag = tiene_extras, count = num_seguidores, per_doc = 250)]
    pub seguidores: Vec<i64>,
    pub tiene_extras: bool,
    pub num_seguidores: i64,
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

/// Every command's name, in order, from a client with command monitoring.
type Log = Arc<Mutex<Vec<(String, Document)>>>;

async fn monitored(hint: &str) -> (testkit::TestDb, Database, Log) {
    let test_db = testkit::database(hint).await.unwrap();
    let log: Log = Arc::default();
    let sink = log.clone();
    let client = testkit::server()
        .unwrap()
        .client_with(|o| {
            o.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
                if let CommandEvent::Started(started) = event {
                    sink.lock().unwrap().push((started.command_name.clone(), started.command));
                }
            }))
        })
        .await
        .unwrap();
    let db = client.database(test_db.name());
    (test_db, db, log)
}

fn names(log: &Log) -> Vec<String> {
    log.lock().unwrap().iter().map(|(n, _)| n.clone()).collect()
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
fn eight_concurrent_writers_of_5000_items_lose_and_duplicate_nothing_and_never_overfill() {
    // Calls of 1 to 40 items: single appends and batches that split across a full
    // bucket's remaining room, all under contention.
    concurrent_writers::<Contended>("bucket_concurrent", 8, 5_000, 40, 1000);
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
        let (_keep, db, log) = monitored("bucket_single").await;
        docshape::sync::<Small>(&db).await.unwrap();
        const N: i64 = 95;
        let mut per_append = Vec::new();
        for i in 0..N {
            log.lock().unwrap().clear();
            let r = Reading { t: at(T0 + i * 1000), v: i as f64 };
            let report = Small::append(&db, "s1", &r).await.unwrap();
            let commands = names(&log);
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
            log.lock().unwrap().clear();
            Small::append(&db, "s1", &Reading { t: at(T0 + DAY + 100 + i), v: 1.0 }).await.unwrap();
            commands.push(names(&log));
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
        let (_keep, db, log) = monitored("bucket_batch").await;
        docshape::sync::<SensorDay>(&db).await.unwrap();
        // Three days, 2 readings a minute: 2,880 a day, so each day fills two
        // buckets of 1,440 exactly.
        let readings: Vec<Reading> =
            (0..3 * 2880).map(|i| Reading { t: at(T0 + i * 30_000), v: (i % 100) as f64 }).collect();
        log.lock().unwrap().clear();
        let report = SensorDay::append_many(&db, "sensor_9", &readings).await.unwrap();
        assert_eq!(report.items, readings.len());
        assert_eq!(names(&log).iter().filter(|c| *c == "update").count(), 6, "one update per bucket");
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
        log.lock().unwrap().clear();
        let report = SensorDay::append_many(&db, "sensor_9", &tail).await.unwrap();
        // The open bucket's count is known from the previous call: 5 go there, 5 on.
        assert_eq!(names(&log), ["update", "update"]);
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
        let (_keep, db, log) = monitored("bucket_range").await;
        docshape::sync::<Small>(&db).await.unwrap();
        // Out of order, over five days, two sensors.
        let mut readings: Vec<Reading> = (0..60).map(|i| Reading { t: at(T0 + (i * 7919 % 60) * DAY / 12), v: i as f64 }).collect();
        readings.reverse();
        Small::append_many(&db, "a", &readings).await.unwrap();
        Small::append_many(&db, "b", &readings).await.unwrap();
        let (from, to) = (at(T0 + DAY + DAY / 3), at(T0 + 3 * DAY + DAY / 2));
        log.lock().unwrap().clear();
        let got = Small::read_range(&db, "a", from, to).await.unwrap();
        let mut expected: Vec<Reading> = readings.iter().filter(|r| from <= r.t && r.t < to).cloned().collect();
        expected.sort_by_key(|r| r.t);
        assert_eq!(got, expected);
        assert!(got.windows(2).all(|w| w[0].t <= w[1].t));
        // One find, on the series and the overlapping days only.
        let finds: Vec<Document> =
            log.lock().unwrap().iter().filter(|(n, _)| n == "find").map(|(_, c)| c.clone()).collect();
        assert_eq!(finds.len(), 1);
        assert_eq!(
            finds[0].get_document("filter").unwrap(),
            &doc! { "sensor_id": "a", "day": { "$gte": "2026-08-06", "$lte": "2026-08-08" } }
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
    assert_eq!(bson::to_vec(&Reading { t: at(0), v: 0.0 }).unwrap().len(), 27);
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
fn validators_carry_the_bucket_and_outlier_bounds_and_the_server_enforces_them() {
    let v = SensorDay::validator();
    let props = v.get_document("$jsonSchema").unwrap().get_document("properties").unwrap();
    assert_eq!(props.get_document("readings").unwrap().get_i64("maxItems").unwrap(), 1440);
    let count = props.get_document("count").unwrap();
    assert_eq!(count.get_i32("minimum").unwrap(), 0);
    assert_eq!(count.get_i32("maximum").unwrap(), 1440);
    let v = Usuario::validator();
    let props = v.get_document("$jsonSchema").unwrap().get_document("properties").unwrap();
    assert_eq!(props.get_document("seguidores").unwrap().get_i64("maxItems").unwrap(), 100);
    assert_eq!(props.get_document("num_seguidores").unwrap().get_i32("minimum").unwrap(), 0);

    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("bucket_validator").await.unwrap();
        docshape::sync::<Small>(&db).await.unwrap();
        let raw = db.collection::<Document>("small");
        let eleven: Vec<Document> = (0..11).map(|i| doc! { "t": at(i), "v": 1.0 }).collect();
        let over = doc! { "_id": "x:2026-08-05", "sensor_id": "x", "day": "2026-08-05", "count": 11, "readings": eleven };
        let e = raw.insert_one(over).await.unwrap_err();
        assert!(e.to_string().contains("121") || e.to_string().contains("validation"), "{e}");
        // The outlier's overflow collection gets its own validator and index.
        docshape::sync::<Usuario>(&db).await.unwrap();
        docshape::outlier::sync::<Usuario>(&db).await.unwrap();
        let overflow = db.collection::<Document>("seguidores_extra");
        let too_many: Vec<i64> = (0..251).collect();
        let e = overflow
            .insert_one(doc! { "_id": { "parent": 1_i64, "seq": 0_i64 }, "parent": 1_i64, "count": 251, "items": too_many })
            .await
            .unwrap_err();
        assert!(e.to_string().contains("121") || e.to_string().contains("validation"), "{e}");
    });
}

#[test]
fn outliers_spill_past_the_threshold_set_the_flag_and_read_back_whole() {
    let rt = runtime();
    rt.block_on(async {
        let (_keep, db, log) = monitored("outlier").await;
        docshape::sync::<Usuario>(&db).await.unwrap();
        docshape::outlier::sync::<Usuario>(&db).await.unwrap();
        let usuarios = Usuario::collection(&db);
        for (id, nombre) in [(1, "Celebridad"), (2, "Usuario Regular")] {
            let u = Usuario {
                id,
                nombre: nombre.into(),
                seguidores: vec![],
                tiene_extras: false,
                num_seguidores: 0,
            };
            usuarios.insert_one(u).await.unwrap();
        }
        // A normal user: one update per push.
        for f in [10, 11, 12, 13, 14] {
            log.lock().unwrap().clear();
            let pushed = Usuario::push_seguidores(&db, &2, &[f]).await.unwrap();
            assert_eq!((pushed.embedded, pushed.overflow), (1, 0));
            assert_eq!(names(&log), ["update"]);
        }
        // The celebrity: 10x the threshold, singly and in batches.
        let mut expected: Vec<i64> = Vec::new();
        for i in 0..300 {
            Usuario::push_seguidores(&db, &1, &[1000 + i]).await.unwrap();
            expected.push(1000 + i);
        }
        for chunk in (300..1000).collect::<Vec<i64>>().chunks(70) {
            let batch: Vec<i64> = chunk.iter().map(|i| 1000 + i).collect();
            Usuario::push_seguidores(&db, &1, &batch).await.unwrap();
            expected.extend(batch);
        }
        let celeb = usuarios.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
        let regular = usuarios.find_one(doc! { "_id": 2 }).await.unwrap().unwrap();
        assert!(celeb.tiene_extras);
        assert!(!regular.tiene_extras, "the flag is set only on the outlier");
        assert_eq!(celeb.seguidores.len(), 100, "the threshold is kept embedded");
        assert_eq!(celeb.num_seguidores, 1000);
        assert_eq!(regular.num_seguidores, 5);
        let loaded = Usuario::load_seguidores(&db, &1).await.unwrap();
        assert_eq!(loaded, expected, "every follower once, in push order");
        assert_eq!(Usuario::load_seguidores(&db, &2).await.unwrap(), [10, 11, 12, 13, 14]);
        let overflow: Vec<Document> = db
            .collection::<Document>("seguidores_extra")
            .find(doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let mut stored = 0;
        for d in &overflow {
            let n = d.get_array("items").unwrap().len();
            assert!(n <= 250);
            assert_eq!(d.get_i32("count").unwrap() as usize, n);
            stored += n;
        }
        assert_eq!(stored, 900);
        assert!(matches!(
            Usuario::push_seguidores(&db, &99, &[1; 101]).await,
            Err(docshape::outlier::OutlierError::ParentNotFound(_))
        ));
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

#[test]
fn sync_all_and_check_cover_the_overflow_collection() {
    let rt = runtime();
    rt.block_on(async {
        let specs = docshape::registry::specs().unwrap();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"usuarios") && names.contains(&"seguidores_extra"), "{names:?}");
        let db = testkit::database("outlier_registry").await.unwrap();
        let reports = docshape::sync_all(&db, Default::default()).await.unwrap();
        assert_eq!(reports.len(), specs.len());
        let overflow = db
            .run_command(doc! { "listCollections": 1, "filter": { "name": "seguidores_extra" } })
            .await
            .unwrap();
        let batch = overflow.get_document("cursor").unwrap().get_array("firstBatch").unwrap();
        assert_eq!(batch.len(), 1, "sync_all created the overflow collection");
        for report in docshape::check::check_all(&db).await.unwrap() {
            assert!(report.is_clean(), "{report}");
        }
        // Dropping its index by hand is drift on the overflow collection.
        db.run_command(doc! { "dropIndexes": "seguidores_extra", "index": "parent_1__id.seq_1" })
            .await
            .unwrap();
        let drift: Vec<_> =
            docshape::check::check_all(&db).await.unwrap().into_iter().filter(|r| !r.is_clean()).collect();
        assert_eq!(drift.len(), 1);
        assert_eq!(drift[0].collection, "seguidores_extra");
    });
}
