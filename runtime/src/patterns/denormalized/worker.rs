//! The workers that drain the refresh queue.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{doc, Bson, DateTime, Document};
use futures_util::TryStreamExt;
use mongodb::error::ErrorKind;
use mongodb::{Collection, Database, IndexModel};

use super::apply::{enqueue, plus, since, Lease};
use super::claim::Claimer;
use super::spec::copies;
use crate::core::denormalized::refresh::{
    cleared, value_at, via_filter, write_copy, Batching, CopyWrite, WriteError,
};
use crate::core::denormalized::{CopyError, CopySpec, OnDelete, Refresh, QUEUE};
use crate::core::model::eq;
use crate::core::registry::live_by_id;
use crate::core::trace;

/// Whether an error stops a worker: the server or the network failing, not a write
/// the server refused for one document (a validator, a duplicate key).
fn is_fatal(e: &mongodb::error::Error) -> bool {
    !matches!(e.kind.as_ref(), ErrorKind::Write(_) | ErrorKind::Command(_))
}

/// Drains the refresh queue ([`QUEUE`]): see the [module docs](crate::denormalized) for how jobs are
/// claimed, applied and completed, and why several workers and restarts converge.
///
/// ```no_run
/// # async fn run(db: &docshape::mongodb::Database) -> Result<(), docshape::denormalized::CopyError> {
/// use std::time::Duration;
/// use docshape::denormalized::Worker;
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
    jobs_per_claim: usize,
    lease: Duration,
    only: Option<Vec<String>>,
    /// Whether the queue's index was made by this worker (or a clone of it).
    indexed: Arc<AtomicBool>,
}

impl Worker {
    /// The default [`Worker::jobs_per_claim`].
    pub const DEFAULT_JOBS_PER_CLAIM: usize = 32;

