//! A backfill that finishes: it reads again from its position after a lost cursor
//! (what a server restart or an idle timeout does to it), sweeps once more from the
//! start for documents written at an old version behind its cursor while it ran, and
//! says `Done` only when no old document is left, across a crash and restart of the
//! server too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use docshape::bson::{doc, Document};
use docshape::mongodb::options::{ClientOptions, ServerAddress, WriteConcern};
use docshape::versioning::{self, BackfillEnd, BackfillOptions, Progress};
use docshape_testkit as testkit;

use crate::{profile, Profile};

/// `n` version-1 profiles from `_id` `first` on (every third `profile` is version 1).
fn v1_profiles(first: i64, n: i64) -> Vec<Document> {
    (first..first + n).map(|i| profile(i * 3).0).collect()
}

/// Runs `work` on a runtime of its own, on another thread, and waits for it: a
/// progress callback is synchronous, and the backfill waits while it runs.
fn meanwhile(work: impl std::future::Future<Output = ()> + Send + 'static) {
    std::thread::spawn(move || tokio::runtime::Runtime::new().unwrap().block_on(work)).join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_cursor_is_read_again_from_the_runs_position() {
    let (db, log) = testkit::monitored("backfill_cursor").await.unwrap();
    docshape::sync::<Profile>(&db).await.unwrap();
    db.collection::<Document>("profiles").insert_many(v1_profiles(0, 200)).await.unwrap();
    let killed = Arc::new(AtomicBool::new(false));
    let (watch, name, flag) = (log.clone(), db.name().to_owned(), killed.clone());
    let options = BackfillOptions::default().batch_size(20).progress(Progress::Events(Arc::new(move |e| {
        // After the second batch the cursor has been asked for more once: kill it,
        // as a server restart would lose it.
        if e.upgraded == 40 && !flag.swap(true, Ordering::SeqCst) {
            let cursor = watch.named("getMore").last().and_then(|g| g.get_i64("getMore").ok());
            let cursor = cursor.expect("the backfill's cursor asked for a second batch");
            let name = name.clone();
            meanwhile(async move {
                let client = testkit::server().unwrap().client().await.unwrap();
                client
                    .database(&name)
                    .run_command(doc! { "killCursors": "profiles", "cursors": [cursor] })
                    .await
                    .unwrap();
            });
        }
    })));
    let report = versioning::backfill::<Profile>(&db, options).await.unwrap();
    assert!(killed.load(Ordering::SeqCst), "the cursor was killed mid-run");
    assert!(report.retried >= 1, "{report:?}");
    assert_eq!(report.end, BackfillEnd::Done, "{report:?}");
    assert_eq!(report.progress.upgraded, 200, "each document once: {:?}", report.progress);
    assert_eq!(report.counts.older_than(3), 0, "{}", report.counts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_written_behind_the_cursor_are_swept_and_done_means_none_left() {
    let db = testkit::database("backfill_sweep").await.unwrap();
    docshape::sync::<Profile>(&db).await.unwrap();
    db.collection::<Document>("profiles").insert_many(v1_profiles(1_000, 300)).await.unwrap();
    let written = Arc::new(AtomicBool::new(false));
    let (name, flag) = (db.name().to_owned(), written.clone());
    let options = BackfillOptions::default().batch_size(50).progress(Progress::Events(Arc::new(move |e| {
        // The old release writes 20 more version-1 documents, all behind the
        // cursor (lower `_id`s), while the run is past them.
        if e.upgraded >= 50 && !e.done && !flag.swap(true, Ordering::SeqCst) {
            let name = name.clone();
            meanwhile(async move {
                let client = testkit::server().unwrap().client().await.unwrap();
                let profiles = client.database(&name).collection::<Document>("profiles");
                profiles.insert_many(v1_profiles(0, 20)).await.unwrap();
            });
        }
    })));
    let report = versioning::backfill::<Profile>(&db, options).await.unwrap();
    assert!(written.load(Ordering::SeqCst), "the documents were written mid-run");
    assert_eq!(report.counts.older_than(3), 0, "{}", report.counts);
    assert_eq!(report.progress.upgraded, 320, "{:?}", report.progress);
    assert_eq!(report.end, BackfillEnd::Done);
    // The rate and the time left are there for an operator's progress line.
    assert!(report.progress.per_second() > 0.0, "{:?}", report.progress);
    assert!(!report.progress.elapsed.is_zero());
}

/// The server itself killed (SIGKILL, as a crash) and started again mid-run, on a
/// server of the test's own: the backfill's connections and its cursor die with the old
/// process, and its next read meets the server down (a network error, or server
/// selection waiting until the driver finds the new process, whose answer is then
/// CursorNotFound); it reads again from its position and finishes, each document
/// upgraded once. Its writes ask for `j: true`, so that none it was told about is lost
/// in the crash (on `mongod` as on the local server, an unjournaled `w: 1` write
/// acknowledged just before a crash may be lost, and the run would then upgrade that
/// document a second time: correct, but not "once").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_mid_run_is_ridden_over() {
    if testkit::server().unwrap().is_external() {
        eprintln!("skipped: MONGODB_URI names a server the tests cannot restart");
        return;
    }
    let server = tokio::task::spawn_blocking(testkit::TestServer::start_local).await.unwrap().unwrap();
    let server = Arc::new(server);
    let addr = match &ClientOptions::parse(server.uri()).await.unwrap().hosts[..] {
        [ServerAddress::Tcp { host, port }] => format!("{host}:{}", port.unwrap_or(27017)),
        hosts => panic!("one TCP host expected: {hosts:?}"),
    };
    let client = server
        .client_with(|o| {
            o.write_concern = Some(WriteConcern::builder().journal(true).build());
            // Long enough for the server to come back and the driver to find it.
            o.server_selection_timeout = Some(Duration::from_secs(60));
        })
        .await
        .unwrap();
    let db = client.database("backfill_restart");
    docshape::sync::<Profile>(&db).await.unwrap();
    db.collection::<Document>("profiles").insert_many(v1_profiles(0, 200)).await.unwrap();
    let restarting = Arc::new(Mutex::new(None));
    let (slot, restart) = (restarting.clone(), server.clone());
    let options = BackfillOptions::default().batch_size(20).progress(Progress::Events(Arc::new(move |e| {
        // After three batches, with the cursor open on the next: the restart starts,
        // and the run goes on once the old process is dead (its port refuses), so
        // that no write of the run is in flight at the kill and its next read meets
        // the server down.
        let mut slot = slot.lock().unwrap();
        if e.upgraded == 60 && slot.is_none() {
            let restart = restart.clone();
            *slot = Some(std::thread::spawn(move || restart.restart()));
            while std::net::TcpStream::connect(&addr).is_ok() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    })));
    let report = versioning::backfill::<Profile>(&db, options).await.unwrap();
    let restart = restarting.lock().unwrap().take().expect("the server was restarted mid-run");
    restart.join().unwrap().unwrap();
    assert!(report.retried >= 1, "{report:?}");
    assert_eq!(report.end, BackfillEnd::Done, "{report:?}");
    assert_eq!(report.progress.upgraded, 200, "each document once: {:?}", report.progress);
    assert_eq!(report.counts.older_than(3), 0, "{}", report.counts);
    assert_eq!(report.counts.total(), 200, "{}", report.counts);
}

/// An upgrade the server refuses for a passing reason is read again, not reported as
/// the document's failure: here `ShutdownInProgress` (what a `mongod` shutting down
/// answers, labelled `RetryableWriteError`), twice, so that the driver's own retry of
/// the write fails too and the backfill sees it. A run that took it for a refusal of
/// that one document ended `Remaining { old: 1 }` with it in `failures`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_refused_while_the_server_shuts_down_is_read_again() {
    let Some((server, client)) = testkit::failpoint_server().await.unwrap() else { return };
    let uri = server.uri().to_owned();
    let db = client.database("backfill_refused");
    docshape::sync::<Profile>(&db).await.unwrap();
    db.collection::<Document>("profiles").insert_many(v1_profiles(0, 100)).await.unwrap();
    let armed = Arc::new(AtomicBool::new(false));
    let flag = armed.clone();
    let options = BackfillOptions::default().batch_size(20).progress(Progress::Events(Arc::new(move |e| {
        if e.upgraded == 40 && !flag.swap(true, Ordering::SeqCst) {
            let uri = uri.clone();
            meanwhile(async move {
                let client = docshape::mongodb::Client::with_uri_str(&uri).await.unwrap();
                let fail = doc! {
                    "configureFailPoint": "failCommand",
                    "mode": { "times": 2 },
                    "data": { "failCommands": ["update"], "errorCode": 91 },
                };
                client.database("admin").run_command(fail).await.unwrap();
            });
        }
    })));
    let report = versioning::backfill::<Profile>(&db, options).await.unwrap();
    assert!(armed.load(Ordering::SeqCst), "the failpoint was set mid-run");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert!(report.retried >= 1, "{report:?}");
    assert_eq!(report.end, BackfillEnd::Done, "{report:?}");
    assert_eq!(report.progress.upgraded, 100, "each document once: {:?}", report.progress);
    assert_eq!(report.counts.older_than(3), 0, "{}", report.counts);
}

/// The backfill's checkpoint in `docshape_backfill`, if any.
async fn checkpoint(db: &docshape::mongodb::Database) -> Option<docshape::bson::Bson> {
    let checkpoints = db.collection::<Document>(versioning::CHECKPOINTS);
    checkpoints.find_one(doc! { "_id": "profiles" }).await.unwrap().and_then(|c| c.get("after").cloned())
}

/// Two `kill -9`s of a backfill running in a child process, each once its checkpoint
/// has moved: its batches (1,000 documents at 40 a second) never complete, so only the
/// timed checkpoint (every 5 s) keeps its position, and the run after the kills resumes
/// from there and finishes with every document current. (A checkpoint written only per
/// batch left none at all.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_resumes_from_its_timed_checkpoint() {
    let db = testkit::database("backfill_killed").await.unwrap();
    docshape::sync::<Profile>(&db).await.unwrap();
    db.collection::<Document>("profiles").insert_many(v1_profiles(0, 600)).await.unwrap();
    let uri = testkit::server().unwrap().uri().to_owned();
    let mut last: Option<i64> = None;
    for kill in 1..=2 {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_backfill-child"))
            .args([uri.as_str(), db.name(), "1000", "40"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Until the checkpoint has moved past the last kill's (the timer writes it after
        // 5 s of a run), at most 60 s.
        let started = std::time::Instant::now();
        let at = loop {
            if let Some(at) = checkpoint(&db).await.and_then(|c| c.as_i64()) {
                if last.is_none_or(|l| at > l) {
                    break at;
                }
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "kill {kill}: no checkpoint past {last:?} in 60 s"
            );
            assert!(child.try_wait().unwrap().is_none(), "kill {kill}: the child ended by itself");
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        };
        child.kill().unwrap();
        child.wait().unwrap();
        last = Some(at);
    }
    let counts = versioning::version_counts::<Profile>(&db).await.unwrap();
    assert!(counts.older_than(3) > 0, "the kills left work to do: {counts}");
    let report = versioning::backfill::<Profile>(&db, BackfillOptions::default().progress(Progress::Silent))
        .await
        .unwrap();
    assert!(report.resumed, "{report:?}");
    assert_eq!(report.end, BackfillEnd::Done, "{report:?}");
    assert_eq!(report.counts.older_than(3), 0, "{}", report.counts);
    assert!(checkpoint(&db).await.is_none(), "a finished run leaves no checkpoint");
}
