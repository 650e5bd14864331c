//! Applying one source document's change to a summary, exactly once: the delta
//! between its contribution now and the contribution recorded in the ledger, written
//! with the new record in one transaction.

use std::time::Instant;

use bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;
use mongodb::{ClientSession, Database};

use std::sync::atomic::{AtomicBool, Ordering};

use mongodb::options::{DeleteOneModel, UpdateOneModel, WriteModel};
use mongodb::Namespace;

use super::contribution::{compare, contributions, read_fields, simulate, Contribution, Num};
use super::spec::{SummaryOp, SummarySpec};
use super::{SummaryError, LEDGER};
use crate::core::access::literal::Literal;
use crate::core::access::update::UpdateBuilder;
use crate::core::hooks::Prior;
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
/// `prior`: what the writer knows of the document before the write: with a server
/// that has the `bulkWrite` command, an insert (and a write whose command returned the
/// document as it was) is applied in one command ([`guessed`]).
pub(crate) async fn apply_in(
    db: &Database,
    spec: &SummarySpec,
    id: &Bson,
    written: Option<&Document>,
    prior: Prior<'_>,
    session: &mut ClientSession,
) -> Result<Vec<Bson>, SummaryError> {
    let err = |error| SummaryError::Mongo { summary: spec.collection, error };
    let mut new = written.map(|d| contributions(spec, Some(d)));
    let mut check = None;
    let guess = match prior {
        Prior::Absent => Some(Vec::new()),
        Prior::Was(before) => Some(contributions(spec, Some(before))),
        Prior::Updated { before, update } => {
            let fields = read_fields(spec);
            if let Some(after) = simulate(&fields, before, update) {
                new = Some(contributions(spec, Some(&after)));
                check = Some(source_check(id, &fields, &after));
            }
            Some(contributions(spec, Some(before)))
        }
        _ => None,
    };
    if let Some(guess) = guess.filter(|_| bulk_write_may_serve()) {
        let new = match new {
            Some(new) => new,
            // An update whose effect is not computed here: the document as written is
            // read, in the transaction.
            None => {
                let source = db.collection::<Document>(spec.source);
                let read = source.find_one(by_id(id)).session(&mut *session).await.map_err(err)?;
                contributions(spec, read.as_ref())
            }
        };
        let created = matches!(prior, Prior::Absent);
        match guessed(db, spec, id, Guess { old: &guess, new: &new, created, check }, session).await {
            Ok(keys) => return Ok(keys),
            // Refused by the driver before anything was sent (a server older than
            // the command): the transaction is untouched; the path below serves.
            Err(e) if matches!(e.kind.as_ref(), mongodb::error::ErrorKind::IncompatibleServer { .. }) => {
                BULK_WRITE.store(false, Ordering::Relaxed);
            }
            Err(error) => return Err(err(error)),
        }
    }
    once(db, spec, id, written, session)
        .await
        .map_err(|error| SummaryError::Mongo { summary: spec.collection, error })
}

/// One attempt, in `session`'s transaction: returns the keys of the groups written.
/// `written`: the source document as the transaction sees it, when the caller has it.
///
/// Commands, whatever the number of groups: the ledger's `findAndModify` (the old
/// contribution out, the new one in), one `update` of every changed group, and only
/// when a group lost this document, one `delete` of the groups left empty; plus, per
/// group whose min or max may have lost its extreme, a ledger read and an update.
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
    let writes = group_writes(spec, &old, &new)?;
    writes.run(db, spec, session).await
}

/// What one application writes to the summary's documents, built from the
/// contributions before and after.
#[derive(Debug, Default)]
struct GroupWrites {
    /// Per changed group: `{_id: {$eq: key}}` and its `$inc`/`$min`/`$max` upsert.
    upserts: Vec<(Document, Document)>,
    /// Per group that lost the document: `{_id: {$eq: key}, <count>: {$lte: 0}}`,
    /// a blind guarded delete (the group goes when nothing counts in it any more).
    deletes: Vec<Document>,
    /// Per group whose min or max may have lost its extreme: the key and the fields.
    rescans: Vec<(Bson, Vec<usize>)>,
    /// The keys of the groups written.
    keys: Vec<Bson>,
}

