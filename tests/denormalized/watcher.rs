//! The watcher on a real server: sources renamed by a plain driver client reach their
//! copies through change streams, the queue and the workers; an aborted watcher
//! resumes from its stored position; a lost position reconciles; a change that
//! touches no copied field enqueues nothing; a standalone server is a typed error.

use docshape::bson;
use std::time::Instant;

use bson::{doc, Bson, Document};
use docshape::denormalized::{
    self, CopyError, ReconcileReason, WatchReport, Watcher, Worker, WATCH_POSITIONS,
};
use docshape::refs::Ref;
use docshape::Model;
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::Database;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::*;

/// A source whose name is copied into stories.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "writers")]
pub struct Writer {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bio: Option<String>,
    pub visits: i64,
}

/// An async copy of the writer's name, stale at most five minutes.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "stories")]
#[index(keys(writer_id))]
pub struct Story {
    #[serde(rename = "_id")]
    pub id: i64,
    pub writer_id: Ref<Writer>,
    #[denormalized(from = "Writer::name", via = "writer_id", refresh = "async", max_stale = "5m")]
    pub writer_name: String,
}

pub const STORIES: &str = "stories.writer_name";

/// A database with the writers and stories (collections, validators, indexes).
pub async fn setup_writers(hint: &str) -> testkit::TestDb {
    let db = testkit::database(hint).await.unwrap();
    docshape::sync::<Writer>(&db).await.unwrap();
    docshape::sync::<Story>(&db).await.unwrap();
    db
}

/// The same database through a client of its own: a program that is not docshape.
pub async fn plain_client(db: &Database) -> Database {
    let client = testkit::server().unwrap().client().await.unwrap();
    client.database(db.name())
}

/// Writers `ids` named `w<id>`, and `per` stories of each (ids `writer * per + k`),
/// 1,000 per command.
pub async fn insert_writers(db: &Database, ids: std::ops::Range<i64>, per: i64) {
    let all: Vec<i64> = ids.collect();
    for chunk in all.chunks(1000) {
        db.collection::<Document>("writers")
            .insert_many(chunk.iter().map(|i| doc! { "_id": *i, "name": format!("w{i}"), "visits": 0_i64 }))
            .await
            .unwrap();
    }
    let stories: Vec<Document> = all
        .iter()
        .flat_map(|i| {
            (0..per)
                .map(move |k| doc! { "_id": i * per + k, "writer_id": *i, "writer_name": format!("w{i}") })
        })
        .collect();
    for chunk in stories.chunks(1000) {
        db.collection::<Document>("stories").insert_many(chunk.to_vec()).await.unwrap();
    }
}

/// Renames writers `ids` to `w<id> <suffix>` with one `update` command of one
/// statement per writer.
async fn rename_writers(plain: &Database, ids: &[i64], suffix: &str) {
    let updates: Vec<Document> = ids
        .iter()
        .map(|i| doc! { "q": { "_id": *i }, "u": { "$set": { "name": format!("w{i} {suffix}") } } })
        .collect();
    let reply = plain.run_command(doc! { "update": "writers", "updates": updates }).await.unwrap();
    assert_eq!(reply.get_i32("nModified").unwrap() as usize, ids.len(), "{reply}");
}

/// A running watcher, stopped cleanly by [`Running::stop`] or aborted.
pub struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<WatchReport, CopyError>>,
}

impl Running {
    pub fn start(watcher: Watcher) -> Self {
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            watcher
                .run_until(async {
                    let _ = stopped.await;
                })
                .await
        });
        Self { stop, task }
    }

    pub async fn stop(self) -> WatchReport {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap()
    }

    pub async fn abort(self) {
        self.task.abort();
        assert!(self.task.await.unwrap_err().is_cancelled());
    }
}

