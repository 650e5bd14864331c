//! Copies that cannot get stuck: a null source value written as the copy's own type
//! stores it, a watcher that closes its batches under a steady trickle, and stored
//! documents (array, operator-document and wrong-type references, wrong-type source
//! values) that neither fail the real source's job nor stop a reconcile.

use std::time::Instant;

use docshape::bson::{doc, Bson, Document};
use docshape::denormalized::{self, CopySpec, SkipReason, Watcher, Worker};
use docshape::refs::Ref;
use docshape::Model;
use docshape_testkit as testkit;
use mongodb::Database;
use serde::{Deserialize, Serialize};

use super::watcher::{insert_writers, plain_client, position, setup_writers, until, Running, STORIES};
use super::*;

/// A source whose avatar is always written (`null` when there is none), with a write
/// row (which reaches the copies through the write hook).
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "painters")]
#[access(name = "set_avatar", filter(_id), update(set(avatar)))]
pub struct Painter {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
    pub avatar: Option<String>,
}

/// An async copy of the name, and a sync copy of the avatar that omits `None` (its
/// validator forbids `null`).
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "canvases")]
#[index(keys(painter_id))]
pub struct Canvas {
    #[serde(rename = "_id")]
    pub id: i64,
    pub painter_id: Ref<Painter>,
    #[denormalized(from = "Painter::name", via = "painter_id", refresh = "async", max_stale = "5m")]
    pub painter_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[denormalized(from = "Painter::avatar", via = "painter_id", refresh = "sync")]
    pub painter_avatar: Option<String>,
}

/// An async copy of the avatar that omits `None`.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sketches")]
#[index(keys(painter_id))]
pub struct Sketch {
    #[serde(rename = "_id")]
    pub id: i64,
    pub painter_id: Ref<Painter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[denormalized(from = "Painter::avatar", via = "painter_id", refresh = "async", max_stale = "5m")]
    pub painter_avatar: Option<String>,
}

/// A sync copy of the avatar that is always written: `null` when there is none (its
/// validator requires the field).
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "frames")]
#[index(keys(painter_id))]
pub struct Frame {
    #[serde(rename = "_id")]
    pub id: i64,
    pub painter_id: Ref<Painter>,
    #[denormalized(from = "Painter::avatar", via = "painter_id", refresh = "sync")]
    pub painter_avatar: Option<String>,
}

const CANVAS_NAMES: &str = "canvases.painter_name";
const CANVAS_AVATARS: &str = "canvases.painter_avatar";
const FRAME_AVATARS: &str = "frames.painter_avatar";
const SKETCH_AVATARS: &str = "sketches.painter_avatar";

async fn setup_painters(hint: &str) -> testkit::TestDb {
    let db = testkit::database(hint).await.unwrap();
    docshape::sync::<Painter>(&db).await.unwrap();
    docshape::sync::<Canvas>(&db).await.unwrap();
    docshape::sync::<Sketch>(&db).await.unwrap();
    docshape::sync::<Frame>(&db).await.unwrap();
    db
}

fn spec(key: &str) -> &'static CopySpec {
    denormalized::dependents("painters").into_iter().find(|c| c.key() == key).unwrap()
}

/// Inserts `documents` around the validator, as another program could have.
async fn insert_raw(db: &Database, collection: &str, documents: Vec<Document>) {
    db.collection::<Document>(collection)
        .insert_many(documents)
        .bypass_document_validation(true)
        .await
        .unwrap();
}

async fn get(db: &Database, collection: &str, id: i64) -> Document {
    db.collection::<Document>(collection).find_one(doc! { "_id": id }).await.unwrap().unwrap()
}