/// The writes that move `spec`'s groups from contributions `old` to `new`.
fn group_writes(
    spec: &SummarySpec,
    old: &[Contribution],
    new: &[Contribution],
) -> mongodb::error::Result<GroupWrites> {
    let count = spec.fields.iter().find(|f| f.op == SummaryOp::Count).map(|f| f.name);
    let mut keys: Vec<&Bson> = old.iter().map(|c| &c.key).collect();
    for c in new {
        if !keys.contains(&&c.key) {
            keys.push(&c.key);
        }
    }
    let mut out = GroupWrites::default();
    for key in keys {
        let before = old.iter().find(|c| &c.key == key);
        let after = new.iter().find(|c| &c.key == key);
        if before == after {
            continue;
        }
        let (mut update, mut rescan, mut left) = (UpdateBuilder::new(), Vec::new(), false);
        for (i, f) in spec.fields.iter().enumerate() {
            let was = before.map(|c| &c.values[i]).unwrap_or(&Bson::Null);
            let now = after.map(|c| &c.values[i]).unwrap_or(&Bson::Null);
            match f.op {
                SummaryOp::Count => {
                    let d = i64::from(after.is_some()) - i64::from(before.is_some());
                    if d != 0 {
                        update = update.inc(f.name, &d);
                    }
                    left = d < 0;
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
                    // group's extreme is recomputed from the ledger afterwards.
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
        out.keys.push(key.clone());
        if !update.is_empty() {
            out.upserts.push((by_id(key), built(update)?));
        }
        if let Some(count) = count.filter(|_| left) {
            let mut filter = by_id(key);
            filter.insert(count, doc! { "$lte": 0 });
            out.deletes.push(filter);
        }
        if !rescan.is_empty() {
            out.rescans.push((key.clone(), rescan));
        }
    }
    Ok(out)
}

impl GroupWrites {
    /// Runs the writes in `session`'s transaction: one `update` command for every
    /// upsert, one `delete` command for every guarded delete (when a group lost the
    /// document), then the rescans. Returns the keys written.
    async fn run(
        self,
        db: &Database,
        spec: &SummarySpec,
        session: &mut ClientSession,
    ) -> mongodb::error::Result<Vec<Bson>> {
        if !self.upserts.is_empty() {
            let updates: Vec<Document> =
                self.upserts.into_iter().map(|(q, u)| doc! { "q": q, "u": u, "upsert": true }).collect();
            let command = doc! { "update": spec.collection, "updates": updates, "ordered": true };
            checked(db.run_command(command).session(&mut *session).await?)?;
        }
        if !self.deletes.is_empty() {
            let deletes: Vec<Document> =
                self.deletes.into_iter().map(|q| doc! { "q": q, "limit": 1 }).collect();
            let command = doc! { "delete": spec.collection, "deletes": deletes, "ordered": true };
            checked(db.run_command(command).session(&mut *session).await?)?;
        }
        // A rescan of a group just deleted updates nothing (no upsert).
        let summary = db.collection::<Document>(spec.collection);
        for (key, fields) in &self.rescans {
            let set = extremes(db, spec, key, fields, session).await?;
            summary.update_one(by_id(key), set).session(&mut *session).await?;
        }
        Ok(self.keys)
    }
}

/// A write command's reply, or its first statement's error as the driver reports a
/// write error (so that a duplicate key or a write conflict is told as such).
fn checked(reply: Document) -> mongodb::error::Result<Document> {
    use mongodb::error::{ErrorKind, WriteError, WriteFailure};
    let Some(Bson::Document(first)) = reply.get_array("writeErrors").ok().and_then(|e| e.first()) else {
        return Ok(reply);
    };
    let error: WriteError = crate::core::bson_compat::from_document(first.clone()).map_err(|e| {
        mongodb::error::Error::custom(std::sync::Arc::new(format!("an unreadable write error {first}: {e}")))
    })?;
    Err(ErrorKind::Write(WriteFailure::WriteError(error)).into())
}

/// Whether the server may have the cross-collection `bulkWrite` command (MongoDB 8.0,
/// wire version 25): the driver reads the server's version from its handshake
/// (`hello`'s `maxWireVersion`) and refuses the command before sending it to an older
/// server, which this process then remembers (no command is spent finding out).
static BULK_WRITE: AtomicBool = AtomicBool::new(true);

/// Whether an application may be one `bulkWrite` ([`BULK_WRITE`]).
pub(crate) fn bulk_write_may_serve() -> bool {
    BULK_WRITE.load(Ordering::Relaxed)
}

/// The filter that matches source document `id` only if its fields `fields` hold
/// what `after` says (a field `after` lacks is missing): aggregation equality
/// (`$expr`), which compares an array as a whole (a query's `{items: {$eq: [..]}}`
/// would also match an array holding that array), each value a `$literal`, read as
/// a value whatever it holds. On mongod the `_id` equality picks the document from
/// its index; `$expr` then tests that one document.
fn source_check(id: &Bson, fields: &[&'static str], after: &Document) -> Document {
    let tests: Vec<Bson> = fields
        .iter()
        .map(|f| {
            let path = format!("${f}");
            Bson::Document(match after.get(*f) {
                Some(v) => Literal::stored(v.clone()).equals_expr(path),
                None => Literal::missing_expr(path),
            })
        })
        .collect();
    let mut filter = by_id(id);
    filter.insert("$expr", doc! { "$and": tests });
    filter
}

/// What [`guessed`] writes from: the old contribution guessed, the new one, and how
/// to verify them.
struct Guess<'a> {
    old: &'a [Contribution],
    new: &'a [Contribution],
    /// An insert: the record is created by an upsert, left alone when one exists.
    created: bool,
    /// The filter matching the source document only if `new` was computed from what
    /// was written (a write row's document computed from its pre-image and update).
    check: Option<Document>,
}

/// Applies a write whose old contribution the writer can tell (`guess`: none for an
/// insert, the returned pre-image's otherwise) in ONE `bulkWrite` command, in
/// `session`'s transaction: the ledger's record written only if it holds the guess
/// (`created`: an insert's record is created by an upsert with `$setOnInsert`, so it
/// is left alone when one exists; otherwise it is updated with a filter stating the
/// guessed contribution), then every group's delta from the guess, and the guarded
/// deletes; for a write row, first a no-op update of the source document whose filter
/// states the computed document's fields. The command's verbose result tells whether
/// the guesses held (the source matched; the record upserted, or matched). When one
/// did not (a foreign write the watcher has not queued yet, a record planted by hand,
/// an `_id` used again), the same transaction corrects it: the source is read if its
/// check failed, the record is read and replaced by one `findAndModify` (the actual
/// old contribution), and every group the guess, the record or the document touches
/// is recomputed from the ledger's records, so the result is exact in every case and
/// only a wrong guess costs more commands.
async fn guessed(
    db: &Database,
    spec: &SummarySpec,
    id: &Bson,
    g: Guess<'_>,
    session: &mut ClientSession,
) -> mongodb::error::Result<Vec<Bson>> {
    let Guess { old: guess, new, created, check } = g;
    let rid = record_id(spec, id);
    let ledger_ns = Namespace::new(db.name(), LEDGER);
    let summary_ns = Namespace::new(db.name(), spec.collection);
    let record = if created {
        UpdateOneModel::builder()
            .namespace(ledger_ns)
            .filter(by_id(&rid))
            .update(built(UpdateBuilder::new().set_on_insert("g", &stored(new)))?)
            .upsert(true)
            .build()
    } else {
        // `$eq` against the guess as stored: the record's array compared as a value.
        let mut filter = by_id(&rid);
        filter.insert("g", eq(stored(guess)));
        UpdateOneModel::builder()
            .namespace(ledger_ns)
            .filter(filter)
            .update(built(UpdateBuilder::new().set("g", &stored(new)))?)
            .build()
    };
    let writes = group_writes(spec, guess, new)?;
    let mut models: Vec<WriteModel> = Vec::new();
    let checked_source = check.is_some();
    if let Some(filter) = check {
        // Matches the source document only if the computed document is the one
        // written; changes nothing (`$setOnInsert` without an upsert).
        let source_ns = Namespace::new(db.name(), spec.source);
        let update = doc! { "$setOnInsert": { "_id": id.clone() } };
        models.push(
            UpdateOneModel::builder().namespace(source_ns).filter(filter).update(update).build().into(),
        );
    }
    let at = models.len();
    models.push(record.into());
    for (filter, update) in writes.upserts {
        let model = UpdateOneModel::builder()
            .namespace(summary_ns.clone())
            .filter(filter)
            .update(update)
            .upsert(true)
            .build();
        models.push(model.into());
    }
    for filter in writes.deletes {
        models.push(DeleteOneModel::builder().namespace(summary_ns.clone()).filter(filter).build().into());
    }
    let result =
        db.client().bulk_write(models).ordered(true).verbose_results().session(&mut *session).await?;
    let source_held = !checked_source || result.update_results.get(&0).is_some_and(|r| r.matched_count == 1);
    let held = source_held
        && result.update_results.get(&at).is_some_and(|r| match created {
            true => r.upserted_id.is_some(),
            false => r.matched_count == 1,
        });
    let mut keys = writes.keys;
    if held {
        let summary = db.collection::<Document>(spec.collection);
        for (key, fields) in &writes.rescans {
            let set = extremes(db, spec, key, fields, session).await?;
            summary.update_one(by_id(key), set).session(&mut *session).await?;
        }
        return Ok(keys);
    }
    crate::core::trace::event!(
        DEBUG,
        summary = spec.collection,
        "the ledger's record or the source differs from the guess: corrected"
    );
    // The document as written, when the computed one was not it.
    let actual;
    let new = match source_held {
        true => new,
        false => {
            let source = db.collection::<Document>(spec.source);
            let read = source.find_one(by_id(id)).session(&mut *session).await?;
            actual = contributions(spec, read.as_ref());
            &actual
        }
    };
    let record = db
        .collection::<Document>(LEDGER)
        .find_one_and_update(by_id(&rid), built(UpdateBuilder::new().set("g", &stored(new)))?)
        .upsert(true)
        .return_document(ReturnDocument::Before)
        .session(&mut *session)
        .await?;
    for c in recorded(record.as_ref()).iter().chain(guess).chain(new) {
        if !keys.contains(&c.key) {
            keys.push(c.key.clone());
        }
    }
    recompute(db, spec, &keys, session).await?;
    Ok(keys)
}

/// Rewrites groups `keys` of `spec` from the ledger's records of the groups (which
/// the transaction has brought in line): every field set, or the group deleted when
/// no record counts in it. One read, one `update`, one `delete` at most.
async fn recompute(
    db: &Database,
    spec: &SummarySpec,
    keys: &[Bson],
    session: &mut ClientSession,
) -> mongodb::error::Result<()> {
    // One `$or` branch per key, each an `$eq` (served by the `{_id.s, g.k}` index on
    // mongod): a stored key is compared, never read as a regex or an operator, as `$in`
    // would read a regex.
    let branches: Vec<Document> =
        keys.iter().map(|k| doc! { "_id.s": spec.collection, "g.k": eq(k.clone()) }).collect();
    let mut cursor =
        db.collection::<Document>(LEDGER).find(doc! { "$or": branches }).session(&mut *session).await?;
    let mut groups: Vec<(u64, Vec<Bson>)> = vec![(0, vec![Bson::Null; spec.fields.len()]); keys.len()];
    while let Some(record) = cursor.next(&mut *session).await {
        for c in recorded(Some(&record?)) {
            let Some(i) = keys.iter().position(|k| k == &c.key) else { continue };
            let (count, values) = &mut groups[i];
            *count += 1;
            for ((f, acc), v) in spec.fields.iter().zip(values.iter_mut()).zip(&c.values) {
                let better = match f.op {
                    SummaryOp::Count => false,
                    SummaryOp::Sum => {
                        if let Some(n) = Num::of(v) {
                            *acc = Num::of(acc).map_or(n, |a| a.add(n)).bson();
                        }
                        false
                    }
                    SummaryOp::Min => compare(v, acc).is_lt(),
                    SummaryOp::Max => compare(v, acc).is_gt(),
                };
                let candidate = matches!(f.op, SummaryOp::Min | SummaryOp::Max) && !matches!(v, Bson::Null);
                if candidate && (matches!(acc, Bson::Null) || better) {
                    *acc = v.clone();
                }
            }
        }
    }
    let mut writes = GroupWrites::default();
    for (key, (count, values)) in keys.iter().zip(groups) {
        if count == 0 {
            writes.deletes.push(by_id(key));
            continue;
        }
        let mut update = UpdateBuilder::new();
        for (f, v) in spec.fields.iter().zip(values) {
            update = match (f.op, v) {
                (SummaryOp::Count, _) => update.set(f.name, &(count as i64)),
                (SummaryOp::Sum, Bson::Null) => update.set(f.name, &0_i64),
                (_, Bson::Null) => update.unset(f.name),
                (_, v) => update.set(f.name, &v),
            };
        }
        writes.upserts.push((by_id(key), built(update)?));
    }
    writes.run(db, spec, session).await.map(drop)
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
