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

/// [`backfill`]'s settings.
#[derive(Debug, Clone)]
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

/// Progress of a [`backfill`], after a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Whether this is the last event of the run.
    pub done: bool,
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
    trace::in_span(span, run::<T>(db, options)).await
}

/// Progress of a run, as an event of its span.
fn trace_progress(p: &BackfillEvent) {
    trace::event!(
        INFO,
        total = p.total,
        scanned = p.scanned,
        upgraded = p.upgraded,
        raced = p.raced,
        failed = p.failed,
        done = p.done,
        "progress"
    );
}

async fn run<T: Versioned>(db: &Database, options: BackfillOptions) -> Result<BackfillReport, VersionError> {
    let collection = db.collection::<Document>(T::COLLECTION);
    let checkpoints = db.collection::<Document>(CHECKPOINTS);
    let old = doc! { T::VERSION_FIELD: { "$not": { "$gte": T::VERSION } } };
    let total = collection.count_documents(old.clone()).await?;
    let checkpoint =
        checkpoints.find_one(doc! { "_id": T::COLLECTION }).await?.and_then(|c| c.get("after").cloned());
    let resumed = checkpoint.is_some();
    let mut progress = BackfillEvent { total, scanned: 0, upgraded: 0, raced: 0, failed: 0, done: false };
    let mut failures = Vec::new();
    let mut bar = Bar::new(&options.progress);
    let started = Instant::now();
    let batch = options.batch_size.max(1);
    // Rates below one document per 1,000 s are taken as that, so waits stay finite.
    let rate = options.max_per_second.filter(|r| r.is_finite() && *r > 0.0).map(|r| r.max(0.001));
    // Documents this run failed on or lost to another writer: a second pass does not
    // count them again.
    let mut seen: HashSet<String> = HashSet::new();
    // A resumed run goes from its checkpoint to the end, then once from the start (for
    // documents written behind the checkpoint, or of another `_id` type).
    let mut passes: Vec<Option<Bson>> = vec![checkpoint];
    if resumed {
        passes.push(None);
    }
    let mut stopped_early = false;
    'passes: for start in passes {
        let mut filter = old.clone();
        if let Some(after) = &start {
            filter.insert("_id", doc! { "$gt": after.clone() });
        }
        // One cursor per pass, in `_id` order, `batch` documents per round trip: memory
        // stays within a batch, and `_id`s of mixed types are all visited.
        let find = FindOptions::builder().sort(doc! { "_id": 1 }).batch_size(batch).build();
        let mut cursor = collection.find(filter).with_options(find).await?;
        let mut in_batch = 0;
        let mut last = None;
        while let Some(document) = cursor.try_next().await? {
            if options.max_documents.is_some_and(|max| progress.upgraded >= max) {
                stopped_early = true;
                if let Some(last) = last {
                    save_checkpoint::<T>(&checkpoints, last).await?;
                }
                break 'passes;
            }
            let id = id_of(&document);
            last = Some(id.clone());
            let key = format!("{id:?}");
            if seen.contains(&key) {
                continue;
            }
            progress.scanned += 1;
            match upgrade_one::<T>(db, document).await {
                Ok(Upgrade::Done) => progress.upgraded += 1,
                Ok(Upgrade::Raced) => {
                    progress.raced += 1;
                    seen.insert(key);
                }
                Err(e) if is_fatal(&e) => return Err(e),
                Err(e) => {
                    progress.failed += 1;
                    seen.insert(key);
                    if failures.len() < 100 {
                        failures.push(e);
                    }
                }
            }
            if let Some(rate) = rate {
                let due = started + Duration::from_secs_f64(progress.upgraded as f64 / rate);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    tokio::time::sleep(wait).await;
                }
            }
            in_batch += 1;
            if in_batch == batch {
                in_batch = 0;
                save_checkpoint::<T>(&checkpoints, id).await?;
                bar.show(&progress);
                trace_progress(&progress);
            }
        }
    }
    if !stopped_early {
        checkpoints.delete_one(doc! { "_id": T::COLLECTION }).await?;
    }
    progress.done = true;
    bar.show(&progress);
    bar.finish();
    trace_progress(&progress);
    trace::event!(INFO, stopped_early, resumed, "finished");
    let counts = version_counts::<T>(db).await?;
    Ok(BackfillReport { progress, stopped_early, resumed, failures, counts })
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

/// Whether an error stops a backfill: the server or the network failing, not one
/// document that cannot be read or written (a validation or duplicate-key error).
pub(super) fn is_fatal(e: &VersionError) -> bool {
    match e {
        VersionError::Mongo(e) => !matches!(
            e.kind.as_ref(),
            mongodb::error::ErrorKind::Write(_) | mongodb::error::ErrorKind::Command(_)
        ),
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
                let _ = write!(
                    err,
                    "\rbackfill [{bar}] {done}/{} ({} upgraded, {} raced, {} failed)",
                    event.total, event.upgraded, event.raced, event.failed
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
