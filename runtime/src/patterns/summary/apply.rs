//! Applying one source document's change to a summary, exactly once: the delta
//! between its contribution now and the contribution recorded in the ledger, written
//! with the new record in one transaction.

use std::time::Instant;

use bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;
use mongodb::{ClientSession, Database};

use super::contribution::{compare, contributions, Contribution, Num};
use super::spec::{SummaryOp, SummarySpec};
use super::{SummaryError, LEDGER};
use crate::core::access::update::UpdateBuilder;
use crate::core::model::eq;
use crate::core::transaction::{backoff, is_duplicate_key, is_transient, TRANSACTION_TIME};

/// The ledger record's `_id` for `spec` and source document `id`.
pub(crate) fn record_id(spec: &SummarySpec, id: &Bson) -> Bson {
    Bson::Document(doc! { "s": spec.collection, "id": id.clone() })
}

/// `{_id: {$eq: id}}`: a stored value (a group key, a ledger record's id) is
/// compared, never read as operators, whatever it holds (`$`-prefixed keys, a regex).
pub(crate) fn by_id(id: &Bson) -> Document {
    doc! { "_id": eq(id.clone()) }
}

/// An update built by the core builder (every value written literally), as the
/// driver's error when a value is refused (none is: the values here are stored BSON).
fn built(update: UpdateBuilder) -> mongodb::error::Result<Document> {
    update.into_document().map_err(|e| mongodb::error::Error::custom(std::sync::Arc::new(e.to_string())))
}

/// What one application changed.
#[derive(Debug, Default, Clone)]
pub(crate) struct Applied {
    /// The keys of the groups whose document was written (or deleted).
    pub groups: Vec<Bson>,
    /// Transaction attempts (1 without conflicts).
    pub attempts: u32,
}

/// Applies source document `id`'s change to `spec`, in a transaction of its own,
/// retried on conflicts (a concurrent application to a shared group): idempotent, as
/// the delta is taken against the ledger's record, which the same transaction
/// replaces. Run again after it committed, it finds a delta of zero.
pub(crate) async fn apply(db: &Database, spec: &SummarySpec, id: &Bson) -> Result<Applied, SummaryError> {
    let err = |error| SummaryError::Mongo { summary: spec.collection, error };
    let mut session = db.client().start_session().await.map_err(err)?;
    let started = Instant::now();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let retry = |e: &mongodb::error::Error| {
            started.elapsed() < TRANSACTION_TIME
                && (is_transient(e) || is_duplicate_key(e) || write_conflict(e))
        };
        session.start_transaction().await.map_err(err)?;
        match once(db, spec, id, None, &mut session).await {
            Ok(groups) => match session.commit_transaction().await {
                Ok(()) => return Ok(Applied { groups, attempts: attempt }),
                // An unknown commit result is harmless to run again: a committed
                // application finds a delta of zero.
                Err(e)
                    if retry(&e) || e.contains_label(mongodb::error::UNKNOWN_TRANSACTION_COMMIT_RESULT) => {}
                Err(e) => return Err(err(e)),
            },
            Err(e) => {
                let _ = session.abort_transaction().await;
                if !retry(&e) {
                    return Err(err(e));
                }
            }
        }
        tokio::time::sleep(backoff(attempt)).await;
    }
}

fn write_conflict(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Command(c) => c.code == 112,
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 112,
        _ => false,
    }
}

/// The recorded contribution, as the ledger stores it (`g: [{k, v: [..]}]`).
fn recorded(record: Option<&Document>) -> Vec<Contribution> {
    let Some(Ok(groups)) = record.map(|r| r.get_array("g")) else { return Vec::new() };
    groups
        .iter()
        .filter_map(|g| {
            let g = g.as_document()?;
            let values = g.get_array("v").ok()?.clone();
            Some(Contribution { key: g.get("k")?.clone(), values })
        })
        .collect()
}

fn stored(groups: &[Contribution]) -> Bson {
    Bson::Array(
        groups
            .iter()
            .map(|c| Bson::Document(doc! { "k": c.key.clone(), "v": Bson::Array(c.values.clone()) }))
            .collect(),
    )
}

/// Applies source document `id`'s change to `spec` in `session`'s running
/// transaction (the source write's own): no retry here, as an error aborts the
/// caller's transaction, which its owner runs again whole (a write conflict with a
/// concurrent application is labelled transient).
///
/// `written`: the source document as the write left it, when its command returned it
/// (read in the transaction otherwise).
pub(crate) async fn apply_in(
    db: &Database,
    spec: &SummarySpec,
    id: &Bson,
    written: Option<&Document>,
    session: &mut ClientSession,
) -> Result<Vec<Bson>, SummaryError> {
    once(db, spec, id, written, session)
        .await
        .map_err(|error| SummaryError::Mongo { summary: spec.collection, error })
}

