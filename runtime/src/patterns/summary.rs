//! Summaries: a model whose documents are maintained from another model's writes
//! (MongoDB's *Computed* pattern), declared once (the guide's chapter compiles and runs
//! this example in full):
//!
//! ```text
//! #[derive(Serialize, Deserialize, Model)]
//! #[model(collection = "seller_sales")]
//! #[summary(of = Order, group(items.seller_id), refresh = "async", max_stale = "5m")]
//! #[access(name = "sales_of_seller", filter(_id), freq = "5 r/s", consistency = "eventual ok")]
//! struct SellerSales {
//!     #[serde(rename = "_id")] seller_id: String,
//!     #[summary(count)] orders: i64,
//!     #[summary(sum = "items.qty")] units: i64,
//! }
//! ```
//!
//! The guide's chapter ([`crate::guide::summary`]) says what each group and operator
//! means; this module says how the documents stay exact.
//!
//! # The ledger
//!
//! [`LEDGER`] (`docshape_summary`) is reserved: one record per summary and source
//! document that reached it, holding what that document adds to its groups as last
//! applied (and the [`Watcher`]'s saved positions, `_id: {watch, source}`):
//!
//! ```text
//! { _id: { s: "seller_sales", id: <the source's _id> },
//!   g: [ { k: <group key>, v: [<per summary field: the sum, min or max candidate>] } ] }
//! ```
//!
//! **Applying** a source document (a summary job run by
//! [`crate::denormalized::Worker`], a sync summary's write hook) is one transaction:
//! read the source document, compute its contribution now (the one function
//! `reconcile` uses too; a soft-deleted document contributes nothing), replace the
//! record by one `findAndModify` that returns it as it was (the old contribution),
//! and write the *delta* of every group whose contribution changed in one `update` command (one upsert statement
//! per group: `$inc` of the count (±1) and the sums (new − old), `$min`/`$max` of a
//! new candidate); when a group lost the document, one `delete` command removes the
//! groups whose count reached 0 (`{_id, count: {$lte: 0}}` per group, no read).
//! Exactly once
//! follows from the transaction: the delta is taken against the record, and the
//! record is replaced in the same commit, so an application run twice (a worker
//! killed after the commit and before it acknowledged the job, a watcher queueing a
//! change docshape already applied) finds a delta of zero, and two applications of the same
//! document, or of two documents of one group, conflict on the record or the group
//! document, and the server's write conflict makes one run again on the other's
//! result.
//!
//! **One command** when the writer can tell the old contribution without the ledger
//! (an insert: none; a soft delete or a write row: the document its `findAndModify`
//! returns as it was; a write row's document as written is then computed from it and
//! the update, for the operators its rows send, and checked by a no-op update of the
//! source in the same command), on a server with the cross-collection `bulkWrite`
//! command (MongoDB 8.0): the
//! record and every group go in one `bulkWrite` in the write's transaction, the
//! record written only if it holds the guess (an insert's record created by an
//! upsert, a delete's matched by `g` equal to the guessed contribution). The verbose
//! result tells; a wrong guess (a foreign write the watcher has not queued yet, a
//! record written by hand) is corrected in the same transaction: the record is read
//! and replaced, and the groups it, the guess and the document touch are recomputed
//! from the ledger's records. On an older server (the driver refuses the command
//! before sending it) the path above serves.
//!
//! **min and max** stay exact without reading the source: a candidate that improves
//! the extreme is `$min`/`$max`; when a document's value that may have been the
//! extreme is withdrawn or made worse (a removed item, a lowered price), the group's
//! extreme is recomputed from the ledger's records of the group (`g.k` equal to the
//! key), inside the same transaction, so it sees exactly the contributions applied.
//!
//! # Refresh
//!
//! - `sync`: every docshape writer of the source (the write pipeline's step 4:
//!   inserts, write and upsert rows, versioned saves, outlier pushes, bucket appends)
//!   applies the document before it returns. A write made in a session that runs a
//!   transaction (a [`crate::transaction`]'s body, or the caller's own) is applied
//!   **in that transaction** (the write pipeline's session hook), so the
//!   summary commits with the write or not at all; a write row there returns the
//!   document with its command (`findAndModify`), so the application reads nothing:
//!   with `bulkWrite`, the document as it was and one command (above); without, the
//!   document as written, then one `findAndModify` of the record, one `update` of the
//!   changed groups (whatever their number), a `delete` when a group may be left
//!   empty. Whether
//!   the session runs a transaction is read from the session's state, never from an
//!   error's text. Given no transaction, a write row, an upsert, an insert, a
//!   versioned save or update (a backfill's upgrades are saves), a soft delete or a
//!   restore, an outlier push or a bucket append runs in one started for it
//!   (`core::transaction::for_write`; the push's and the append's guarded upserts
//!   then read each document's count first, as a refused insert would abort the
//!   transaction), and `denormalized::update_one` writes the source, its sync copies
//!   and its summaries in its own: the write, its sync summaries and its async
//!   summaries' jobs commit together, or none of them. A copy writer's rewrite of
//!   source documents (above) is applied after it, in a transaction of its own per
//!   document: a crash in between is repaired by the [`Watcher`]. The source
//!   declares `#[model(transactions)]`, or the derive refuses the summary.
//! - `async`: the writer queues the document in the refresh queue the async copies
//!   use ([`QUEUE`](crate::denormalized::QUEUE), `docshape_refresh`): one upsert of the job
//!   `{_id: {copy: "summary:<collection>", id}, kind: "summary"}`, `$inc: {seq: 1}`,
//!   due `max_stale` after its first enqueue (in the write's transaction when it runs
//!   in one). [`crate::denormalized::Worker`], the one worker of that queue, claims
//!   summary jobs beside copy jobs (oldest `due` first, under a lease), applies each
//!   (the transaction above), then acknowledges it with
//!   `delete_one({_id, seq: <seq at the claim>, owner: <me>})`: a write queued since
//!   the claim keeps the job, to run again. A worker that dies after the commit and
//!   before the acknowledgement leaves the job leased; it runs again once the lease
//!   ends (or at once under the same worker id) and finds a delta of zero.
//!   [`crate::denormalized::lag`] reports the pending jobs per summary
//!   ([`QueueLag::by_summary`](crate::denormalized::QueueLag::by_summary), keyed by
//!   the summary's collection) beside the copies'. The pattern has no worker nor lag
//!   of its own: one queue, drained by one worker, is one deadline order and one
//!   place to watch, and a second name for the same worker would invite running two
//!   fleets that compete for the same jobs.
//!
//! A copy writer that rewrites documents of the source (a denormalized copy held in
//! it, which a summary groups by or aggregates) applies or queues each of them, through
//! the write pipeline's copy hook.
//!
//! A process that dies between a source write and its application or queueing, and
//! writes made around docshape, reach the summary through the [`Watcher`] (the
//! source's change stream queues a job for each changed `_id`; the record makes a
//! pre-image unnecessary) or [`resync`]. [`reconcile`] recounts a summary from its source and
//! repairs drifting groups; [`check`] reports them.
//!
//! Summaries need a deployment with transactions (a replica set or a sharded cluster).

