//! Writing a source's value into its copies, in resumable batches, and queueing a
//! refresh job: what an update, a worker and a repair share.

use std::time::Duration;

use bson::{doc, Bson, DateTime, Document};
use futures_util::TryStreamExt;
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::{Collection, Database};

use crate::core::access::{in_filter, Literal};
use crate::core::denormalized::{Cleared, CopySpec, Refresh, QUEUE};
use crate::core::model::eq;
use crate::core::trace;

pub(super) fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        ErrorKind::Command(c) => c.code == 11000,
        _ => false,
    }
}

/// What the copy's own type stores for the source's `value`: a null is no field at all
/// when the copy's type omits `None` ([`Cleared::Unset`]); anything else as it is.
pub(super) fn stored<'a>(spec: &CopySpec, value: Option<&'a Bson>) -> Option<&'a Bson> {
    match value {
        Some(Bson::Null) if spec.null == Cleared::Unset => None,
        other => other,
    }
}

/// The filter of the copies of `spec` that reference source `id`: the reference
/// compared literally, and never an array that merely contains `id` (the server's `$eq`
/// matches an array by its elements; such a reference names no one source, and
/// reconcile leaves it alone too, so the worker must as well).
pub(super) fn via_filter(spec: &CopySpec, id: &Bson) -> Document {
    doc! { spec.via: { "$eq": id.clone(), "$not": { "$type": "array" } } }
}

/// The update that makes a copy equal to `value` as the copy's type would store it:
/// `$set`, or `$unset` when the source has no such field (or holds null and the copy
/// omits `None`).
pub(super) fn change(spec: &CopySpec, value: Option<&Bson>) -> Document {
    match stored(spec, value) {
        Some(v) => doc! { "$set": { spec.field: v.clone() } },
        None => doc! { "$unset": { spec.field: "" } },
    }
}

/// The value a cleared copy is given: none (`$unset`) or null.
pub(super) fn cleared(how: Cleared) -> Option<Bson> {
    match how {
        Cleared::Unset => None,
        Cleared::Null => Some(Bson::Null),
    }
}

/// The filter of a copy's documents that differ from `value`.
pub(super) fn stale_filter(spec: &CopySpec, id: &Bson, value: Option<&Bson>) -> Document {
    let condition = match stored(spec, value) {
        // Through the literal encoder: a stored regex is a value, which `$ne` refuses.
        Some(v) => crate::core::access::literal::Literal::stored(v.clone()).ne(),
        None => doc! { "$exists": true },
    };
    let mut filter = via_filter(spec, id);
    filter.insert(spec.field, condition);
    filter
}

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

/// What one [`apply`] did.
#[derive(Default)]
pub(super) struct Applied {
    pub(super) modified: u64,
    /// The lease was lost: another worker holds the job; this one stopped writing.
    pub(super) lost_lease: bool,
}

pub(super) enum ApplyError {
    Target(mongodb::error::Error),
    Lease(mongodb::error::Error),
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
pub(super) async fn apply(
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
                    .update_many(
                        {
                            // The ids just found, each matched literally.
                            let mut f = via_filter(spec, id);
                            f.extend(in_filter("_id", ids.into_iter().map(Literal::stored)));
                            f
                        },
                        update.clone(),
                    )
                    .await
                    .map_err(ApplyError::Target)?;
                applied.modified += done.modified_count;
                trace::event!(
                    DEBUG,
                    copy = spec.key().as_str(),
                    matched = done.matched_count,
                    modified = done.modified_count,
                    "batch"
                );
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
