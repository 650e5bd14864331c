//! A soak of the async path for other programs' writes: a plain driver client renames
//! 100 sources at a steady 10 changes a second for 120 s while one watcher and two
//! workers run, and every copy's staleness is sampled every second.
//!
//! A binary of its own: cargo runs test binaries one after another, so the soak has
//! the server (the testkit starts one per process) and the machine to itself. Run
//! inside the integration binary, next to 170 other tests on two cores and one
//! interpreted server, the workers fell behind the trickle (copies 10-40 s stale):
//! that measures the other tests' load, not the refresh path's bound.

// clippy's `duplicated_attributes` reads the same key in two `#[access]` rows as a
// repeated attribute.
#![allow(clippy::duplicated_attributes)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use docshape::bson::{doc, Document};
use docshape::denormalized::{CopyError, WatchReport, Watcher, Worker, WATCH_POSITIONS};
use docshape::refs::Ref;
use docshape::Model;
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::Database;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

/// A running watcher, stopped by [`Running::stop`].
struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<WatchReport, CopyError>>,
}

impl Running {
    fn start(watcher: Watcher) -> Self {
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

    async fn stop(self) -> WatchReport {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap()
    }
}

/// Polls `check` every 20 ms until it holds; fails the test after `limit`.
async fn until<F, Fut>(what: &str, limit: Duration, mut check: F)
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
async fn position(db: &Database, name: &str, source: &str) -> Option<Document> {
    db.collection::<Document>(WATCH_POSITIONS)
        .find_one(doc! { "_id": { "watcher": name, "source": source } })
        .await
        .unwrap()
}

/// The same database through a client of its own: a program that is not docshape.
async fn plain_client(db: &Database) -> Database {
    let client = testkit::server().unwrap().client().await.unwrap();
    client.database(db.name())
}

/// The renamed source.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "soak_artists")]
pub struct Artist {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

/// Three tracks per artist, stale at most 10 s.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "soak_tracks")]
#[index(keys(artist_id))]
pub struct Track {
    #[serde(rename = "_id")]
    pub id: i64,
    pub artist_id: Ref<Artist>,
    #[denormalized(from = "Artist::name", via = "artist_id", refresh = "async", max_stale = "10s")]
    pub artist_name: String,
}

/// One album per artist, stale at most 30 s.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "soak_albums")]
#[index(keys(artist_id))]
pub struct Album {
    #[serde(rename = "_id")]
    pub id: i64,
    pub artist_id: Ref<Artist>,
    #[denormalized(from = "Artist::name", via = "artist_id", refresh = "async", max_stale = "30s")]
    pub artist_name: String,
}

const SOURCES: i64 = 100;
const TRACKS_PER_SOURCE: i64 = 3;
/// The foreign writers' pace and how long they write.
const CHANGE_EVERY: Duration = Duration::from_millis(100);
const WRITING: Duration = Duration::from_secs(120);
/// The copies, their collections and their `max_stale` (as declared above).
const COPIES: [(&str, &str, Duration); 2] = [
    ("soak_tracks.artist_name", "soak_tracks", Duration::from_secs(10)),
    ("soak_albums.artist_name", "soak_albums", Duration::from_secs(30)),
];

/// Every name each source has had, with the instant its write was sent (the initial
/// name at the start), in order.
type History = Arc<Mutex<HashMap<i64, Vec<(Instant, String)>>>>;

/// The staleness of one copy document at one sample.
struct Sample {
    copy: &'static str,
    id: i64,
    at: Duration,
    stale: Duration,
    max_stale: Duration,
}

/// Every copy document's staleness now, as `every_copy_stays_within_max_stale`
/// defines it.
async fn sample(db: &Database, history: &History, started: Instant) -> Vec<Sample> {
    let mut read = Vec::new();
    for (copy, collection, max_stale) in COPIES {
        let documents: Vec<Document> =
            db.collection::<Document>(collection).find(doc! {}).await.unwrap().try_collect().await.unwrap();
        read.push((copy, max_stale, documents));
    }
    // After the reads: a write sent after a read but recorded before now makes its
    // copies count as stale since it was sent, which only overstates.
    let history = history.lock().unwrap();
    let now = Instant::now();
    let mut out = Vec::new();
    for (copy, max_stale, documents) in read {
        for d in documents {
            let id = d.get_i64("_id").unwrap();
            let source = d.get_i64("artist_id").unwrap();
            let value = d.get_str("artist_name").unwrap();
            let names = &history[&source];
            // Names are unique per source, so the copy's value says which write it
            // reflects; one the source never had is a corrupt copy.
            let held = names.iter().rposition(|(_, n)| n == value);
            let held = held.unwrap_or_else(|| panic!("{copy} {id} holds {value:?}, never its source's"));
            let stale = match names.get(held + 1) {
                Some((first_missed, _)) => now.duration_since(*first_missed),
                None => Duration::ZERO,
            };
            out.push(Sample { copy, id, at: now.duration_since(started), stale, max_stale });
        }
    }
    out
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn spawn_worker(db: &Database, id: &str) -> JoinHandle<Result<(), CopyError>> {
    let worker = Worker::new(db).id(id).only(COPIES.map(|(copy, _, _)| copy));
    tokio::spawn(async move { worker.run(Duration::from_millis(200)).await })
}

/// **Staleness.** At a sample taken at instant `t` (after the copies are read), a copy
/// document holding the value its source got from write `k` (or the initial value,
/// `k = 0`) has staleness 0 when `k` is the source's latest write so far, and otherwise
/// `t - s(k + 1)`, where `s(k + 1)` is when the first write it does not reflect was
/// sent: how long the copy has differed from its source's current value, never
/// understated (the write is timed before it is sent, the sample after the read).
///
/// For 120 s a plain driver client (not docshape's writer) renames the 100 sources in
/// turn, one change every 100 ms, each to a name the source never had; one watcher
/// (default deadline) and two workers (default claims, 200 ms poll) run throughout.
/// Every second every copy document (300 tracks with `max_stale = 10s`, 100 albums with
/// `30s`) is sampled; once the writes stop, sampling goes on until every copy holds its
/// source's last name, for at most the largest `max_stale` plus 5 s. The test asserts
/// that no sample's staleness exceeded its copy's `max_stale` and that the copies
/// converged, and prints the worst and the 99th percentile to stderr. It runs 120 s of
/// writes plus at most 35 s of drain, plus the setup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_copy_stays_within_max_stale() {
    let db = testkit::database("soak").await.unwrap();
    docshape::sync::<Artist>(&db).await.unwrap();
    docshape::sync::<Track>(&db).await.unwrap();
    docshape::sync::<Album>(&db).await.unwrap();
    let started = Instant::now();
    let history: History = Arc::default();
    {
        let mut h = history.lock().unwrap();
        for i in 0..SOURCES {
            h.insert(i, vec![(started, format!("a{i} v0"))]);
        }
    }
    db.collection::<Document>("soak_artists")
        .insert_many((0..SOURCES).map(|i| doc! { "_id": i, "name": format!("a{i} v0") }))
        .await
        .unwrap();
    db.collection::<Document>("soak_tracks")
        .insert_many((0..SOURCES * TRACKS_PER_SOURCE).map(|t| {
            let a = t / TRACKS_PER_SOURCE;
            doc! { "_id": t, "artist_id": a, "artist_name": format!("a{a} v0") }
        }))
        .await
        .unwrap();
    db.collection::<Document>("soak_albums")
        .insert_many(
            (0..SOURCES).map(|a| doc! { "_id": a, "artist_id": a, "artist_name": format!("a{a} v0") }),
        )
        .await
        .unwrap();

    let watcher = Running::start(Watcher::new(&db).name("soak").only(COPIES.map(|(copy, _, _)| copy)));
    until("the watcher's first position", Duration::from_secs(60), || async {
        position(&db, "soak", "soak_artists").await.is_some()
    })
    .await;
    let workers = [spawn_worker(&db, "soak-1"), spawn_worker(&db, "soak-2")];

    let plain = plain_client(&db).await;
    let writing = Instant::now();
    let writer = tokio::spawn({
        let history = history.clone();
        async move {
            let artists = plain.collection::<Document>("soak_artists");
            let mut tick = tokio::time::interval(CHANGE_EVERY);
            // A late tick is skipped, not made up in a burst: the pace stays at most
            // 10 a second.
            tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
            let mut changes = 0_i64;
            loop {
                tick.tick().await;
                if writing.elapsed() >= WRITING {
                    return changes;
                }
                let a = changes % SOURCES;
                let name = format!("a{a} v{}", changes / SOURCES + 1);
                history.lock().unwrap().get_mut(&a).unwrap().push((Instant::now(), name.clone()));
                let done =
                    artists.update_one(doc! { "_id": a }, doc! { "$set": { "name": name } }).await.unwrap();
                assert_eq!(done.modified_count, 1);
                changes += 1;
            }
        }
    });

    let mut samples: Vec<Sample> = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let largest = COPIES.iter().map(|(_, _, m)| *m).max().unwrap();
    let mut writes_ended: Option<Instant> = None;
    let converged = loop {
        tick.tick().await;
        let now = sample(&db, &history, started).await;
        let fresh = now.iter().all(|s| s.stale.is_zero());
        samples.extend(now);
        for w in &workers {
            assert!(!w.is_finished(), "a worker stopped");
        }
        if writes_ended.is_none() && writer.is_finished() {
            writes_ended = Some(Instant::now());
        }
        if let Some(ended) = writes_ended {
            if fresh {
                break true;
            }
            if ended.elapsed() > largest + Duration::from_secs(5) {
                break false;
            }
        }
    };
    let changes = writer.await.unwrap();
    for w in workers {
        w.abort();
    }
    watcher.stop().await;

    let mut all: Vec<Duration> = samples.iter().map(|s| s.stale).collect();
    all.sort();
    let mut stale: Vec<Duration> = all.iter().copied().filter(|d| !d.is_zero()).collect();
    stale.sort();
    let worst = samples.iter().max_by_key(|s| s.stale).unwrap();
    eprintln!(
        "soak: {changes} changes in {:?} (+{:?} to converge), {} copy samples, {} stale; \
         staleness worst {:?} ({} {} at {:?}), p99 {:?} of all samples, p99 {:?} / p50 {:?} of stale ones",
        WRITING,
        writes_ended.map(|e| e.elapsed()).unwrap_or_default(),
        all.len(),
        stale.len(),
        worst.stale,
        worst.copy,
        worst.id,
        worst.at,
        percentile(&all, 0.99),
        percentile(&stale, 0.99),
        percentile(&stale, 0.5),
    );
    for (copy, _, max_stale) in COPIES {
        let mut mine: Vec<Duration> = samples.iter().filter(|s| s.copy == copy).map(|s| s.stale).collect();
        mine.sort();
        eprintln!(
            "soak: {copy} (max_stale {max_stale:?}): worst {:?}, p99 {:?}",
            mine.last().copied().unwrap_or_default(),
            percentile(&mine, 0.99)
        );
    }
    assert!(changes >= SOURCES, "every source was renamed at least once ({changes} changes)");
    assert!(!stale.is_empty(), "the samples saw copies behind their source");
    let over: Vec<String> = samples
        .iter()
        .filter(|s| s.stale > s.max_stale)
        .take(10)
        .map(|s| format!("{} {} at {:?}: {:?} > {:?}", s.copy, s.id, s.at, s.stale, s.max_stale))
        .collect();
    assert!(over.is_empty(), "copies staler than their max_stale: {over:#?}");
    assert!(converged, "the copies did not all reach their source's last name");
}
