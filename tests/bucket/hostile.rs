//! Buckets written by other programs (around the validator) and appends cut short:
//! a corrupt `count` or items array is a typed error at once, an interrupted
//! `append_many` says what it stored and can be resumed without duplicates, and
//! compound ids write `seq` in the type the id declares.

use std::time::{Duration, Instant};

use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::bucket::BucketError;
use docshape::{Embedded, Model};
use docshape_examples::bucket::Reading;
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};

use super::{at, runtime, Small, DAY, T0};

fn ten_readings(day: i64) -> Vec<Document> {
    (0..10).map(|i| doc! { "t": at(T0 + day * DAY + i), "v": i as f64 }).collect()
}

/// A full bucket whose count another program wrote as a double, removed, or wrote as
/// a string: the append goes on to the next bucket (a double is a number) or stops
/// with a typed error at once, in a handful of commands.
#[test]
fn a_corrupt_count_is_read_as_any_number_or_is_a_typed_error_at_once() {
    let rt = runtime();
    rt.block_on(async {
        let (db, log) = testkit::monitored("bucket_corrupt_count").await.unwrap();
        let raw = db.collection::<Document>("small");
        let cases: [(&str, Option<Bson>); 5] = [
            ("double_full", Some(Bson::Double(10.0))),
            ("long_full", Some(Bson::Int64(10))),
            ("missing", None),
            ("string", Some(Bson::String("10".into()))),
            ("fraction", Some(Bson::Double(9.5))),
        ];
        for (series, count) in cases {
            let mut bucket = doc! { "_id": format!("{series}:2026-08-05"), "sensor_id": series, "day": "2026-08-05", "readings": ten_readings(0) };
            if let Some(c) = count.clone() {
                bucket.insert("count", c);
            }
            raw.insert_one(bucket).await.unwrap();
            log.clear();
            let started = Instant::now();
            let r = tokio::time::timeout(
                Duration::from_secs(10),
                Small::append(&db, series, &Reading { t: at(T0 + 100), v: 1.0 }),
            )
            .await
            .unwrap_or_else(|_| panic!("{series}: append still running after 10 s, {} commands sent", log.count()));
            let commands = log.count();
            assert!(commands <= 4, "{series}: {commands} commands in {:?}", started.elapsed());
            match series {
                "double_full" | "long_full" => {
                    r.unwrap_or_else(|e| panic!("{series}: {e}"));
                    let next = raw.find_one(doc! { "_id": format!("{series}:2026-08-05#1") }).await.unwrap();
                    assert!(next.is_some(), "{series}: the item went to the next bucket");
                }
                _ => assert!(
                    matches!(r, Err(BucketError::CorruptBucket { .. })),
                    "{series}: expected CorruptBucket, got {r:?}"
                ),
            }
        }
    });
}

/// `readings` that is not an array, or holds something that is not an item, is a
/// typed error on read: never an empty answer, never a skipped element.
#[test]
fn items_that_are_not_an_array_of_documents_are_a_typed_error_on_read() {
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("bucket_corrupt_items").await.unwrap();
        let raw = db.collection::<Document>("small");
        let good = doc! { "t": at(T0 + 5), "v": 1.0 };
        let cases: [(&str, Option<Bson>); 4] = [
            ("string", Some(Bson::String("x".into()))),
            ("document", Some(Bson::Document(good.clone()))),
            ("missing", None),
            ("number_inside", Some(Bson::Array(vec![Bson::Int32(1), Bson::Document(good.clone())]))),
        ];
        for (series, readings) in cases {
            let mut bucket = doc! { "_id": format!("{series}:2026-08-05"), "sensor_id": series, "day": "2026-08-05", "count": 1 };
            if let Some(r) = readings {
                bucket.insert("readings", r);
            }
            raw.insert_one(bucket).await.unwrap();
            let r = Small::read_range(&db, series, at(T0), at(T0 + DAY)).await;
            assert!(matches!(r, Err(BucketError::CorruptBucket { .. })), "{series}: {r:?}");
        }
    });
}

/// patrones-es's compound id as the seed declares it: `seq: Option<i32>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct HoraSeqId {
    #[serde(rename = "dispositivoId")]
    #[validate(max_length = 64)]
    pub dispositivo_id: String,
    pub hora: DateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i32>,
}

