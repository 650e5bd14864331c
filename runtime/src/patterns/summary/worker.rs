//! The worker that drains the summary queue, and the queue's lag.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{doc, Bson, DateTime, Document};
use futures_util::TryStreamExt;
use mongodb::{Database, IndexModel};

use super::apply::apply;
use super::spec::summary;
use super::{SummaryError, LEDGER};

/// Drains the summary queue ([`LEDGER`] records marked `pending`): each pending source
/// document's delta is applied to its summary in a transaction of its own
/// ([module docs](crate::summary)). Any number of workers may run at once and be
/// stopped at any point: an application either committed (the record is no longer
/// pending, or pending again for a newer write) or left nothing.
#[derive(Debug, Clone)]
pub struct Worker {
    db: Database,
    batch: i64,
}

/// What a [`Worker`] run did.
#[derive(Debug, Default, Clone)]
#[non_exhaustive]
pub struct SummaryRun {
    /// Source documents applied.
    pub applied: u64,
    /// Summary group documents written.
    pub groups_written: u64,
    /// Transactions run again after a conflict with a concurrent application.
    pub conflicts: u64,
    /// Queue records naming a summary this program does not link (left pending).
    pub unknown: u64,
    /// Records whose application the server refused (a summary document its
    /// validator rejects, say): left pending, skipped for the rest of the run, with
    /// the ledger `_id` and the server's reason.
    pub failed: Vec<(Bson, String)>,
}

impl Worker {
    /// A worker on `db`, reading up to 64 pending records at a time.
    pub fn new(db: &Database) -> Self {
        Worker { db: db.clone(), batch: 64 }
    }

    /// How many pending records one read takes (at least 1).
    pub fn batch(mut self, records: usize) -> Self {
        self.batch = records.clamp(1, 10_000) as i64;
        self
    }

    /// Applies pending records, oldest `due` first, until a read finds none this run
    /// can apply.
    pub async fn run_until_empty(&self) -> Result<SummaryRun, SummaryError> {
        create_indexes(&self.db).await?;
        let mut run = SummaryRun::default();
        let mut skipped: Vec<Bson> = Vec::new();
        loop {
            if !self.pass(&mut run, &mut skipped).await? {
                return Ok(run);
            }
        }
    }

    /// Runs until `stop` resolves, polling an empty queue every `poll`.
    pub async fn run_until<F: std::future::Future<Output = ()>>(
        &self,
        poll: Duration,
        stop: F,
    ) -> Result<SummaryRun, SummaryError> {
        create_indexes(&self.db).await?;
        let mut run = SummaryRun::default();
        let mut skipped: Vec<Bson> = Vec::new();
        tokio::pin!(stop);
        loop {
            let busy = tokio::select! {
                _ = &mut stop => return Ok(run),
                busy = self.pass(&mut run, &mut skipped) => busy?,
            };
            if !busy {
                tokio::select! {
                    _ = &mut stop => return Ok(run),
                    _ = tokio::time::sleep(poll) => {}
                }
            }
        }
    }

    /// One read and its applications: whether anything was found to apply.
    async fn pass(&self, run: &mut SummaryRun, skipped: &mut Vec<Bson>) -> Result<bool, SummaryError> {
        let ledger = self.db.collection::<Document>(LEDGER);
        let mongo = |error| SummaryError::Mongo { summary: LEDGER, error };
        let filter = doc! { "pending": true, "_id": { "$nin": skipped.clone() } };
        let records: Vec<Document> = ledger
            .find(filter)
            .sort(doc! { "due": 1 })
            .limit(self.batch)
            .projection(doc! { "_id": 1 })
            .await
            .map_err(mongo)?
            .try_collect()
            .await
            .map_err(mongo)?;
        if records.is_empty() {
            return Ok(false);
        }
        for r in records {
            let Some(rid) = r.get_document("_id").ok().cloned() else { continue };
            let spec = rid.get_str("s").ok().and_then(summary);
            let (Some(spec), Some(id)) = (spec, rid.get("id")) else {
                run.unknown += 1;
                skipped.push(Bson::Document(rid));
                continue;
            };
            let applied = match apply(&self.db, spec, id).await {
                Ok(applied) => applied,
                Err(SummaryError::Mongo { error, .. }) if refused(&error) => {
                    run.failed.push((Bson::Document(rid.clone()), error.to_string()));
                    skipped.push(Bson::Document(rid));
                    continue;
                }
                Err(e) => return Err(e),
            };
            super::rewritten(&self.db, spec, &applied.groups, false)
                .await
                .map_err(|e| SummaryError::Derived { summary: spec.collection, error: Box::new(e) })?;
            run.applied += 1;
            run.groups_written += applied.groups.len() as u64;
            run.conflicts += u64::from(applied.attempts.saturating_sub(1));
        }
        Ok(true)
    }
}

