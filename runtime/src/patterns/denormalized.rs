//! Denormalized copies: a field of one model that copies a field of another
//! (`#[denormalized(from = "User::name", via = "author_id", refresh = ...)]`), and how
//! the copies are kept as fresh as their declared policy says.
//!
//! Every `#[derive(Model)]` with a `#[denormalized]` field submits one [`CopySpec`]
//! per copy to this module's registry (through the linker, like
//! [`crate::registry::models`]), so that the source's update API knows every copy that
//! depends on it without a list kept by hand.
//!
//! # Updating a source
//!
//! Change a source document with [`update_one`] (or [`update_one_with`]) rather than
//! with the driver, and every copy of a field the update may touch follows its policy:
//!
//! - [`Refresh::Never`]: nothing; the copy is a snapshot.
//! - [`Refresh::Sync`]: `update_many({via: id}, {$set: {field: new value}})` on the
//!   copy's collection, in the same call. The new value comes from the source update
//!   itself (`findAndModify` returning the updated document, projected to the copied
//!   fields), not from another read. A source without the field `$unset`s the copy.
//! - [`Refresh::Async`]: one job in the queue collection [`QUEUE`], drained by a
//!   [`Worker`] within `max_stale`.
//!
//! Which copies an update "may touch" is decided from its paths: a `$set`, `$unset`,
//! `$rename` (either name), `$inc`, ... path equal to the copied field, a prefix of it,
//! or under it, once array positions (`$`, `$[]`, `$[x]`, `0`) are left out of both
//! paths. An update pipeline, or a document that is not all operators, touches every
//! copy.
//!
//! **Ordering and failures.** When the deployment has transactions (a replica set or
//! a sharded cluster), the source write and the sync copies are one transaction: on
//! any error in it nothing is written ([`CopyError::Copy`] with `source_updated:
//! false`), and transient errors (a write conflict with a concurrent update of the
//! same source) retry the whole transaction. The async copies' jobs are enqueued right
//! after the commit, outside the transaction: a worker renewing its lease on the same
//! job would otherwise make the transaction conflict and start over for as long as
//! that worker runs. Without transactions ([`Atomicity::Sequential`], or
//! [`Atomicity::Auto`] on a standalone server) the writes are made one after another,
//! in this order:
//!
//! 1. the source document;
//! 2. each touched copy, in the registry's order (by collection, then field): a sync
//!    copy's `update_many`, or an async copy's job;
//! 3. for sync copies, the source is read again, and a copy whose source value
//!    changed meanwhile (a concurrent update) is written again, until the values
//!    agree. Whichever update of the source is the last, its value is the last one
//!    written to the copy: every call's last copy write comes before a read that
//!    shows the value it wrote. (Writers that never stop would keep this going:
//!    [`CopyError::Unsettled`] after two minutes.)
//!
//! An error at step 2, or in enqueueing a job after a commit, is [`CopyError::Copy`]
//! naming the copy that failed, with `source_updated: true`: the source and the copies
//! before it (in that order; after a commit, every sync copy) are updated, that copy
//! and the ones after it are not. Running the same update again (it is applied again
//! to the source, so make it idempotent, like a `$set`), or [`repair`] for that source
//! document, brings every copy in line. A process that dies between the source write
//! (or the commit) and the last copy leaves the same state without an error to see;
//! [`repair`] is the remedy there too.
//!
//! # The refresh queue
//!
//! [`QUEUE`] (`docshape_refresh`) is reserved: one document per copy and source
//! document with a refresh pending, written only by this module:
//!
//! ```text
//! { _id: { copy: "posts.author_name", id: <the source's _id> },
//!   seq: <long: +1 at every enqueue>,
//!   enqueued_at: <date: the first enqueue since the job last completed>,
//!   due: <date: enqueued_at + max_stale>,
//!   lease_until: <date: claimable once past; epoch 0 when released>,
//!   owner: <the worker id holding it, or that held it last>,
//!   claimed_at, claims, failures, last_error, failed_at: <bookkeeping> }
//! ```
//!
//! An enqueue is an upsert: `$inc: {seq: 1}`, and `$setOnInsert` for the dates, so
//! several updates of one source before a worker gets to it make one job. The job
//! carries no value: the worker reads the source when it runs, so several renames in a
//! row converge to the last one.
//!
//! # Workers
//!
//! A [`Worker`] claims jobs (the oldest `due` first), reads the source's current value,
//! writes it to the copies that differ in batches, and completes the job with
//! `delete_one({_id, seq: <seq when claimed>, owner: <me>})`. Any number of workers
//! may run at once, each with its own id, and a worker may be stopped at any point:
//!
//! - A claim is a `findAndModify` on jobs whose lease has expired, or whose `owner`
//!   is this worker's id (a worker restarted with the same id resumes its job at once).
//! - Applying is idempotent and resumable: each batch is found with
//!   `{via: id, field: {$ne: value}}` and written with
//!   `update_many({_id: {$in: ids}, via: id}, {$set: {field: value}})`, so after a stop
//!   only the copies still different are visited. The lease is renewed (on
//!   `owner == me`) before every batch, and a worker that finds it lost stops.
//! - A completion that deletes nothing means the job changed since the claim: its
//!   `seq` moved on (the source was updated again), and the worker releases it to run
//!   again at once; or it is no longer this worker's (its lease expired and another
//!   worker took it, perhaps finished it, while this one was still writing an older
//!   value), and the worker enqueues it again.
//!
//! **Convergence.** Take the run that deletes a source's job for the last time. Every
//! enqueue came before its claim (one after it would have moved `seq`, and the delete
//! would have failed), and every update of the source is enqueued after it is
//! written: so the run read the source's last value. Every other run's writes came
//! before that claim too: a run that lost the job enqueued it again after its last
//! write (an enqueue, so before the claim); a run that still held the job released
//! it after its last write, and nobody claims a held job before its release or its
//! lease's expiry. So the final run finds every copy that still differs, and the last
//! write to every copy is its own, with the last value. This needs distinct ids among
//! the workers running at once, and, for a worker restarted under its old id, no write
//! of its previous process still in flight (a lease's expiry covers that for the
//! others).
//!
//! Worker clocks should agree to well within the lease (60 s by default): leases and
//! due dates are the workers' clock times.

// A `CopyError` names the document (`_id` as `Bson`) and carries the driver's error:
// large, but rare and behind a round trip anyway.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{doc, Bson, DateTime, Document};
use futures_util::future::BoxFuture;
use futures_util::TryStreamExt;
use mongodb::error::{
    ErrorKind, WriteFailure, TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT,
};
use mongodb::options::{ReturnDocument, UpdateModifications};
use mongodb::{ClientSession, Collection, Database, IndexModel};

pub use crate::core::copy::{CopyError, CopySpec, Refresh, QUEUE};
use crate::core::hooks::SourceWriteHook;
use crate::core::model::Model;

inventory::collect!(CopySpec);

