//! Deleted sources, deleted by another program: each copy's `on_delete` (keep, clear
//! by `$unset`, clear by `null`, report), through the watcher and the workers, and
//! through a reconcile; a source inserted again under the same `_id`; and a sync copy
//! repaired after a rename made around docshape.

use bson::{doc, Document};
use docshape::bson;
use docshape::denormalized::{self, Cleared, CopyError, OnDelete, Watcher, Worker, QUEUE};
use docshape::refs::Ref;
use docshape::Model;
use mongodb::Database;
use serde::{Deserialize, Serialize};

use super::watcher::{plain_client, position, setup_writers, until, Running, Writer};
use super::*;

/// Four copies of the writer's name, one per policy.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "reviews")]
#[index(keys(writer_id))]
pub struct Review {
    #[serde(rename = "_id")]
    pub id: i64,
    pub writer_id: Ref<Writer>,
    /// The default: the last name stays.
    #[denormalized(from = "Writer::name", via = "writer_id", refresh = "async", max_stale = "5m")]
    pub kept: String,
    /// Removed: the field may be absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[denormalized(
        from = "Writer::name",
        via = "writer_id",
        refresh = "async",
        max_stale = "5m",
        on_delete = "clear"
    )]
    pub cleared: Option<String>,
    /// Set to null: the field is always written. A sync copy.
    #[denormalized(from = "Writer::name", via = "writer_id", refresh = "sync", on_delete = "clear")]
    pub nulled: Option<String>,
    /// The job fails, naming the deleted source, while reviews reference it.
    #[denormalized(
        from = "Writer::name",
        via = "writer_id",
        refresh = "async",
        max_stale = "5m",
        on_delete = "report"
    )]
    pub reported: String,
}

const KEPT: &str = "reviews.kept";
const CLEARED: &str = "reviews.cleared";
const NULLED: &str = "reviews.nulled";
const REPORTED: &str = "reviews.reported";
const REVIEW_COPIES: [&str; 4] = [CLEARED, KEPT, NULLED, REPORTED];

async fn setup_reviews(hint: &str) -> testkit::TestDb {
    let db = setup_writers(hint).await;
    docshape::sync::<Review>(&db).await.unwrap();
    db
}

/// Writer `id` named `w<id>`, and `n` reviews of it (ids from `first`) with every copy
/// in line, written through the model (so the validator sees what serde writes).
async fn writer_with_reviews(db: &Database, id: i64, first: i64, n: i64) {
    let name = format!("w{id}");
    Writer::collection(db).insert_one(Writer { id, name: name.clone(), bio: None, visits: 0 }).await.unwrap();
    let reviews = (first..first + n).map(|r| Review {
        id: r,
        writer_id: Ref::new(id),
        kept: name.clone(),
        cleared: Some(name.clone()),
        nulled: Some(name.clone()),
        reported: name.clone(),
    });
    Review::collection(db).insert_many(reviews).await.unwrap();
}

async fn review(db: &Database, id: i64) -> Document {
    db.collection::<Document>("reviews").find_one(doc! { "_id": id }).await.unwrap().unwrap()
}

fn copies_of(review: &Document) -> [Option<&Bson>; 4] {
    ["kept", "cleared", "nulled", "reported"].map(|f| review.get(f))
}

#[test]
fn the_policies_are_registered() {
    let policy = |key: &str| denormalized::copies().into_iter().find(|c| c.key() == key).unwrap().on_delete;
    assert_eq!(policy(KEPT), OnDelete::Keep);
    assert_eq!(policy(CLEARED), OnDelete::Clear(Cleared::Unset));
    assert_eq!(policy(NULLED), OnDelete::Clear(Cleared::Null));
    assert_eq!(policy(REPORTED), OnDelete::Report);
    assert_eq!(policy(STORIES_KEY), OnDelete::Keep, "keep is the default");
}

const STORIES_KEY: &str = super::watcher::STORIES;