/// What the avatar copies of painter 1's documents `id` hold, as stored: the canvas's
/// (omits `None`), the frame's (always written) and the sketch's (omits `None`, async).
async fn avatars(db: &Database, id: i64) -> [Option<Bson>; 3] {
    let mut out = [None, None, None];
    for (slot, collection) in out.iter_mut().zip(["canvases", "frames", "sketches"]) {
        let found = db.collection::<Document>(collection).find_one(doc! { "_id": id }).await.unwrap();
        *slot = found.and_then(|d| d.get("painter_avatar").cloned());
    }
    out
}

/// Each copy of painter 1's avatar is as serde writes the copy's type for `avatar`:
/// no field for a copy that omits `None`, `null` for one that always writes it.
async fn assert_stored_as_typed(db: &Database, ids: &[i64], avatar: Option<&str>, when: &str) {
    let value = avatar.map(Bson::from);
    for &id in ids {
        let [canvas, frame, sketch] = avatars(db, id).await;
        assert_eq!(canvas, value, "{when}: canvas {id}");
        assert_eq!(frame, Some(value.clone().unwrap_or(Bson::Null)), "{when}: frame {id}");
        assert_eq!(sketch, value, "{when}: sketch {id}");
    }
}

/// A null (or missing) source avatar reaches each copy as the copy's own type stores
/// it, through every writer: `update_one`, the write hook (a write row), an insert's
/// fill, and a watcher and a worker following writes made around docshape. A copy
/// that omits `None` loses the field; one that always writes it holds `null`. (Before:
/// `$set: null`, refused by the first copy's validator with code 121, so `update_one`
/// failed and the job failed on every retry; and a source without the field `$unset`
/// the second copy, which its validator refuses.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_null_source_value_is_stored_as_each_copys_type_stores_it() {
    let db = setup_painters("stuck_null").await;
    db.collection::<Document>("painters")
        .insert_one(doc! { "_id": 1_i64, "name": "p1", "avatar": "a.png" })
        .await
        .unwrap();
    db.collection::<Document>("canvases")
        .insert_one(
            doc! { "_id": 10_i64, "painter_id": 1_i64, "painter_name": "p1", "painter_avatar": "a.png" },
        )
        .await
        .unwrap();
    for collection in ["sketches", "frames"] {
        db.collection::<Document>(collection)
            .insert_one(doc! { "_id": 10_i64, "painter_id": 1_i64, "painter_avatar": "a.png" })
            .await
            .unwrap();
    }
    let drain = || async {
        let report = Worker::new(&db).run_until_empty().await.unwrap();
        assert!(report.failures.is_empty(), "{report:?}");
        report
    };

    // `update_one`.
    denormalized::update_one::<Painter>(&db, &1_i64, doc! { "$set": { "avatar": null } }).await.unwrap();
    assert_eq!(get(&db, "painters", 1).await.get("avatar"), Some(&Bson::Null));
    assert_eq!(drain().await.jobs, 1);
    assert_stored_as_typed(&db, &[10], None, "update_one").await;
    denormalized::update_one::<Painter>(&db, &1_i64, doc! { "$set": { "avatar": "b.png" } }).await.unwrap();
    drain().await;
    assert_stored_as_typed(&db, &[10], Some("b.png"), "update_one, back").await;

    // The write hook, behind a write row.
    Painter::set_avatar(1_i64, None::<String>).run(&db).await.unwrap();
    drain().await;
    assert_stored_as_typed(&db, &[10], None, "a write row").await;

    // An insert's fill.
    let mut canvas = Canvas {
        id: 11,
        painter_id: Ref::new(1),
        painter_name: String::new(),
        painter_avatar: Some("x".into()),
    };
    docshape::relation::insert_one(&db, &mut canvas).await.unwrap();
    let mut frame = Frame { id: 11, painter_id: Ref::new(1), painter_avatar: Some("x".into()) };
    docshape::relation::insert_one(&db, &mut frame).await.unwrap();
    let mut sketch = Sketch { id: 11, painter_id: Ref::new(1), painter_avatar: Some("x".into()) };
    docshape::relation::insert_one(&db, &mut sketch).await.unwrap();
    assert_stored_as_typed(&db, &[10, 11], None, "an insert's fill").await;

    // Writes made around docshape, followed by a watcher: a value, then none at all
    // (the field removed), which is `null` to a copy that always writes it.
    let running =
        Running::start(Watcher::new(&db).name("nulls").only([CANVAS_AVATARS, FRAME_AVATARS, SKETCH_AVATARS]));
    until("the first position", Duration::from_secs(60), || async {
        position(&db, "nulls", "painters").await.is_some()
    })
    .await;
    let plain = plain_client(&db).await;
    let painters = plain.collection::<Document>("painters");
    painters.update_one(doc! { "_id": 1_i64 }, doc! { "$set": { "avatar": "c.png" } }).await.unwrap();
    until("three jobs", Duration::from_secs(60), || async { queue(&db).await.len() == 3 }).await;
    drain().await;
    assert_stored_as_typed(&db, &[10, 11], Some("c.png"), "the watcher, a value").await;
    // Around the painters' validator too, as another program may.
    painters
        .update_one(doc! { "_id": 1_i64 }, doc! { "$unset": { "avatar": "" } })
        .bypass_document_validation(true)
        .await
        .unwrap();
    until("three jobs", Duration::from_secs(60), || async { queue(&db).await.len() == 3 }).await;
    let report = drain().await;
    assert_eq!(report.jobs, 3, "{report:?}");
    running.stop().await;
    assert_stored_as_typed(&db, &[10, 11], None, "the watcher, no field").await;
}