/// Every registered copy, in a stable order (by collection, then field).
pub fn copies() -> Vec<&'static CopySpec> {
    let mut all: Vec<&'static CopySpec> = inventory::iter::<CopySpec>.into_iter().collect();
    all.sort_by(|a, b| (a.collection, a.field).cmp(&(b.collection, b.field)));
    all.dedup_by(|a, b| a == b);
    all
}

/// The registered copies whose source is the collection `source`.
pub fn dependents(source: &str) -> Vec<&'static CopySpec> {
    copies().into_iter().filter(|c| c.source == source).collect()
}

/// How long a sequential update keeps re-writing a sync copy whose source concurrent
/// writers keep changing (each round means one of them made progress).
const SETTLE_TIME: Duration = Duration::from_secs(120);

/// How long a transaction that fails with transient errors (write conflicts with
/// concurrent updates of the same source) is retried: the driver's own limit for
/// `with_transaction`.
const TRANSACTION_TIME: Duration = Duration::from_secs(120);

/// A commit whose outcome is unknown is retried this many times.
const COMMIT_ATTEMPTS: u32 = 5;

// ---- updating a source ---------------------------------------------------------------

/// Whether [`update_one_with`] writes the source and its copies in one transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Atomicity {
    /// A transaction when the deployment has them (a replica set or a sharded
    /// cluster), the sequential order otherwise (see the [module docs](self)). A
    /// standalone server is found out by its refusal of the first write, which has no
    /// effect; no command is spent asking.
    #[default]
    Auto,
    /// Always a transaction: [`CopyError::NoTransactions`] on a standalone server.
    Transaction,
    /// Never a transaction: the source, then each copy, in the documented order.
    Sequential,
}

/// [`update_one_with`]'s settings.
#[derive(Debug, Clone, Default)]
pub struct UpdateOptions {
    /// Whether the writes are one transaction. Default [`Atomicity::Auto`].
    pub atomicity: Atomicity,
}

/// What one touched copy got from [`update_one`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyAction {
    /// A sync copy, written in the call.
    Synced {
        /// Documents referencing the source.
        matched: u64,
        /// Documents whose copy changed.
        modified: u64,
    },
    /// An async copy: its job is in the queue.
    Enqueued,
    /// A `Never` copy: left as it was, a snapshot.
    Kept,
}

/// One copy an update touched, and what was done with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyUpdate {
    /// The copy.
    pub copy: &'static CopySpec,
    /// What was done.
    pub action: CopyAction,
}

/// What [`update_one`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceUpdate {
    /// Source documents matched: 0 or 1. With 0, no copy was touched.
    pub matched: u64,
    /// Source documents modified, when known: an update that touches a sync copy is
    /// made with `findAndModify` (for the new value), which does not say; `None` then.
    pub modified: Option<u64>,
    /// Whether the writes were one transaction.
    pub transaction: bool,
    /// The copies the update may have touched, in registry order (only when the
    /// source matched).
    pub copies: Vec<CopyUpdate>,
}

impl SourceUpdate {
    /// Copy documents modified by sync copies.
    pub fn documents_updated(&self) -> u64 {
        self.copies
            .iter()
            .map(|c| match c.action {
                CopyAction::Synced { modified, .. } => modified,
                _ => 0,
            })
            .sum()
    }

    /// Jobs enqueued for async copies.
    pub fn jobs_enqueued(&self) -> u64 {
        self.copies.iter().filter(|c| c.action == CopyAction::Enqueued).count() as u64
    }
}

/// Updates the source document `{_id: id}` of `S` with `update` (an update document or
/// pipeline), and every copy of a field it may touch by the copy's policy, with
/// [`Atomicity::Auto`]: see the [module docs](self) for what is written, in which
/// order, and what an error leaves.
///
/// ```no_run
/// # use docshape::Model;
/// # #[derive(serde::Serialize, serde::Deserialize, Model)]
/// # #[model(collection = "users")]
/// # struct User { #[serde(rename = "_id")] id: String, name: String }
/// # async fn run(db: &docshape::mongodb::Database) -> Result<(), docshape::copies::CopyError> {
/// use docshape::bson::doc;
/// let done = docshape::copies::update_one::<User>(db, "u1", doc! { "$set": { "name": "Ada" } }).await?;
/// println!("{} posts renamed, {} refreshes queued", done.documents_updated(), done.jobs_enqueued());
/// # Ok(()) }
/// ```
pub async fn update_one<S: Model>(
    db: &Database,
    id: impl Into<Bson>,
    update: impl Into<UpdateModifications>,
) -> Result<SourceUpdate, CopyError> {
    update_one_with::<S>(db, id, update, &UpdateOptions::default()).await
}

/// [`update_one`] with settings.
pub async fn update_one_with<S: Model>(
    db: &Database,
    id: impl Into<Bson>,
    update: impl Into<UpdateModifications>,
    options: &UpdateOptions,
) -> Result<SourceUpdate, CopyError> {
    let write = SourceWrite::new(db, S::COLLECTION, id.into(), update.into());
    if !write.touched.iter().any(|c| c.refresh != Refresh::Never) {
        // One write and nothing to keep in step with it: no transaction needed.
        return write.sequential().await;
    }
    match options.atomicity {
        Atomicity::Sequential => write.sequential().await,
        Atomicity::Transaction => match write.transaction().await? {
            Some(done) => Ok(done),
            None => Err(CopyError::NoTransactions { collection: S::COLLECTION }),
        },
        Atomicity::Auto => match write.transaction().await? {
            Some(done) => Ok(done),
            None => write.sequential().await,
        },
    }
}

/// Runs a driver action with the session when there is one.
macro_rules! with_session {
    ($action:expr, $session:expr) => {
        match $session.as_deref_mut() {
            Some(session) => $action.session(session).await,
            None => $action.await,
        }
    };
}

/// Where a source update failed.
enum Stage {
    Source,
    Copy(&'static CopySpec),
}

/// One source update and the copies it touches.
struct SourceWrite<'a> {
    db: &'a Database,
    source: &'static str,
    id: Bson,
    update: UpdateModifications,
    touched: Vec<&'static CopySpec>,
}

impl<'a> SourceWrite<'a> {
    fn new(db: &'a Database, source: &'static str, id: Bson, update: UpdateModifications) -> Self {
        let touched = dependents(source).into_iter().filter(|c| touches(&update, c.source_field)).collect();
        Self { db, source, id, update, touched }
    }

    fn sync_copies(&self) -> impl Iterator<Item = &'static CopySpec> + '_ {
        self.touched.iter().copied().filter(|c| c.refresh == Refresh::Sync)
    }

    fn error(&self, stage: Stage, error: mongodb::error::Error, source_updated: bool) -> CopyError {
        match stage {
            Stage::Source => CopyError::Source { collection: self.source, id: self.id.clone(), error },
            Stage::Copy(spec) => {
                CopyError::Copy { copy: spec.key(), id: self.id.clone(), source_updated, error }
            }
        }
    }

