//! Claiming jobs of the queue: several due jobs under one lease and one claim token, and
//! keeping that lease while the worker runs them one after another.

use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use bson::{doc, Bson, DateTime, Document};
use futures_util::TryStreamExt;
use mongodb::options::ReturnDocument;
use mongodb::Collection;

use super::plus;
use crate::core::access::{in_filter, not_in_filter, Literal};
use crate::core::descriptor::CopyError;
use crate::core::model::eq;

/// Who claims, and for how long.
pub(crate) struct Claimer<'a> {
    pub(crate) queue: &'a Collection<Document>,
    /// The job keys the worker runs (copies' and summaries').
    pub(crate) keys: &'a [&'a str],
    pub(crate) owner: &'a str,
    pub(crate) lease: Duration,
}

/// The jobs of one claim, oldest `due` first, each carrying the token of the claim
/// that stamped it (`claim`): one token for a new claim, the stored ones for jobs a
/// worker takes back ([`Claimer::resume`]).
pub(crate) struct Batch {
    /// The jobs not yet handed out, in the order they run.
    pending: std::collections::VecDeque<Document>,
    /// When the lease of the pending jobs was last set (the claim, then each renewal).
    renewed: Instant,
}

/// The claim token a job was stamped with.
fn token_of(job: &Document) -> Bson {
    job.get("claim").cloned().unwrap_or(Bson::Null)
}

