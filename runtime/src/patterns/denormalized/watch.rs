//! Following the sources of copies with change streams, so that a write made by any
//! program (the shell, another service, the driver) reaches the copies.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use bson::{doc, Bson, DateTime, Document, Timestamp};
use mongodb::change_stream::event::ResumeToken;
use mongodb::change_stream::ChangeStream;
use mongodb::error::ErrorKind;
use mongodb::Database;
use tokio::sync::watch;

use super::apply::enqueue_many;
use super::repair::{reconcile_in, CopyReconcile};
use super::spec::{copies, overlaps};
use crate::core::denormalized::{CopyError, CopySpec, OnDelete, Refresh, WATCH_POSITIONS};
use crate::core::model::eq;
use crate::core::registry::soft_delete_of;

/// How often an idle watcher records that it is still current.
const HEARTBEAT: Duration = Duration::from_secs(5);

// Events as documents: an operation type the driver does not know (a newer server's)
// is ignored rather than failing the stream.
type Events = ChangeStream<Document>;

/// Follows every source collection of the refreshed copies (`sync` and `async`) with
/// one change stream each, and turns each change that can touch a copied field into
/// refresh jobs in the queue ([`QUEUE`](crate::denormalized::QUEUE)), for the
/// [`Worker`](crate::denormalized::Worker)s to run: see the [module docs](crate::denormalized#the-watcher).
///
/// ```no_run
/// # async fn run(
/// #     db: &docshape::mongodb::Database,
/// #     shutdown: impl std::future::Future<Output = ()>,
/// # ) -> Result<(), docshape::denormalized::CopyError> {
/// use docshape::denormalized::{Watcher, Worker};
///
/// // Next to at least one worker (this process or another):
/// let worker = Worker::new(db);
/// tokio::spawn(async move { worker.run(std::time::Duration::from_secs(1)).await });
/// let watcher = Watcher::new(db).name("denormalized");
/// // Until `shutdown` completes (a signal, say); then the batch in hand is finished
/// // and its position saved:
/// let report = watcher.run_until(shutdown).await?;
/// println!("{} changes, {} jobs", report.changes, report.jobs_enqueued);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Watcher {
    db: Database,
    name: String,
    batch: usize,
    max_await: Duration,
    max_wait: Option<Duration>,
    only: Option<Vec<String>>,
}

/// The default [`Watcher::max_wait`]: a second, unless a copy it feeds may be stale for
/// less than four times that.
const MAX_WAIT: Duration = Duration::from_secs(1);

/// Why a watcher reconciled a source's copies before watching it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReconcileReason {
    /// No stored position: the watcher's first start on this source.
    FirstStart,
    /// The stored position could not be resumed from: the server no longer has that
    /// history (`ChangeStreamHistoryLost`), or refused the token, or the stored token
    /// was not one. The message says which.
    PositionLost(String),
    /// The source collection was dropped or renamed (the stream was invalidated).
    Invalidated,
}

/// One reconcile a watcher ran.
#[derive(Debug, Clone)]
pub struct Reconciled {
    /// The source collection.
    pub source: &'static str,
    /// Why.
    pub reason: ReconcileReason,
    /// What it did, copy by copy.
    pub copies: Vec<CopyReconcile>,
}

/// What a [`Watcher`] did.
#[derive(Debug, Clone, Default)]
pub struct WatchReport {
    /// Changes read from the streams.
    pub changes: u64,
    /// Changes that could touch no copied field (and enqueued nothing).
    pub ignored: u64,
    /// Jobs enqueued (a job already pending counts again: its `seq` moved on).
    pub jobs_enqueued: u64,
    /// Batches whose jobs were enqueued and whose position was saved.
    pub batches: u64,
    /// The reconciles run: at a first start, after a lost position, after a drop.
    pub reconciles: Vec<Reconciled>,
}

impl WatchReport {
    fn add(&mut self, other: WatchReport) {
        self.changes += other.changes;
        self.ignored += other.ignored;
        self.jobs_enqueued += other.jobs_enqueued;
        self.batches += other.batches;
        self.reconciles.extend(other.reconciles);
    }
}