    /// The source write, then every touched copy, with `session` when given (in its
    /// transaction). Returns the report and the source's updated document (projected
    /// to the sync copies' fields) when a sync copy was written.
    async fn write(
        &self,
        mut session: Option<&mut ClientSession>,
    ) -> Result<(SourceUpdate, Option<Document>), (Stage, mongodb::error::Error)> {
        let source = self.db.collection::<Document>(self.source);
        let filter = doc! { "_id": self.id.clone() };
        let transaction = session.is_some();
        let (matched, modified, after) = if self.sync_copies().next().is_none() {
            let done = with_session!(source.update_one(filter, self.update.clone()), session)
                .map_err(|e| (Stage::Source, e))?;
            (done.matched_count, Some(done.modified_count), None)
        } else {
            let projection = projection(self.sync_copies().map(|c| c.source_field));
            let after = with_session!(
                source
                    .find_one_and_update(filter, self.update.clone())
                    .projection(projection)
                    .return_document(ReturnDocument::After),
                session
            )
            .map_err(|e| (Stage::Source, e))?;
            (u64::from(after.is_some()), None, after)
        };
        let mut report = SourceUpdate { matched, modified, transaction, copies: Vec::new() };
        if matched == 0 {
            return Ok((report, None));
        }
        for &spec in &self.touched {
            let action = match spec.refresh {
                Refresh::Never => CopyAction::Kept,
                Refresh::Sync => {
                    let value = after.as_ref().and_then(|a| value_at(a, spec.source_field));
                    let target = self.db.collection::<Document>(spec.collection);
                    let done = with_session!(
                        target.update_many(doc! { spec.via: self.id.clone() }, change(spec, value.as_ref())),
                        session
                    )
                    .map_err(|e| (Stage::Copy(spec), e))?;
                    CopyAction::Synced { matched: done.matched_count, modified: done.modified_count }
                }
                // In a transaction, jobs are enqueued after the commit (see
                // `transaction`).
                Refresh::Async { .. } if transaction => CopyAction::Enqueued,
                Refresh::Async { .. } => {
                    enqueue(self.db, spec, &self.id).await.map_err(|e| (Stage::Copy(spec), e))?;
                    CopyAction::Enqueued
                }
            };
            report.copies.push(CopyUpdate { copy: spec, action });
        }
        Ok((report, after))
    }

    /// The writes one after another, then the sync copies settled against concurrent
    /// updates of the same source.
    async fn sequential(&self) -> Result<SourceUpdate, CopyError> {
        let (mut report, after) = self.write(None).await.map_err(|(stage, e)| self.error(stage, e, true))?;
        let Some(mut copied) = after else { return Ok(report) };
        let Some(copied_first) = self.sync_copies().next() else { return Ok(report) };
        let source = self.db.collection::<Document>(self.source);
        let projection = projection(self.sync_copies().map(|c| c.source_field));
        let started = std::time::Instant::now();
        let mut rounds = 1;
        loop {
            // The source as it is now: a copy written from an older value (another
            // update came in between) is written again, so that the last update's value
            // is the last one written whatever the interleaving.
            let now =
                match source.find_one(doc! { "_id": self.id.clone() }).projection(projection.clone()).await {
                    Ok(now) => now,
                    // The source is updated and so are the copies, unless another update
                    // came in between: say so of the first sync copy.
                    Err(e) => return Err(self.error(Stage::Copy(copied_first), e, true)),
                };
            let Some(now) = now else { return Ok(report) };
            let stale: Vec<&'static CopySpec> = self
                .sync_copies()
                .filter(|c| value_at(&now, c.source_field) != value_at(&copied, c.source_field))
                .collect();
            if stale.is_empty() {
                return Ok(report);
            }
            if started.elapsed() >= SETTLE_TIME {
                return Err(CopyError::Unsettled { copy: stale[0].key(), id: self.id.clone(), rounds });
            }
            rounds += 1;
            for spec in stale {
                let value = value_at(&now, spec.source_field);
                let target = self.db.collection::<Document>(spec.collection);
                let done = target
                    .update_many(doc! { spec.via: self.id.clone() }, change(spec, value.as_ref()))
                    .await
                    .map_err(|e| self.error(Stage::Copy(spec), e, true))?;
                if let Some(CopyUpdate { action: CopyAction::Synced { modified, .. }, .. }) =
                    report.copies.iter_mut().find(|c| std::ptr::eq(c.copy, spec))
                {
                    *modified += done.modified_count;
                }
            }
            copied = now;
        }
    }

    /// The writes in one transaction, retried on transient errors; `None` when the
    /// deployment has no transactions (then nothing was written).
    async fn transaction(&self) -> Result<Option<SourceUpdate>, CopyError> {
        let mut session = match self.db.client().start_session().await {
            Ok(s) => s,
            Err(e) if no_transactions(&e) => return Ok(None),
            Err(e) => return Err(self.error(Stage::Source, e, false)),
        };
        let started = std::time::Instant::now();
        let mut attempt = 0;
        'transaction: loop {
            attempt += 1;
            let may_retry =
                |e: &mongodb::error::Error| started.elapsed() < TRANSACTION_TIME && retry_transaction(e);
            match session.start_transaction().await {
                Ok(()) => {}
                Err(e) if no_transactions(&e) => return Ok(None),
                Err(e) => return Err(self.error(Stage::Source, e, false)),
            }
            let report = match self.write(Some(&mut session)).await {
                Ok((report, _)) => report,
                Err((stage, e)) => {
                    // The server aborts it anyway when this fails; the error that
                    // matters is the one that made us abort.
                    let _ = session.abort_transaction().await;
                    if attempt == 1 && matches!(stage, Stage::Source) && no_transactions(&e) {
                        return Ok(None);
                    }
                    if may_retry(&e) {
                        tokio::time::sleep(backoff(attempt)).await;
                        continue 'transaction;
                    }
                    return Err(self.error(stage, e, false));
                }
            };
            let mut commits = 0;
            loop {
                commits += 1;
                match session.commit_transaction().await {
                    Ok(()) => return self.enqueue_after_commit(report).await.map(Some),
                    Err(e)
                        if e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
                            && commits < COMMIT_ATTEMPTS => {}
                    Err(e) if e.contains_label(TRANSIENT_TRANSACTION_ERROR) && may_retry(&e) => {
                        tokio::time::sleep(backoff(attempt)).await;
                        continue 'transaction;
                    }
                    Err(error) => {
                        return Err(CopyError::Commit { collection: self.source, id: self.id.clone(), error })
                    }
                }
            }
        }
    }

    /// The async copies' jobs of a committed transaction. They are not part of it: a
    /// worker renewing its lease on the same job would make the transaction conflict
    /// and start over, for as long as the worker runs. Enqueued after the commit, a job
    /// still comes after the source write, which is what convergence needs.
    async fn enqueue_after_commit(&self, report: SourceUpdate) -> Result<SourceUpdate, CopyError> {
        for c in report.copies.iter().filter(|c| c.action == CopyAction::Enqueued) {
            enqueue(self.db, c.copy, &self.id).await.map_err(|e| self.error(Stage::Copy(c.copy), e, true))?;
        }
        Ok(report)
    }
}