impl Claimer<'_> {
    /// The jobs this worker may take at `now`: those of its copies whose lease has
    /// expired or is not a date, or that are its own, except the jobs in `failed`.
    fn claimable(&self, now: DateTime, failed: &[Bson]) -> Document {
        let mut filter = doc! {
            "_id.copy": { "$in": self.keys },
            // A lease that is not a date (missing, or another program's string or
            // number) holds no one off: the job is claimable.
            "$or": [
                { "lease_until": { "$lte": now } },
                { "lease_until": { "$not": { "$type": "date" } } },
                { "owner": eq(Bson::from(self.owner)) },
            ],
        };
        if !failed.is_empty() {
            // Stored job ids, another program's among them: excluded literally (a
            // regex or an operator-shaped id would otherwise exclude other jobs, or
            // make the server refuse every claim).
            filter.extend(not_in_filter("_id", failed.iter().cloned().map(Literal::stored)));
        }
        filter
    }

    /// What a claim sets on each job it takes.
    fn stamp(&self, token: ObjectId, now: DateTime) -> Document {
        doc! {
            "$set": { "owner": self.owner, "lease_until": plus(now, self.lease), "claimed_at": now, "claim": token },
            "$inc": { "claims": 1_i64 },
        }
    }

    /// Claims up to `most` jobs (at least one when any is claimable), oldest `due`
    /// first; `None` when none is claimable. Jobs whose `due` is not a date sort
    /// before every dated one in BSON order (missing, null, numbers, strings), so
    /// they are taken first.
    ///
    /// With `most > 1`: a `find` of up to `most` claimable ids, one `update` that
    /// stamps those still claimable (the condition again, so a job another worker
    /// took in between is left to it) with a new token, and a `find` of the jobs
    /// carrying the token, with the `seq` each completion compares. When another
    /// worker took every one of them in between, one `findAndModify` settles it:
    /// it takes a job or finds none claimable, so every call either claims a job or
    /// ends the drain (no loop here asks the server again).
    pub(crate) async fn claim(&self, most: usize, failed: &[Bson]) -> Result<Option<Batch>, CopyError> {
        if most > 1 {
            let batch = self.claim_many(most, failed).await?;
            if batch.as_ref().is_none_or(|b| !b.pending.is_empty()) {
                return Ok(batch);
            }
        }
        let token = ObjectId::new();
        let now = DateTime::now();
        let job = self
            .queue
            .find_one_and_update(self.claimable(now, failed), self.stamp(token, now))
            .sort(doc! { "due": 1 })
            .return_document(ReturnDocument::After)
            .await
            .map_err(|error| CopyError::Queue { operation: "claim", error })?;
        Ok(job.map(|job| Batch { pending: [job].into(), renewed: Instant::now() }))
    }

    /// Takes back, without writing them, up to `most` jobs this worker holds with at
    /// least two thirds of a lease left (a worker restarted under the same id); `None`
    /// when it holds none. Their lease is renewed on the usual schedule, counted from
    /// when it was last set.
    ///
    /// Why not stamp them again, as a claim would: every write to a job makes a
    /// transaction that queues the same job (a source write's) conflict and run again
    /// whole. A worker restarted again and again (a deployment's crash loop, or the
    /// tests' kills) would otherwise keep its jobs written and such writers
    /// conflicting, while finishing none of the jobs itself.
    pub(crate) async fn resume(&self, most: usize, failed: &[Bson]) -> Result<Option<Batch>, CopyError> {
        let error = |error| CopyError::Queue { operation: "claim", error };
        let now = DateTime::now();
        let left = self.lease.saturating_mul(2) / 3;
        let mut filter = doc! {
            "_id.copy": { "$in": self.keys },
            "owner": eq(Bson::from(self.owner)),
            "lease_until": { "$gte": plus(now, left) },
            "claim": { "$type": "objectId" },
        };
        if !failed.is_empty() {
            filter.extend(not_in_filter("_id", failed.iter().cloned().map(Literal::stored)));
        }
        let limit = i64::try_from(most.max(1)).unwrap_or(i64::MAX);
        let jobs: Vec<Document> = self
            .queue
            .find(filter)
            .sort(doc! { "due": 1 })
            .limit(limit)
            .await
            .map_err(error)?
            .try_collect()
            .await
            .map_err(error)?;
        // The lease that ends first sets the renewal schedule.
        let Some(first_end) = jobs.iter().filter_map(|j| j.get_datetime("lease_until").ok()).min() else {
            return Ok(None);
        };
        let since_set = self.lease.saturating_sub(super::since(now, *first_end));
        let renewed = Instant::now().checked_sub(since_set).unwrap_or_else(Instant::now);
        Ok(Some(Batch { pending: jobs.into(), renewed }))
    }

    /// `None` when nothing is claimable; an empty batch when every job found was
    /// taken by another worker before the update.
    async fn claim_many(&self, most: usize, failed: &[Bson]) -> Result<Option<Batch>, CopyError> {
        let error = |error| CopyError::Queue { operation: "claim", error };
        let limit = i64::try_from(most).unwrap_or(i64::MAX);
        let found: Vec<Document> = self
            .queue
            .find(self.claimable(DateTime::now(), failed))
            .sort(doc! { "due": 1 })
            .limit(limit)
            .batch_size(u32::try_from(most).unwrap_or(u32::MAX))
            .projection(doc! { "_id": 1 })
            .await
            .map_err(error)?
            .try_collect()
            .await
            .map_err(error)?;
        if found.is_empty() {
            return Ok(None);
        }
        // The stored ids, each matched literally (a foreign job's id may hold a regex
        // or an operator-shaped document).
        let ids = || {
            in_filter(
                "_id",
                found.iter().map(|j| Literal::stored(j.get("_id").cloned().unwrap_or(Bson::Null))),
            )
        };
        let token = ObjectId::new();
        let now = DateTime::now();
        // One statement per job (see `each`): the condition again beside its `_id`.
        let claimable = self.claimable(now, failed);
        let stamp = self.stamp(token, now);
        let statements = found.iter().map(|j| {
            let id = j.get("_id").cloned().unwrap_or(Bson::Null);
            (doc! { "$and": [claimable.clone(), { "_id": eq(id) }] }, stamp.clone())
        });
        let stamped = each(self.queue, statements).await.map_err(error)?;
        let renewed = Instant::now();
        if stamped.modified == 0 {
            return Ok(Some(Batch { pending: Default::default(), renewed }));
        }
        // Read back by token: a job taken by another worker right after the stamp
        // (a lease shorter than a round trip) carries that worker's token instead.
        let mut mine = ids();
        mine.insert("claim", token);
        let jobs: Vec<Document> = self
            .queue
            .find(mine)
            .sort(doc! { "due": 1 })
            .await
            .map_err(error)?
            .try_collect()
            .await
            .map_err(error)?;
        Ok(Some(Batch { pending: jobs.into(), renewed }))
    }

    /// The next job of `batch`, the lease of every job not yet run renewed first when
    /// a third of it has passed since it was last set; `None` when the batch is done.
    ///
    /// A renewal that finds fewer jobs than it asked for (a job ran longer than the
    /// lease, and another worker took some of the rest) drops the jobs no longer this
    /// worker's from the batch: nothing was written for them, so nothing is owed.
    pub(crate) async fn next(&self, batch: &mut Batch) -> Result<Option<Document>, CopyError> {
        if !batch.pending.is_empty() && batch.renewed.elapsed() >= self.lease / 3 {
            let error = |error| CopyError::Queue { operation: "renew lease", error };
            let held = || {
                let mut f = in_filter(
                    "_id",
                    batch
                        .pending
                        .iter()
                        .map(|j| Literal::stored(j.get("_id").cloned().unwrap_or(Bson::Null))),
                );
                f.insert("owner", eq(Bson::from(self.owner)));
                f
            };
            let lease = doc! { "$set": { "lease_until": plus(DateTime::now(), self.lease) } };
            // One statement per job (see `each`).
            let statements = batch.pending.iter().map(|j| {
                let id = j.get("_id").cloned().unwrap_or(Bson::Null);
                let filter =
                    doc! { "_id": eq(id), "claim": eq(token_of(j)), "owner": eq(Bson::from(self.owner)) };
                (filter, lease.clone())
            });
            let renewed = each(self.queue, statements).await.map_err(error)?;
            batch.renewed = Instant::now();
            if usize::try_from(renewed.matched).unwrap_or(usize::MAX) < batch.pending.len() {
                // Still this worker's: the same id and the same claim token.
                let still: Vec<(Bson, Bson)> = self
                    .queue
                    .find(held())
                    .projection(doc! { "_id": 1, "claim": 1 })
                    .await
                    .map_err(error)?
                    .try_collect::<Vec<Document>>()
                    .await
                    .map_err(error)?
                    .into_iter()
                    .filter_map(|j| Some((j.get("_id")?.clone(), token_of(&j))))
                    .collect();
                batch.pending.retain(|j| {
                    j.get("_id").is_some_and(|id| still.iter().any(|(i, t)| i == id && *t == token_of(j)))
                });
            }
        }
        Ok(batch.pending.pop_front())
    }
}

