//! The one durable queue of derived data refreshed later ([`QUEUE`],
//! `docshape_refresh`): the async copies' jobs and the async summaries' jobs, drained
//! by one worker (`denormalized::Worker`) and measured by one lag report
//! (`denormalized::lag`).
//!
//! Here are the mechanics every kind of job shares: the job's shape and its key
//! ([`JobKind`]), the enqueue (an upsert due `max_stale` after its first enqueue),
//! claims under a lease ([`claim`]), the completion (an acknowledgement that holds
//! only when nothing was queued since the claim) and the recording of a failure. What
//! running a job means is the pattern's: the denormalized pattern runs its copies'
//! jobs itself (the worker is its own), and any other pattern registers a
//! [`JobRunner`] for its kind (the summary pattern does), so that neither imports the
//! other.
//!
//! A job:
//!
//! ```text
//! { _id: { copy: <job key>, id: <the source document's _id> },
//!   kind: "copy" | "summary",
//!   seq: <long: +1 at every enqueue>,
//!   enqueued_at: <date: the first enqueue since the job last completed>,
//!   due: <date: enqueued_at + max_stale>,
//!   lease_until, owner, claim, claimed_at, claims, failures, last_error, failed_at }
//! ```
//!
//! The job key says the kind: a copy's key is the copy's (`"posts.author_name"`), a
//! summary's is `"summary:<its collection>"` (`"summary:seller_sales"`). The stored
//! `kind` says the same for a reader of the collection; the worker goes by the key,
//! so a job another program wrote with a wrong or missing `kind` is still run by
//! what its key names, or left alone.

// A `CopyError` names the document (`_id` as `Bson`) and carries the driver's error:
// large, but rare and behind a round trip anyway.
#![allow(clippy::result_large_err)]

use std::time::Duration;

use bson::{doc, Bson, DateTime, Document};
use futures_util::future::BoxFuture;
use mongodb::{ClientSession, Collection, Database};

use crate::core::descriptor::CopyError;
use crate::core::model::eq;
use crate::core::transaction::is_duplicate_key;

pub(crate) mod claim;

/// The queue of every refresh left to a worker: reserved (its jobs' shape is in the
/// [denormalized module](crate::denormalized)'s docs).
pub const QUEUE: &str = "docshape_refresh";

/// The kind of a queued job: what its key names and what runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum JobKind {
    /// A denormalized copy's refresh (`"posts.author_name"`).
    Copy,
    /// An async summary's application of one source document (`"summary:seller_sales"`).
    Summary,
}

impl JobKind {
    /// The stored `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Copy => "copy",
            Self::Summary => "summary",
        }
    }

    /// The job key of `name` (a copy's key, a summary's collection).
    pub fn key(self, name: &str) -> String {
        match self {
            Self::Copy => name.to_owned(),
            Self::Summary => format!("summary:{name}"),
        }
    }

    /// The kind a job key names, and the name in it: a key that is no other kind's is
    /// a copy's.
    pub fn of_key(key: &str) -> (Self, &str) {
        match key.strip_prefix("summary:") {
            Some(name) => (Self::Summary, name),
            None => (Self::Copy, key),
        }
    }
}

/// The job `_id` of job key `key` and source document `id`.
pub(crate) fn job_id(key: &str, id: &Bson) -> Bson {
    Bson::Document(doc! { "copy": key, "id": id.clone() })
}

/// `at + d`, saturating.
pub(crate) fn plus(at: DateTime, d: Duration) -> DateTime {
    let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    DateTime::from_millis(at.timestamp_millis().saturating_add(ms))
}

/// How long from `earlier` to `now` (zero when `earlier` is later).
pub(crate) fn since(earlier: DateTime, now: DateTime) -> Duration {
    let ms = now.timestamp_millis().saturating_sub(earlier.timestamp_millis()).max(0);
    Duration::from_millis(ms as u64)
}

/// One job to enqueue: its kind, key, source document and staleness bound.
#[derive(Debug, Clone)]
pub(crate) struct Enqueue<'a> {
    pub(crate) kind: JobKind,
    pub(crate) key: &'a str,
    pub(crate) id: &'a Bson,
    /// How long after its first enqueue the job is due.
    pub(crate) max_stale: Duration,
}

impl Enqueue<'_> {
    /// The filter and update of the upsert.
    fn upsert(&self, now: DateTime) -> (Document, Document) {
        let filter = doc! { "_id": eq(job_id(self.key, self.id)) };
        let update = doc! {
            "$inc": { "seq": 1_i64 },
            "$setOnInsert": {
                "kind": self.kind.as_str(),
                "enqueued_at": now,
                "due": plus(now, self.max_stale),
                "lease_until": DateTime::from_millis(0),
            },
        };
        (filter, update)
    }
}

