//! The workers that drain the refresh queue: the copies' jobs, run here, and the jobs
//! of every kind a pattern registers a runner for (the summaries'), run by it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{doc, Bson, DateTime, Document};
use futures_util::TryStreamExt;
use mongodb::error::ErrorKind;
use mongodb::{Collection, Database};

use super::apply::{enqueue, since, Lease};
use super::spec::copies;
use crate::core::denormalized::refresh::{
    cleared, value_at, via_filter, write_copy, Batching, CopyWrite, WriteError,
};
use crate::core::denormalized::{CopyError, CopySpec, OnDelete, Refresh, QUEUE};
use crate::core::queue::claim::Claimer;
use crate::core::queue::{self, runner_keys, Enqueue, JobKind, JobRun, JobRunner};
use crate::core::registry::live_by_id;
use crate::core::trace;

/// Whether an error stops a worker: the server or the network failing, not a write
/// the server refused for one document (a validator, a duplicate key).
fn is_fatal(e: &mongodb::error::Error) -> bool {
    !matches!(e.kind.as_ref(), ErrorKind::Write(_) | ErrorKind::Command(_))
}

/// Drains the refresh queue ([`QUEUE`]): the jobs of async copies and of async
/// summaries (a summary's application of one source document, run by the summary
/// pattern; see [`crate::summary`]), by one claim order, oldest `due` first. See the
/// [module docs](crate::denormalized) for how jobs are claimed, applied and
/// completed, and why several workers and restarts converge.
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

    /// Only these jobs' keys (a copy's, like `"posts.author_name"`, or a summary's,
    /// `"summary:seller_sales"`); the others are left to other workers. A key that is
    /// neither a refreshed copy nor a summary in this program makes
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

    /// The jobs this worker runs, by key: its copies', and the other kinds'.
    fn refreshed(&self) -> Result<Runs, CopyError> {
        let all = Runs::all();
        let Some(keys) = &self.only else { return Ok(all) };
        let mut only = Runs::default();
        for k in keys {
            if let Some(spec) = all.copies.get(k) {
                only.copies.insert(k.clone(), spec);
            } else if let Some(runner) = all.others.get(k) {
                only.others.insert(k.clone(), runner);
            } else {
                return Err(CopyError::UnknownCopy { copy: k.clone() });
            }
        }
        Ok(only)
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
            queue::ensure_index(&queue, doc! { "due": 1 })
                .await
                .map_err(|error| CopyError::Queue { operation: "create index", error })?;
            // What the other kinds' jobs read (the summaries' ledger index), once.
            let mut kinds: Vec<&JobRunner> = Vec::new();
            for runner in specs.others.values() {
                if !kinds.iter().any(|k| k.kind == runner.kind) {
                    (runner.prepare)(&self.db).await?;
                    kinds.push(runner);
                }
            }
            self.indexed.store(true, Ordering::Relaxed);
        }
        let keys: Vec<&str> = specs.copies.keys().chain(specs.others.keys()).map(String::as_str).collect();
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
        // First the jobs this worker already holds (restarted under the same id), taken
        // back without a write; once, so that this adds no loop.
        let mut resumed = claimer.resume(self.jobs_per_claim, &failed).await?;
        while let Some(mut batch) = match resumed.take() {
            Some(batch) => Some(batch),
            None => claimer.claim(self.jobs_per_claim, &failed).await?,
        } {
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
        specs: &Runs,
        job: Document,
        report: &mut RefreshReport,
    ) -> Result<(), CopyError> {
        let key = job.get("_id").cloned().unwrap_or(Bson::Null);
        let parsed = key.as_document().and_then(|k| Some((k.get_str("copy").ok()?, k.get("id")?.clone())));
        let (Some((copy, id)), Some(seq)) = (parsed, job.get("seq").cloned()) else {
            return self.fail(queue, &key, None, CopyError::MalformedJob { job: job.clone() }, report).await;
        };
        if let Some(&runner) = specs.others.get(copy) {
            return self.run_other(queue, runner, copy, &key, &id, &seq, &job, report).await;
        }
        let Some(&spec) = specs.copies.get(copy) else {
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
                    OnDelete::Keep => {
                        return self.complete(queue, Again::Copy(spec), &key, &id, &seq, &job, report).await
                    }
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
                            return self
                                .complete(queue, Again::Copy(spec), &key, &id, &seq, &job, report)
                                .await;
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
                    self.enqueue_again(Again::Copy(spec), &id).await?;
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
        self.complete(queue, Again::Copy(spec), &key, &id, &seq, &job, report).await
    }

    /// Runs a job of another kind through its pattern's runner, then completes it
    /// like a copy's: acknowledged when nothing was queued since the claim, run again
    /// otherwise. The runner is idempotent (a summary's application is taken against
    /// its ledger), so a job run again after a worker died before its acknowledgement
    /// changes nothing.
    #[allow(clippy::too_many_arguments)]
    async fn run_other(
        &self,
        queue: &Collection<Document>,
        runner: &'static JobRunner,
        copy: &str,
        key: &Bson,
        id: &Bson,
        seq: &Bson,
        job: &Document,
        report: &mut RefreshReport,
    ) -> Result<(), CopyError> {
        let (_, name) = JobKind::of_key(copy);
        match (runner.run)(&self.db, name, id).await {
            JobRun::Done { documents } => {
                report.groups_written += documents;
                self.complete(queue, Again::Other(runner.kind, copy), key, id, seq, job, report).await
            }
            JobRun::Failed(error) => self.fail_other(queue, key, copy, id, error, report).await,
            JobRun::Fatal(error) => Err(error),
        }
    }

    /// Deletes the job if it is unchanged since the claim and still this worker's;
    /// otherwise makes it run again.
    #[allow(clippy::too_many_arguments)]
    async fn complete(
        &self,
        queue: &Collection<Document>,
        again: Again<'_>,
        key: &Bson,
        id: &Bson,
        seq: &Bson,
        job: &Document,
        report: &mut RefreshReport,
    ) -> Result<(), CopyError> {
        if queue::ack(queue, key, seq, &self.id).await? {
            report.jobs += 1;
            let lag = job.get_datetime("enqueued_at").ok().map(|enqueued| since(*enqueued, DateTime::now()));
            if let Some(lag) = lag {
                report.max_lag = Some(report.max_lag.map_or(lag, |m| m.max(lag)));
            }
            trace::event!(DEBUG, copy = again.key().as_str(), lag_ms = lag.map(trace::millis), "done");
            return Ok(());
        }
        // The source changed since the claim (`seq` moved on): run it again at once.
        // Or the job is no longer this worker's: enqueue it again.
        if !queue::release(queue, key, &self.id).await? {
            self.enqueue_again(again, id).await?;
        }
        report.requeued += 1;
        Ok(())
    }

    async fn enqueue_again(&self, again: Again<'_>, id: &Bson) -> Result<(), CopyError> {
        let done = match again {
            Again::Copy(spec) => enqueue(&self.db, spec, id).await,
            // Due at once: the job was due when it was claimed.
            Again::Other(kind, key) => {
                let job = Enqueue { kind, key, id, max_stale: Duration::ZERO };
                queue::enqueue(&self.db, &job, None).await
            }
        };
        done.map_err(|error| CopyError::Queue { operation: "enqueue", error })
    }

    /// [`Worker::fail`] for a job of another kind.
    async fn fail_other(
        &self,
        queue: &Collection<Document>,
        key: &Bson,
        copy: &str,
        id: &Bson,
        error: CopyError,
        report: &mut RefreshReport,
    ) -> Result<(), CopyError> {
        queue::record_failure(queue, key, &self.id, self.lease, &error).await?;
        report.failures.push(JobFailure { copy: copy.to_owned(), id: id.clone(), error });
        Ok(())
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
        queue::record_failure(queue, key, &self.id, self.lease, &error).await?;
        let (copy, id) = match job {
            Some((spec, id)) => (spec.key(), id.clone()),
            None => (String::new(), key.clone()),
        };
        report.failures.push(JobFailure { copy, id, error });
        Ok(())
    }
}

