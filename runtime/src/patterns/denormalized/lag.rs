//! How far the async copies lag their sources.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{doc, Bson, DateTime, Document};
use futures_util::TryStreamExt;
use mongodb::Database;

use super::apply::since;
use super::worker::count;
use crate::core::copy::{CopyError, QUEUE};
use crate::core::trace;

/// The queue's state for one copy.
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
    /// The same, by copy key.
    pub by_copy: BTreeMap<String, CopyLag>,
}

/// How far behind the refresh queue is: pending jobs, the oldest, and those past due,
/// in all and by copy. One aggregation over [`QUEUE`]. A job whose `due` is missing or
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
            } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .await
        .map_err(error)?;
    let mut lag = QueueLag::default();
    while let Some(group) = cursor.try_next().await.map_err(error)? {
        let copy = match group.get("_id") {
            Some(Bson::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let entry = CopyLag {
            pending: count(group.get("pending")),
            oldest_enqueued_at: group.get_datetime("oldest").ok().copied(),
            overdue: count(group.get("overdue")),
            undated: count(group.get("undated")),
        };
        lag.pending += entry.pending;
        lag.overdue += entry.overdue;
        lag.undated += entry.undated;
        if let Some(at) = entry.oldest_enqueued_at {
            lag.oldest_enqueued_at = Some(lag.oldest_enqueued_at.map_or(at, |o| o.min(at)));
        }
        lag.by_copy.insert(copy, entry);
    }
    lag.oldest_age = lag.oldest_enqueued_at.map(|at| since(at, now));
    trace::event!(
        INFO,
        pending = lag.pending,
        overdue = lag.overdue,
        undated = lag.undated,
        oldest_age_ms = lag.oldest_age.map(trace::millis),
        "copies.lag"
    );
    Ok(lag)
}
