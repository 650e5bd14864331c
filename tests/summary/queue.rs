//! One refresh queue for copies and summaries: an async copy's job and an async
//! summary's job wait side by side in `docshape_refresh`, reported by the one lag
//! API, and one `denormalized::Worker` drains both; jobs written by another program
//! in the summaries' key space are run, reported or skipped, never looped on.

use std::time::Duration;

use docshape::denormalized::{self, Worker, QUEUE};
use docshape::refs::Ref;

use super::*;

/// A team: the source of its scores' `team_name` copy.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sq_teams")]
pub struct SqTeam {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// A score: holds an async copy of its team's name, and is the source of a summary.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sq_scores")]
#[index(keys(team_id))]
pub struct SqScore {
    #[serde(rename = "_id")]
    pub id: String,
    pub team_id: Ref<SqTeam>,
    #[denormalized(
        from = "SqTeam::name",
        via = "team_id",
        refresh = "async",
        max_stale = "5m",
        reason = "the score board shows team names without a lookup"
    )]
    pub team_name: String,
    pub player: String,
    pub points: i64,
}

/// Points per player, async.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sq_player_points")]
#[summary(of = SqScore, group(player), refresh = "async", max_stale = "5m")]
pub struct SqPlayerPoints {
    #[serde(rename = "_id")]
    pub player: String,
    #[summary(count)]
    pub scores: i64,
    #[summary(sum = "points")]
    pub points: i64,
}

const COPY: &str = "sq_scores.team_name";
const SUMMARY: &str = "sq_player_points";

fn score(id: &str, player: &str, points: i64) -> SqScore {
    SqScore {
        id: id.into(),
        team_id: Ref::new("t1".to_owned()),
        team_name: "Red".into(),
        player: player.into(),
        points,
    }
}