/// A writer deleted by another program while a watcher and a worker run: `keep`
/// keeps, `clear` unsets or nulls as the validator wants, `report` fails its job with
/// `SourceDeleted` until no review references the writer. The writer inserted again
/// under the same `_id` fills every copy again; a rename made around docshape reaches
/// the sync copy too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_source_under_each_policy() {
    let db = setup_reviews("watch_deleted").await;
    writer_with_reviews(&db, 1, 100, 3).await;
    writer_with_reviews(&db, 2, 200, 1).await;
    let plain = plain_client(&db).await;
    let running = Running::start(
        Watcher::new(&db).name("deletes").only(REVIEW_COPIES).max_await(Duration::from_millis(50)),
    );
    until("the first position", Duration::from_secs(60), || async {
        position(&db, "deletes", "writers").await.is_some()
    })
    .await;
    let worker = Worker::new(&db).id("deletes-worker").only(REVIEW_COPIES).lease(Duration::from_millis(300));
    let working = tokio::spawn({
        let worker = worker.clone();
        async move { worker.run(Duration::from_millis(20)).await }
    });

    plain.collection::<Document>("writers").delete_one(doc! { "_id": 1_i64 }).await.unwrap();
    // A rename of another writer: the stream delivers it after the delete.
    plain
        .collection::<Document>("writers")
        .update_one(doc! { "_id": 2_i64 }, doc! { "$set": { "name": "w2 renamed" } })
        .await
        .unwrap();
    until("the rename of writer 2", Duration::from_secs(60), || async {
        let r = review(&db, 200).await;
        copies_of(&r).iter().all(|v| v.and_then(|v| v.as_str()) == Some("w2 renamed"))
    })
    .await;
    until("the copies of writer 1 cleared", Duration::from_secs(60), || async {
        let r = review(&db, 100).await;
        r.get("cleared").is_none() && r.get("nulled") == Some(&Bson::Null)
    })
    .await;
    until("the report", Duration::from_secs(60), || async {
        queue(&db).await.iter().any(|j| j.get_i64("failures").unwrap_or(0) > 0)
    })
    .await;
    for id in 100..103 {
        let r = review(&db, id).await;
        assert_eq!(r.get_str("kept").unwrap(), "w1", "keep keeps");
        assert_eq!(r.get_str("reported").unwrap(), "w1", "report keeps too");
        assert!(r.get("cleared").is_none(), "cleared by $unset: {r}");
        assert_eq!(r.get("nulled"), Some(&Bson::Null), "cleared by null: {r}");
    }
    // The cleared reviews are still valid reviews.
    let read = Review::collection(&db).find_one(doc! { "_id": 100_i64 }).await.unwrap().unwrap();
    assert_eq!((read.cleared, read.nulled), (None, None));
    // A job is acknowledged after its copies are written, so the copies above can be
    // seen while the worker still holds their jobs (under load, past a 300 ms lease:
    // claimed again): wait for the acknowledgements, bounded.
    until("the other jobs acknowledged", Duration::from_secs(60), || async { queue(&db).await.len() == 1 })
        .await;
    let jobs = queue(&db).await;
    assert_eq!(jobs.len(), 1, "only the report is left: {jobs:?}");
    assert_eq!(jobs[0].get_document("_id").unwrap(), &doc! { "copy": REPORTED, "id": 1_i64 });
    let error = jobs[0].get_str("last_error").unwrap();
    assert!(error.contains("deleted") && error.contains("3 documents"), "{error}");
    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!(lag.by_copy[REPORTED].pending, 1);

    // Writer 1 comes back under the same `_id`: every copy follows it.
    plain
        .collection::<Document>("writers")
        .insert_one(doc! { "_id": 1_i64, "name": "w1 back", "visits": 0_i64 })
        .await
        .unwrap();
    until("writer 1's copies back", Duration::from_secs(60), || async {
        let r = review(&db, 101).await;
        copies_of(&r).iter().all(|v| v.and_then(|v| v.as_str()) == Some("w1 back"))
    })
    .await;
    until("the queue drained", Duration::from_secs(60), || async { queue(&db).await.is_empty() }).await;

    // Deleted again, then its reviews deleted: the report's job completes.
    plain.collection::<Document>("writers").delete_one(doc! { "_id": 1_i64 }).await.unwrap();
    until("the second report", Duration::from_secs(60), || async {
        queue(&db).await.iter().any(|j| j.get_i64("failures").unwrap_or(0) > 0)
    })
    .await;
    plain.collection::<Document>("reviews").delete_many(doc! { "writer_id": 1_i64 }).await.unwrap();
    until("the report's job completed", Duration::from_secs(60), || async { queue(&db).await.is_empty() })
        .await;

    working.abort();
    let report = running.stop().await;
    assert!(report.jobs_enqueued > 0, "{report:?}");
}