/// Whether the deployment refused a transaction for having none: the driver's own
/// refusal, or a standalone server's (`IllegalOperation`, "Transaction numbers are only
/// allowed on a replica set member or mongos").
fn no_transactions(e: &mongodb::error::Error) -> bool {
    match e.kind.as_ref() {
        ErrorKind::SessionsNotSupported => true,
        ErrorKind::Transaction { message, .. } => message.contains("not supported"),
        ErrorKind::Command(c) => c.code == 20 && c.message.contains("ransaction"),
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 20 && w.message.contains("ransaction"),
        _ => false,
    }
}

/// Whether a failed transaction is worth running again: a transient error (a write
/// conflict with a concurrent update of the same source).
fn retry_transaction(e: &mongodb::error::Error) -> bool {
    e.contains_label(TRANSIENT_TRANSACTION_ERROR)
}

/// The wait before another attempt: a random part of `min(5 ms × 1.5^attempt, 500 ms)`,
/// as the driver's `with_transaction` does, so that conflicting writers do not retry in
/// step.
fn backoff(attempt: u32) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let ceiling = (5.0 * 1.5_f64.powi(attempt.min(20) as i32)).min(500.0);
    // A fresh `RandomState` is randomly keyed: enough randomness for a jitter.
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    let fraction = (random % 10_000) as f64 / 10_000.0;
    Duration::from_micros((ceiling * fraction * 1000.0) as u64)
}

fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        ErrorKind::Command(c) => c.code == 11000,
        _ => false,
    }
}

/// Whether an error stops a worker: the server or the network failing, not a write
/// the server refused for one document (a validator, a duplicate key).
fn is_fatal(e: &mongodb::error::Error) -> bool {
    !matches!(e.kind.as_ref(), ErrorKind::Write(_) | ErrorKind::Command(_))
}

/// The update that makes a copy equal to `value`: `$set`, or `$unset` when the source
/// has no such field.
fn change(spec: &CopySpec, value: Option<&Bson>) -> Document {
    match value {
        Some(v) => doc! { "$set": { spec.field: v.clone() } },
        None => doc! { "$unset": { spec.field: "" } },
    }
}

/// The filter of a copy's documents that differ from `value`.
fn stale_filter(spec: &CopySpec, id: &Bson, value: Option<&Bson>) -> Document {
    let condition = match value {
        Some(v) => doc! { "$ne": v.clone() },
        None => doc! { "$exists": true },
    };
    doc! { spec.via: id.clone(), spec.field: condition }
}

/// The job `_id` of a copy and a source document.
fn job_key(spec: &CopySpec, id: &Bson) -> Bson {
    Bson::Document(doc! { "copy": spec.key(), "id": id.clone() })
}

fn plus(at: DateTime, d: Duration) -> DateTime {
    let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    DateTime::from_millis(at.timestamp_millis().saturating_add(ms))
}

fn since(earlier: DateTime, now: DateTime) -> Duration {
    let ms = now.timestamp_millis().saturating_sub(earlier.timestamp_millis()).max(0);
    Duration::from_millis(ms as u64)
}

/// Upserts the job of `spec` for source document `id`: a new one due `max_stale` from
/// now, or one more `seq` on the pending one. Two upserts racing to create a job make
/// one fail with a duplicate key; it is retried once, and then finds the job.
async fn enqueue(db: &Database, spec: &CopySpec, id: &Bson) -> mongodb::error::Result<()> {
    let max_stale = match spec.refresh {
        Refresh::Async { max_stale } => max_stale,
        Refresh::Sync | Refresh::Never => Duration::ZERO,
    };
    let queue = db.collection::<Document>(QUEUE);
    let now = DateTime::now();
    let filter = doc! { "_id": job_key(spec, id) };
    let update = doc! {
        "$inc": { "seq": 1_i64 },
        "$setOnInsert": {
            "enqueued_at": now,
            "due": plus(now, max_stale),
            "lease_until": DateTime::from_millis(0),
        },
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        match queue.update_one(filter.clone(), update.clone()).upsert(true).await {
            Ok(_) => return Ok(()),
            Err(e) if attempt == 1 && is_duplicate_key(&e) => {}
            Err(e) => return Err(e),
        }
    }
}

// ---- paths -----------------------------------------------------------------------------

/// Whether an update may change the field at `field` (a dotted path).
fn touches(update: &UpdateModifications, field: &str) -> bool {
    let UpdateModifications::Document(update) = update else {
        // A pipeline can compute anything from anything.
        return true;
    };
    update.iter().any(|(operator, argument)| {
        if !operator.starts_with('$') {
            // A replacement document, which the server refuses here; say touched.
            return true;
        }
        let Bson::Document(paths) = argument else { return true };
        paths.iter().any(|(path, value)| {
            overlaps(path, field)
                || (operator == "$rename" && value.as_str().is_none_or(|to| overlaps(to, field)))
        })
    })
}

/// Whether one dotted path is equal to, a prefix of, or under the other. Array
/// positions (`$`, `$[]`, `$[x]`, `0`) are left out of both first: `tags.$.name` and
/// `tags.0` reach `tags.name`'s values, `tags.$[t].label` does not. (A numeric field
/// name in a subdocument is left out too, which can only make an update count as
/// touching a copy it does not.)
fn overlaps(path: &str, field: &str) -> bool {
    let position = |s: &&str| s.starts_with('$') || (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    path.split('.')
        .filter(|s| !position(s))
        .zip(field.split('.').filter(|s| !position(s)))
        .all(|(a, b)| a == b)
}

/// The value at a dotted path through embedded documents; `None` when absent.
fn value_at(document: &Document, path: &str) -> Option<Bson> {
    let mut current = document;
    let mut segments = path.split('.').peekable();
    while let Some(segment) = segments.next() {
        let value = current.get(segment)?;
        if segments.peek().is_none() {
            return Some(value.clone());
        }
        current = value.as_document()?;
    }
    None
}

/// A projection of `fields`, without a path under another one (the server refuses
/// `{a: 1, "a.b": 1}`).
fn projection<'f>(fields: impl Iterator<Item = &'f str>) -> Document {
    let mut fields: Vec<&str> = fields.collect();
    fields.sort_unstable();
    fields.dedup();
    let mut out = Document::new();
    for f in &fields {
        let covered =
            fields.iter().any(|g| g != f && f.starts_with(g) && f.as_bytes().get(g.len()) == Some(&b'.'));
        if !covered {
            out.insert(*f, 1);
        }
    }
    out
}

// ---- applying a value to a copy ------------------------------------------------------

