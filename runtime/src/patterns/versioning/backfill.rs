//! Counting documents by version, and the resumable backfill that upgrades the rest.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::{IsTerminal, Write as _};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use futures_util::TryStreamExt;
use mongodb::options::FindOptions;
use mongodb::Database;

use super::decode::{id_of, Versioned};
use super::write::Loaded;
use crate::core::model::eq;
use crate::core::trace;
use crate::core::version::VersionError;

/// How many documents of a collection are stored at each version, by the rule the
/// reads use ([`stored_version`](super::stored_version)): what a read takes for
/// version `n` counts as `n`, what a read refuses counts as unreadable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionCounts {
    /// Documents by version; documents without the field count as
    /// [`Versioned::MISSING_VERSION`].
    pub by_version: BTreeMap<i64, u64>,
    /// Documents whose version field a read refuses
    /// ([`VersionError::BadVersionField`]): `null`, a string, a fraction, a double too
    /// large to be exact, any other type.
    pub unreadable: u64,
}

impl VersionCounts {
    /// Documents in all.
    pub fn total(&self) -> u64 {
        self.by_version.values().sum::<u64>() + self.unreadable
    }

    /// Documents below `version`.
    pub fn older_than(&self, version: i64) -> u64 {
        self.by_version.range(..version).map(|(_, n)| n).sum()
    }
}

impl fmt::Display for VersionCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (v, n)) in self.by_version.iter().enumerate() {
            write!(f, "{}{v}: {n}", if i > 0 { ", " } else { "" })?;
        }
        if self.unreadable > 0 {
            let sep = if self.by_version.is_empty() { "" } else { ", " };
            write!(f, "{sep}unreadable: {}", self.unreadable)?;
        }
        f.write_str("}")
    }
}

/// `{1: n, 2: m}`: the collection's documents by stored version, counted by the server
/// (grouped by the field's BSON type and value, so that a missing field and a `null`
/// stay apart) and read by the rule of [`stored_version`](super::stored_version).
pub async fn version_counts<T: Versioned>(db: &Database) -> Result<VersionCounts, VersionError> {
    let field = format!("${}", T::VERSION_FIELD);
    let mut cursor = db
        .collection::<Document>(T::COLLECTION)
        .aggregate([doc! { "$group": {
            "_id": { "type": { "$type": &field }, "value": &field },
            "n": { "$sum": 1 },
        } }])
        .await?;
    let mut counts = VersionCounts::default();
    while let Some(group) = cursor.try_next().await? {
        let n = match group.get("n") {
            Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or(0),
            Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or(0),
            Some(Bson::Double(n)) if *n >= 0.0 => *n as u64,
            _ => 0,
        };
        let key = group.get_document("_id").ok();
        let missing = key.and_then(|k| k.get_str("type").ok()) == Some("missing");
        // The group's value as a one-field document, read as a read reads it.
        let mut probe = Document::new();
        if !missing {
            probe.insert(T::VERSION_FIELD, key.and_then(|k| k.get("value")).cloned().unwrap_or(Bson::Null));
        }
        match super::decode::stored_version::<T>(&probe) {
            Ok(v) => *counts.by_version.entry(v).or_default() += n,
            Err(_) => counts.unreadable += n,
        }
    }
    Ok(counts)
}

/// How [`backfill`] reports progress.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Progress {
    /// A progress bar on stderr when stderr is a terminal; nothing otherwise.
    #[default]
    Auto,
    /// Nothing.
    Silent,
    /// Each event to this function (after every batch, and at the end).
    Events(Arc<dyn Fn(&BackfillEvent) + Send + Sync>),
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "Auto",
            Self::Silent => "Silent",
            Self::Events(_) => "Events(..)",
        })
    }
}

/// [`backfill`]'s settings: `BackfillOptions::default()` and the setters,
/// `BackfillOptions::default().batch_size(200).max_per_second(500.0)`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BackfillOptions {
    /// Documents read per batch: memory stays within one batch. Default 500.
    pub batch_size: u32,
    /// At most this many documents upgraded per second; `None` for no limit.
    pub max_per_second: Option<f64>,
    /// Stop after upgrading this many documents, leaving the checkpoint for the next
    /// run (a bounded maintenance window); `None` to run to the end.
    pub max_documents: Option<u64>,
    /// Where progress goes.
    pub progress: Progress,
}

impl Default for BackfillOptions {
    fn default() -> Self {
        Self { batch_size: 500, max_per_second: None, max_documents: None, progress: Progress::Auto }
    }
}