/// An article whose reference is an array holding the source's id is not the source's
/// copy: the worker leaves it (as reconcile does, which reports it) and the real
/// copies' job completes. (Before: the worker's `$eq` matched the array, the validator
/// refused the write, and the job failed on every retry.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_array_reference_does_not_fail_the_real_sources_job() {
    let db = setup_painters("stuck_array").await;
    db.collection::<Document>("painters")
        .insert_one(doc! { "_id": 2_i64, "name": "p2", "avatar": null })
        .await
        .unwrap();
    insert_raw(
        &db,
        "canvases",
        vec![
            doc! { "_id": 20_i64, "painter_id": 2_i64, "painter_name": "p2" },
            doc! { "_id": 21_i64, "painter_id": [2_i64, 3_i64], "painter_name": "p2" },
        ],
    )
    .await;
    denormalized::update_one::<Painter>(&db, &2_i64, doc! { "$set": { "name": "p2 renamed" } })
        .await
        .unwrap();
    let report = Worker::new(&db).only([CANVAS_NAMES]).run_until_empty().await.unwrap();
    assert!(report.failures.is_empty(), "{report:?}");
    assert_eq!(get(&db, "canvases", 20).await.get_str("painter_name").unwrap(), "p2 renamed");
    assert_eq!(get(&db, "canvases", 21).await.get_str("painter_name").unwrap(), "p2");
    let reconciled = denormalized::reconcile(&db, spec(CANVAS_NAMES)).await.unwrap();
    assert_eq!(reconciled.skipped.len(), 1, "{reconciled:?}");
    assert_eq!(reconciled.skipped[0].id, Bson::Int64(21));
    assert_eq!(reconciled.skipped[0].reason, SkipReason::Reference);
    assert_eq!(get(&db, "canvases", 21).await.get_str("painter_name").unwrap(), "p2");
}