/// One attempt, in `session`'s transaction: returns the keys of the groups written.
/// `written`: the source document as the transaction sees it, when the caller has it.
async fn once(
    db: &Database,
    spec: &SummarySpec,
    id: &Bson,
    written: Option<&Document>,
    session: &mut ClientSession,
) -> mongodb::error::Result<Vec<Bson>> {
    let ledger = db.collection::<Document>(LEDGER);
    let rid = record_id(spec, id);
    let read;
    let source = match written {
        Some(d) => Some(d),
        None => {
            read = db.collection::<Document>(spec.source).find_one(by_id(id)).session(&mut *session).await?;
            read.as_ref()
        }
    };
    let new = contributions(spec, source);
    // The record is read and replaced by one command: the record as it was is the
    // old contribution. In the transaction nothing can change it in between (a
    // concurrent application of the same document conflicts on it, and one of the
    // two runs again on the other's result).
    let record = ledger
        .find_one_and_update(by_id(&rid), built(UpdateBuilder::new().set("g", &stored(&new)))?)
        .upsert(true)
        .return_document(ReturnDocument::Before)
        .session(&mut *session)
        .await?;
    let old = recorded(record.as_ref());
    let summary = db.collection::<Document>(spec.collection);
    let mut keys: Vec<&Bson> = old.iter().map(|c| &c.key).collect();
    for c in &new {
        if !keys.contains(&&c.key) {
            keys.push(&c.key);
        }
    }
    let mut written = Vec::new();
    for key in keys {
        let before = old.iter().find(|c| &c.key == key);
        let after = new.iter().find(|c| &c.key == key);
        if before == after {
            continue;
        }
        let (mut update, mut rescan) = (UpdateBuilder::new(), Vec::new());
        for (i, f) in spec.fields.iter().enumerate() {
            let was = before.map(|c| &c.values[i]).unwrap_or(&Bson::Null);
            let now = after.map(|c| &c.values[i]).unwrap_or(&Bson::Null);
            match f.op {
                SummaryOp::Count => {
                    let d = i64::from(after.is_some()) - i64::from(before.is_some());
                    if d != 0 {
                        update = update.inc(f.name, &d);
                    }
                }
                SummaryOp::Sum => {
                    let d =
                        Num::of(now).unwrap_or(Num::Int(0)).add(Num::of(was).unwrap_or(Num::Int(0)).neg());
                    // A new group's sums exist from its first document on, zero or not.
                    if !d.is_zero() || before.is_none() {
                        update = update.inc(f.name, &d.bson());
                    }
                }
                SummaryOp::Min | SummaryOp::Max => {
                    if !matches!(now, Bson::Null) {
                        update = match f.op {
                            SummaryOp::Min => update.min(f.name, now),
                            _ => update.max(f.name, now),
                        };
                    }
                    // A value withdrawn, or made worse, may have been the extreme: the
                    // group's extreme is recomputed from the ledger below.
                    let worse = match f.op {
                        SummaryOp::Min => compare(now, was).is_gt(),
                        _ => compare(now, was).is_lt(),
                    };
                    if !matches!(was, Bson::Null) && (matches!(now, Bson::Null) || worse) {
                        rescan.push(i);
                    }
                }
            }
        }
        if update.is_empty() && rescan.is_empty() {
            continue;
        }
        written.push(key.clone());
        let filter = by_id(key);
        let count = spec.fields.iter().find(|f| f.op == SummaryOp::Count).map(|f| f.name);
        let now_doc = if update.is_empty() {
            summary.find_one(filter.clone()).session(&mut *session).await?
        } else {
            summary
                .find_one_and_update(filter.clone(), built(update)?)
                .upsert(true)
                .return_document(ReturnDocument::After)
                .session(&mut *session)
                .await?
        };
        let n = now_doc.as_ref().zip(count).and_then(|(d, c)| d.get(c)).and_then(Num::of).map_or(0.0, Num::f);
        if n <= 0.0 {
            summary.delete_one(filter).session(&mut *session).await?;
            continue;
        }
        if !rescan.is_empty() {
            let set = extremes(db, spec, key, &rescan, session).await?;
            summary.update_one(filter, set).session(&mut *session).await?;
        }
    }
    Ok(written)
}

/// The extremes of fields `fields` over group `key`, from the ledger's records of
/// the group (which the transaction has just brought in line): the update that sets
/// them (or unsets a field no document of the group has).
async fn extremes(
    db: &Database,
    spec: &SummarySpec,
    key: &Bson,
    fields: &[usize],
    session: &mut ClientSession,
) -> mongodb::error::Result<Document> {
    let ledger = db.collection::<Document>(LEDGER);
    let filter = doc! { "_id.s": spec.collection, "g.k": eq(key.clone()) };
    let mut cursor = ledger.find(filter).session(&mut *session).await?;
    let mut best: Vec<Bson> = vec![Bson::Null; fields.len()];
    while let Some(record) = cursor.next(&mut *session).await {
        let record = record?;
        for c in recorded(Some(&record)).into_iter().filter(|c| &c.key == key) {
            for (slot, &i) in best.iter_mut().zip(fields) {
                let v = &c.values[i];
                let better = match spec.fields[i].op {
                    SummaryOp::Min => compare(v, slot).is_lt(),
                    _ => compare(v, slot).is_gt(),
                };
                if !matches!(v, Bson::Null) && (matches!(slot, Bson::Null) || better) {
                    *slot = v.clone();
                }
            }
        }
    }
    let mut update = UpdateBuilder::new();
    for (v, &i) in best.into_iter().zip(fields) {
        update = match v {
            Bson::Null => update.unset(spec.fields[i].name),
            v => update.set(spec.fields[i].name, &v),
        };
    }
    built(update)
}