#![allow(clippy::result_large_err)]

mod apply;
mod contribution;
mod jobs;
mod reconcile;
mod spec;
mod watch;

use bson::{Bson, Document};
use futures_util::future::BoxFuture;
use mongodb::{ClientSession, Database};

use crate::core::denormalized::{CopyError, CopySpec};
use crate::core::hooks::{CopyWriteHook, Derived, Prior, SessionWriteHook, SourceWriteHook};
use crate::core::write::Effects;

pub use jobs::{create_indexes, job_key};
pub use reconcile::{check, reconcile, Drift, SummaryReconcile};
pub use spec::{
    summaries, summaries_of, summary, summary_avg, summary_groups_by_tenant, summary_reads_outlier, GroupKey,
    GroupPart, Summable, SummaryField, SummaryOp, SummaryPeriod, SummaryRefresh, SummarySpec, SummaryTime,
};
pub use watch::{resync, SummaryWatch, Watcher};

/// The reserved collection of the summaries' ledger ([module docs](self)); their
/// queue is the refresh queue ([`crate::denormalized::QUEUE`]).
pub const LEDGER: &str = "docshape_summary";

/// Why maintaining a summary failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum SummaryError {
    /// The server or the driver failed, maintaining `summary`.
    Mongo {
        /// The summary's collection (or [`LEDGER`]).
        summary: &'static str,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// The summary's documents were written, but what is derived from them (the
    /// cached keys of a cached summary row) could not be brought in line.
    Derived {
        /// The summary's collection.
        summary: &'static str,
        /// What failed.
        error: Box<CopyError>,
    },
    /// A stored value could not be read.
    Decode {
        /// The summary's collection (or its source's).
        summary: &'static str,
        /// What was wrong.
        detail: String,
    },
}

impl std::fmt::Display for SummaryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Mongo { summary, error } => write!(f, "maintaining the summary `{summary}`: {error}"),
            Self::Decode { summary, detail } => write!(f, "reading for the summary `{summary}`: {detail}"),
            Self::Derived { summary, error } => {
                write!(f, "the summary `{summary}` was written, but not what is derived from it: {error}")
            }
        }
    }
}

