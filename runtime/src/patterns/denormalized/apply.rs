//! Queueing refresh jobs, and a worker's lease on one: what an update, the write hook,
//! the watcher and the workers share. Writing a source's value into its copies is
//! core's ([`crate::core::denormalized::refresh`]), the one path of every writer.

use std::time::Duration;

use bson::{doc, Bson, DateTime, Document};
use futures_util::future::BoxFuture;
use mongodb::{Collection, Database};

use crate::core::denormalized::refresh::Guard;
use crate::core::denormalized::{CopySpec, Refresh, QUEUE};
use crate::core::model::eq;

pub(super) use crate::core::transaction::is_duplicate_key;

/// The job `_id` of a copy and a source document.
pub(super) fn job_key(spec: &CopySpec, id: &Bson) -> Bson {
    Bson::Document(doc! { "copy": spec.key(), "id": id.clone() })
}

pub(super) fn plus(at: DateTime, d: Duration) -> DateTime {
    let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    DateTime::from_millis(at.timestamp_millis().saturating_add(ms))
}

pub(super) fn since(earlier: DateTime, now: DateTime) -> Duration {
    let ms = now.timestamp_millis().saturating_sub(earlier.timestamp_millis()).max(0);
    Duration::from_millis(ms as u64)
}

/// The filter and update that enqueue the job of `spec` for source document `id`.
fn job_upsert(spec: &CopySpec, id: &Bson, now: DateTime) -> (Document, Document) {
    let max_stale = match spec.refresh {
        Refresh::Async { max_stale } => max_stale,
        Refresh::Sync | Refresh::Never => Duration::ZERO,
    };
    let filter = doc! { "_id": eq(job_key(spec, id)) };
    let update = doc! {
        "$inc": { "seq": 1_i64 },
        "$setOnInsert": {
            "enqueued_at": now,
            "due": plus(now, max_stale),
            "lease_until": DateTime::from_millis(0),
        },
    };
    (filter, update)
}

/// Upserts the job of `spec` for source document `id`: a new one due `max_stale` from
/// now, or one more `seq` on the pending one. Two upserts racing to create a job make
/// one fail with a duplicate key; it is retried once, and then finds the job.
pub(super) async fn enqueue(db: &Database, spec: &CopySpec, id: &Bson) -> mongodb::error::Result<()> {
    let queue = db.collection::<Document>(QUEUE);
    let (filter, update) = job_upsert(spec, id, DateTime::now());
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

/// [`enqueue`] for many jobs in one `update` command (unordered upserts). A statement
/// that fails with a duplicate key (an upsert racing another enqueue of the same job)
/// is run again alone by [`enqueue`]; any other statement error is returned.
pub(super) async fn enqueue_many(db: &Database, jobs: &[(&CopySpec, Bson)]) -> mongodb::error::Result<()> {
    if jobs.is_empty() {
        return Ok(());
    }
    let now = DateTime::now();
    let updates: Vec<Document> = jobs
        .iter()
        .map(|(spec, id)| {
            let (q, u) = job_upsert(spec, id, now);
            doc! { "q": q, "u": u, "upsert": true }
        })
        .collect();
    let reply = db.run_command(doc! { "update": QUEUE, "updates": updates, "ordered": false }).await?;
    let Ok(errors) = reply.get_array("writeErrors") else { return Ok(()) };
    for error in errors {
        let error = error.as_document();
        let code = error.and_then(|e| integer(e.get("code")));
        let index = error.and_then(|e| integer(e.get("index")));
        match (code, index.and_then(|i| usize::try_from(i).ok()).and_then(|i| jobs.get(i))) {
            (Some(11000), Some((spec, id))) => enqueue(db, spec, id).await?,
            _ => {
                return Err(mongodb::error::Error::custom(format!(
                    "enqueueing refresh jobs: {}",
                    error.map(ToString::to_string).unwrap_or_default()
                )))
            }
        }
    }
    Ok(())
}

fn integer(value: Option<&Bson>) -> Option<i64> {
    match value {
        Some(Bson::Int32(n)) => Some(i64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n),
        _ => None,
    }
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