/// Polls `check` every 20 ms until it holds; fails the test after `limit`.
pub async fn until<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The watcher's stored position for `source`.
pub async fn position(db: &Database, name: &str, source: &str) -> Option<Document> {
    db.collection::<Document>(WATCH_POSITIONS)
        .find_one(doc! { "_id": { "watcher": name, "source": source } })
        .await
        .unwrap()
}

fn spawn_worker(db: &Database, id: &str) -> JoinHandle<Result<(), CopyError>> {
    let worker = Worker::new(db).id(id).batch(100).only([STORIES]);
    tokio::spawn(async move { worker.run(Duration::from_millis(20)).await })
}

/// Stories whose copy is not `w<writer_id> <suffix>`.
async fn stale_stories(db: &Database, suffix: &str) -> Vec<Document> {
    let stories: Vec<Document> =
        db.collection::<Document>("stories").find(doc! {}).await.unwrap().try_collect().await.unwrap();
    stories
        .into_iter()
        .filter(|s| {
            let id = s.get_i64("writer_id").unwrap();
            s.get_str("writer_name").ok() != Some(format!("w{id} {suffix}").as_str())
        })
        .collect()
}

/// The acceptance test of the watcher: 2,000 renames written by another program in
/// batches (40 rounds over 50 writers with 20 stories each), while one watcher and
/// two workers run; the watcher, in batches of 100 changes (ten batches a half), is
/// aborted after the first half and restarted: every story converges on its writer's
/// last name, and the lag measured from the restart on stays within `max_stale`.
///
/// (The renames of one writer meet in one job: the queue holds at most one per writer.
/// The local test server looks up a document-valued `_id` by a collection scan, so a
/// queue of thousands of distinct jobs is slow there, though not on `mongod`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_renames_by_another_client_converge_through_an_aborted_watcher() {
    const WRITERS: i64 = 50;
    const STORIES_EACH: i64 = 20;
    const ROUNDS: usize = 40;
    let db = setup_writers("watch_renames").await;
    let started = Instant::now();
    insert_writers(&db, 0..WRITERS, STORIES_EACH).await;
    eprintln!("inserted {WRITERS} writers and {} stories in {:?}", WRITERS * STORIES_EACH, started.elapsed());
    let plain = plain_client(&db).await;

    let watcher = || Watcher::new(&db).name("feed").only([STORIES]).batch(100);
    let first = Running::start(watcher());
    // The first start reconciles (nothing is stale) and saves its position.
    until("the first position", Duration::from_secs(120), || async {
        position(&db, "feed", "writers").await.is_some()
    })
    .await;
    eprintln!("first start reconciled the stories in {:?}", started.elapsed());
    let workers = [spawn_worker(&db, "refresher-1"), spawn_worker(&db, "refresher-2")];

    let renaming = Instant::now();
    let ids: Vec<i64> = (0..WRITERS).collect();
    for round in 0..ROUNDS / 2 {
        rename_writers(&plain, &ids, &format!("r{round}")).await;
    }
    // Abort once the watcher has processed part of the first half.
    until("the watcher's first batch", Duration::from_secs(120), || async {
        position(&db, "feed", "writers").await.is_some_and(|p| p.get_datetime("last_change_at").is_ok())
    })
    .await;
    first.abort().await;
    eprintln!("watcher aborted after {:?}", renaming.elapsed());

    // The second half is written while no watcher runs.
    for round in ROUNDS / 2..ROUNDS {
        rename_writers(&plain, &ids, &format!("r{round}")).await;
    }
    let last = format!("r{}", ROUNDS - 1);
    eprintln!("{} renames written in {:?}", ROUNDS as i64 * WRITERS, renaming.elapsed());

    let restarted = Instant::now();
    let second = Running::start(watcher());
    let mut worst = Duration::ZERO;
    let mut printed = Instant::now();
    let deadline = Instant::now() + MAX_STALE;
    loop {
        let lag = denormalized::lag(&db).await.unwrap();
        let watched = lag.watchers.iter().find(|w| w.watcher == "feed" && w.source == "writers").unwrap();
        let measured = watched.behind.unwrap_or_default() + lag.oldest_age.unwrap_or_default();
        worst = worst.max(measured);
        if printed.elapsed() > Duration::from_secs(10) {
            eprintln!(
                "{:?} after the restart: {} jobs pending, watcher {watched:?}",
                restarted.elapsed(),
                lag.pending
            );
            printed = Instant::now();
        }
        // Polled gently: this reads every story.
        if lag.pending == 0 && watched.caught_up && stale_stories(&db, &last).await.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "not converged within max_stale: {lag:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    eprintln!(
        "converged {:?} after the restart ({:?} after the first rename); worst lag measured {worst:?}",
        restarted.elapsed(),
        renaming.elapsed()
    );
    assert!(worst <= MAX_STALE, "lag {worst:?} over max_stale");
    let report = second.stop().await;
    assert!(report.reconciles.is_empty(), "the restart resumed from its position: {:?}", report.reconciles);
    assert!(report.changes >= (ROUNDS as u64 / 2) * WRITERS as u64, "the second half at least: {report:?}");
    eprintln!("the restarted watcher: {report:?}");
    for worker in workers {
        worker.abort();
    }
    assert!(stale_stories(&db, &last).await.is_empty());
    assert_eq!(count(&db, "stories", doc! {}).await, (WRITERS * STORIES_EACH) as u64);
}