impl std::error::Error for SummaryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Mongo { error, .. } => Some(error),
            Self::Derived { error, .. } => Some(&**error as &(dyn std::error::Error + 'static)),
            Self::Decode { .. } => None,
        }
    }
}

/// The source document `id` of `source` was written by a docshape writer: apply it
/// to its sync summaries, queue it for its async ones.
pub(crate) async fn after_source_write(
    db: &Database,
    source: &'static str,
    id: &Bson,
) -> Result<(), CopyError> {
    for spec in summaries_of(source) {
        let done = match spec.refresh {
            SummaryRefresh::Sync => match apply::apply(db, spec, id).await {
                Ok(applied) => rewritten(db, spec, &applied.groups, false).await.map_err(derived(spec)),
                Err(e) => Err(e),
            },
            _ => jobs::queue(db, spec, id, None).await,
        };
        if let Err(e) = done {
            crate::core::trace::event!(WARN, summary = spec.collection, error = %e, "summary not maintained");
            match e {
                SummaryError::Mongo { error, .. } => return Err(copy_error(spec, id, error, true)),
                SummaryError::Derived { error, .. } => return Err(*error),
                _ => continue,
            }
        }
    }
    Ok(())
}

/// The summary documents `keys` of `spec` were written: what is derived from them
/// (cached keys of a cached summary row, through the write pipeline's hooks for the
/// summary's collection) is brought in line; `in_session`: written in a transaction's
/// session, so deferred to its commit when it is a [`crate::transaction`]'s.
pub(crate) async fn rewritten(
    db: &Database,
    spec: &SummarySpec,
    keys: &[Bson],
    in_session: bool,
) -> Result<(), CopyError> {
    let effects = Effects::of_collection(spec.collection);
    for key in keys {
        effects.after(db, key, None, in_session).await?;
    }
    Ok(())
}

fn derived(spec: &SummarySpec) -> impl Fn(CopyError) -> SummaryError + '_ {
    move |e| SummaryError::Derived { summary: spec.collection, error: Box::new(e) }
}

/// The error a source's writer reports for `spec`'s maintenance: `source_updated`
/// after its write, `false` in the write's transaction (the error aborts it, so the
/// source is not updated either).
fn copy_error(
    spec: &SummarySpec,
    id: &Bson,
    error: mongodb::error::Error,
    source_updated: bool,
) -> CopyError {
    CopyError::Copy { copy: format!("summary {}", spec.collection), id: id.clone(), source_updated, error }
}

/// The source document `id` of `source` was written in `session`: when the session
/// runs a transaction (a [`crate::transaction`]'s, or one the caller started), the
/// sync summaries are applied and the async ones queued **in it**, so that they commit
/// with the write or not at all. `Ok(false)`: no transaction runs, the ordinary hook
/// applies them after the write.
async fn in_source_session(
    db: &Database,
    source: &'static str,
    id: &Bson,
    written: Option<&Document>,
    prior: Prior<'_>,
    session: &mut ClientSession,
) -> Result<bool, CopyError> {
    let specs = summaries_of(source);
    if specs.is_empty() {
        return Ok(false);
    }
    match crate::core::transaction::runs_transaction(session).await {
        Ok(true) => {}
        Ok(false) => return Ok(false),
        Err(error) => return Err(copy_error(specs[0], id, error, false)),
    }
    // The async summaries' jobs first, right after the source write: a worker's claim
    // or acknowledgement of a job written after the transaction began and before the
    // transaction wrote it makes the transaction's write conflict (the whole
    // transaction runs again); once written, the job is the transaction's and a claim
    // waits for the commit. Queued first, that window is one round trip, not the sync
    // summaries' applications too.
    let is_sync = |s: &&&SummarySpec| matches!(s.refresh, SummaryRefresh::Sync);
    let ordered = specs.iter().filter(|s| !is_sync(s)).chain(specs.iter().filter(is_sync));
    for &spec in ordered {
        let done = match spec.refresh {
            SummaryRefresh::Sync => match apply::apply_in(db, spec, id, written, prior, session).await {
                // Deferred to the commit in a transaction's body: a cached row read
                // in between would cache the summary as it was.
                Ok(groups) => rewritten(db, spec, &groups, true).await.map_err(derived(spec)),
                Err(e) => Err(e),
            },
            _ => jobs::queue(db, spec, id, Some(&mut *session)).await,
        };
        match done {
            Ok(()) => {}
            Err(SummaryError::Mongo { error, .. }) => return Err(copy_error(spec, id, error, false)),
            Err(SummaryError::Derived { error, .. }) => return Err(*error),
            Err(e) => {
                crate::core::trace::event!(WARN, summary = spec.collection, error = %e, "summary not maintained");
            }
        }
    }
    Ok(true)
}