/// What one [`apply`] did.
#[derive(Default)]
struct Applied {
    modified: u64,
    /// The lease was lost: another worker holds the job; this one stopped writing.
    lost_lease: bool,
}

enum ApplyError {
    Target(mongodb::error::Error),
    Lease(mongodb::error::Error),
}

/// A worker's hold on one job.
struct Lease<'a> {
    queue: &'a Collection<Document>,
    job: &'a Bson,
    owner: &'a str,
    length: Duration,
}

impl Lease<'_> {
    /// Extends the lease while this worker still owns the job; `false` when it does not.
    async fn renew(&self) -> mongodb::error::Result<bool> {
        let done = self
            .queue
            .update_one(
                doc! { "_id": self.job.clone(), "owner": self.owner },
                doc! { "$set": { "lease_until": plus(DateTime::now(), self.length) } },
            )
            .await?;
        Ok(done.matched_count == 1)
    }
}

/// Makes every copy of `spec` referencing source `id` equal to `value`, `batch`
/// documents per `update_many`, renewing `lease` (when given) before each write.
///
/// One cursor over the documents that differ (`{via: id, field: {$ne: value}}`, `_id`s
/// only) feeds the batches: a cursor rather than a new `find` per batch, so that the
/// documents already written are not scanned again. A second pass makes sure nothing
/// was left (it finds nothing unless the copies were written to meanwhile).
///
/// `$ne` compares as the server does: numbers of different types with the same value
/// are equal, and so is an array copy that holds `value` as an element (an array value
/// nested in an array copy is left as it is).
async fn apply(
    target: &Collection<Document>,
    spec: &CopySpec,
    id: &Bson,
    value: Option<&Bson>,
    batch: usize,
    lease: Option<&Lease<'_>>,
) -> Result<Applied, ApplyError> {
    let filter = stale_filter(spec, id, value);
    let update = change(spec, value);
    let mut applied = Applied::default();
    for _pass in 0..2 {
        let mut cursor = target
            .find(filter.clone())
            .projection(doc! { "_id": 1 })
            .batch_size(u32::try_from(batch).unwrap_or(u32::MAX))
            .await
            .map_err(ApplyError::Target)?;
        let mut found = 0u64;
        let mut ids = Vec::with_capacity(batch);
        loop {
            let next = cursor.try_next().await.map_err(ApplyError::Target)?;
            if let Some(document) = &next {
                found += 1;
                ids.push(document.get("_id").cloned().unwrap_or(Bson::Null));
            }
            if ids.len() >= batch || (next.is_none() && !ids.is_empty()) {
                if let Some(lease) = lease {
                    if !lease.renew().await.map_err(ApplyError::Lease)? {
                        applied.lost_lease = true;
                        return Ok(applied);
                    }
                }
                let ids = std::mem::replace(&mut ids, Vec::with_capacity(batch));
                // `via` again: a document moved to another source since it was found
                // is not given this source's value.
                let done = target
                    .update_many(doc! { "_id": { "$in": ids }, spec.via: id.clone() }, update.clone())
                    .await
                    .map_err(ApplyError::Target)?;
                applied.modified += done.modified_count;
            }
            if next.is_none() {
                break;
            }
        }
        if found == 0 {
            break;
        }
    }
    Ok(applied)
}

// ---- workers ---------------------------------------------------------------------------

/// Drains the refresh queue ([`QUEUE`]): see the [module docs](self) for how jobs are
/// claimed, applied and completed, and why several workers and restarts converge.
///
/// ```no_run
/// # async fn run(db: &docshape::mongodb::Database) -> Result<(), docshape::copies::CopyError> {
/// use std::time::Duration;
/// use docshape::copies::Worker;
///
/// let worker = Worker::new(db).id("refresher-1").batch(500);
/// let report = worker.run_until_empty().await?;
/// println!("{} jobs, {} documents, lag {:?}", report.jobs, report.documents_updated, report.max_lag);
/// // Or forever, polling every second when the queue is empty:
/// worker.run(Duration::from_secs(1)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Worker {
    db: Database,
    id: String,
    batch: usize,
    lease: Duration,
    only: Option<Vec<String>>,
    /// Whether the queue's index was made by this worker (or a clone of it).
    indexed: Arc<AtomicBool>,
}

impl Worker {
    /// A worker on `db`'s queue, with a unique id, batches of 1,000 documents, a 60 s
    /// lease, and every registered copy.
    pub fn new(db: &Database) -> Self {
        Self {
            db: db.clone(),
            id: format!("worker-{}", ObjectId::new().to_hex()),
            batch: 1000,
            lease: Duration::from_secs(60),
            only: None,
            indexed: Arc::default(),
        }
    }

    /// The worker's id, stored as the `owner` of the jobs it claims. Give a restarted
    /// worker its previous id to resume its jobs without waiting for their leases; two
    /// workers running at once must have different ids.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Copy documents written per `update_many` (at least 1; default 1,000).
    pub fn batch(mut self, documents: usize) -> Self {
        self.batch = documents.max(1);
        self
    }