/// One bucket per device per hour, keyed by [`HoraSeqId`], counted in `conteo`.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "lecturas_seq32")]
#[bucket(series = "dispositivoId", period = hora, per = "hour", max = 60, items = lecturas, time = ts, count = conteo)]
pub struct HoraSeq32 {
    #[serde(rename = "_id")]
    pub id: HoraSeqId,
    #[serde(rename = "dispositivoId")]
    #[validate(max_length = 64)]
    pub dispositivo_id: String,
    pub hora: DateTime,
    pub conteo: i32,
    pub lecturas: Vec<super::Lectura>,
}

#[test]
fn compound_ids_write_seq_in_the_type_the_id_declares() {
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("bucket_seq_i32").await.unwrap();
        docshape::sync::<HoraSeq32>(&db).await.unwrap();
        let t10 = T0 + 10 * 3_600_000;
        let lecturas: Vec<super::Lectura> =
            (0..130).map(|i| super::Lectura { ts: at(t10 + i * 1000), temp: 21.0 }).collect();
        for chunk in lecturas.chunks(25) {
            HoraSeq32::append_many(&db, "d-1", chunk).await.unwrap_or_else(|e| panic!("{e}"));
        }
        let raw: Vec<Document> = db
            .collection::<Document>("lecturas_seq32")
            .find(doc! {})
            .sort(doc! { "conteo": -1, "_id.seq": 1 })
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let seqs: Vec<Option<Bson>> =
            raw.iter().map(|d| d.get_document("_id").unwrap().get("seq").cloned()).collect();
        assert_eq!(seqs, [None, Some(Bson::Int32(1)), Some(Bson::Int32(2))]);
        let back = HoraSeq32::read_range(&db, "d-1", at(T0), at(T0 + DAY)).await.unwrap();
        assert_eq!(back, lecturas);
    });
}

/// A compound id whose `seq` cannot hold a number: a flag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct FlagSeqId {
    #[serde(rename = "dispositivoId")]
    #[validate(max_length = 64)]
    pub dispositivo_id: String,
    pub hora: DateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<bool>,
}

/// [`HoraSeq32`] keyed by [`FlagSeqId`].
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "lecturas_seq_flag")]
#[bucket(series = "dispositivoId", period = hora, per = "hour", max = 2, items = lecturas, time = ts, count = conteo)]
pub struct HoraSeqFlag {
    #[serde(rename = "_id")]
    pub id: FlagSeqId,
    #[serde(rename = "dispositivoId")]
    #[validate(max_length = 64)]
    pub dispositivo_id: String,
    pub hora: DateTime,
    pub conteo: i32,
    pub lecturas: Vec<super::Lectura>,
}

#[test]
fn an_id_type_that_cannot_hold_seq_is_a_typed_error_with_its_cause() {
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("bucket_seq_flag").await.unwrap();
        docshape::sync::<HoraSeqFlag>(&db).await.unwrap();
        let lecturas: Vec<super::Lectura> =
            (0..3).map(|i| super::Lectura { ts: at(T0 + i * 1000), temp: 20.0 }).collect();
        // The third reading needs the overflow bucket `seq: 1`, which a flag cannot hold.
        let err = HoraSeqFlag::append_many(&db, "d-1", &lecturas).await.unwrap_err();
        let err = match err {
            BucketError::Incomplete(i) => i.cause,
            other => other,
        };
        assert!(matches!(err, BucketError::SeqField { .. }), "{err:?}");
        // The deserializer's error is the cause, not only text in the message.
        let cause = std::error::Error::source(&err).expect("the deserializer's error is kept");
        assert!(err.to_string().contains(&cause.to_string()), "{err} / {cause}");
    });
}

/// Every stored reading of `series` on the test day, by value `v`.
async fn stored_values(db: &mongodb::Database, series: &str) -> Vec<i64> {
    let buckets: Vec<Small> =
        Small::collection(db).find(doc! { "sensor_id": series }).await.unwrap().try_collect().await.unwrap();
    let mut v: Vec<i64> = buckets.iter().flat_map(|b| b.readings.iter().map(|r| r.v as i64)).collect();
    v.sort_unstable();
    v
}

fn many(n: i64) -> Vec<Reading> {
    (0..n).map(|i| Reading { t: at(T0 + i * 10), v: i as f64 }).collect()
}