impl Watcher {
    /// A watcher on `db` named `"denormalized"`, for every refreshed copy, reading up
    /// to 500 changes per batch and waiting up to 500 ms for new ones.
    ///
    /// Earlier versions named the default watcher `"copies"`: a deployment whose
    /// watcher ran under that name keeps its saved positions with `.name("copies")`;
    /// without it, the first start under the new name reconciles every copy once.
    pub fn new(db: &Database) -> Self {
        Self {
            db: db.clone(),
            name: "denormalized".to_owned(),
            batch: 500,
            max_await: Duration::from_millis(500),
            max_wait: None,
            only: None,
        }
    }

    /// The name its positions are stored under ([`WATCH_POSITIONS`], one document
    /// per source): a restarted watcher with the same name resumes where it stopped.
    /// Two watchers with different names both enqueue every change (the jobs meet in
    /// the queue; the work is not done twice, the enqueues are).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// At most this many changes per batch (the jobs of a batch are enqueued in one
    /// command, then its position saved); also the reconcile's batch. At least 1.
    pub fn batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// How long the server waits for new changes before answering an empty batch: the
    /// delay between the last change of a quiet spell and its jobs, and the stop
    /// signal's latency.
    pub fn max_await(mut self, wait: Duration) -> Self {
        self.max_await = wait.max(Duration::from_millis(1));
        self
    }