    /// How long a claimed job stays this worker's without a renewal (default 60 s; at
    /// least 1 ms). It is renewed before every batch's write, so make it comfortably
    /// longer than the time between two writes (reading the source and finding the
    /// first batch, or writing one batch and finding the next): a shorter lease lets
    /// other workers take the job over and over, each before it has written anything.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(1));
        self
    }

    /// Only these copies' jobs (keys like `"posts.author_name"`); the others are left
    /// to other workers. A key that is not a refreshed copy in this program makes
    /// [`Worker::run_until_empty`] return [`CopyError::UnknownCopy`].
    pub fn only<I, K>(mut self, keys: I) -> Self
    where
        I: IntoIterator<Item = K>,
        K: Into<String>,
    {
        self.only = Some(keys.into_iter().map(Into::into).collect());
        self
    }

    /// The worker's id.
    pub fn name(&self) -> &str {
        &self.id
    }

    /// Claims and runs jobs until none is claimable (the queue is empty, or every job
    /// left is leased to another worker, waiting after a failure, or for a copy this
    /// worker does not refresh).
    ///
    /// A job whose write the server refuses (a validator, say) is recorded on the job
    /// (`failures`, `last_error`), left for a lease's length, and reported in
    /// [`RefreshReport::failures`]; the worker goes on with the others. Jobs of copies
    /// that are not refreshed copies in this program (another program's, or
    /// `refresh = "never"`) are never claimed: they are left in the queue for a worker
    /// that knows them, and counted in [`RefreshReport::skipped`]. An error from the
    /// server or the network ends the run; the job in hand stays leased and is taken
    /// up again when its lease expires, or at once by a worker with the same id.
    pub async fn run_until_empty(&self) -> Result<RefreshReport, CopyError> {
        let mut report = self.drain().await?;
        report.skipped = skipped(&self.db).await?;
        Ok(report)
    }

    /// Runs jobs forever: drains the queue, sleeps `poll`, and again. Returns only on
    /// an error (see [`Worker::run_until_empty`]).
    pub async fn run(&self, poll: Duration) -> Result<(), CopyError> {
        loop {
            self.drain().await?;
            tokio::time::sleep(poll).await;
        }
    }

    /// The copies this worker refreshes, by key.
    fn refreshed(&self) -> Result<BTreeMap<String, &'static CopySpec>, CopyError> {
        let all: BTreeMap<String, &'static CopySpec> =
            copies().into_iter().filter(|c| c.refresh != Refresh::Never).map(|c| (c.key(), c)).collect();
        match &self.only {
            None => Ok(all),
            Some(keys) => keys
                .iter()
                .map(|k| match all.get(k) {
                    Some(spec) => Ok((k.clone(), *spec)),
                    None => Err(CopyError::UnknownCopy { copy: k.clone() }),
                })
                .collect(),
        }
    }

    async fn drain(&self) -> Result<RefreshReport, CopyError> {
        let specs = self.refreshed()?;
        let queue = self.db.collection::<Document>(QUEUE);
        if !self.indexed.load(Ordering::Relaxed) {
            // Claims walk the queue by due date.
            queue
                .create_index(IndexModel::builder().keys(doc! { "due": 1 }).build())
                .await
                .map_err(|error| CopyError::Queue { operation: "create index", error })?;
            self.indexed.store(true, Ordering::Relaxed);
        }
        let keys: Vec<&str> = specs.keys().map(String::as_str).collect();
        let mut report = RefreshReport::default();
        if keys.is_empty() {
            return Ok(report);
        }
        while let Some(job) = self.claim(&queue, &keys).await? {
            self.process(&queue, &specs, job, &mut report).await?;
        }
        Ok(report)
    }

    /// Takes the job due first among those whose lease has expired or that are this
    /// worker's own.
    async fn claim(
        &self,
        queue: &Collection<Document>,
        keys: &[&str],
    ) -> Result<Option<Document>, CopyError> {
        let now = DateTime::now();
        queue
            .find_one_and_update(
                doc! {
                    "_id.copy": { "$in": keys },
                    "$or": [ { "lease_until": { "$lte": now } }, { "owner": &self.id } ],
                },
                doc! {
                    "$set": { "owner": &self.id, "lease_until": plus(now, self.lease), "claimed_at": now },
                    "$inc": { "claims": 1_i64 },
                },
            )
            .sort(doc! { "due": 1 })
            .return_document(ReturnDocument::After)
            .await
            .map_err(|error| CopyError::Queue { operation: "claim", error })
    }

    async fn process(
        &self,
        queue: &Collection<Document>,
        specs: &BTreeMap<String, &'static CopySpec>,
        job: Document,
        report: &mut RefreshReport,
    ) -> Result<(), CopyError> {
        let key = job.get("_id").cloned().unwrap_or(Bson::Null);
        let parsed = key.as_document().and_then(|k| Some((k.get_str("copy").ok()?, k.get("id")?.clone())));
        let (Some((copy, id)), Some(seq)) = (parsed, job.get("seq").cloned()) else {
            return self.fail(queue, &key, None, CopyError::MalformedJob { job: job.clone() }, report).await;
        };
        let Some(&spec) = specs.get(copy) else {
            // Claims ask only for these keys: unreachable, but a job released here would
            // be claimed again at once, so it waits out a lease like a failure.
            let error = CopyError::UnknownCopy { copy: copy.to_owned() };
            return self.fail(queue, &key, None, error, report).await;
        };
        let refresh_error = |error| CopyError::Refresh { copy: spec.key(), id: id.clone(), error };
        let source = self.db.collection::<Document>(spec.source);
        let found =
            source.find_one(doc! { "_id": id.clone() }).projection(doc! { spec.source_field: 1 }).await;
        let value = match found {
            Ok(Some(document)) => value_at(&document, spec.source_field),
            Ok(None) => {
                // The source is gone: nothing to copy from. The copies keep their value.
                report.sources_missing += 1;
                return self.complete(queue, spec, &key, &id, &seq, &job, report).await;
            }
            Err(e) if is_fatal(&e) => return Err(refresh_error(e)),
            Err(e) => return self.fail(queue, &key, Some((spec, &id)), refresh_error(e), report).await,
        };
        let lease = Lease { queue, job: &key, owner: &self.id, length: self.lease };
        let target = self.db.collection::<Document>(spec.collection);
        match apply(&target, spec, &id, value.as_ref(), self.batch, Some(&lease)).await {
            Ok(applied) => {
                report.documents_updated += applied.modified;
                if applied.lost_lease {
                    // Another worker has the job; what this one wrote may be older than
                    // what that one writes, so the job must run once more after both.
                    self.enqueue_again(spec, &id).await?;
                    report.requeued += 1;
                    return Ok(());
                }
            }
            Err(ApplyError::Lease(error)) => {
                return Err(CopyError::Queue { operation: "renew lease", error })
            }
            Err(ApplyError::Target(e)) if is_fatal(&e) => return Err(refresh_error(e)),
            Err(ApplyError::Target(e)) => {
                return self.fail(queue, &key, Some((spec, &id)), refresh_error(e), report).await
            }
        }
        self.complete(queue, spec, &key, &id, &seq, &job, report).await
    }

    /// Deletes the job if it is unchanged since the claim and still this worker's;
    /// otherwise makes it run again.
    #[allow(clippy::too_many_arguments)]
    async fn complete(
        &self,
        queue: &Collection<Document>,
        spec: &CopySpec,
        key: &Bson,
        id: &Bson,
        seq: &Bson,
        job: &Document,
        report: &mut RefreshReport,
    ) -> Result<(), CopyError> {
        let done = queue
            .delete_one(doc! { "_id": key.clone(), "seq": seq.clone(), "owner": &self.id })
            .await
            .map_err(|error| CopyError::Queue { operation: "complete", error })?;
        if done.deleted_count == 1 {
            report.jobs += 1;
            if let Ok(enqueued) = job.get_datetime("enqueued_at") {
                let lag = since(*enqueued, DateTime::now());
                report.max_lag = Some(report.max_lag.map_or(lag, |m| m.max(lag)));
            }
            return Ok(());
        }
        // The source changed since the claim (`seq` moved on): run it again at once.
        // Or the job is no longer this worker's: enqueue it again.
        if !self.release(queue, key).await? {
            self.enqueue_again(spec, id).await?;
        }
        report.requeued += 1;
        Ok(())
    }

    /// Makes this worker's job claimable by anyone at once; `false` when it is not
    /// this worker's.
    async fn release(&self, queue: &Collection<Document>, key: &Bson) -> Result<bool, CopyError> {
        let done = queue
            .update_one(
                doc! { "_id": key.clone(), "owner": &self.id },
                doc! { "$set": { "lease_until": DateTime::from_millis(0) } },
            )
            .await
            .map_err(|error| CopyError::Queue { operation: "release", error })?;
        Ok(done.matched_count == 1)
    }

    async fn enqueue_again(&self, spec: &CopySpec, id: &Bson) -> Result<(), CopyError> {
        enqueue(&self.db, spec, id).await.map_err(|error| CopyError::Queue { operation: "enqueue", error })
    }

    /// Records a failed job and leaves it to whoever claims it after a lease's length
    /// (its owner is cleared, so this worker does not take it straight back).
    async fn fail(
        &self,
        queue: &Collection<Document>,
        key: &Bson,
        job: Option<(&CopySpec, &Bson)>,
        error: CopyError,
        report: &mut RefreshReport,
    ) -> Result<(), CopyError> {
        let now = DateTime::now();
        queue
            .update_one(
                doc! { "_id": key.clone(), "owner": &self.id },
                doc! {
                    "$set": { "lease_until": plus(now, self.lease), "last_error": error.to_string(), "failed_at": now },
                    "$unset": { "owner": "" },
                    "$inc": { "failures": 1_i64 },
                },
            )
            .await
            .map_err(|error| CopyError::Queue { operation: "record a failure", error })?;
        let (copy, id) = match job {
            Some((spec, id)) => (spec.key(), id.clone()),
            None => (String::new(), key.clone()),
        };
        report.failures.push(JobFailure { copy, id, error });
        Ok(())
    }
}