/// A change that touches no copied field (another field, an unset of another field)
/// enqueues nothing: a later rename of another writer, which the stream delivers
/// after them, is the only job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_to_other_fields_enqueue_nothing() {
    let db = setup_writers("watch_other_fields").await;
    insert_writers(&db, 0..3, 1).await;
    let plain = plain_client(&db).await;
    let running =
        Running::start(Watcher::new(&db).name("other").only([STORIES]).max_await(Duration::from_millis(50)));
    until("the first position", Duration::from_secs(60), || async {
        position(&db, "other", "writers").await.is_some()
    })
    .await;
    let writers = plain.collection::<Document>("writers");
    writers.update_one(doc! { "_id": 0_i64 }, doc! { "$inc": { "visits": 1 } }).await.unwrap();
    writers.update_one(doc! { "_id": 0_i64 }, doc! { "$set": { "bio": "b" } }).await.unwrap();
    writers
        .update_one(doc! { "_id": 1_i64 }, doc! { "$unset": { "bio": "" }, "$inc": { "visits": 2 } })
        .await
        .unwrap();
    writers.update_one(doc! { "_id": 2_i64 }, doc! { "$set": { "name": "w2 renamed" } }).await.unwrap();
    until("the rename's job", Duration::from_secs(60), || async { !queue(&db).await.is_empty() }).await;
    let report = running.stop().await;
    let jobs = queue(&db).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].get_document("_id").unwrap(), &doc! { "copy": STORIES, "id": 2_i64 });
    assert_eq!(jobs[0].get_i64("seq").unwrap(), 1);
    assert_eq!(report.changes, 4, "{report:?}");
    assert_eq!(report.ignored, 3, "{report:?}");
    assert_eq!(report.jobs_enqueued, 1, "{report:?}");
}