/// What a job's completion enqueues when the job is no longer this worker's.
#[derive(Clone, Copy)]
enum Again<'a> {
    Copy(&'static CopySpec),
    /// Another kind's job, by its key.
    Other(JobKind, &'a str),
}

impl Again<'_> {
    fn key(&self) -> String {
        match self {
            Self::Copy(spec) => spec.key(),
            Self::Other(_, key) => (*key).to_owned(),
        }
    }
}

/// The jobs a worker runs, by key.
#[derive(Default)]
struct Runs {
    /// The refreshed copies'.
    copies: BTreeMap<String, &'static CopySpec>,
    /// The other kinds' (the summaries'), with their runner.
    others: BTreeMap<String, &'static JobRunner>,
}

impl Runs {
    /// Every job key this program runs.
    fn all() -> Self {
        Runs {
            copies: copies()
                .into_iter()
                .filter(|c| c.refresh != Refresh::Never)
                .map(|c| (c.key(), c))
                .collect(),
            others: runner_keys().into_iter().collect(),
        }
    }
}

/// A job a worker could not run.
#[derive(Debug, Clone)]
pub struct JobFailure {
    /// The job's key: the copy's, or `"summary:<collection>"` (empty for a malformed
    /// job).
    pub copy: String,
    /// The source document's `_id` (the job's `_id` for a malformed job).
    pub id: Bson,
    /// What went wrong.
    pub error: CopyError,
}

/// Jobs left in the queue because no copy this program refreshes, and no summary it
/// links, has their key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedJobs {
    /// The key (`"posts.author_name"`, `"summary:seller_sales"`).
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
    /// Summary group documents written (or deleted) by summary jobs.
    pub groups_written: u64,
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
    /// Jobs of copies this program does not refresh (and of summaries it does not
    /// link), left in the queue, by key.
    pub skipped: Vec<SkippedJobs>,
}

/// The queue's jobs whose key is no refreshed copy nor linked summary of this program.
async fn skipped(db: &Database) -> Result<Vec<SkippedJobs>, CopyError> {
    let all = Runs::all();
    let known: Vec<&String> = all.copies.keys().chain(all.others.keys()).collect();
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