/// Foreign documents cannot stop a reconcile: an operator-document reference, a
/// document reference, and a source whose name is a number (the copy's validator
/// refuses it). The good copies converge, the refused one is reported once with its
/// `_id`, and nothing else is rewritten. (Before: the operator document inside `$in`
/// failed the whole reconcile, reported as a source error "no copy was touched".)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_stored_documents_do_not_stop_a_reconcile() {
    let db = setup_painters("stuck_hostile").await;
    insert_raw(
        &db,
        "painters",
        vec![
            doc! { "_id": 3_i64, "name": "p3", "avatar": null },
            doc! { "_id": 4_i64, "name": 42, "avatar": null },
        ],
    )
    .await;
    insert_raw(
        &db,
        "canvases",
        vec![
            doc! { "_id": 30_i64, "painter_id": 3_i64, "painter_name": "old" },
            doc! { "_id": 31_i64, "painter_id": { "$gt": 0_i64 }, "painter_name": "op" },
            doc! { "_id": 32_i64, "painter_id": 4_i64, "painter_name": "old" },
            doc! { "_id": 33_i64, "painter_id": { "k": 1_i64 }, "painter_name": "doc" },
            doc! { "_id": 34_i64, "painter_id": 3_i64, "painter_name": "old" },
        ],
    )
    .await;
    let report = denormalized::reconcile(&db, spec(CANVAS_NAMES)).await.unwrap();
    assert_eq!(get(&db, "canvases", 30).await.get_str("painter_name").unwrap(), "p3");
    assert_eq!(get(&db, "canvases", 34).await.get_str("painter_name").unwrap(), "p3");
    assert_eq!(get(&db, "canvases", 31).await.get_str("painter_name").unwrap(), "op");
    assert_eq!(get(&db, "canvases", 32).await.get_str("painter_name").unwrap(), "old");
    assert_eq!(get(&db, "canvases", 33).await.get_str("painter_name").unwrap(), "doc");
    let refused: Vec<&Bson> =
        report.skipped.iter().filter(|s| matches!(s.reason, SkipReason::Refused(_))).map(|s| &s.id).collect();
    assert_eq!(refused, [&Bson::Int64(32)], "{report:?}");
    let mut ids: Vec<String> = report.skipped.iter().map(|s| s.id.to_string()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), report.skipped.len(), "each document once: {report:?}");
    assert_eq!(report.documents_updated, 2, "{report:?}");
}

/// A source value that is a regex (another program's write) is a value to copy, not a
/// reason to stop: the stale-copy filter compares it under `$not: {$eq}` (the server
/// refuses a regex under `$ne`), so the reconcile finishes, the copy the validator
/// refuses is reported, and the other source's copies converge. (Before: `$ne` with
/// the regex was refused, and the whole reconcile failed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regex_source_value_does_not_stop_a_reconcile() {
    let db = setup_painters("stuck_regex").await;
    // `try_into`: bson 3 holds the pattern as a C string, bson 2 as a `String`.
    #[allow(clippy::unnecessary_fallible_conversions)]
    let regex = Bson::RegularExpression(docshape::bson::Regex {
        pattern: "^p".try_into().unwrap(),
        options: "".try_into().unwrap(),
    });
    insert_raw(
        &db,
        "painters",
        vec![
            doc! { "_id": 5_i64, "name": regex, "avatar": null },
            doc! { "_id": 6_i64, "name": "p6", "avatar": null },
        ],
    )
    .await;
    insert_raw(
        &db,
        "canvases",
        vec![
            doc! { "_id": 50_i64, "painter_id": 5_i64, "painter_name": "old" },
            doc! { "_id": 60_i64, "painter_id": 6_i64, "painter_name": "old" },
        ],
    )
    .await;
    let report = denormalized::reconcile(&db, spec(CANVAS_NAMES)).await.unwrap();
    assert_eq!(get(&db, "canvases", 60).await.get_str("painter_name").unwrap(), "p6");
    assert_eq!(get(&db, "canvases", 50).await.get_str("painter_name").unwrap(), "old");
    let refused: Vec<&Bson> =
        report.skipped.iter().filter(|s| matches!(s.reason, SkipReason::Refused(_))).map(|s| &s.id).collect();
    assert_eq!(refused, [&Bson::Int64(50)], "{report:?}");
}