/// A task aborted in the middle of `append_many` (the future dropped between two
/// updates, or during one): `bucket::resume` with the same items stores exactly the
/// ones that are missing.
///
/// The abort comes once the server holds some of the items (early, and past half), not
/// after a fixed delay: how far a call gets in a given time depends on the machine.
/// An abort that still comes after the last update leaves nothing to resume, so that
/// attempt is repeated on a new series (a few times at most).
#[test]
fn an_aborted_append_many_is_resumed_without_duplicates() {
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("bucket_abort").await.unwrap();
        docshape::sync::<Small>(&db).await.unwrap();
        let items = many(3000);
        for stored_at_abort in [1_usize, items.len() / 2] {
            let mut attempt = 0;
            let series = loop {
                attempt += 1;
                assert!(attempt <= 5, "5 aborts past half of {} came after the last update", items.len());
                let series = format!("abort_{stored_at_abort}_{attempt}");
                let task = {
                    let (db, items, series) = ((*db).clone(), items.clone(), series.clone());
                    tokio::spawn(async move { Small::append_many(&db, series, &items).await })
                };
                let started = std::time::Instant::now();
                while stored_values(&db, &series).await.len() < stored_at_abort && !task.is_finished() {
                    assert!(started.elapsed() < Duration::from_secs(60), "no progress in 60 s");
                }
                task.abort();
                let _ = task.await;
                if stored_values(&db, &series).await.len() < items.len() {
                    break series;
                }
            };
            docshape::bucket::resume::<Small>(&db, &series, &items).await.unwrap();
            let expected: Vec<i64> = (0..3000).collect();
            assert_eq!(
                stored_values(&db, &series).await,
                expected,
                "after an abort past {stored_at_abort} items"
            );
        }
    });
}

/// The server dies in the middle of `append_many`: the error comes within the
/// client's server-selection timeout and says which items each bucket holds, which
/// one update is in doubt, and which items were never sent.
#[test]
fn a_dead_server_is_reported_within_the_selection_timeout_with_what_was_stored() {
    let server = testkit::TestServer::start_local().unwrap();
    let rt = runtime();
    rt.block_on(async move {
        let selection = Duration::from_secs(2);
        let client = server.client_with(|o| o.server_selection_timeout = Some(selection)).await.unwrap();
        let db = client.database("bucket_dead_server");
        docshape::sync::<Small>(&db).await.unwrap();
        let items = many(20_000);
        let task = {
            let (db, items) = (db.clone(), items.clone());
            tokio::spawn(async move { Small::append_many(&db, "dead", &items).await })
        };
        // Kill it once a few buckets are stored, mid-call.
        let started = Instant::now();
        while db.collection::<Document>("small").count_documents(doc! { "sensor_id": "dead" }).await.unwrap()
            < 3
        {
            assert!(started.elapsed() < Duration::from_secs(30), "no bucket stored in 30 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(server);
        let killed = Instant::now();
        let r = task.await.unwrap();
        let waited = killed.elapsed();
        assert!(waited < selection + Duration::from_secs(3), "error {waited:?} after the server died");
        let e = r.expect_err("the server died mid-call");
        let BucketError::Incomplete(report) = e else { panic!("no report of what was stored: {e:?}") };
        assert!(matches!(report.cause, BucketError::Mongo(_)), "{:?}", report.cause);
        // Every item is in exactly one of the three lists, in the order they were given.
        let mut all: Vec<usize> = report.stored.iter().flat_map(|(_, v)| v.iter().copied()).collect();
        let stored = all.len();
        assert!(stored >= 20, "three buckets were seen stored: {report:?}");
        assert_eq!(stored, report.appended.items);
        all.extend(report.in_doubt.iter().flat_map(|(_, v)| v.iter().copied()));
        all.extend(report.unsent.iter().copied());
        assert_eq!(all, (0..items.len()).collect::<Vec<_>>());
        // Per bucket: buckets of 10 filled in order, so the first holds items 0..10.
        assert_eq!(report.stored[0], (Bson::from("dead:2026-08-05"), (0..10).collect::<Vec<_>>()));
        eprintln!(
            "server killed: error after {waited:?}; {stored} stored, {} in doubt, {} unsent",
            report.in_doubt.as_ref().map_or(0, |(_, v)| v.len()),
            report.unsent.len()
        );
    });
}
