//! `#[bucket(cap = N)]` on a real server: concurrent writers never pass the cap of a
//! series' period (whatever the number of bucket documents the period spans), the cap
//! of one series or period leaves the others alone, series values shaped as operators
//! reach their own counter only, and reservations of items certainly not stored are
//! given back.

use std::collections::HashSet;

use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::bucket::{Bucket, BucketError};
use docshape::{Embedded, Model};
use docshape_examples::bucket::Reading;
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::Database;
use serde::{Deserialize, Serialize};

use super::literal::Key;
use super::{at, runtime, DAY, T0};

/// At most 50 notifications per user per day, in documents of at most 20.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "feed_days")]
#[bucket(series = user_id, period = day, per = "day", max = 20, items = readings, time = t, cap = 50)]
pub struct FeedDay {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub user_id: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
}

/// A cap below `max`: a period never needs a second document.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "feed_small_cap")]
#[bucket(series = user_id, period = day, per = "day", max = 20, items = readings, time = t, cap = 3)]
pub struct SmallCap {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub user_id: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
}

/// A compound id whose series is any BSON value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct KeyDayId {
    pub key: Key,
    pub day: DateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i32>,
}

/// One bucket per key per day, at most 2 items per key per day.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "feed_by_key")]
#[bucket(series = key, period = day, per = "day", max = 2, items = readings, time = t, cap = 2)]
pub struct ByKeyCapped {
    #[serde(rename = "_id")]
    pub id: KeyDayId,
    pub key: Key,
    pub day: DateTime,
    pub count: i32,
    pub readings: Vec<Reading>,
}

fn reading(ms: i64, v: i64) -> Reading {
    Reading { t: at(ms), v: v as f64 }
}