/// Under a steady trickle of foreign renames (30, one per 100 ms), the watcher closes
/// its first batch within its `max_wait`, not after the trickle stops. (A batch used to
/// close only when full or when a `getMore` came back empty. Against the local test
/// server this test also passes with the deadline disabled, so it guards the bound but
/// does not reproduce the held-back batch; a server whose `getMore` answers each change
/// at once, as `mongod` does, is needed for that.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_trickle_does_not_hold_back_the_first_job() {
    const RENAMES: i64 = 30;
    let db = setup_writers("stuck_trickle").await;
    insert_writers(&db, 0..RENAMES, 1).await;
    let plain = plain_client(&db).await;
    let running = Running::start(
        Watcher::new(&db)
            .name("trickle")
            .only([STORIES])
            .max_await(Duration::from_millis(500))
            .max_wait(Duration::from_millis(300)),
    );
    until("the first position", Duration::from_secs(60), || async {
        position(&db, "trickle", "writers").await.is_some()
    })
    .await;
    let trickle = tokio::spawn(async move {
        let writers = plain.collection::<Document>("writers");
        for i in 0..RENAMES {
            writers
                .update_one(doc! { "_id": i }, doc! { "$set": { "name": format!("w{i} t") } })
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let started = Instant::now();
    until("the first job", Duration::from_secs(30), || async { !queue(&db).await.is_empty() }).await;
    let first = started.elapsed();
    let queued_then = queue(&db).await.len();
    trickle.await.unwrap();
    until("every job", Duration::from_secs(30), || async { queue(&db).await.len() == RENAMES as usize })
        .await;
    running.stop().await;
    assert!(first < Duration::from_millis(1500), "the first job was queued after {first:?}");
    assert!(queued_then < RENAMES as usize, "the first batch held the whole trickle ({queued_then} jobs)");
}

/// 1,000 copy documents written around the validator, a fifth of them hostile (a
/// reference that is an operator document, an array, a regex or JavaScript code, or
/// that names a source whose value the copy's type cannot store), and some good ones
/// with a copied value of the wrong type. A reconcile, a watcher's first start and a
/// worker's drain after renames each end; every good copy converges; every bad
/// document is reported once with its `_id` and none is rewritten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_hostile_documents_neither_stop_nor_corrupt_the_copies() {
    const GOOD_SOURCES: i64 = 100;
    const BAD_SOURCES: i64 = 20;
    let db = setup_painters("stuck_thousand").await;
    let mut painters: Vec<Document> =
        (0..GOOD_SOURCES).map(|i| doc! { "_id": i, "name": format!("p{i}"), "avatar": null }).collect();
    // Sources whose name the copy's type (a string) cannot store.
    painters.extend((0..BAD_SOURCES).map(|i| doc! { "_id": GOOD_SOURCES + i, "name": i, "avatar": null }));
    insert_raw(&db, "painters", painters).await;
    let mut canvases = Vec::new();
    let mut bad = std::collections::BTreeSet::new();
    let mut good: Vec<(i64, i64)> = Vec::new();
    for i in 0..1000_i64 {
        let painter = i % GOOD_SOURCES;
        let reference = match i % 10 {
            0..=4 => Bson::Int64(painter),
            // A good reference whose copy holds a value of another type.
            5 => Bson::Int64(painter),
            6 => Bson::Int64(GOOD_SOURCES + i % BAD_SOURCES),
            7 => Bson::Document(doc! { ["$gt", "$in", "$ne", "$where"][(i / 10 % 4) as usize]: painter }),
            8 => Bson::Array(vec![Bson::Int64(painter), Bson::Int64(999)]),
            _ if i % 20 == 9 => crate::access::literal::regex(&format!("^{painter}"), ""),
            _ => Bson::JavaScriptCode(format!("return {painter}")),
        };
        let copied = if i % 10 == 5 { Bson::Int64(i) } else { Bson::String(format!("old {i}")) };
        canvases.push(doc! { "_id": i, "painter_id": reference, "painter_name": copied });
        if i % 10 >= 6 {
            bad.insert(i);
        } else {
            good.push((i, painter));
        }
    }
    insert_raw(&db, "canvases", canvases.clone()).await;
    let original: std::collections::HashMap<i64, Document> =
        canvases.into_iter().map(|d| (d.get_i64("_id").unwrap(), d)).collect();
    let check = |when: &'static str, name: fn(i64) -> String| {
        let db = &db;
        let (bad, good, original) = (&bad, &good, &original);
        async move {
            let stored: Vec<Document> = {
                use futures_util::TryStreamExt;
                db.collection::<Document>("canvases")
                    .find(doc! {})
                    .await
                    .unwrap()
                    .try_collect()
                    .await
                    .unwrap()
            };
            assert_eq!(stored.len(), 1000);
            for d in stored {
                let id = d.get_i64("_id").unwrap();
                if bad.contains(&id) {
                    assert_eq!(&d, &original[&id], "{when}: a bad document was rewritten");
                }
            }
            for (id, painter) in good {
                let d = get(db, "canvases", *id).await;
                assert_eq!(d.get_str("painter_name").ok(), Some(name(*painter).as_str()), "{when}: {d}");
            }
        }
    };
    let reported_once = |when: &str, skipped: &[denormalized::Skipped]| {
        let ids: Vec<i64> = skipped.iter().map(|s| s.id.as_i64().unwrap()).collect();
        let unique: std::collections::BTreeSet<i64> = ids.iter().copied().collect();
        assert_eq!(
            unique.len(),
            ids.len(),
            "{when}: a document reported twice: {:?}",
            skipped
                .iter()
                .filter(|s| ids.iter().filter(|i| Bson::Int64(**i) == s.id).count() > 1)
                .take(4)
                .collect::<Vec<_>>()
        );
        assert_eq!(unique, bad, "{when}: the reported documents are the bad ones");
        for s in skipped {
            let id = s.id.as_i64().unwrap();
            let want_refused = id % 10 == 6;
            assert_eq!(matches!(s.reason, SkipReason::Refused(_)), want_refused, "{when}: {s:?}");
        }
    };

    // A reconcile.
    let report = denormalized::reconcile(&db, spec(CANVAS_NAMES)).await.unwrap();
    reported_once("reconcile", &report.skipped);
    check("after the reconcile", |p| format!("p{p}")).await;

    // A watcher's first start (no saved position: it reconciles first).
    db.collection::<Document>("canvases")
        .update_many(
            doc! { "painter_id": { "$type": "long" }, "_id": { "$mod": [10, 0] } },
            doc! { "$set": { "painter_name": "stale" } },
        )
        .bypass_document_validation(true)
        .await
        .unwrap();
    let running = Running::start(Watcher::new(&db).name("thousand").only([CANVAS_NAMES]));
    until("the first position", Duration::from_secs(120), || async {
        position(&db, "thousand", "painters").await.is_some()
    })
    .await;
    let watched = running.stop().await;
    let first: Vec<denormalized::Skipped> = watched
        .reconciles
        .iter()
        .flat_map(|r| r.copies.iter().flat_map(|c| c.skipped.iter().cloned()))
        .collect();
    reported_once("first start", &first);
    check("after the first start", |p| format!("p{p}")).await;

    // Renames through docshape's writer, then a worker's drain.
    for p in 0..GOOD_SOURCES {
        denormalized::update_one::<Painter>(&db, &p, doc! { "$set": { "name": format!("renamed {p}") } })
            .await
            .unwrap();
    }
    let drained = Worker::new(&db).only([CANVAS_NAMES]).run_until_empty().await.unwrap();
    assert!(drained.failures.is_empty(), "{drained:?}");
    assert_eq!(drained.jobs, GOOD_SOURCES as u64, "{drained:?}");
    check("after the drain", |p| format!("renamed {p}")).await;
}