/// What [`each`] matched and modified.
struct Each {
    matched: u64,
    modified: u64,
}

/// Runs `statements` (filter, update) as one `update` command of single-document
/// statements (`multi: false`, unordered): one round trip, like an `update_many`
/// over their ids, but each job written on its own.
///
/// Why not `update_many`: a source write in a transaction queues its jobs in that
/// transaction, so a job may carry a transaction's uncommitted write while a worker
/// stamps it. On mongod a write outside a transaction that meets such a document
/// waits (it retries its write conflict, yielding its locks) until the transaction
/// commits or aborts: a claim waits at most for the writes that queued its jobs. The
/// local test server retries a multi-document update's conflict while holding the
/// collection's lock, so the transaction's next write to the queue (a second summary's
/// job of the same source write) waits for the claim, which waits for the transaction:
/// neither ends. A single-document statement waits the same way as on mongod, without
/// holding the collection.
async fn each(
    queue: &Collection<Document>,
    statements: impl Iterator<Item = (Document, Document)>,
) -> mongodb::error::Result<Each> {
    let updates: Vec<Document> =
        statements.map(|(q, u)| doc! { "q": q, "u": u, "multi": false, "upsert": false }).collect();
    if updates.is_empty() {
        return Ok(Each { matched: 0, modified: 0 });
    }
    let db = queue.client().database(&queue.namespace().db);
    let mut command = doc! { "update": queue.name(), "updates": updates, "ordered": false };
    if let Some(concern) = queue.write_concern() {
        command.insert(
            "writeConcern",
            crate::core::bson_compat::to_bson(concern).map_err(mongodb::error::Error::custom)?,
        );
    }
    let reply = super::send(&db, command).await?;
    if let Ok(errors) = reply.get_array("writeErrors") {
        if let Some(error) = errors.first() {
            return Err(mongodb::error::Error::custom(format!("updating jobs: {error}")));
        }
    }
    let count = |field| match reply.get(field) {
        Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or(0),
        Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or(0),
        _ => 0,
    };
    Ok(Each { matched: count("n"), modified: count("nModified") })
}