/// A rename through `denormalized::update_one` while a watcher runs: the call enqueues the
/// job, the watcher sees the same write and enqueues it again, and the two meet in one
/// job (its `seq` moved on), which one worker run completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_of_the_watcher_and_of_update_one_meet_in_one_job() {
    let db = setup_writers("watch_same_job").await;
    insert_writers(&db, 0..2, 300).await;
    let running =
        Running::start(Watcher::new(&db).name("same").only([STORIES]).max_await(Duration::from_millis(50)));
    until("the first position", Duration::from_secs(60), || async {
        position(&db, "same", "writers").await.is_some()
    })
    .await;
    let done =
        denormalized::update_one::<Writer>(&db, &1, doc! { "$set": { "name": "w1 renamed" } }).await.unwrap();
    // The reviews' async copies of the name are queued too (this test's watcher and
    // worker leave them alone).
    let story = done.copies.iter().find(|c| c.copy.key() == STORIES).unwrap();
    assert_eq!(story.action, denormalized::CopyAction::Enqueued);
    let story_jobs = || async {
        let jobs = queue(&db).await;
        jobs.into_iter()
            .filter(|j| j.get_document("_id").is_ok_and(|k| k.get_str("copy").ok() == Some(STORIES)))
            .collect::<Vec<_>>()
    };
    until("the watcher's enqueue of the same write", Duration::from_secs(60), || async {
        story_jobs().await.first().and_then(|j| j.get_i64("seq").ok()) == Some(2)
    })
    .await;
    let report = running.stop().await;
    assert_eq!(report.jobs_enqueued, 1, "{report:?}");
    let jobs = story_jobs().await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].get_document("_id").unwrap(), &doc! { "copy": STORIES, "id": 1_i64 });
    let refreshed = Worker::new(&db).only([STORIES]).run_until_empty().await.unwrap();
    assert_eq!((refreshed.jobs, refreshed.documents_updated, refreshed.requeued), (1, 300, 0));
    assert_eq!(count(&db, "stories", doc! { "writer_name": "w1 renamed" }).await, 300);
    assert_eq!(count(&db, "stories", doc! { "writer_id": 0_i64, "writer_name": "w0" }).await, 300);
}

/// A lost position (the stored token deleted, or one the server refuses) makes the
/// next start reconcile every copy, fixing the ones made stale while no watcher ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_position_reconciles_every_stale_copy() {
    // 120 writers in reconcile batches of 50: three batches, the last one short, as
    // 1,200 in the default batches of 500 would be, for a tenth of the documents.
    const WRITERS: i64 = 120;
    let db = setup_writers("watch_lost_position").await;
    insert_writers(&db, 0..WRITERS, 1).await;
    let plain = plain_client(&db).await;
    let watcher =
        || Watcher::new(&db).name("lost").only([STORIES]).batch(50).max_await(Duration::from_millis(50));

    let first = Running::start(watcher());
    until("the first position", Duration::from_secs(60), || async {
        position(&db, "lost", "writers").await.is_some()
    })
    .await;
    let report = first.stop().await;
    assert_eq!(report.reconciles.len(), 1);
    assert_eq!(report.reconciles[0].reason, ReconcileReason::FirstStart);
    assert_eq!(report.reconciles[0].copies[0].documents_seen, WRITERS as u64);
    assert_eq!(report.reconciles[0].copies[0].documents_updated, 0);

    let positions = db.collection::<Document>(WATCH_POSITIONS);
    let key = doc! { "_id": { "watcher": "lost", "source": "writers" } };
    // A token in the local server's own layout for a point before its oldest oplog
    // entry: the history is gone (`ChangeStreamHistoryLost`, 286). `mongod` refuses the
    // same token as invalid: a lost position too.
    let before_history = docshape::bson_compat::to_vec(&doc! {
        "s": 0_i64,
        "t": bson::Timestamp { time: 1, increment: 1 },
        "n": format!("{}.writers", db.name()),
        "k": {},
    })
    .unwrap();
    let hex: String = before_history.iter().map(|b| format!("{b:02x}")).collect();
    let refusals: [(&str, Option<Bson>); 4] = [
        ("deleted", None),
        ("not a token", Some(Bson::String("garbage".into()))),
        ("refused by the server", Some(Bson::Document(doc! { "_data": "zz" }))),
        ("history lost", Some(Bson::Document(doc! { "_data": hex.clone() }))),
    ];
    for (round, (what, token)) in refusals.into_iter().enumerate() {
        let suffix = format!("r{round}");
        // Stale copies no watcher saw: every writer renamed while it was stopped...
        let ids: Vec<i64> = (0..WRITERS).collect();
        for chunk in ids.chunks(60) {
            rename_writers(&plain, chunk, &suffix).await;
        }
        // ...and a copy written wrong by another program.
        plain
            .collection::<Document>("stories")
            .update_one(doc! { "_id": 7_i64 }, doc! { "$set": { "writer_name": "wrong" } })
            .await
            .unwrap();
        match token {
            None => {
                positions.delete_one(key.clone()).await.unwrap();
            }
            Some(token) => {
                positions.update_one(key.clone(), doc! { "$set": { "token": token } }).await.unwrap();
            }
        }
        let running = Running::start(watcher());
        until("the reconcile", Duration::from_secs(120), || async {
            position(&db, "lost", "writers").await.is_some_and(|p| {
                p.get_document("token").is_ok_and(|t| t.get_str("_data").is_ok_and(|d| d != "zz" && d != hex))
            })
        })
        .await;
        let report = running.stop().await;
        assert_eq!(report.reconciles.len(), 1, "{what}: {report:?}");
        if what == "deleted" {
            assert_eq!(report.reconciles[0].reason, ReconcileReason::FirstStart);
        } else {
            let ReconcileReason::PositionLost(why) = &report.reconciles[0].reason else {
                panic!("{what}: {report:?}")
            };
            eprintln!("{what}: {why}");
            if what == "history lost" && std::env::var_os("MONGODB_URI").is_none() {
                assert!(why.contains("ChangeStreamHistoryLost"), "{why}");
            }
        }
        let done = &report.reconciles[0].copies[0];
        assert_eq!(
            (done.documents_seen, done.documents_updated, done.sources_stale),
            (WRITERS as u64, WRITERS as u64, WRITERS as u64),
            "{what}"
        );
        assert!(stale_stories(&db, &suffix).await.is_empty(), "{what}");
    }
    // Each round's copies were all in line before any worker ran (above): the
    // reconcile wrote them itself. The stream a restart opens may start just before the
    // last renames became visible, and then delivers them after the reconcile, as
    // changes to follow: their jobs are owed nothing, which a drain shows.
    let drained = Worker::new(&db).only([STORIES]).run_until_empty().await.unwrap();
    assert_eq!(drained.documents_updated, 0, "a reconcile writes the copies itself: {drained:?}");
    assert!(drained.failures.is_empty(), "{drained:?}");
    assert!(queue(&db).await.is_empty());
}