/// The stored buckets of `user` for the day starting at `day_ms`, from the raw
/// documents.
async fn day_buckets(db: &Database, collection: &str, user: &str, day: &str) -> Vec<Document> {
    db.collection::<Document>(collection)
        .find(doc! { "user_id": { "$eq": user }, "day": { "$eq": day } })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// The counter's `reserved` for `id` in `B`'s counter collection.
async fn reserved<B: Bucket>(db: &Database, id: Bson) -> Option<i64> {
    let name = docshape::bucket::cap_collection_name(B::COLLECTION);
    let counter = db.collection::<Document>(&name).find_one(doc! { "_id": { "$eq": id } }).await.unwrap()?;
    Some(counter.get_i64("reserved").unwrap())
}

/// Every item of a period's documents, checked against `max` and the count.
fn items_of(buckets: &[Document], max: usize) -> Vec<i64> {
    let mut values = Vec::new();
    for b in buckets {
        let items = b.get_array("readings").unwrap();
        let count = b.get_i32("count").unwrap() as usize;
        assert!(items.len() <= max, "{} holds {} items", b.get("_id").unwrap(), items.len());
        assert_eq!(count, items.len(), "{}: count and array length differ", b.get("_id").unwrap());
        values.extend(items.iter().map(|i| i.as_document().unwrap().get_f64("v").unwrap() as i64));
    }
    values
}

#[test]
fn eight_concurrent_writers_never_pass_the_cap_of_a_period() {
    runtime().block_on(async {
        let db = testkit::database("bucket_cap_concurrent").await.unwrap();
        let reports = docshape::bucket::sync::<FeedDay>(&db).await.unwrap();
        // The counter collection is synced with its validator.
        assert_eq!(reports.len(), 2);
        assert_eq!(reports[1].collection, "feed_days_caps");
        let options = db
            .list_collections()
            .filter(doc! { "name": "feed_days_caps" })
            .await
            .unwrap()
            .try_collect::<Vec<_>>()
            .await
            .unwrap();
        assert_eq!(options.len(), 1, "the counter collection exists");
        assert_eq!(options[0].options.validator.as_ref(), Some(&docshape::bucket::cap_validator()));

        // 8 writers, 20 single appends each, one user, one day: 160 tries at a cap of 50.
        let mut tasks = Vec::new();
        for w in 0..8_i64 {
            let db: Database = (*db).clone();
            tasks.push(tokio::spawn(async move {
                let (mut ok, mut capped) = (Vec::new(), 0);
                for i in 0..20 {
                    let v = w * 100 + i;
                    match FeedDay::append(&db, "user_1", &reading(T0 + v * 1000, v)).await {
                        Ok(r) => {
                            assert_eq!(r.items, 1);
                            ok.push(v);
                        }
                        Err(BucketError::Capped { series, period, cap }) => {
                            assert_eq!(*series, Bson::from("user_1"));
                            assert_eq!(period, at(T0));
                            assert_eq!(cap, 50);
                            capped += 1;
                        }
                        Err(e) => panic!("writer {w}: {e:?}"),
                    }
                }
                (ok, capped)
            }));
        }
        let mut accepted = HashSet::new();
        let mut capped = 0;
        for t in tasks {
            let (ok, c) = t.await.unwrap();
            accepted.extend(ok);
            capped += c;
        }
        assert_eq!(accepted.len(), 50, "appends that succeeded");
        assert_eq!(capped, 110, "appends refused with Capped");
        // The period's documents hold exactly the accepted items, none over max.
        let buckets = day_buckets(&db, "feed_days", "user_1", "2026-08-05").await;
        let stored = items_of(&buckets, 20);
        assert_eq!(stored.len(), 50);
        assert_eq!(stored.iter().copied().collect::<HashSet<_>>(), accepted);
        assert!(buckets.len() >= 3, "50 items at max 20 span at least 3 documents");
        assert_eq!(reserved::<FeedDay>(&db, Bson::from("user_1:2026-08-05")).await, Some(50));
        // The cap holds for later calls too, single and batched.
        let late = FeedDay::append(&db, "user_1", &reading(T0 + 999_000, 999)).await;
        assert!(matches!(late, Err(BucketError::Capped { .. })), "{late:?}");
        let batch = FeedDay::append_many(&db, "user_1", &[reading(T0 + 5, 5), reading(T0 + 6, 6)]).await;
        assert!(matches!(batch.as_ref().map_err(|e| e.root()), Err(BucketError::Capped { .. })), "{batch:?}");
        assert_eq!(items_of(&day_buckets(&db, "feed_days", "user_1", "2026-08-05").await, 20).len(), 50);
    });
}

#[test]
fn a_batch_fills_the_cap_in_order_and_other_series_and_periods_are_unaffected() {
    runtime().block_on(async {
        let db = testkit::database("bucket_cap_batch").await.unwrap();
        docshape::bucket::sync::<FeedDay>(&db).await.unwrap();
        // 60 items for one day: the first 50 are stored, the rest refused.
        let day1: Vec<Reading> = (0..60).map(|i| reading(T0 + i * 1000, i)).collect();
        let e = FeedDay::append_many(&db, "a", &day1).await.unwrap_err();
        let BucketError::Incomplete(i) = e else { panic!("{e:?}") };
        assert!(matches!(i.cause, BucketError::Capped { cap: 50, .. }), "{:?}", i.cause);
        let stored: Vec<usize> = i.stored.iter().flat_map(|(_, v)| v.iter().copied()).collect();
        assert_eq!(stored, (0..50).collect::<Vec<_>>());
        assert_eq!(i.unsent, (50..60).collect::<Vec<_>>());
        assert!(i.in_doubt.is_none());
        assert_eq!(i.appended.items, 50);
        let got = FeedDay::read_range(&db, "a", at(T0), at(T0 + DAY)).await.unwrap();
        assert_eq!(got, day1[..50]);
        let counts: Vec<i32> = FeedDay::buckets_in(&db, "a", at(T0), at(T0 + DAY))
            .await
            .unwrap()
            .iter()
            .map(|b| b.count)
            .collect();
        assert_eq!(counts, [20, 20, 10]);

        // Another series the same day, and the same series the next day: their own caps.
        for (series, t) in [("b", T0), ("a", T0 + DAY)] {
            let items: Vec<Reading> = (0..50).map(|i| reading(t + i * 1000, i)).collect();
            let r = FeedDay::append_many(&db, series, &items).await.unwrap();
            assert_eq!(r.items, 50, "{series} at {t}");
            let over = FeedDay::append(&db, series, &reading(t + 60_000, 99)).await;
            assert!(matches!(over, Err(BucketError::Capped { .. })), "{series} at {t}: {over:?}");
        }
        // A batch over two days: the first day is full, so the call stops there and
        // says the next day's items were not sent.
        let two = [reading(T0 + 2 * DAY, 1), reading(T0 + 70_000, 2), reading(T0 + 2 * DAY + 1, 3)];
        let e = FeedDay::append_many(&db, "b", &two).await.unwrap_err();
        let BucketError::Incomplete(i) = e else { panic!("{e:?}") };
        assert!(matches!(i.cause, BucketError::Capped { .. }));
        let stored: Vec<usize> = i.stored.iter().flat_map(|(_, v)| v.iter().copied()).collect();
        assert_eq!(stored, [0, 2], "the third day's items, grouped first, were stored");
        assert_eq!(i.unsent, [1]);
        for (series, day) in [("a", "2026-08-05"), ("a", "2026-08-06"), ("b", "2026-08-05")] {
            let n = items_of(&day_buckets(&db, "feed_days", series, day).await, 20).len();
            assert_eq!(n, 50, "{series} {day}");
        }

        // A cap below max: the period stays in one document.
        docshape::bucket::sync::<SmallCap>(&db).await.unwrap();
        let five: Vec<Reading> = (0..5).map(|i| reading(T0 + i, i)).collect();
        let e = SmallCap::append_many(&db, "u", &five).await.unwrap_err();
        assert!(matches!(e.root(), BucketError::Capped { cap: 3, .. }), "{e:?}");
        let docs = day_buckets(&db, "feed_small_cap", "u", "2026-08-05").await;
        assert_eq!(docs.len(), 1);
        assert_eq!(items_of(&docs, 20), [0, 1, 2]);
    });
}

#[test]
fn operator_shaped_series_reach_their_own_counter_only() {
    runtime().block_on(async {
        let db = testkit::database("bucket_cap_hostile").await.unwrap();
        docshape::bucket::sync::<FeedDay>(&db).await.unwrap();
        let victim: Vec<Reading> = (0..50).map(|i| reading(T0 + i, i)).collect();
        FeedDay::append_many(&db, "victim", &victim).await.unwrap();
        // Strings shaped as operators, as other ids, as patterns: each is a series of
        // its own, with its own cap, and none reaches the victim's counter.
        let hostile = [
            "$gt",
            "{\"$ne\": null}",
            "{$exists: true}",
            "victim:2026-08-05",
            "victim#1",
            ".*",
            "^victim",
            "",
            "$where",
            "victim\u{0}",
        ];
        for (n, series) in hostile.iter().enumerate() {
            for i in 0..50 {
                FeedDay::append(&db, *series, &reading(T0 + i, 1000 + i))
                    .await
                    .unwrap_or_else(|e| panic!("{series:?} item {i}: {e}"));
            }
            let over = FeedDay::append(&db, *series, &reading(T0 + 99, 1)).await;
            assert!(matches!(over, Err(BucketError::Capped { .. })), "{series:?}: {over:?}");
            let id = Bson::from(format!("{series}:2026-08-05"));
            assert_eq!(reserved::<FeedDay>(&db, id).await, Some(50), "{series:?}");
            // The victim's period is untouched: still exactly its 50 items.
            let victim_items = items_of(&day_buckets(&db, "feed_days", "victim", "2026-08-05").await, 20);
            assert_eq!(victim_items, (0..50).collect::<Vec<_>>(), "after {n} hostile series");
            assert_eq!(reserved::<FeedDay>(&db, Bson::from("victim:2026-08-05")).await, Some(50));
        }
        let counters = db.collection::<Document>("feed_days_caps").count_documents(doc! {}).await.unwrap();
        assert_eq!(counters as usize, hostile.len() + 1, "one counter per series");

        // Any BSON value as the series of a compound id: values shaped as operators,
        // patterns and code are written through the literal encoder and compared under
        // `$eq`. Each is stored under its own counter or refused with a typed error;
        // none passes its cap, and none touches another series' counter.
        docshape::bucket::sync::<ByKeyCapped>(&db).await.unwrap();
        let mut rng = docshape_test_seed::rng("bucket::cap");
        let mut values = crate::access::literal::hostile_values(&mut *rng, 40);
        values.insert(0, Bson::from("plain"));
        let raw = db.collection::<Document>("feed_by_key");
        let (mut accepted, mut refused) = (0, 0);
        for v in &values {
            let key = Key(v.clone());
            let mut stored = 0;
            for i in 0..4 {
                match ByKeyCapped::append(&db, key.clone(), &reading(T0 + i, i)).await {
                    Ok(_) => stored += 1,
                    Err(BucketError::Capped { .. }) => {}
                    // The server may refuse a value as part of an `_id` (mongod: no
                    // arrays or regexes in `_id`): a typed error, nothing stored.
                    Err(BucketError::Mongo(_) | BucketError::Incomplete(_)) => {}
                    Err(e) => panic!("{v:?}: {e:?}"),
                }
            }
            assert!(stored <= 2, "{v:?}: {stored} items past a cap of 2");
            // Read back through docshape, whose filter writes the value under `$eq`.
            let held = ByKeyCapped::buckets_in(&db, key.clone(), at(T0), at(T0 + DAY)).await.unwrap();
            let items: usize = held.iter().map(|b| b.readings.len()).sum();
            assert_eq!(items, stored, "{v:?}: the buckets hold what was accepted");
            if stored == 2 {
                accepted += 1;
            } else {
                assert_eq!(stored, 0, "{v:?}: a value the server accepts once it accepts twice");
                refused += 1;
            }
        }
        // The plain key, and the hostile values the server stores, kept their 2 items each.
        assert!(accepted >= 1, "{accepted} accepted, {refused} refused");
        let plain =
            ByKeyCapped::read_range(&db, Key(Bson::from("plain")), at(T0), at(T0 + DAY)).await.unwrap();
        assert_eq!(plain, [reading(T0, 0), reading(T0 + 1, 1)]);
        let total: i64 = raw
            .find(doc! {})
            .await
            .unwrap()
            .try_collect::<Vec<Document>>()
            .await
            .unwrap()
            .iter()
            .map(|d| i64::from(d.get_i32("count").unwrap()))
            .sum();
        assert_eq!(total, 2 * accepted, "every accepted series holds exactly its cap");
        eprintln!("hostile compound series: {accepted} stored, {refused} refused by the server");
    });
}

#[test]
fn places_of_items_certainly_not_stored_are_given_back() {
    runtime().block_on(async {
        let (db, log) = testkit::monitored("bucket_cap_release").await.unwrap();
        let raw = db.collection::<Document>("feed_days");
        // A first bucket another program wrote with a count the guarded append cannot
        // compare (no validator: the collection is not synced): the append stops with
        // a typed error after its reservation, and gives the place back.
        raw.insert_one(doc! { "_id": "broken:2026-08-05", "user_id": "broken", "day": "2026-08-05", "count": "7", "readings": [] })
            .await
            .unwrap();
        for i in 0..3 {
            let r = FeedDay::append(&db, "broken", &reading(T0 + i, i)).await;
            assert!(matches!(r, Err(BucketError::CorruptBucket { .. })), "{r:?}");
            assert_eq!(
                reserved::<FeedDay>(&db, Bson::from("broken:2026-08-05")).await,
                Some(0),
                "the place of an item not stored was given back"
            );
        }
        // Repaired, the period still takes its whole cap.
        raw.update_one(doc! { "_id": "broken:2026-08-05" }, doc! { "$set": { "count": 0 } }).await.unwrap();
        let fifty: Vec<Reading> = (0..50).map(|i| reading(T0 + i, i)).collect();
        assert_eq!(FeedDay::append_many(&db, "broken", &fifty).await.unwrap().items, 50);

        // A counter another program broke (its `reserved` is a string): a typed error
        // at once, in a handful of commands, and nothing appended.
        let caps = db.collection::<Document>("feed_days_caps");
        caps.insert_one(doc! { "_id": "c:2026-08-05", "start": at(T0), "reserved": "3" }).await.unwrap();
        log.clear();
        let r = FeedDay::append(&db, "c", &reading(T0, 1)).await;
        assert!(matches!(r, Err(BucketError::CorruptBucket { .. })), "{r:?}");
        assert!(log.count() <= 3, "{} commands", log.count());
        assert!(day_buckets(&db, "feed_days", "c", "2026-08-05").await.is_empty());
        // A counter above the cap (the cap was lowered in code): refused at once.
        caps.insert_one(doc! { "_id": "d:2026-08-05", "start": at(T0), "reserved": 80_i64 }).await.unwrap();
        let r = FeedDay::append(&db, "d", &reading(T0, 1)).await;
        assert!(matches!(r, Err(BucketError::Capped { .. })), "{r:?}");

        // A common append is two updates: the reservation and the append.
        log.clear();
        let r = FeedDay::append(&db, "e", &reading(T0, 1)).await.unwrap();
        assert_eq!(log.names(), ["update", "update"]);
        assert_eq!(r.updates, 2);
    });
}