async fn jobs(db: &Database) -> Vec<Document> {
    db.collection::<Document>(QUEUE).find(doc! {}).await.unwrap().try_collect().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_drains_a_copy_job_and_a_summary_job_and_one_lag_reports_both() {
    let db = testkit::database("summary_one_queue").await.unwrap();
    docshape::relation::insert_one(&db, &mut SqTeam { id: "t1".into(), name: "Red".into() }).await.unwrap();
    for (id, player, points) in [("a", "p1", 3), ("b", "p1", 4), ("c", "p2", 5)] {
        docshape::relation::insert_one(&db, &mut score(id, player, points)).await.unwrap();
    }
    let renamed =
        denormalized::update_one::<SqTeam>(&db, "t1", doc! { "$set": { "name": "Blue" } }).await.unwrap();
    assert_eq!(renamed.jobs_enqueued(), 1);

    // Both kinds wait in the one queue, each job saying its kind.
    let queued = jobs(&db).await;
    let kinds = |kind: &str| queued.iter().filter(|j| j.get_str("kind").ok() == Some(kind)).count();
    assert_eq!((kinds("copy"), kinds("summary"), queued.len()), (1, 3, 4), "{queued:?}");
    let summary_job = queued.iter().find(|j| j.get_str("kind").ok() == Some("summary")).unwrap();
    let key = summary_job.get_document("_id").unwrap();
    assert_eq!(key.get_str("copy").unwrap(), summary::job_key(spec(SUMMARY)));
    assert_eq!(key.get_str("copy").unwrap(), "summary:sq_player_points");
    // Due within `max_stale` of the enqueue, as a copy's job is.
    let (enqueued, due) =
        (summary_job.get_datetime("enqueued_at").unwrap(), summary_job.get_datetime("due").unwrap());
    assert_eq!(due.timestamp_millis() - enqueued.timestamp_millis(), 300_000);

    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!(lag.pending, 4, "{lag:?}");
    assert_eq!(lag.by_copy.get(COPY).map(|l| l.pending), Some(1), "{lag:?}");
    assert_eq!(lag.by_summary.get(SUMMARY).map(|l| l.pending), Some(3), "{lag:?}");
    assert!(lag.by_summary.get(SUMMARY).unwrap().oldest_enqueued_at.is_some());
    assert_eq!((lag.overdue, lag.failing), (0, 0), "{lag:?}");
    assert!(one(&db, SUMMARY, "p1").await.is_none(), "nothing applied before a worker runs");

    let report = Worker::new(&db).id("both").run_until_empty().await.unwrap();
    assert_eq!(report.jobs, 4, "{report:?}");
    assert_eq!(report.documents_updated, 3, "three scores renamed: {report:?}");
    assert_eq!(report.groups_written, 3, "a group write per score: {report:?}");
    assert!(report.failures.is_empty() && report.skipped.is_empty(), "{report:?}");
    assert!(report.max_lag.is_some());

    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!(lag.pending, 0, "{lag:?}");
    assert!(lag.by_copy.is_empty() && lag.by_summary.is_empty(), "{lag:?}");
    let names: Vec<Document> = all(&db, "sq_scores").await;
    assert!(names.iter().all(|s| s.get_str("team_name").ok() == Some("Blue")), "{names:?}");
    let p1 = one(&db, SUMMARY, "p1").await.unwrap();
    assert_eq!((p1.get_i64("scores").unwrap(), p1.get_i64("points").unwrap()), (2, 7));
    let p2 = one(&db, SUMMARY, "p2").await.unwrap();
    assert_eq!((p2.get_i64("scores").unwrap(), p2.get_i64("points").unwrap()), (1, 5));
    assert!(summary::check(&db, spec(SUMMARY)).await.unwrap().drifted.is_empty());

    // `only` takes a summary's job key like a copy's: the copy's new job is left.
    denormalized::update_one::<SqTeam>(&db, "t1", doc! { "$set": { "name": "Green" } }).await.unwrap();
    docshape::relation::insert_one(&db, &mut score("d", "p2", 1)).await.unwrap();
    let report = Worker::new(&db).only(["summary:sq_player_points"]).run_until_empty().await.unwrap();
    assert_eq!((report.jobs, report.groups_written, report.documents_updated), (1, 1, 0), "{report:?}");
    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!((lag.pending, lag.by_copy.get(COPY).map(|l| l.pending)), (1, Some(1)), "{lag:?}");
    assert_eq!(one(&db, SUMMARY, "p2").await.unwrap().get_i64("points").unwrap(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_summary_jobs_are_run_reported_or_skipped_and_the_run_ends() {
    let db = testkit::database("summary_queue_hostile").await.unwrap();
    docshape::relation::insert_one(&db, &mut SqTeam { id: "t1".into(), name: "Red".into() }).await.unwrap();
    // Written around docshape: nothing queued it.
    db.collection::<Document>("sq_scores")
        .insert_one(doc! { "_id": "a", "team_id": "t1", "team_name": "Red", "player": "p1", "points": 3_i64 })
        .await
        .unwrap();
    let queue = db.collection::<Document>(QUEUE);
    queue
        .insert_many([
            // Another program's job for a real source document, every field but its key
            // of a foreign shape: run, and acknowledged by its stored `seq`.
            doc! { "_id": { "copy": "summary:sq_player_points", "id": "a" }, "seq": "x", "kind": 12,
            "due": "tomorrow", "enqueued_at": "now", "lease_until": "never" },
            // An operator-shaped source id: a value, never a filter (nothing matches it).
            doc! { "_id": { "copy": "summary:sq_player_points", "id": { "$gt": "" } }, "seq": 1_i64 },
            // No source id: malformed, reported, left for a lease.
            doc! { "_id": { "copy": "summary:sq_player_points" }, "seq": 1_i64 },
            // A summary this program does not link: skipped, left for a worker that does.
            doc! { "_id": { "copy": "summary:nope", "id": "a" }, "seq": 1_i64 },
        ])
        .await
        .unwrap();
    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!(lag.by_summary.get(SUMMARY).map(|l| (l.pending, l.undated)), Some((3, 3)), "{lag:?}");
    assert_eq!(lag.by_summary.get("nope").map(|l| l.pending), Some(1), "{lag:?}");

    let report = tokio::time::timeout(Duration::from_secs(60), Worker::new(&db).run_until_empty())
        .await
        .expect("the run ends")
        .unwrap();
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    assert_eq!((report.skipped[0].copy.as_str(), report.skipped[0].jobs), ("summary:nope", 1));
    let malformed = report
        .failures
        .iter()
        .filter(|f| matches!(f.error, denormalized::CopyError::MalformedJob { .. }))
        .count();
    assert_eq!(malformed, 1, "{report:?}");
    // The two jobs naming a source id ran (the operator-shaped one, as an id no source
    // document has, or as a failure recorded on it); the foreign `seq` acknowledged.
    assert!(report.jobs >= 2 || report.failures.len() == 2, "{report:?}");
    let p1 = one(&db, SUMMARY, "p1").await.unwrap();
    assert_eq!((p1.get_i64("scores").unwrap(), p1.get_i64("points").unwrap()), (1, 3));
    let left: Vec<Document> = jobs(&db).await;
    assert!(
        !left.iter().any(|j| j.get_document("_id").ok().and_then(|k| k.get_str("id").ok()) == Some("a")
            && j.get_document("_id").unwrap().get_str("copy").ok() == Some("summary:sq_player_points")),
        "{left:?}"
    );
    assert!(summary::check(&db, spec(SUMMARY)).await.unwrap().drifted.is_empty());
    // A second run ends too, the failed jobs waiting out their lease.
    let again = Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(again.jobs, 0, "{again:?}");
}

/// A worker claims jobs that a running transaction has queued, and so holds until its
/// commit, while the transaction goes on queueing others (every async summary of each
/// source write it makes): the claim waits for the commit, and the transaction's next
/// writes to the queue are not held by the claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claim_of_jobs_a_running_transaction_queued_waits_for_its_commit_and_holds_nothing() {
    use std::sync::Arc;
    let db = setup("summary_queue_claim_in_transaction").await;
    for id in ["o1", "o2"] {
        let mut o = order(id, "c", "2026-08-05T10:00:00Z", vec![item("s0", "a", 1, 100)]);
        docshape::relation::insert_one(&db, &mut o).await.unwrap();
    }
    // o1's and o2's jobs are queued and committed: the transaction below increments them.
    let claiming = Arc::new(tokio::sync::Notify::new());
    let worker = tokio::spawn({
        let (db, claiming) = ((*db).clone(), claiming.clone());
        async move {
            claiming.notified().await;
            Worker::new(&db).jobs_per_claim(8).run_until_empty().await
        }
    });
    let source = &*db;
    let written = tokio::time::timeout(
        Duration::from_secs(60),
        docshape::transaction(db.client(), |tx| {
            let claiming = claiming.clone();
            Box::pin(async move {
                Order::add_item("o1", item("s1", "b", 2, 300)).session(tx).run(source).await?;
                // The worker claims o1's jobs, which this transaction has written.
                claiming.notify_one();
                tokio::time::sleep(Duration::from_millis(500)).await;
                Order::add_item("o2", item("s2", "c", 3, 400)).session(tx).run(source).await
            })
        }),
    )
    .await
    .expect("the transaction's next queueing is not held by a claim waiting for the transaction");
    written.unwrap();
    let report = tokio::time::timeout(Duration::from_secs(60), worker)
        .await
        .expect("the claim ends once the transaction has committed")
        .unwrap()
        .unwrap();
    assert!(report.failures.is_empty(), "{report:?}");
    let rest = Worker::new(&db).run_until_empty().await.unwrap();
    assert!(rest.failures.is_empty(), "{rest:?}");
    assert_eq!(denormalized::lag(&db).await.unwrap().pending, 0);
    assert_no_drift(&db).await;
    let s1 = one(&db, "sm_seller_sales", "s1").await.unwrap();
    assert_eq!(s1.get_i64("units").unwrap(), 2, "{s1:?}");
}
