//! How far the async copies and async summaries lag their sources: the one queue,
//! and the watchers that feed it.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{doc, Bson, DateTime, Document};
use futures_util::TryStreamExt;
use mongodb::Database;

use super::apply::since;
use super::worker::count;
use crate::core::denormalized::{CopyError, QUEUE, WATCH_POSITIONS};
use crate::core::queue::JobKind;
use crate::core::trace;

/// The queue's state for one copy, or one summary.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CopyLag {
    /// Jobs waiting or running.
    pub pending: u64,
    /// When the oldest of them was enqueued.
    pub oldest_enqueued_at: Option<DateTime>,
    /// Jobs past their due date (`max_stale` after their enqueue), and jobs whose
    /// `due` is not a date.
    pub overdue: u64,
    /// Jobs whose `due` is missing or not a date (another program wrote them): their
    /// deadline is unknown, so they count as overdue too.
    pub undated: u64,
    /// Jobs a worker has failed at least once (a copy the target's validator refuses, a
    /// refused command), waiting for their retry: copies that stay stale until the
    /// cause is fixed.
    pub failing: u64,
    /// The error of the most recent failure among them, as the worker recorded it.
    pub last_error: Option<String>,
}

/// How far behind the refresh queue is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueueLag {
    /// Jobs waiting or running.
    pub pending: u64,
    /// When the oldest job was enqueued.
    pub oldest_enqueued_at: Option<DateTime>,
    /// How long ago that was: the staleness of the stalest copy.
    pub oldest_age: Option<Duration>,
    /// Jobs past their due date, and jobs whose `due` is not a date.
    pub overdue: u64,
    /// Jobs whose `due` is missing or not a date, counted in `overdue` too.
    pub undated: u64,
    /// Jobs a worker has failed at least once and that wait for a retry (see
    /// [`CopyLag::failing`]; each copy's last error is in [`QueueLag::by_copy`]).
    pub failing: u64,
    /// The same, by copy key (`"posts.author_name"`), for the copies' jobs and for
    /// jobs of a key no kind claims (another program's).
    pub by_copy: BTreeMap<String, CopyLag>,
    /// The same, by summary collection (`"seller_sales"`), for the async summaries'
    /// jobs (job key `"summary:seller_sales"`): one job per source document whose
    /// application is pending. Counted in the totals above with the copies' jobs.
    pub by_summary: BTreeMap<String, CopyLag>,
    /// Where each [`Watcher`](super::Watcher) stands on each source, by watcher name
    /// then source: changes it has not read yet have no job either.
    pub watchers: Vec<WatcherLag>,
}

/// Where one watcher stands on one source collection, from its saved position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatcherLag {
    /// The watcher's name.
    pub watcher: String,
    /// The source collection.
    pub source: String,
    /// When the last change it processed was made (the change's `wallTime`, or its
    /// `clusterTime`): `None` before the first change.
    pub last_change_at: Option<DateTime>,
    /// How long ago that was.
    pub last_change_age: Option<Duration>,
    /// When it last saved its position.
    pub saved_at: Option<DateTime>,
    /// Whether, at that save, the stream had nothing more to read.
    pub caught_up: bool,
    /// How far behind its source the watcher may be: since its last save when it was
    /// caught up then (a quiet source is not behind), since its last change
    /// otherwise. Add it to a job's age for a copy's staleness. `None` when the
    /// position has no date (another program wrote it).
    pub behind: Option<Duration>,
}