/// Whether the server refused the write itself (not the network, not a conflict):
/// retrying at once would fail the same way.
fn refused(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    matches!(e.kind.as_ref(), ErrorKind::Write(WriteFailure::WriteError(_)))
        || matches!(e.kind.as_ref(), ErrorKind::Command(c) if c.code == 121 || c.code == 2 || c.code == 14)
}

/// Creates the ledger's indexes (idempotent; every [`Worker`] run starts with it, and
/// a deployment of sync summaries only runs it once, at deploy):
///
/// - `{"_id.s": 1, "g.k": 1}`: a group's records, read when a min or max must be
///   recomputed (`{"_id.s": <summary>, "g.k": <key>}`). On mongod both fields are
///   equalities, `g.k` a multikey path whose equality bounds are exact: the scan reads
///   the group's records and no other, instead of the summary's whole ledger.
/// - `{pending: 1, due: 1}`: the worker's read of pending records, oldest `due` first,
///   and [`lag`]: an equality then the sort's field, so the records arrive in order
///   from the index, and applied records (`pending: false`, the bulk of the ledger)
///   are never scanned.
///
/// Not created inside a transaction: an index build waits for the transactions that
/// wrote the collection, and a transaction of the caller's would wait for it.
pub async fn create_indexes(db: &Database) -> Result<(), SummaryError> {
    let indexes = [doc! { "_id.s": 1, "g.k": 1 }, doc! { "pending": 1, "due": 1 }]
        .into_iter()
        .map(|keys| IndexModel::builder().keys(keys).build());
    db.collection::<Document>(LEDGER)
        .create_indexes(indexes)
        .await
        .map_err(|error| SummaryError::Mongo { summary: LEDGER, error })?;
    Ok(())
}

/// How far the summaries lag their sources: the queue's pending records.
#[derive(Debug, Default, Clone)]
#[non_exhaustive]
pub struct SummaryLag {
    /// Pending source documents, all summaries.
    pub pending: u64,
    /// Pending records past their `due` (enqueued longer than `max_stale` ago).
    pub overdue: u64,
    /// The earliest `due` among pending records.
    pub oldest_due: Option<DateTime>,
    /// Pending records per summary collection.
    pub by_summary: BTreeMap<String, u64>,
}

/// The summary queue's lag: one read of the pending records' `_id` and `due`.
pub async fn lag(db: &Database) -> Result<SummaryLag, SummaryError> {
    let mongo = |error| SummaryError::Mongo { summary: LEDGER, error };
    let mut cursor = db
        .collection::<Document>(LEDGER)
        .find(doc! { "pending": true })
        .projection(doc! { "_id": 1, "due": 1 })
        .await
        .map_err(mongo)?;
    let now = DateTime::now();
    let mut lag = SummaryLag::default();
    while let Some(r) = cursor.try_next().await.map_err(mongo)? {
        lag.pending += 1;
        let name = r.get_document("_id").ok().and_then(|i| i.get_str("s").ok()).unwrap_or("?").to_owned();
        *lag.by_summary.entry(name).or_default() += 1;
        if let Ok(due) = r.get_datetime("due") {
            if *due < now {
                lag.overdue += 1;
            }
            lag.oldest_due = Some(lag.oldest_due.map_or(*due, |d| d.min(*due)));
        }
    }
    Ok(lag)
}