/// A reconcile (after a lost position, or run on demand) applies `on_delete` to the
/// copies of sources deleted while no watcher ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_applies_each_policy() {
    let db = setup_reviews("watch_reconcile_deleted").await;
    writer_with_reviews(&db, 3, 300, 2).await;
    writer_with_reviews(&db, 4, 400, 1).await;
    let plain = plain_client(&db).await;
    plain.collection::<Document>("writers").delete_one(doc! { "_id": 3_i64 }).await.unwrap();
    plain
        .collection::<Document>("writers")
        .update_one(doc! { "_id": 4_i64 }, doc! { "$set": { "name": "w4 renamed" } })
        .await
        .unwrap();
    let mut by_copy = std::collections::BTreeMap::new();
    for key in REVIEW_COPIES {
        let spec = denormalized::copies().into_iter().find(|c| c.key() == key).unwrap();
        by_copy.insert(key, denormalized::reconcile(&db, spec).await.unwrap());
    }
    for key in REVIEW_COPIES {
        let done = &by_copy[key];
        assert_eq!(done.documents_seen, 3, "{key}");
        assert_eq!(done.sources_missing, 1, "{key}: {done:?}");
    }
    assert_eq!(by_copy[KEPT].documents_updated, 1, "only the rename");
    assert_eq!(by_copy[CLEARED].documents_updated, 3);
    assert_eq!(by_copy[NULLED].documents_updated, 3);
    assert_eq!((by_copy[REPORTED].documents_updated, by_copy[REPORTED].jobs_enqueued), (1, 1));
    for id in [300, 301] {
        let r = review(&db, id).await;
        assert_eq!((r.get_str("kept").unwrap(), r.get_str("reported").unwrap()), ("w3", "w3"));
        assert!(r.get("cleared").is_none());
        assert_eq!(r.get("nulled"), Some(&Bson::Null));
    }
    let r = review(&db, 400).await;
    assert!(copies_of(&r).iter().all(|v| v.and_then(|v| v.as_str()) == Some("w4 renamed")), "{r}");
    let jobs = queue(&db).await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].get_document("_id").unwrap(), &doc! { "copy": REPORTED, "id": 3_i64 });

    // The worker reports it: the job fails with the typed error.
    let report = Worker::new(&db).only([REPORTED]).run_until_empty().await.unwrap();
    assert_eq!(report.failures.len(), 1);
    assert!(
        matches!(&report.failures[0].error, CopyError::SourceDeleted { documents: 2, .. }),
        "{:?}",
        report.failures[0].error
    );
    assert_eq!(count(&db, QUEUE, doc! {}).await, 1, "the report stays queued");
    // A second reconcile finds nothing more to write.
    let spec = denormalized::copies().into_iter().find(|c| c.key() == CLEARED).unwrap();
    assert_eq!(denormalized::reconcile(&db, spec).await.unwrap().documents_updated, 0);
    let never = denormalized::copies().into_iter().find(|c| c.key() == ORDERS).unwrap();
    assert!(matches!(denormalized::reconcile(&db, never).await, Err(CopyError::UnknownCopy { .. })));
}

/// The source collection dropped by another program ends the stream: the watcher
/// reconciles (every writer is gone: the `clear` copies are cleared) and watches the
/// collection again, so a writer inserted afterwards reaches its copies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_source_collection_is_reconciled_and_watched_again() {
    let db = setup_reviews("watch_dropped").await;
    writer_with_reviews(&db, 5, 500, 2).await;
    let plain = plain_client(&db).await;
    let running =
        Running::start(Watcher::new(&db).name("drops").only([CLEARED]).max_await(Duration::from_millis(50)));
    until("the first position", Duration::from_secs(60), || async {
        position(&db, "drops", "writers").await.is_some()
    })
    .await;
    plain.collection::<Document>("writers").drop().await.unwrap();
    until("the copies cleared", Duration::from_secs(60), || async {
        review(&db, 500).await.get("cleared").is_none() && review(&db, 501).await.get("cleared").is_none()
    })
    .await;
    plain
        .collection::<Document>("writers")
        .insert_one(doc! { "_id": 5_i64, "name": "w5 again", "visits": 0_i64 })
        .await
        .unwrap();
    until("the insert's job", Duration::from_secs(60), || async {
        queue(&db)
            .await
            .iter()
            .any(|j| j.get_document("_id").ok() == Some(&doc! { "copy": CLEARED, "id": 5_i64 }))
    })
    .await;
    let report = running.stop().await;
    let reasons: Vec<&denormalized::ReconcileReason> = report.reconciles.iter().map(|r| &r.reason).collect();
    assert_eq!(
        reasons,
        [&denormalized::ReconcileReason::FirstStart, &denormalized::ReconcileReason::Invalidated]
    );
    assert_eq!(report.reconciles[1].copies[0].documents_updated, 2);
    Worker::new(&db).only([CLEARED]).run_until_empty().await.unwrap();
    assert_eq!(review(&db, 500).await.get_str("cleared").unwrap(), "w5 again");
    assert_eq!(
        review(&db, 501).await.get_str("kept").unwrap(),
        "w5",
        "the other copies are not this watcher's"
    );
}