/// How far behind the refresh queue is: pending jobs, the oldest, and those past due,
/// in all, by copy and by summary. One aggregation over [`QUEUE`]. A job whose `due` is missing or
/// not a date (written by another program) counts as overdue and as `undated`; an
/// `enqueued_at` that is not a date is left out of the oldest.
pub async fn lag(db: &Database) -> Result<QueueLag, CopyError> {
    let now = DateTime::now();
    let error = |error| CopyError::Queue { operation: "lag", error };
    let mut cursor = db
        .collection::<Document>(QUEUE)
        .aggregate([
            doc! { "$group": {
                "_id": "$_id.copy",
                "pending": { "$sum": 1 },
                // Only dates: in BSON order a string or a number sorts below every date.
                "oldest": { "$min": { "$cond": [ { "$eq": [ { "$type": "$enqueued_at" }, "date" ] }, "$enqueued_at", null ] } },
                "overdue": { "$sum": { "$cond": [
                    { "$or": [ { "$ne": [ { "$type": "$due" }, "date" ] }, { "$lt": [ "$due", now ] } ] }, 1, 0
                ] } },
                "undated": { "$sum": { "$cond": [ { "$ne": [ { "$type": "$due" }, "date" ] }, 1, 0 ] } },
                // A count of failures another program wrote as a non-number is no failure.
                "failing": { "$sum": { "$cond": [ { "$gt": [ { "$convert": { "input": "$failures", "to": "long", "onError": 0, "onNull": 0 } }, 0 ] }, 1, 0 ] } },
                // The error of the latest failure: the greatest `[failed_at, last_error]`
                // pair among failed jobs (arrays compare element by element).
                "last": { "$max": { "$cond": [
                    { "$eq": [ { "$type": "$failed_at" }, "date" ] }, [ "$failed_at", "$last_error" ], null
                ] } },
            } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .await
        .map_err(error)?;
    let mut lag = QueueLag::default();
    while let Some(group) = cursor.try_next().await.map_err(error)? {
        let key = match group.get("_id") {
            Some(Bson::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let entry = CopyLag {
            pending: count(group.get("pending")),
            oldest_enqueued_at: group.get_datetime("oldest").ok().copied(),
            overdue: count(group.get("overdue")),
            undated: count(group.get("undated")),
            failing: count(group.get("failing")),
            last_error: group
                .get_array("last")
                .ok()
                .and_then(|pair| pair.get(1))
                .and_then(Bson::as_str)
                .map(str::to_owned),
        };
        lag.pending += entry.pending;
        lag.overdue += entry.overdue;
        lag.undated += entry.undated;
        lag.failing += entry.failing;
        if let Some(at) = entry.oldest_enqueued_at {
            lag.oldest_enqueued_at = Some(lag.oldest_enqueued_at.map_or(at, |o| o.min(at)));
        }
        match JobKind::of_key(&key) {
            (JobKind::Summary, name) => lag.by_summary.insert(name.to_owned(), entry),
            _ => lag.by_copy.insert(key, entry),
        };
    }
    lag.oldest_age = lag.oldest_enqueued_at.map(|at| since(at, now));
    lag.watchers = watchers(db, now).await?;
    trace::event!(
        INFO,
        pending = lag.pending,
        overdue = lag.overdue,
        undated = lag.undated,
        failing = lag.failing,
        oldest_age_ms = lag.oldest_age.map(trace::millis),
        "copies.lag"
    );
    Ok(lag)
}

/// The watchers' saved positions, by watcher name then source.
async fn watchers(db: &Database, now: DateTime) -> Result<Vec<WatcherLag>, CopyError> {
    let error = |error| CopyError::Watch { collection: WATCH_POSITIONS, operation: "lag", error };
    let mut cursor = db.collection::<Document>(WATCH_POSITIONS).find(doc! {}).await.map_err(error)?;
    let mut out = Vec::new();
    while let Some(position) = cursor.try_next().await.map_err(error)? {
        let key = position.get_document("_id").ok();
        let text = |k: &str| match key.and_then(|d| d.get(k)) {
            Some(Bson::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let last_change_at = position.get_datetime("last_change_at").ok().copied();
        let saved_at = position.get_datetime("saved_at").ok().copied();
        let caught_up = position.get_bool("caught_up").unwrap_or(false);
        let behind = if caught_up { saved_at } else { last_change_at.or(saved_at) };
        out.push(WatcherLag {
            watcher: text("watcher"),
            source: text("source"),
            last_change_at,
            last_change_age: last_change_at.map(|at| since(at, now)),
            saved_at,
            caught_up,
            behind: behind.map(|at| since(at, now)),
        });
    }
    out.sort_by(|a, b| (&a.watcher, &a.source).cmp(&(&b.watcher, &b.source)));
    Ok(out)
}
