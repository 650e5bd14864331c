//! Queueing copies' refresh jobs, and a worker's lease on one: what an update, the
//! write hook, the watcher and the workers share. The queue's mechanics (the job's
//! shape, the upsert, claims, acknowledgements) are core's ([`crate::core::queue`]),
//! shared with the summaries' jobs; writing a source's value into its copies is
//! core's too ([`crate::core::denormalized::refresh`]), the one path of every writer.

use std::time::Duration;

use bson::{doc, Bson, DateTime, Document};
use futures_util::future::BoxFuture;
use mongodb::{Collection, Database};

use crate::core::denormalized::refresh::Guard;
use crate::core::denormalized::{CopySpec, Refresh};
use crate::core::model::eq;
use crate::core::queue::{self, Enqueue, JobKind};

pub(super) use crate::core::queue::{plus, since};

/// How long after its first enqueue a job of `spec` is due.
fn max_stale(spec: &CopySpec) -> Duration {
    match spec.refresh {
        Refresh::Async { max_stale } => max_stale,
        Refresh::Sync | Refresh::Never => Duration::ZERO,
    }
}

/// Upserts the job of `spec` for source document `id` ([`queue::enqueue`]).
pub(super) async fn enqueue(db: &Database, spec: &CopySpec, id: &Bson) -> mongodb::error::Result<()> {
    let key = spec.key();
    let job = Enqueue { kind: JobKind::Copy, key: &key, id, max_stale: max_stale(spec) };
    queue::enqueue(db, &job, None).await
}

/// [`enqueue`] for many jobs in one command ([`queue::enqueue_many`]).
pub(super) async fn enqueue_many(db: &Database, jobs: &[(&CopySpec, Bson)]) -> mongodb::error::Result<()> {
    let keys: Vec<String> = jobs.iter().map(|(spec, _)| spec.key()).collect();
    let jobs: Vec<Enqueue<'_>> = jobs
        .iter()
        .zip(&keys)
        .map(|((spec, id), key)| Enqueue { kind: JobKind::Copy, key, id, max_stale: max_stale(spec) })
        .collect();
    queue::enqueue_many(db, &jobs).await
}

/// A worker's hold on one job.
pub(super) struct Lease<'a> {
    pub(super) queue: &'a Collection<Document>,
    pub(super) job: &'a Bson,
    pub(super) owner: &'a str,
    pub(super) length: Duration,
}

impl Lease<'_> {
    /// Extends the lease while this worker still owns the job; `false` when it does not.
    async fn renew(&self) -> mongodb::error::Result<bool> {
        let done = self
            .queue
            .update_one(
                doc! { "_id": eq(self.job.clone()), "owner": eq(Bson::from(self.owner)) },
                doc! { "$set": { "lease_until": plus(DateTime::now(), self.length) } },
            )
            .await?;
        Ok(done.matched_count == 1)
    }
}

// The lease is what the shared copy writer renews before each batch.
impl Guard for Lease<'_> {
    fn renew(&self) -> BoxFuture<'_, mongodb::error::Result<bool>> {
        Box::pin(Lease::renew(self))
    }
}