fn in_session_hook<'a>(
    db: &'a Database,
    source: &'static str,
    id: &'a Bson,
    written: Option<&'a Document>,
    prior: Prior<'a>,
    session: &'a mut ClientSession,
) -> BoxFuture<'a, Result<bool, CopyError>> {
    Box::pin(in_source_session(db, source, id, written, prior, session))
}

/// A sync summary computes the written document's contribution from it.
fn reads_document(source: &'static str) -> bool {
    summaries_of(source).iter().any(|s| s.refresh == SummaryRefresh::Sync)
}

/// A sync summary applies a write row in one command from the document as it was and
/// the update (on a server with `bulkWrite`; see [`apply`]'s `guessed`).
fn reads_prior(source: &'static str) -> bool {
    reads_document(source) && apply::bulk_write_may_serve()
}

/// A write given no transaction runs in one of its own when its source has a sync
/// summary: the write, its sync summaries and its async summaries' jobs commit
/// together, or none of them.
fn owns_write(source: &'static str) -> bool {
    summaries_of(source).iter().any(|s| s.refresh == SummaryRefresh::Sync)
}

inventory::submit! {
    SessionWriteHook { kind: Derived::Summary, in_session: in_session_hook, reads_document, reads_prior, owns_write }
}

fn after_write_hook<'a>(
    db: &'a Database,
    source: &'static str,
    id: &'a Bson,
    _update: Option<&'a Document>,
) -> BoxFuture<'a, Result<(), CopyError>> {
    Box::pin(after_source_write(db, source, id))
}

inventory::submit! { SourceWriteHook { kind: Derived::Summary, after_write: after_write_hook } }

// A copy writer (a source's update, in its transaction; the worker; the watcher's and
// `denormalized::reconcile`'s and `repair`'s refreshes) rewrites documents of a
// collection that hold a copy, not the one its caller wrote: a summary of that
// collection that groups by or aggregates the copied field follows them as it follows
// every other docshape write of its source.
inventory::submit! { CopyWriteHook { interested: reads_copies, after_write: after_copy_write_hook } }

/// Whether a summary of `collection` reads a path that a denormalized copy held in
/// `collection` writes: a group part or an aggregated field at, under or above the
/// copy's field. No I/O.
fn reads_copies(collection: &'static str) -> bool {
    let specs = summaries_of(collection);
    if specs.is_empty() {
        return false;
    }
    let overlaps = |path: &str, field: &str| {
        !path.is_empty()
            && (path == field
                || path.strip_prefix(field).is_some_and(|rest| rest.starts_with('.'))
                || field.strip_prefix(path).is_some_and(|rest| rest.starts_with('.')))
    };
    let read = |spec: &&&SummarySpec, field: &str| {
        spec.group
            .iter()
            .map(|g| g.path())
            .chain(spec.fields.iter().map(|f| f.path))
            .any(|p| overlaps(p, field))
    };
    inventory::iter::<CopySpec>
        .into_iter()
        .chain(crate::core::denormalized::nested_copies().iter().copied())
        .filter(|c| c.collection == collection)
        .any(|c| specs.iter().any(|s| read(&s, c.field)))
}

/// The copy documents `ids` of `collection` were rewritten: each is applied to its
/// sync summaries and queued for its async ones, as after a write of the source
/// ([`after_source_write`]). One application (a transaction) per document: a rename
/// that rewrites many copies costs as many.
fn after_copy_write_hook<'a>(
    db: &'a Database,
    collection: &'static str,
    ids: &'a [Bson],
) -> BoxFuture<'a, Result<(), CopyError>> {
    Box::pin(async move {
        for id in ids {
            after_source_write(db, collection, id).await?;
        }
        Ok(())
    })
}