/// Upserts one job: a new one due `max_stale` from now, or one more `seq` on the
/// pending one. Two upserts racing to create a job make one fail with a duplicate key;
/// it is retried once, and then finds the job. In `session` when given (in its
/// transaction, if it runs one: the job commits with the write that queued it); there
/// a duplicate key aborts the transaction, so it is returned for the transaction's
/// owner to run again.
pub(crate) async fn enqueue(
    db: &Database,
    job: &Enqueue<'_>,
    session: Option<&mut ClientSession>,
) -> mongodb::error::Result<()> {
    let queue = db.collection::<Document>(QUEUE);
    let (filter, update) = job.upsert(DateTime::now());
    if let Some(session) = session {
        queue.update_one(filter, update).upsert(true).session(session).await?;
        return Ok(());
    }
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
pub(crate) async fn enqueue_many(db: &Database, jobs: &[Enqueue<'_>]) -> mongodb::error::Result<()> {
    if jobs.is_empty() {
        return Ok(());
    }
    let now = DateTime::now();
    let updates: Vec<Document> = jobs
        .iter()
        .map(|job| {
            let (q, u) = job.upsert(now);
            doc! { "q": q, "u": u, "upsert": true }
        })
        .collect();
    let reply = send(db, doc! { "update": QUEUE, "updates": updates, "ordered": false }).await?;
    let Ok(errors) = reply.get_array("writeErrors") else { return Ok(()) };
    for error in errors {
        let error = error.as_document();
        let code = error.and_then(|e| integer(e.get("code")));
        let index = error.and_then(|e| integer(e.get("index")));
        match (code, index.and_then(|i| usize::try_from(i).ok()).and_then(|i| jobs.get(i))) {
            (Some(11000), Some(job)) => enqueue(db, job, None).await?,
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

/// How many times [`send`] sends a command when the network fails it.
const SENDS: u32 = 3;

/// Sends `command`, a write to the queue that is safe to send twice (upserts that add
/// one more `seq`, a claim's stamp by the same owner and token, a lease set again),
/// again after a network error, a bounded number of times: `run_command` is not
/// retried by the driver, as its own write helpers are once.
pub(crate) async fn send(db: &Database, command: Document) -> mongodb::error::Result<Document> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match db.run_command(command.clone()).await {
            Ok(reply) => return Ok(reply),
            Err(e) if attempt < SENDS && crate::core::transaction::is_network(&e) => {
                tokio::time::sleep(crate::core::transaction::backoff(attempt)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

fn integer(value: Option<&Bson>) -> Option<i64> {
    match value {
        Some(Bson::Int32(n)) => Some(i64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n),
        _ => None,
    }
}

/// Acknowledges a job run by `owner`: deletes it if its `seq` is still `seq` (nothing
/// was queued since the claim) and it is still `owner`'s. `false`: the job stays.
pub(crate) async fn ack(
    queue: &Collection<Document>,
    job: &Bson,
    seq: &Bson,
    owner: &str,
) -> Result<bool, CopyError> {
    let done = queue
        // `$eq`: a stored `seq` that looks like an operator is compared, not run.
        .delete_one(doc! { "_id": eq(job.clone()), "seq": eq(seq.clone()), "owner": eq(Bson::from(owner)) })
        .await
        .map_err(|error| CopyError::Queue { operation: "complete", error })?;
    Ok(done.deleted_count == 1)
}

/// Makes `owner`'s job claimable by anyone at once; `false` when it is not `owner`'s.
pub(crate) async fn release(
    queue: &Collection<Document>,
    job: &Bson,
    owner: &str,
) -> Result<bool, CopyError> {
    let done = queue
        .update_one(
            doc! { "_id": eq(job.clone()), "owner": eq(Bson::from(owner)) },
            doc! { "$set": { "lease_until": DateTime::from_millis(0) } },
        )
        .await
        .map_err(|error| CopyError::Queue { operation: "release", error })?;
    Ok(done.matched_count == 1)
}

/// Records `owner`'s failure at a job and leaves it to whoever claims it after
/// `lease` (its owner is cleared, so `owner` does not take it straight back).
pub(crate) async fn record_failure(
    queue: &Collection<Document>,
    job: &Bson,
    owner: &str,
    lease: Duration,
    error: &CopyError,
) -> Result<(), CopyError> {
    let now = DateTime::now();
    queue
        .update_one(
            doc! { "_id": eq(job.clone()), "owner": eq(Bson::from(owner)) },
            doc! {
                "$set": { "lease_until": plus(now, lease), "last_error": error.to_string(), "failed_at": now },
                "$unset": { "owner": "" },
                "$inc": { "failures": 1_i64 },
            },
        )
        .await
        .map_err(|error| CopyError::Queue { operation: "record a failure", error })?;
    Ok(())
}

/// Creates the index `keys` on `collection` unless this process already made sure of
/// it (for a database of that name), or an index on those fields exists: one
/// `listIndexes` read when it does. Every worker makes sure of its indexes when it
/// starts, and workers restarted often in one process (a supervisor restarting them
/// after a network error) would otherwise each send an index build, which waits for
/// the transactions writing the collection (async summaries queue their jobs in the
/// writes' transactions). The indexes serve speed, not correctness: a database of the
/// same name on another deployment that lacks one is slower, not wrong.
pub async fn ensure_index(collection: &Collection<Document>, keys: Document) -> mongodb::error::Result<()> {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static ENSURED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let memo = format!("{}.{} {keys}", collection.namespace().db, collection.name());
    if ENSURED.lock().is_ok_and(|e| e.contains(&memo)) {
        return Ok(());
    }
    ensure_index_once(collection, keys).await?;
    if let Ok(mut e) = ENSURED.lock() {
        e.insert(memo);
    }
    Ok(())
}

async fn ensure_index_once(collection: &Collection<Document>, keys: Document) -> mongodb::error::Result<()> {
    use futures_util::TryStreamExt;
    let mut existing = match collection.list_indexes().await {
        Ok(cursor) => cursor,
        // No collection yet (`NamespaceNotFound`): the build creates it.
        Err(e) if matches!(e.kind.as_ref(), mongodb::error::ErrorKind::Command(c) if c.code == 26) => {
            collection.create_index(mongodb::IndexModel::builder().keys(keys).build()).await?;
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    loop {
        match existing.try_next().await {
            // The same fields in the same order (a server may return the directions
            // as another numeric type).
            Ok(Some(index)) if index.keys.keys().eq(keys.keys()) => return Ok(()),
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => return Err(e),
        }
    }
    collection.create_index(mongodb::IndexModel::builder().keys(keys).build()).await?;
    Ok(())
}

/// What running one job came to.
#[derive(Debug)]
#[non_exhaustive]
pub enum JobRun {
    /// Done: the worker acknowledges the job. `documents`: the derived documents
    /// written.
    Done {
        /// Documents written (a summary's groups).
        documents: u64,
    },
    /// The server refused the job's writes, or a stored value was unreadable: the
    /// failure is recorded on the job, which waits a lease and is retried.
    Failed(CopyError),
    /// The server or the network failed: the worker's run ends, the job stays leased.
    Fatal(CopyError),
}

/// Runs a job of `name` (a summary's collection) for source document `id`.
pub type RunJob = for<'a> fn(db: &'a Database, name: &'a str, id: &'a Bson) -> BoxFuture<'a, JobRun>;

/// Makes ready what a kind's jobs need (its indexes), once per worker.
pub type PrepareJobs = for<'a> fn(db: &'a Database) -> BoxFuture<'a, Result<(), CopyError>>;

/// How to run the jobs of one kind other than copies, registered by its pattern with
/// `inventory::submit!` (the copies' jobs are run by their pattern's worker itself).
pub struct JobRunner {
    /// The kind of the jobs.
    pub kind: JobKind,
    /// The names (`JobKind::key`'s argument) this program runs jobs of.
    pub names: fn() -> Vec<String>,
    /// Runs one job. It must be idempotent: a job runs again whenever a worker died
    /// after running it and before its acknowledgement.
    pub run: RunJob,
    /// Makes ready what the jobs need, once per worker before its first claim.
    pub prepare: PrepareJobs,
}

inventory::collect!(JobRunner);

/// Every registered runner's job keys, with their runner.
pub fn runner_keys() -> Vec<(String, &'static JobRunner)> {
    inventory::iter::<JobRunner>
        .into_iter()
        .flat_map(|r| (r.names)().into_iter().map(move |n| (r.kind.key(&n), r)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_says_its_kind() {
        assert_eq!(JobKind::of_key("summary:seller_sales"), (JobKind::Summary, "seller_sales"));
        assert_eq!(JobKind::of_key("posts.author_name"), (JobKind::Copy, "posts.author_name"));
        assert_eq!(JobKind::Summary.key("seller_sales"), "summary:seller_sales");
        assert_eq!(JobKind::Copy.key("posts.author_name"), "posts.author_name");
    }
}