    /// How long the oldest change of a batch may wait before the batch is closed, its
    /// jobs enqueued and its position saved, even while changes keep coming (a batch
    /// also closes when it is full, or when the stream has nothing more). The default
    /// is one second, or a quarter of the smallest `max_stale` of the copies of a
    /// source when that is less: under a steady trickle a change waits at most this
    /// long (plus one `getMore`) before its job is queued. At least 1 ms.
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = Some(wait.max(Duration::from_millis(1)));
        self
    }

    /// The [`max_wait`](Self::max_wait) of the batches of a source feeding `specs`.
    fn deadline(&self, specs: &[&'static CopySpec]) -> Duration {
        if let Some(wait) = self.max_wait {
            return wait;
        }
        specs
            .iter()
            .filter_map(|c| match c.refresh {
                Refresh::Async { max_stale } => Some(max_stale / 4),
                Refresh::Sync | Refresh::Never => None,
            })
            .fold(MAX_WAIT, Duration::min)
            .max(Duration::from_millis(1))
    }

    /// Only these copies (keys like `"posts.author_name"`); the sources watched are
    /// theirs. A key that is no refreshed copy in this program is
    /// [`CopyError::UnknownCopy`] at start.
    pub fn only<I, K>(mut self, keys: I) -> Self
    where
        I: IntoIterator<Item = K>,
        K: Into<String>,
    {
        self.only = Some(keys.into_iter().map(Into::into).collect());
        self
    }

    /// Watches until `stop` completes, then finishes the batch in hand (its jobs and
    /// its position) and returns. An error of one source's stream ends every stream;
    /// nothing is lost: a restart resumes from the last saved position.
    pub async fn run_until<F>(&self, stop: F) -> Result<WatchReport, CopyError>
    where
        F: std::future::Future<Output = ()>,
    {
        let (tx, rx) = watch::channel(false);
        let all = self.follow_all(rx);
        tokio::pin!(all);
        tokio::pin!(stop);
        tokio::select! {
            done = &mut all => return done,
            () = &mut stop => {}
        }
        let _ = tx.send(true);
        all.await
    }

    /// Watches until an error; [`Watcher::run_until`] with a stop that never comes.
    pub async fn run(&self) -> Result<WatchReport, CopyError> {
        self.run_until(std::future::pending()).await
    }

    /// The refreshed copies this watcher follows, by source.
    fn sources(&self) -> Result<BTreeMap<&'static str, Vec<&'static CopySpec>>, CopyError> {
        let refreshed: Vec<&'static CopySpec> =
            copies().into_iter().filter(|c| c.refresh != Refresh::Never).collect();
        let chosen: Vec<&'static CopySpec> = match &self.only {
            None => refreshed,
            Some(keys) => keys
                .iter()
                .map(|k| {
                    refreshed
                        .iter()
                        .copied()
                        .find(|c| c.key() == *k)
                        .ok_or_else(|| CopyError::UnknownCopy { copy: k.clone() })
                })
                .collect::<Result<_, _>>()?,
        };
        let mut by_source: BTreeMap<&'static str, Vec<&'static CopySpec>> = BTreeMap::new();
        for spec in chosen {
            let specs = by_source.entry(spec.source).or_default();
            if !specs.contains(&spec) {
                specs.push(spec);
            }
        }
        Ok(by_source)
    }

    async fn follow_all(&self, stop: watch::Receiver<bool>) -> Result<WatchReport, CopyError> {
        let sources = self.sources()?;
        let loops = sources.iter().map(|(source, specs)| self.follow(source, specs, stop.clone()));
        let mut report = WatchReport::default();
        for one in futures_util::future::try_join_all(loops).await? {
            report.add(one);
        }
        Ok(report)
    }

    /// One source's loop: open (or reconcile and open), then batches until the stop
    /// signal, which is looked at only between batches.
    async fn follow(
        &self,
        source: &'static str,
        specs: &[&'static CopySpec],
        mut stop: watch::Receiver<bool>,
    ) -> Result<WatchReport, CopyError> {
        let mut report = WatchReport::default();
        let mut stream = self.open(source, specs, &mut report).await?;
        let mut saved_at = DateTime::now();
        let max_wait = self.deadline(specs);
        loop {
            let mut events = Vec::new();
            let mut stopped = false;
            let mut lost = None;
            // When the batch's first change arrived: the batch closes `max_wait` later,
            // so that a steady trickle (each `getMore` answering with a change or two)
            // cannot hold its jobs back until it stops.
            let mut closes_at = None;
            let mut timed_out = false;
            while events.len() < self.batch {
                let next = match closes_at {
                    None => tokio::select! {
                        biased;
                        _ = stop.wait_for(|stop| *stop) => { stopped = true; break }
                        next = stream.next_if_any() => next,
                    },
                    // A `getMore` cut short is not lost: the stream keeps it in hand and
                    // the next batch goes on with it (as for the stop signal above).
                    Some(at) => match tokio::time::timeout_at(at, stream.next_if_any()).await {
                        Ok(next) => next,
                        Err(_) => {
                            timed_out = true;
                            break;
                        }
                    },
                };
                if closes_at.is_none() && matches!(next, Ok(Some(_))) {
                    closes_at = Some(tokio::time::Instant::now() + max_wait);
                }
                match next {
                    Ok(Some(event)) => {
                        let ends = ends_stream(operation(&event));
                        events.push(event);
                        if ends {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) if position_lost(&e) => {
                        lost = Some(describe(&e));
                        break;
                    }
                    Err(e) if no_change_streams(&e) => {
                        return Err(CopyError::NoChangeStreams { collection: source, error: e })
                    }
                    Err(error) => {
                        return Err(CopyError::Watch { collection: source, operation: "next", error })
                    }
                }
            }
            // Closed by its deadline, a batch may have more changes behind it.
            let full = events.len() >= self.batch || timed_out;
            let last = events
                .last()
                .map(|e| (e.get_timestamp("clusterTime").ok(), e.get_datetime("wallTime").ok().copied()));
            let invalidated = events.iter().any(|e| ends_stream(operation(e)));
            if !events.is_empty() {
                report.add(self.enqueue(source, specs, &events).await?);
                report.batches += 1;
            }
            if let Some(reason) = lost {
                stream =
                    self.restart(source, specs, ReconcileReason::PositionLost(reason), &mut report).await?;
                saved_at = DateTime::now();
                continue;
            }
            if invalidated {
                stream = self.restart(source, specs, ReconcileReason::Invalidated, &mut report).await?;
                saved_at = DateTime::now();
                continue;
            }
            let now = DateTime::now();
            if last.is_some() || super::apply::since(saved_at, now) >= HEARTBEAT || stopped {
                let token = stream.resume_token();
                self.save(source, token.as_ref(), last, !full).await?;
                saved_at = now;
            }
            if stopped {
                return Ok(report);
            }
        }
    }

    /// The source's stream from its stored position; without one, or when the server
    /// cannot resume from it, a stream opened now and a reconcile run before any of
    /// its changes is read.
    async fn open(
        &self,
        source: &'static str,
        specs: &[&'static CopySpec],
        report: &mut WatchReport,
    ) -> Result<Events, CopyError> {
        let stored = self
            .db
            .collection::<Document>(WATCH_POSITIONS)
            .find_one(doc! { "_id": eq(self.position_key(source)) })
            .await
            .map_err(|error| CopyError::Watch { collection: source, operation: "read position", error })?;
        let reason = match stored.as_ref().and_then(|d| d.get("token")) {
            None => ReconcileReason::FirstStart,
            Some(token) if !matches!(token, Bson::Document(_)) => {
                ReconcileReason::PositionLost(format!("the stored token is not a document: {token}"))
            }
            Some(token) => match crate::core::bson_compat::from_bson::<ResumeToken>(token.clone()) {
                Err(e) => {
                    ReconcileReason::PositionLost(format!("the stored token is not a resume token: {e}"))
                }
                Ok(token) => match self.stream(source, Some(token)).await {
                    Ok(stream) => return Ok(stream),
                    Err(CopyError::Watch { error, .. }) if position_lost(&error) => {
                        ReconcileReason::PositionLost(describe(&error))
                    }
                    Err(e) => return Err(e),
                },
            },
        };
        self.restart(source, specs, reason, report).await
    }

    /// A stream opened now, then every copy of the source reconciled, then the
    /// stream's first position saved: the changes made during the reconcile are read
    /// afterwards, and a crash before the save reconciles again.
    async fn restart(
        &self,
        source: &'static str,
        specs: &[&'static CopySpec],
        reason: ReconcileReason,
        report: &mut WatchReport,
    ) -> Result<Events, CopyError> {
        let stream = self.stream(source, None).await?;
        let mut done = Vec::new();
        for &spec in specs {
            done.push(reconcile_in(&self.db, spec, self.batch).await?);
        }
        report.reconciles.push(Reconciled { source, reason, copies: done });
        let token = stream.resume_token();
        self.save(source, token.as_ref(), None, true).await?;
        Ok(stream)
    }

    async fn stream(&self, source: &'static str, token: Option<ResumeToken>) -> Result<Events, CopyError> {
        let batch = u32::try_from(self.batch).unwrap_or(u32::MAX);
        let opened = self
            .db
            .collection::<Document>(source)
            .watch()
            .resume_after(token)
            .max_await_time(self.max_await)
            .batch_size(batch)
            .await
            .map(ChangeStream::with_type::<Document>);
        opened.map_err(|error| {
            if no_change_streams(&error) {
                CopyError::NoChangeStreams { collection: source, error }
            } else {
                CopyError::Watch { collection: source, operation: "open", error }
            }
        })
    }

    fn position_key(&self, source: &str) -> Bson {
        Bson::Document(doc! { "watcher": &self.name, "source": source })
    }

    async fn save(
        &self,
        source: &'static str,
        token: Option<&ResumeToken>,
        last: Option<(Option<Timestamp>, Option<DateTime>)>,
        caught_up: bool,
    ) -> Result<(), CopyError> {
        let error = |error| CopyError::Watch { collection: source, operation: "save position", error };
        let mut set = doc! { "saved_at": DateTime::now(), "caught_up": caught_up };
        if let Some(token) = token {
            let token = crate::core::bson_compat::to_bson(token)
                .map_err(|e| error(mongodb::error::Error::custom(format!("the resume token: {e}"))))?;
            set.insert("token", token);
        }
        if let Some((cluster_time, wall_time)) = last {
            if let Some(t) = cluster_time {
                set.insert("cluster_time", t);
            }
            let at =
                wall_time.or_else(|| cluster_time.map(|t| DateTime::from_millis(i64::from(t.time) * 1000)));
            if let Some(at) = at {
                set.insert("last_change_at", at);
            }
        }
        self.db
            .collection::<Document>(WATCH_POSITIONS)
            .update_one(doc! { "_id": eq(self.position_key(source)) }, doc! { "$set": set })
            .upsert(true)
            .await
            .map_err(error)?;
        Ok(())
    }

    /// The jobs of a batch of changes, enqueued in one command.
    async fn enqueue(
        &self,
        source: &'static str,
        specs: &[&'static CopySpec],
        events: &[Document],
    ) -> Result<WatchReport, CopyError> {
        let mut report = WatchReport::default();
        let mut jobs: Vec<(&CopySpec, Bson)> = Vec::new();
        let mut seen = HashSet::new();
        for event in events {
            report.changes += 1;
            let id = event.get_document("documentKey").ok().and_then(|k| k.get("_id"));
            let touched = match id {
                Some(_) => touched(specs, event, soft_delete_of(source)),
                None => Vec::new(),
            };
            if touched.is_empty() {
                report.ignored += 1;
                continue;
            }
            let Some(id) = id else { continue };
            for spec in touched {
                if seen.insert((
                    spec.key(),
                    crate::core::bson_compat::to_vec(&doc! { "": id.clone() }).unwrap_or_default(),
                )) {
                    jobs.push((spec, id.clone()));
                }
            }
        }
        for chunk in jobs.chunks(self.batch) {
            enqueue_many(&self.db, chunk).await.map_err(|error| CopyError::Watch {
                collection: source,
                operation: "enqueue",
                error,
            })?;
        }
        report.jobs_enqueued = jobs.len() as u64;
        Ok(report)
    }
}

/// A change's `operationType`; `""` when it has none.
fn operation(event: &Document) -> &str {
    event.get_str("operationType").unwrap_or_default()
}

/// The copies a change may have made stale. An update names its paths in its
/// `updateDescription` (`updatedFields`' keys, dotted; `removedFields`;
/// `truncatedArrays`' fields); one without a readable description counts as touching
/// every copy. On a soft-delete source (`deleted_at`, its deletion date), an update of
/// the deletion date is a delete or a restore: every copy, whose job then applies the
/// copy's `on_delete` or copies the value again.
fn touched(
    specs: &[&'static CopySpec],
    event: &Document,
    deleted_at: Option<&str>,
) -> Vec<&'static CopySpec> {
    match operation(event) {
        "update" => {
            let Ok(description) = event.get_document("updateDescription") else {
                return specs.to_vec();
            };
            let mut paths: Vec<&str> = Vec::new();
            match description.get("updatedFields") {
                Some(Bson::Document(updated)) => paths.extend(updated.keys().map(String::as_str)),
                None => {}
                Some(_) => return specs.to_vec(),
            }
            for list in ["removedFields", "truncatedArrays"] {
                match description.get(list) {
                    Some(Bson::Array(items)) => {
                        for item in items {
                            match item {
                                Bson::String(path) => paths.push(path),
                                Bson::Document(t) => match t.get_str("field") {
                                    Ok(path) => paths.push(path),
                                    Err(_) => return specs.to_vec(),
                                },
                                _ => return specs.to_vec(),
                            }
                        }
                    }
                    None => {}
                    Some(_) => return specs.to_vec(),
                }
            }
            if deleted_at.is_some_and(|d| paths.iter().any(|p| overlaps(p, d))) {
                return specs.to_vec();
            }
            specs.iter().copied().filter(|c| paths.iter().any(|p| overlaps(p, c.source_field))).collect()
        }
        // A replacement can change anything; an insert can be a deleted source come
        // back, or a source whose copies were written first.
        "replace" | "insert" => specs.to_vec(),
        "delete" => specs.iter().copied().filter(|c| c.on_delete != OnDelete::Keep).collect(),
        _ => Vec::new(),
    }
}

/// A change after which the stream has nothing more: the collection is gone.
fn ends_stream(operation: &str) -> bool {
    matches!(operation, "invalidate" | "drop" | "rename" | "dropDatabase")
}

/// Whether the server cannot resume from the token: history lost (286, and the codes
/// older servers used for it: 40576, 40585, 40615), an invalid or unparsable token
/// (260, 9), or a stream that cannot go on (280).
fn position_lost(e: &mongodb::error::Error) -> bool {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => matches!(c.code, 286 | 280 | 260 | 9 | 40576 | 40585 | 40615),
        _ => false,
    }
}

/// A server's refusal in one line: `ChangeStreamHistoryLost (286): ...`.
fn describe(e: &mongodb::error::Error) -> String {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => format!("{} ({}): {}", c.code_name, c.code, c.message),
        _ => e.to_string(),
    }
}

/// Whether the server refused a change stream for being a standalone (code 40573,
/// `$changeStream` only on replica sets), by the code, never the message text.
fn no_change_streams(e: &mongodb::error::Error) -> bool {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => c.code == 40573,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::denormalized::Cleared;

    const fn spec(field: &'static str, source_field: &'static str, on_delete: OnDelete) -> CopySpec {
        CopySpec {
            collection: "posts",
            field,
            via: "author_id",
            source: "users",
            source_field,
            source_tenant: None,
            refresh: Refresh::Sync,
            reason: None,
            on_delete,
            null: Cleared::Null,
            arrays: &[],
            variant: None,
        }
    }

    static NAME: CopySpec = spec("author_name", "name", OnDelete::Keep);
    static CITY: CopySpec = spec("author_city", "profile.city", OnDelete::Clear(Cleared::Unset));

    fn event(fields: Document) -> Document {
        let mut full = doc! { "_id": { "_data": "00" }, "documentKey": { "_id": 1 } };
        full.extend(fields);
        full
    }

    fn keys(specs: Vec<&'static CopySpec>) -> Vec<String> {
        specs.iter().map(|c| c.key()).collect()
    }

    #[test]
    fn updates_touch_the_copies_of_the_paths_they_name() {
        let specs = [&NAME, &CITY];
        let update = |d: Document| event(doc! { "operationType": "update", "updateDescription": d });
        let named = update(doc! { "updatedFields": { "name": "Ada" }, "removedFields": [] });
        assert_eq!(keys(touched(&specs, &named, None)), ["posts.author_name"]);
        let visits = update(doc! { "updatedFields": { "visits": 3 }, "removedFields": ["nick"] });
        assert!(touched(&specs, &visits, None).is_empty());
        let city = update(doc! { "updatedFields": { "profile.city": "Paris" }, "removedFields": [] });
        assert_eq!(keys(touched(&specs, &city, None)), ["posts.author_city"]);
        let profile = update(doc! { "updatedFields": {}, "removedFields": ["profile"] });
        assert_eq!(keys(touched(&specs, &profile, None)), ["posts.author_city"]);
        let truncated = update(doc! {
            "updatedFields": {}, "removedFields": [], "truncatedArrays": [{ "field": "name", "newSize": 1 }]
        });
        assert_eq!(keys(touched(&specs, &truncated, None)), ["posts.author_name"]);
        let bare = event(doc! { "operationType": "update" });
        assert_eq!(touched(&specs, &bare, None).len(), 2);
        // A soft delete (or a restore) of the source touches every copy.
        let deleted =
            update(doc! { "updatedFields": { "deleted_at": DateTime::now() }, "removedFields": [] });
        assert!(touched(&specs, &deleted, None).is_empty());
        assert_eq!(touched(&specs, &deleted, Some("deleted_at")).len(), 2);
        assert!(touched(&specs, &visits, Some("deleted_at")).is_empty());
    }

    #[test]
    fn replacements_inserts_and_deletes_by_policy() {
        let specs = [&NAME, &CITY];
        assert_eq!(touched(&specs, &event(doc! { "operationType": "replace" }), None).len(), 2);
        assert_eq!(touched(&specs, &event(doc! { "operationType": "insert" }), None).len(), 2);
        assert_eq!(
            keys(touched(&specs, &event(doc! { "operationType": "delete" }), None)),
            ["posts.author_city"]
        );
        assert!(touched(&specs, &event(doc! { "operationType": "createIndexes" }), None).is_empty());
        assert!(touched(&specs, &event(doc! { "operationType": "shardCollection" }), None).is_empty());
        assert!(ends_stream("invalidate"));
        assert!(ends_stream("drop"));
        assert!(!ends_stream("update"));
        let odd = event(doc! { "operationType": "update", "updateDescription": { "updatedFields": 3 } });
        assert_eq!(touched(&specs, &odd, None).len(), 2, "a description that is not one touches every copy");
    }
}