/// A standalone server has no change streams: the watcher says so, typed, at start,
/// and names the fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_server_is_a_typed_error_at_start() {
    if std::env::var_os("MONGODB_URI").is_some() {
        eprintln!("MONGODB_URI is set: this test starts its own standalone server");
    }
    let server =
        tokio::task::spawn_blocking(testkit::TestServer::start_local_standalone).await.unwrap().unwrap();
    let client = server.client().await.unwrap();
    let db = client.database("watch_standalone");
    db.collection::<Document>("writers")
        .insert_one(doc! { "_id": 1_i64, "name": "w1", "visits": 0_i64 })
        .await
        .unwrap();
    let error = Watcher::new(&db).only([STORIES]).run().await.unwrap_err();
    let CopyError::NoChangeStreams { collection, .. } = &error else { panic!("{error:?}") };
    assert_eq!(*collection, "writers");
    let text = error.to_string();
    assert!(text.contains("replica set"), "{text}");
    assert!(text.contains("rs.initiate()"), "{text}");
    assert!(
        db.collection::<Document>(WATCH_POSITIONS).find_one(doc! {}).await.unwrap().is_none(),
        "nothing was saved"
    );
}

#[test]
fn an_unknown_copy_is_refused_at_start() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let db = setup_writers("watch_unknown").await;
        let error = Watcher::new(&db).only(["stories.nope"]).run().await.unwrap_err();
        assert!(matches!(error, CopyError::UnknownCopy { ref copy } if copy == "stories.nope"), "{error:?}");
    });
}