impl BackfillOptions {
    /// Sets the field `batch_size`.
    pub fn batch_size(mut self, documents: u32) -> Self {
        self.batch_size = documents;
        self
    }

    /// Sets the field `max_per_second`: a rate, or `None` for no limit.
    pub fn max_per_second(mut self, rate: impl Into<Option<f64>>) -> Self {
        self.max_per_second = rate.into();
        self
    }

    /// Sets the field `max_documents`: a count, or `None` to run to the end.
    pub fn max_documents(mut self, documents: impl Into<Option<u64>>) -> Self {
        self.max_documents = documents.into();
        self
    }

    /// Sets the field `progress`.
    pub fn progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self
    }
}

/// Progress of a [`backfill`], after a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackfillEvent {
    /// Old-version documents when the run started (the server's count).
    pub total: u64,
    /// Old documents read so far in this run.
    pub scanned: u64,
    /// Old documents this run upgraded.
    pub upgraded: u64,
    /// Old documents another writer upgraded or changed first (left to it, or to the
    /// next run).
    pub raced: u64,
    /// Documents that could not be read (see [`BackfillReport::failures`]).
    pub failed: u64,
    /// Whether this is the last event of the run (however it ended: see
    /// [`BackfillReport::end`]).
    pub done: bool,
    /// Time since the run started.
    pub elapsed: Duration,
}

impl BackfillEvent {
    /// Old documents handled per second so far (upgraded, raced or failed).
    pub fn per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            (self.upgraded + self.raced + self.failed) as f64 / secs
        } else {
            0.0
        }
    }

    /// The time left at the rate so far, for the documents old when the run started;
    /// `None` before any document was handled.
    pub fn eta(&self) -> Option<Duration> {
        let rate = self.per_second();
        let left = self.total.saturating_sub(self.upgraded + self.raced + self.failed);
        (rate > 0.0).then(|| Duration::from_secs_f64(left as f64 / rate))
    }
}

/// How a [`backfill`] run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackfillEnd {
    /// No document of the collection is at an older version.
    Done,
    /// It stopped with old documents left, for this reason.
    Stopped(StopReason),
}

/// Why a [`backfill`] run stopped with old documents left.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// [`BackfillOptions::max_documents`] were upgraded; the checkpoint is kept.
    MaxDocuments,
    /// Every pass is over, and these old documents remain: ones that could not be
    /// upgraded ([`BackfillReport::failures`]), or written at an old version by another
    /// program after the final sweep passed them.
    Remaining {
        /// Old documents left, counted by the server at the end.
        old: u64,
    },
}

/// What a [`backfill`] run did.
#[derive(Debug)]
pub struct BackfillReport {
    /// The last progress event.
    pub progress: BackfillEvent,
    /// Whether the run stopped at [`BackfillOptions::max_documents`], leaving a
    /// checkpoint.
    pub stopped_early: bool,
    /// Whether it started from a previous run's checkpoint.
    pub resumed: bool,
    /// The first 100 documents that could not be read; they are left as they are.
    pub failures: Vec<VersionError>,
    /// How the run ended: [`BackfillEnd::Done`] only when no old document is left.
    pub end: BackfillEnd,
    /// Transient errors (a lost cursor, a stepped-down primary, the network) the run
    /// recovered from by reading again from its position.
    pub retried: u32,
    /// The collection's counts by version at the end.
    pub counts: VersionCounts,
}

/// The collection where backfill checkpoints are kept, one document per collection.
pub const CHECKPOINTS: &str = "docshape_backfill";

/// Upgrades every document of `T` stored at an older version, in `_id` order and in
/// batches, each with a compare-and-set on every field of the document as read (a document
/// changed meanwhile is left to whoever changed it). Safe to run while the application
/// reads and writes, idempotent, and resumable: the last `_id` of every batch is saved
/// in [`CHECKPOINTS`], and the next run starts after it, then makes one more pass from
/// the start for documents written behind it. A document that cannot be read is
/// reported in [`BackfillReport::failures`] and left alone.
pub async fn backfill<T: Versioned>(
    db: &Database,
    options: BackfillOptions,
) -> Result<BackfillReport, VersionError> {
    let span = trace::span!("backfill", collection = T::COLLECTION, version = T::VERSION);
    let done = trace::in_span(span.clone(), run::<T>(db, options)).await;
    if let Err(e) = &done {
        // Returned, and also seen by an operator who only reads the logs.
        span.in_scope(|| trace::event!(ERROR, error = %e, "failed"));
    }
    done
}