/// A job a worker could not run.
#[derive(Debug, Clone)]
pub struct JobFailure {
    /// The copy's key (empty for a malformed job).
    pub copy: String,
    /// The source document's `_id` (the job's `_id` for a malformed job).
    pub id: Bson,
    /// What went wrong.
    pub error: CopyError,
}

/// Jobs left in the queue because no copy this program refreshes has their key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedJobs {
    /// The key (`"posts.author_name"`).
    pub copy: String,
    /// How many jobs.
    pub jobs: u64,
}

/// What [`Worker::run_until_empty`] did.
#[derive(Debug, Clone, Default)]
pub struct RefreshReport {
    /// Jobs completed (and deleted).
    pub jobs: u64,
    /// Copy documents modified.
    pub documents_updated: u64,
    /// The longest time from a completed job's first enqueue to its completion: how
    /// stale a copy was at most. `None` when no job completed.
    pub max_lag: Option<Duration>,
    /// Times a job was left to run again: its source changed while it ran, or another
    /// worker took it over.
    pub requeued: u64,
    /// Jobs whose source document no longer exists (completed without a write).
    pub sources_missing: u64,
    /// Jobs that failed, recorded on the job and left for later.
    pub failures: Vec<JobFailure>,
    /// Jobs of copies this program does not refresh, left in the queue, by key.
    pub skipped: Vec<SkippedJobs>,
}

