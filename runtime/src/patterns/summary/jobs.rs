//! The summaries' jobs in the one refresh queue ([`crate::core::queue`]): queueing a
//! source document for an async summary, and the runner that applies it, which
//! `denormalized::Worker` calls for every job keyed `"summary:<collection>"`.

#![allow(clippy::result_large_err)]

use std::time::Duration;

use bson::{doc, Bson, Document};
use futures_util::future::BoxFuture;
use mongodb::{ClientSession, Database};

use super::apply::apply;
use super::spec::{summaries, summary, SummaryRefresh, SummarySpec};
use super::{SummaryError, LEDGER};
use crate::core::denormalized::CopyError;
use crate::core::queue::{self, Enqueue, JobKind, JobRun, JobRunner};

/// Queues source document `id` for `spec` in the refresh queue (one upsert), due
/// `max_stale` after the first enqueue since it was last applied (a sync summary's at
/// once: the watcher queues for those too). In `session` when given (in its
/// transaction, if it runs one).
pub(crate) async fn queue(
    db: &Database,
    spec: &SummarySpec,
    id: &Bson,
    session: Option<&mut ClientSession>,
) -> Result<(), SummaryError> {
    let max_stale = match spec.refresh {
        SummaryRefresh::Async { max_stale } => max_stale,
        _ => Duration::ZERO,
    };
    let key = JobKind::Summary.key(spec.collection);
    let job = Enqueue { kind: JobKind::Summary, key: &key, id, max_stale };
    queue::enqueue(db, &job, session)
        .await
        .map_err(|error| SummaryError::Mongo { summary: spec.collection, error })
}

/// The job key of `spec`'s jobs (`"summary:seller_sales"`), as [`crate::denormalized::lag`]
/// and a worker's reports name them.
pub fn job_key(spec: &SummarySpec) -> String {
    JobKind::Summary.key(spec.collection)
}

/// Runs one summary job: applies source document `id` to summary `name` ([`apply`],
/// idempotent against the ledger), then brings what is derived from the written
/// groups in line (a cached summary row's keys).
async fn run(db: &Database, name: &str, id: &Bson) -> JobRun {
    let key = JobKind::Summary.key(name);
    let refresh = |error| CopyError::Refresh { copy: key.clone(), id: id.clone(), error };
    let Some(spec) = summary(name) else {
        // Claims ask only for linked summaries' keys: unreachable, but reported.
        return JobRun::Failed(CopyError::UnknownCopy { copy: key.clone() });
    };
    let applied = match apply(db, spec, id).await {
        Ok(applied) => applied,
        Err(SummaryError::Mongo { error, .. }) if refused(&error) => return JobRun::Failed(refresh(error)),
        Err(SummaryError::Mongo { error, .. }) => return JobRun::Fatal(refresh(error)),
        Err(SummaryError::Derived { error, .. }) => return JobRun::Failed(*error),
        Err(SummaryError::Decode { detail, .. }) => {
            return JobRun::Failed(refresh(mongodb::error::Error::custom(detail)))
        }
    };
    if applied.attempts > 1 {
        crate::core::trace::event!(
            DEBUG,
            summary = spec.collection,
            conflicts = applied.attempts - 1,
            "retried"
        );
    }
    match super::rewritten(db, spec, &applied.groups, false).await {
        Ok(()) => JobRun::Done { documents: applied.groups.len() as u64 },
        // The groups are written; their cached keys were not deleted: the job's
        // failure says so, and its retry (a delta of zero) deletes them again.
        Err(error) => JobRun::Failed(error),
    }
}

/// Whether the server refused the write itself (not the network, not a conflict):
/// retrying at once would fail the same way.
fn refused(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    matches!(e.kind.as_ref(), ErrorKind::Write(WriteFailure::WriteError(_)))
        || matches!(e.kind.as_ref(), ErrorKind::Command(c) if c.code == 121 || c.code == 2 || c.code == 14)
}

fn run_job<'a>(db: &'a Database, name: &'a str, id: &'a Bson) -> BoxFuture<'a, JobRun> {
    Box::pin(run(db, name, id))
}

fn prepare<'a>(db: &'a Database) -> BoxFuture<'a, Result<(), CopyError>> {
    Box::pin(async move {
        create_indexes(db).await.map_err(|e| match e {
            SummaryError::Mongo { error, .. } => {
                CopyError::Queue { operation: "create the summaries' ledger index", error }
            }
            other => CopyError::Queue {
                operation: "create the summaries' ledger index",
                error: mongodb::error::Error::custom(other.to_string()),
            },
        })
    })
}

fn names() -> Vec<String> {
    summaries().iter().map(|s| s.collection.to_owned()).collect()
}

inventory::submit! { JobRunner { kind: JobKind::Summary, names, run: run_job, prepare } }

/// Creates the ledger's index (idempotent; every `denormalized::Worker` runs it before
/// its first claim, and a deployment of sync summaries only runs it once, at deploy):
/// `{"_id.s": 1, "g.k": 1}`, a group's records, read when a min or max must be
/// recomputed (`{"_id.s": <summary>, "g.k": <key>}`). On mongod both fields are
/// equalities, `g.k` a multikey path whose equality bounds are exact: the scan reads
/// the group's records and no other, instead of the summary's whole ledger.
///
/// Not created inside a transaction: an index build waits for the transactions that
/// wrote the collection, and a transaction of the caller's would wait for it.
pub async fn create_indexes(db: &Database) -> Result<(), SummaryError> {
    queue::ensure_index(&db.collection::<Document>(LEDGER), doc! { "_id.s": 1, "g.k": 1 })
        .await
        .map_err(|error| SummaryError::Mongo { summary: LEDGER, error })
}