/// How many transient errors in a row a run recovers from before it returns the last
/// one, and the first wait between attempts (doubled each time: 0.1 s to 1.6 s).
const TRANSIENT_RETRIES: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// How often the checkpoint is saved besides after every batch, so that a run killed
/// during a long batch (a slow rate, large documents) loses little.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(5);

/// Whether a read or write failed for a reason that passes: the cursor was lost (a
/// server restart, an idle timeout), the primary stepped down or is shutting down, the
/// network or server selection failed. Reading again from the run's position is safe:
/// every upgrade is a compare-and-set.
fn is_transient(e: &VersionError) -> bool {
    let VersionError::Mongo(e) = e else { return false };
    use mongodb::error::{ErrorKind, WriteFailure};
    // CursorNotFound, HostUnreachable, HostNotFound, NetworkTimeout,
    // InterruptedAtShutdown, InterruptedDueToReplStateChange, NotWritablePrimary,
    // NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary, PrimarySteppedDown,
    // ShutdownInProgress, SocketException.
    const CODES: &[i32] = &[43, 6, 7, 89, 11600, 11602, 10107, 13435, 13436, 189, 91, 9001];
    // The server's code wherever the reply put it: a command error, a write concern
    // error (a shutdown while the write waited for the journal), or the write's own
    // error (an update interrupted by a shutdown or a step-down).
    let code = match e.kind.as_ref() {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        _ => None,
    };
    e.contains_label("RetryableWriteError")
        || e.contains_label("ResetPool")
        || matches!(
            e.kind.as_ref(),
            ErrorKind::Io(_) | ErrorKind::ConnectionPoolCleared { .. } | ErrorKind::ServerSelection { .. }
        )
        || code.is_some_and(|c| CODES.contains(&c))
}

/// Progress of a run, as an event of its span.
fn trace_progress(p: &BackfillEvent, position: Option<&Bson>) {
    let position = position.map(|b| b.to_string()).unwrap_or_default();
    trace::event!(
        INFO,
        total = p.total,
        scanned = p.scanned,
        upgraded = p.upgraded,
        raced = p.raced,
        failed = p.failed,
        done = p.done,
        elapsed_ms = p.elapsed.as_millis() as u64,
        per_second = p.per_second(),
        eta_ms = p.eta().map_or(0, |d| d.as_millis() as u64),
        position = position.as_str(),
        "progress"
    );
}