    /// A worker on `db`'s queue, with a unique id, batches of 1,000 documents, claims
    /// of up to [`Worker::DEFAULT_JOBS_PER_CLAIM`] jobs, a 60 s lease, and every
    /// registered copy.
    pub fn new(db: &Database) -> Self {
        Self {
            db: db.clone(),
            id: format!("worker-{}", ObjectId::new().to_hex()),
            batch: 1000,
            jobs_per_claim: Self::DEFAULT_JOBS_PER_CLAIM,
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

    /// Jobs taken per claim (at least 1; default [`Worker::DEFAULT_JOBS_PER_CLAIM`],
    /// 32): the oldest due first, under one lease, run one after another. A claim of
    /// several costs three round trips (find the ids, stamp them, read them back)
    /// instead of one `findAndModify` per job; 1 claims one job per `findAndModify`.
    /// The jobs of a claim not yet run are held from other workers while this one
    /// runs the others (their lease renewed every third of it between two jobs), and
    /// wait out the lease when the worker stops before running them; so a larger
    /// claim saves round trips on a queue of many small jobs, and a smaller one lets
    /// several workers share a short queue of long jobs.
    pub fn jobs_per_claim(mut self, jobs: usize) -> Self {
        self.jobs_per_claim = jobs.max(1);
        self
    }

    /// How long a claimed job stays this worker's without a renewal (default 60 s; at
    /// least 1 ms). It is renewed before every batch's write, so make it comfortably
    /// longer than the time between two writes (reading the source and finding the
    /// first batch, or writing one batch and finding the next): a shorter lease lets
    /// other workers take the job over and over, each before it has written anything.
    /// The other jobs of a claim are renewed between two jobs, once a third of the
    /// lease has passed: a job that runs longer than the lease lets other workers take
    /// them, which this worker notices before it reads their sources.
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
    /// [`RefreshReport::failures`]; the worker goes on with the others, and does not
    /// claim it again in the same run, however short the lease (so a run ends). Jobs of copies
    /// that are not refreshed copies in this program (another program's, or
    /// `refresh = "never"`) are never claimed: they are left in the queue for a worker
    /// that knows them, and counted in [`RefreshReport::skipped`]. An error from the
    /// server or the network ends the run; the job in hand, and the jobs of its claim
    /// not yet run, stay leased and are taken up again when their lease expires, or at
    /// once by a worker with the same id.
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
        let span = trace::span!("copies.drain", worker = self.id.as_str());
        let report = trace::in_span(span.clone(), self.drain_inner()).await?;
        span.in_scope(|| {
            trace::event!(
                INFO,
                jobs = report.jobs,
                documents = report.documents_updated,
                requeued = report.requeued,
                failed = report.failures.len(),
                max_lag_ms = report.max_lag.map(trace::millis),
                "drained"
            )
        });
        Ok(report)
    }

    async fn drain_inner(&self) -> Result<RefreshReport, CopyError> {
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
        // Progress: every claim takes at least one job, or ends the run; every job
        // taken is deleted, failed (not claimed again in this run, however short the
        // lease), or left to run again because its source changed or another worker
        // took it (another writer's progress).
        let mut failed: Vec<Bson> = Vec::new();
        let claimer = Claimer { queue: &queue, keys: &keys, owner: &self.id, lease: self.lease };
        while let Some(mut batch) = claimer.claim(self.jobs_per_claim, &failed).await? {
            while let Some(job) = claimer.next(&mut batch).await? {
                let id = job.get("_id").cloned().unwrap_or(Bson::Null);
                let copy = id.as_document().and_then(|k| k.get_str("copy").ok()).unwrap_or("");
                trace::event!(DEBUG, copy, claims = job.get("claims").and_then(Bson::as_i64), "claimed");
                let before = report.failures.len();
                self.process(&queue, &specs, job, &mut report).await?;
                if report.failures.len() > before {
                    failed.push(id);
                }
            }
        }
        Ok(report)
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
        // A soft-deleted source reads as none; its tenant is read with its value, for a
        // copy between tenant models.
        let mut fields = doc! { spec.source_field: 1 };
        if let Some(tenant) = spec.source_tenant {
            fields.insert(tenant, 1);
        }
        let found = source.find_one(live_by_id(spec.source, &id)).projection(fields).await;
        let mut tenant = None;
        let value = match found {
            Ok(Some(document)) => {
                tenant = spec.source_tenant.map(|t| document.get(t).cloned().unwrap_or(Bson::Null));
                value_at(&document, spec.source_field)
            }
            Ok(None) => {
                // The source is gone (or soft-deleted): nothing to copy from; the copy's
                // `on_delete` says what it holds.
                report.sources_missing += 1;
                match spec.on_delete {
                    OnDelete::Keep => return self.complete(queue, spec, &key, &id, &seq, &job, report).await,
                    OnDelete::Clear(how) => cleared(how),
                    OnDelete::Report => {
                        let target = self.db.collection::<Document>(spec.collection);
                        let documents = match target.count_documents(via_filter(spec, &id)).await {
                            Ok(n) => n,
                            Err(e) if is_fatal(&e) => return Err(refresh_error(e)),
                            Err(e) => {
                                return self
                                    .fail(queue, &key, Some((spec, &id)), refresh_error(e), report)
                                    .await
                            }
                        };
                        if documents == 0 {
                            return self.complete(queue, spec, &key, &id, &seq, &job, report).await;
                        }
                        let error = CopyError::SourceDeleted { copy: spec.key(), id: id.clone(), documents };
                        return self.fail(queue, &key, Some((spec, &id)), error, report).await;
                    }
                }
            }
            Err(e) if is_fatal(&e) => return Err(refresh_error(e)),
            Err(e) => return self.fail(queue, &key, Some((spec, &id)), refresh_error(e), report).await,
        };
        let lease = Lease { queue, job: &key, owner: &self.id, length: self.lease };
        let target = self.db.collection::<Document>(spec.collection);
        let write =
            CopyWrite { spec, source: &id, value: value.as_ref(), only: None, tenant: tenant.as_ref() };
        match write_copy(&target, &write, Batching::Batches { size: self.batch, guard: Some(&lease) }).await {
            Ok(written) => {
                report.documents_updated += written.modified;
                if written.lost_guard {
                    // Another worker has the job; what this one wrote may be older than
                    // what that one writes, so the job must run once more after both.
                    self.enqueue_again(spec, &id).await?;
                    report.requeued += 1;
                    return Ok(());
                }
                if !written.refused.is_empty() {
                    // Every other copy document is written; the refused ones are the
                    // job's failure, recorded on it, until someone fixes them.
                    let error = CopyError::Refused { id: id.clone(), documents: written.refused };
                    return self.fail(queue, &key, Some((spec, &id)), error, report).await;
                }
                if !written.cross_tenant.is_empty() {
                    // Documents of another tenant referencing the source were left as
                    // they were: the job's failure too, naming them.
                    let error = CopyError::CrossTenant {
                        copy: spec.key(),
                        id: id.clone(),
                        holders: written.cross_tenant,
                    };
                    return self.fail(queue, &key, Some((spec, &id)), error, report).await;
                }
            }
            Err(WriteError::Guard(error)) => {
                return Err(CopyError::Queue { operation: "renew lease", error })
            }
            // The copies are written; their documents' cached keys were not deleted.
            // The job's failure, recorded on it, says so.
            Err(WriteError::Derived(error)) => {
                return self.fail(queue, &key, Some((spec, &id)), error, report).await
            }
            Err(WriteError::Target(e)) if is_fatal(&e) => return Err(refresh_error(e)),
            Err(WriteError::Target(e)) => {
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
            // `$eq`: a stored `seq` that looks like an operator is compared, not run.
            .delete_one(doc! { "_id": eq(key.clone()), "seq": eq(seq.clone()), "owner": eq(Bson::from(self.id.as_str())) })
            .await
            .map_err(|error| CopyError::Queue { operation: "complete", error })?;
        if done.deleted_count == 1 {
            report.jobs += 1;
            let lag = job.get_datetime("enqueued_at").ok().map(|enqueued| since(*enqueued, DateTime::now()));
            if let Some(lag) = lag {
                report.max_lag = Some(report.max_lag.map_or(lag, |m| m.max(lag)));
            }
            trace::event!(DEBUG, copy = spec.key().as_str(), lag_ms = lag.map(trace::millis), "done");
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
                doc! { "_id": eq(key.clone()), "owner": eq(Bson::from(self.id.as_str())) },
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
                doc! { "_id": eq(key.clone()), "owner": eq(Bson::from(self.id.as_str())) },
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
    /// Jobs whose source document no longer exists: completed without a write
    /// (`on_delete = "keep"`), with the copies cleared (`"clear"`), or failed with
    /// [`CopyError::SourceDeleted`] while documents still reference it (`"report"`).
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

pub(super) fn count(value: Option<&Bson>) -> u64 {
    match value {
        Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or(0),
        Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or(0),
        Some(Bson::Double(n)) if *n >= 0.0 => *n as u64,
        _ => 0,
    }
}