/// The queue's jobs whose key is no refreshed copy of this program.
async fn skipped(db: &Database) -> Result<Vec<SkippedJobs>, CopyError> {
    let known: Vec<String> =
        copies().into_iter().filter(|c| c.refresh != Refresh::Never).map(|c| c.key()).collect();
    let queue = db.collection::<Document>(QUEUE);
    let error = |error| CopyError::Queue { operation: "count skipped jobs", error };
    let mut cursor = queue
        .aggregate([
            doc! { "$match": { "_id.copy": { "$nin": known } } },
            doc! { "$group": { "_id": "$_id.copy", "jobs": { "$sum": 1 } } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .await
        .map_err(error)?;
    let mut out = Vec::new();
    while let Some(group) = cursor.try_next().await.map_err(error)? {
        let copy = match group.get("_id") {
            Some(Bson::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        out.push(SkippedJobs { copy, jobs: count(group.get("jobs")) });
    }
    Ok(out)
}

fn count(value: Option<&Bson>) -> u64 {
    match value {
        Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or(0),
        Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or(0),
        Some(Bson::Double(n)) if *n >= 0.0 => *n as u64,
        _ => 0,
    }
}

// ---- lag -------------------------------------------------------------------------------

/// The queue's state for one copy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CopyLag {
    /// Jobs waiting or running.
    pub pending: u64,
    /// When the oldest of them was enqueued.
    pub oldest_enqueued_at: Option<DateTime>,
    /// Jobs past their due date (`max_stale` after their enqueue).
    pub overdue: u64,
}

/// How far behind the refresh queue is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueueLag {
    /// Jobs waiting or running.
    pub pending: u64,
    /// When the oldest job was enqueued.
    pub oldest_enqueued_at: Option<DateTime>,
    /// How long ago that was: the staleness of the stalest copy.
    pub oldest_age: Option<Duration>,
    /// Jobs past their due date.
    pub overdue: u64,
    /// The same, by copy key.
    pub by_copy: BTreeMap<String, CopyLag>,
}

/// How far behind the refresh queue is: pending jobs, the oldest, and those past due,
/// in all and by copy. One aggregation over [`QUEUE`].
pub async fn lag(db: &Database) -> Result<QueueLag, CopyError> {
    let now = DateTime::now();
    let error = |error| CopyError::Queue { operation: "lag", error };
    let mut cursor = db
        .collection::<Document>(QUEUE)
        .aggregate([
            doc! { "$group": {
                "_id": "$_id.copy",
                "pending": { "$sum": 1 },
                "oldest": { "$min": "$enqueued_at" },
                "overdue": { "$sum": { "$cond": [ { "$lt": [ "$due", now ] }, 1, 0 ] } },
            } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .await
        .map_err(error)?;
    let mut lag = QueueLag::default();
    while let Some(group) = cursor.try_next().await.map_err(error)? {
        let copy = match group.get("_id") {
            Some(Bson::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let entry = CopyLag {
            pending: count(group.get("pending")),
            oldest_enqueued_at: group.get_datetime("oldest").ok().copied(),
            overdue: count(group.get("overdue")),
        };
        lag.pending += entry.pending;
        lag.overdue += entry.overdue;
        if let Some(at) = entry.oldest_enqueued_at {
            lag.oldest_enqueued_at = Some(lag.oldest_enqueued_at.map_or(at, |o| o.min(at)));
        }
        lag.by_copy.insert(copy, entry);
    }
    lag.oldest_age = lag.oldest_enqueued_at.map(|at| since(at, now));
    Ok(lag)
}

// ---- repair ----------------------------------------------------------------------------

/// One copy [`repair`] brought in line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyRepair {
    /// The copy.
    pub copy: &'static CopySpec,
    /// Copy documents modified.
    pub documents_updated: u64,
}

// The versioned writers reach the copies through this hook: versioning does not
// import this pattern.
inventory::submit! { SourceWriteHook { after_write: after_write_hook } }

fn after_write_hook<'a>(
    db: &'a Database,
    source: &'static str,
    id: &'a Bson,
    update: Option<&'a Document>,
) -> BoxFuture<'a, Result<(), CopyError>> {
    Box::pin(after_source_write(db, source, id, update))
}

/// Keeps the copies of source document `id` (in `source`) in line after a write made
/// by another docshape writer (the versioned `save`, `update_one`, `modify` and
/// backfill), as [`update_one`] does: every refreshed copy the write may have touched
/// (`update`, or any copy when `None`) is written now (`Sync`, sequentially, from one
/// read of the source) or queued (`Async`). Nothing is read or written when the
/// source has no such copy.
async fn after_source_write(
    db: &Database,
    source: &'static str,
    id: &Bson,
    update: Option<&Document>,
) -> Result<(), CopyError> {
    let specs: Vec<&'static CopySpec> = dependents(source)
        .into_iter()
        .filter(|c| c.refresh != Refresh::Never)
        .filter(|c| update.is_none_or(|u| touches(&UpdateModifications::Document(u.clone()), c.source_field)))
        .collect();
    if specs.is_empty() {
        return Ok(());
    }
    let sync: Vec<&'static CopySpec> = specs.iter().copied().filter(|c| c.refresh == Refresh::Sync).collect();
    if !sync.is_empty() {
        let found = db
            .collection::<Document>(source)
            .find_one(doc! { "_id": id.clone() })
            .projection(projection(sync.iter().map(|c| c.source_field)))
            .await
            .map_err(|error| CopyError::Source { collection: source, id: id.clone(), error })?;
        if let Some(document) = found {
            for spec in &sync {
                let value = value_at(&document, spec.source_field);
                let target = db.collection::<Document>(spec.collection);
                if let Err(ApplyError::Target(error) | ApplyError::Lease(error)) =
                    apply(&target, spec, id, value.as_ref(), 1000, None).await
                {
                    return Err(CopyError::Refresh { copy: spec.key(), id: id.clone(), error });
                }
            }
        }
    }
    for spec in specs.into_iter().filter(|c| matches!(c.refresh, Refresh::Async { .. })) {
        enqueue(db, spec, id).await.map_err(|error| CopyError::Queue { operation: "enqueue", error })?;
    }
    Ok(())
}

/// Re-copies, now, the source document `{_id: id}` of `S` into every copy of it that
/// is refreshed (`Sync` or `Async`; a `Never` copy is a snapshot and is left alone),
/// in registry order, in batches of 1,000 documents. Idempotent: only copies that
/// differ are written. A pending job of an async copy stays queued; its worker will
/// find nothing left to write.
pub async fn repair<S: Model>(db: &Database, id: impl Into<Bson>) -> Result<Vec<CopyRepair>, CopyError> {
    let id = id.into();
    let specs: Vec<&'static CopySpec> =
        dependents(S::COLLECTION).into_iter().filter(|c| c.refresh != Refresh::Never).collect();
    let source = db.collection::<Document>(S::COLLECTION);
    let found = source
        .find_one(doc! { "_id": id.clone() })
        .projection(projection(specs.iter().map(|c| c.source_field)))
        .await
        .map_err(|error| CopyError::Source { collection: S::COLLECTION, id: id.clone(), error })?;
    let Some(document) = found else {
        return Err(CopyError::SourceNotFound { collection: S::COLLECTION, id });
    };
    let mut out = Vec::new();
    for spec in specs {
        let value = value_at(&document, spec.source_field);
        let target = db.collection::<Document>(spec.collection);
        let applied = match apply(&target, spec, &id, value.as_ref(), 1000, None).await {
            Ok(applied) => applied,
            Err(ApplyError::Target(error) | ApplyError::Lease(error)) => {
                return Err(CopyError::Refresh { copy: spec.key(), id, error })
            }
        };
        out.push(CopyRepair { copy: spec, documents_updated: applied.modified });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(d: Document) -> UpdateModifications {
        UpdateModifications::Document(d)
    }

    #[test]
    fn an_update_touches_the_paths_it_names_and_their_prefixes_and_descendants() {
        let set_name = update(doc! { "$set": { "name": "Ada" } });
        assert!(touches(&set_name, "name"));
        assert!(!touches(&set_name, "names"));
        assert!(!touches(&set_name, "nickname"));
        assert!(touches(&update(doc! { "$set": { "profile": {} } }), "profile.name"));
        assert!(touches(&update(doc! { "$set": { "profile.name.first": "A" } }), "profile.name"));
        assert!(!touches(&update(doc! { "$set": { "profile.age": 3 } }), "profile.name"));
        assert!(touches(&update(doc! { "$unset": { "name": "" } }), "name"));
        assert!(touches(&update(doc! { "$inc": { "visits": 1 }, "$set": { "name": "x" } }), "name"));
        assert!(!touches(&update(doc! { "$inc": { "visits": 1 } }), "name"));
    }

    #[test]
    fn renames_positional_paths_pipelines_and_replacements() {
        assert!(touches(&update(doc! { "$rename": { "name": "old_name" } }), "name"));
        assert!(touches(&update(doc! { "$rename": { "alias": "name" } }), "name"));
        assert!(!touches(&update(doc! { "$rename": { "alias": "nick" } }), "name"));
        assert!(touches(&update(doc! { "$set": { "tags.$.name": "x" } }), "tags.0.name"));
        assert!(touches(&update(doc! { "$set": { "tags.0": {} } }), "tags.name"));
        assert!(touches(&update(doc! { "$set": { "tags.$[t].name": "x" } }), "tags.name"));
        assert!(!touches(&update(doc! { "$set": { "tags.$[t].label": "x" } }), "tags.name"));
        assert!(touches(&UpdateModifications::Pipeline(vec![doc! { "$set": { "a": 1 } }]), "name"));
        assert!(touches(&update(doc! { "name": "replacement" }), "name"));
        assert!(touches(&update(doc! { "$set": "not a document" }), "name"));
    }

    #[test]
    fn values_at_paths_and_projections_without_collisions() {
        let d = doc! { "name": "Ada", "profile": { "city": "London", "n": null }, "tags": ["a"] };
        assert_eq!(value_at(&d, "name"), Some(Bson::String("Ada".into())));
        assert_eq!(value_at(&d, "profile.city"), Some(Bson::String("London".into())));
        assert_eq!(value_at(&d, "profile.n"), Some(Bson::Null));
        assert_eq!(value_at(&d, "profile.zip"), None);
        assert_eq!(value_at(&d, "name.first"), None);
        assert_eq!(value_at(&d, "missing"), None);
        assert_eq!(
            projection(["profile.city", "name", "profile", "name"].into_iter()),
            doc! { "name": 1, "profile": 1 }
        );
        assert_eq!(projection(["ab", "a.b", "a"].into_iter()), doc! { "a": 1, "ab": 1 });
    }

    #[test]
    fn errors_say_what_was_left() {
        let e = CopyError::UnknownCopy { copy: "posts.x".into() };
        assert!(e.to_string().contains("posts.x"));
        let e = CopyError::Unsettled { copy: "posts.author_name".into(), id: Bson::from("u1"), rounds: 40 };
        assert!(e.to_string().contains("posts.author_name"), "{e}");
        assert!(e.to_string().contains("\"u1\""), "{e}");
    }
}