async fn run<T: Versioned>(db: &Database, options: BackfillOptions) -> Result<BackfillReport, VersionError> {
    // Refused before the first document rather than at it.
    crate::core::write::Effects::of::<T>().check(db).map_err(|e| VersionError::Refused(Box::new(e)))?;
    let collection = db.collection::<Document>(T::COLLECTION);
    let checkpoints = db.collection::<Document>(CHECKPOINTS);
    let old = doc! { T::VERSION_FIELD: { "$not": { "$gte": T::VERSION } } };
    // Every command of the run outside the cursor's loop is retried after a transient
    // error as the loop's reads are: a failover at the start or the end of a long
    // backfill does not fail the run.
    let mut retried = 0;
    let total =
        with_retries(&mut retried, || async { Ok(collection.count_documents(old.clone()).await?) }).await?;
    let checkpoint = with_retries(&mut retried, || async {
        Ok(checkpoints.find_one(doc! { "_id": T::COLLECTION }).await?)
    })
    .await?
    .and_then(|c| c.get("after").cloned());
    let resumed = checkpoint.is_some();
    let started = Instant::now();
    let mut progress = BackfillEvent {
        total,
        scanned: 0,
        upgraded: 0,
        raced: 0,
        failed: 0,
        done: false,
        elapsed: Duration::ZERO,
    };
    let mut failures = Vec::new();
    let mut bar = Bar::new(&options.progress);
    let batch = options.batch_size.max(1);
    // Rates below one document per 1,000 s are taken as that, so waits stay finite.
    let rate = options.max_per_second.filter(|r| r.is_finite() && *r > 0.0).map(|r| r.max(0.001));
    // Documents this run failed on or lost to another writer: a later pass does not
    // count them again.
    let mut seen: HashSet<String> = HashSet::new();
    // From the checkpoint (or the start) to the end, then once more from the start: the
    // final sweep, for documents written at an old version behind the cursor while it
    // ran (or before a resumed run's checkpoint), and `_id`s of another type.
    let passes: Vec<Option<Bson>> = vec![checkpoint, None];
    let mut stopped_early = false;
    let mut last_saved = Instant::now();
    'passes: for start in passes {
        // Where this pass is: the last `_id` it handled. A transient error reads again
        // from there, with a new cursor.
        let mut position = start;
        let mut in_batch = 0;
        let mut failed_in_a_row = 0;
        loop {
            let mut filter = old.clone();
            if let Some(after) = &position {
                filter.insert("_id", doc! { "$gt": after.clone() });
            }
            // One cursor per pass, in `_id` order, `batch` documents per round trip:
            // memory stays within a batch, and `_id`s of mixed types are all visited.
            let find = FindOptions::builder().sort(doc! { "_id": 1 }).batch_size(batch).build();
            let read: Result<(), VersionError> = async {
                let mut cursor = collection.find(filter).with_options(find).await?;
                while let Some(document) = cursor.try_next().await? {
                    failed_in_a_row = 0;
                    if options.max_documents.is_some_and(|max| progress.upgraded >= max) {
                        stopped_early = true;
                        return Ok(());
                    }
                    let id = id_of(&document);
                    let key = format!("{id:?}");
                    if seen.contains(&key) {
                        position = Some(id);
                        continue;
                    }
                    match upgrade_one::<T>(db, document).await {
                        Ok(Upgrade::Done) => progress.upgraded += 1,
                        Ok(Upgrade::Raced) => {
                            progress.raced += 1;
                            seen.insert(key);
                        }
                        // The position stays before this document: a transient error
                        // reads it again.
                        Err(e) if is_fatal(&e) => return Err(e),
                        Err(e) => {
                            progress.failed += 1;
                            seen.insert(key);
                            if failures.len() < 100 {
                                failures.push(e);
                            }
                        }
                    }
                    progress.scanned += 1;
                    position = Some(id.clone());
                    if let Some(rate) = rate {
                        let due = started + Duration::from_secs_f64(progress.upgraded as f64 / rate);
                        if let Some(wait) = due.checked_duration_since(Instant::now()) {
                            tokio::time::sleep(wait).await;
                        }
                    }
                    in_batch += 1;
                    if in_batch == batch || last_saved.elapsed() >= CHECKPOINT_EVERY {
                        save_checkpoint::<T>(&checkpoints, id).await?;
                        last_saved = Instant::now();
                    }
                    if in_batch == batch {
                        in_batch = 0;
                        progress.elapsed = started.elapsed();
                        bar.show(&progress);
                        trace_progress(&progress, position.as_ref());
                    }
                }
                Ok(())
            }
            .await;
            match read {
                Ok(()) if stopped_early => {
                    if let Some(last) = position {
                        save_checkpoint::<T>(&checkpoints, last).await?;
                    }
                    break 'passes;
                }
                Ok(()) => continue 'passes,
                Err(e) if is_transient(&e) && failed_in_a_row < TRANSIENT_RETRIES => {
                    trace::event!(WARN, error = %e, "read again after a transient error");
                    tokio::time::sleep(FIRST_BACKOFF * 2_u32.pow(failed_in_a_row)).await;
                    failed_in_a_row += 1;
                    retried += 1;
                }
                Err(e) => {
                    // Keep the position for the next run.
                    if let Some(last) = position {
                        let _ = save_checkpoint::<T>(&checkpoints, last).await;
                    }
                    return Err(e);
                }
            }
        }
    }
    let counts = with_retries(&mut retried, || version_counts::<T>(db)).await?;
    let left = counts.older_than(T::VERSION);
    let end = if stopped_early {
        BackfillEnd::Stopped(StopReason::MaxDocuments)
    } else {
        with_retries(&mut retried, || async {
            Ok(checkpoints.delete_one(doc! { "_id": T::COLLECTION }).await.map(drop)?)
        })
        .await?;
        if left == 0 {
            BackfillEnd::Done
        } else {
            BackfillEnd::Stopped(StopReason::Remaining { old: left })
        }
    };
    progress.done = true;
    progress.elapsed = started.elapsed();
    bar.show(&progress);
    bar.finish();
    trace_progress(&progress, None);
    let outcome = match &end {
        BackfillEnd::Done => "done",
        BackfillEnd::Stopped(StopReason::MaxDocuments) => "stopped at max_documents",
        BackfillEnd::Stopped(_) => "stopped with old documents left",
    };
    trace::event!(INFO, stopped_early, resumed, retried, left, outcome, "finished");
    Ok(BackfillReport { progress, stopped_early, resumed, failures, end, retried, counts })
}

/// `op`, sent again after a transient error (a failover, a dropped connection) with
/// the cursor's backoff, [`TRANSIENT_RETRIES`] times at most; each retry counted in
/// `retried`. Every `op` here is a read or an idempotent write.
async fn with_retries<R, F, Fut>(retried: &mut u32, mut op: F) -> Result<R, VersionError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<R, VersionError>>,
{
    let mut failed = 0;
    loop {
        match op().await {
            Err(e) if is_transient(&e) && failed < TRANSIENT_RETRIES => {
                trace::event!(WARN, error = %e, "sent again after a transient error");
                tokio::time::sleep(FIRST_BACKOFF * 2_u32.pow(failed)).await;
                failed += 1;
                *retried += 1;
            }
            done => return done,
        }
    }
}

/// How one document's upgrade ended.
pub(super) enum Upgrade {
    Done,
    /// Another writer changed it first, and it is current now (or gone).
    Raced,
}

/// Upgrades one old document with a compare-and-set; on a lost race, reads it again
/// and retries while it is still old. Three rounds at most: a round is lost only when
/// the document changed, and one that stays old through three is reported as a
/// [`VersionError::Conflict`] (a failure of the run), not as raced.
pub(super) async fn upgrade_one<T: Versioned>(
    db: &Database,
    document: Document,
) -> Result<Upgrade, VersionError> {
    let collection = db.collection::<Document>(T::COLLECTION);
    let mut document = document;
    for _ in 0..3 {
        let mut loaded = Loaded::<T>::from_document(document)?;
        if !loaded.needs_stamp() {
            return Ok(Upgrade::Raced);
        }
        match loaded.save(db).await {
            Ok(()) => return Ok(Upgrade::Done),
            Err(VersionError::Conflict { .. }) => {}
            Err(e) => return Err(e),
        }
        match collection.find_one(doc! { "_id": eq(loaded.id()) }).await? {
            Some(again) => document = again,
            None => return Ok(Upgrade::Raced),
        }
    }
    // Still old after three lost compares: not another writer's upgrade, so not a
    // race won by someone else; the document is reported, not counted as raced.
    Err(VersionError::Conflict { collection: T::COLLECTION, id: id_of(&document), attempts: 3 })
}

/// Whether an error ends the handling of a document for the whole read, not just for
/// that document: the server or the network failing, and any transient error (which
/// the run reads again after, from before the document), not one document that cannot
/// be read or written (a validation or duplicate-key error). A write refused for a
/// passing reason (`ShutdownInProgress`, `NotWritablePrimary`, labelled
/// `RetryableWriteError`) comes back as a command or write error too: it is not the
/// document's failure, and the document is upgraded when the run reads it again.
pub(super) fn is_fatal(e: &VersionError) -> bool {
    match e {
        VersionError::Mongo(m) => {
            is_transient(e)
                || !matches!(
                    m.kind.as_ref(),
                    mongodb::error::ErrorKind::Write(_) | mongodb::error::ErrorKind::Command(_)
                )
        }
        _ => false,
    }
}

pub(super) async fn save_checkpoint<T: Versioned>(
    checkpoints: &mongodb::Collection<Document>,
    after: Bson,
) -> Result<(), VersionError> {
    checkpoints
        .update_one(
            doc! { "_id": T::COLLECTION },
            doc! { "$set": { "after": after, "at": bson::DateTime::now() } },
        )
        .upsert(true)
        .await?;
    Ok(())
}

/// The terminal progress bar, or the event callback.
pub(super) struct Bar {
    progress: Progress,
    terminal: bool,
    drawn: bool,
}

impl Bar {
    fn new(progress: &Progress) -> Self {
        let terminal = matches!(progress, Progress::Auto) && std::io::stderr().is_terminal();
        Self { progress: progress.clone(), terminal, drawn: false }
    }

    fn show(&mut self, event: &BackfillEvent) {
        match &self.progress {
            Progress::Events(f) => f(event),
            Progress::Auto if self.terminal => {
                let done = event.upgraded + event.raced + event.failed;
                const WIDTH: u64 = 30;
                let filled = (done.min(event.total) * WIDTH).checked_div(event.total).unwrap_or(WIDTH);
                let bar: String = "#".repeat(filled as usize) + &".".repeat((WIDTH - filled) as usize);
                let mut err = std::io::stderr().lock();
                let eta = event.eta().map_or_else(String::new, |d| format!(", {}s left", d.as_secs()));
                let _ = write!(
                    err,
                    "\rbackfill [{bar}] {done}/{} ({} upgraded, {} raced, {} failed; {:.0}/s{eta})",
                    event.total,
                    event.upgraded,
                    event.raced,
                    event.failed,
                    event.per_second()
                );
                let _ = err.flush();
                self.drawn = true;
            }
            _ => {}
        }
    }

    fn finish(&self) {
        if self.drawn {
            eprintln!();
        }
    }
}
