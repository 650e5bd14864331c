//! Appending items: ids, aggregates and the guarded append into the open bucket.

use crate::core::bson_compat;
use bson::{doc, Bson, DateTime, Document};
use mongodb::{ClientSession, Database};

use super::cap::{cap_collection_name, Counter};
use super::error::{BucketError, Incomplete};
use super::period::{Per, PeriodKind};
use super::spec::{AggregateOp, AggregateType, Bucket, BucketSpec, IdForm};
use crate::core::append::{Appended, GuardedAppend, Ledger};

/// The string form of a series value, for string ids.
pub(super) fn series_text(series: &Bson) -> Result<String, BucketError> {
    match series {
        Bson::String(s) => Ok(s.clone()),
        Bson::Int32(i) => Ok(i.to_string()),
        Bson::Int64(i) => Ok(i.to_string()),
        Bson::ObjectId(o) => Ok(o.to_hex()),
        other => Err(BucketError::SeriesKey(format!("{:?}", other.element_type()))),
    }
}

/// The id of a bucket.
///
/// ```
/// use docshape::bucket::{bucket_id, IdForm, Per};
/// use docshape::bson::{Bson, DateTime, doc};
///
/// let t = DateTime::parse_rfc3339_str("2026-08-05T10:07:00Z").unwrap();
/// let start = Per::Day.start(t).unwrap();
/// let s = Bson::from("sensor_9");
/// assert_eq!(bucket_id(IdForm::String, Per::Day, "sensor_id", "day", &s, start, 0).unwrap(), Bson::from("sensor_9:2026-08-05"));
/// assert_eq!(bucket_id(IdForm::String, Per::Day, "sensor_id", "day", &s, start, 2).unwrap(), Bson::from("sensor_9:2026-08-05#2"));
/// let hour = Per::Hour.start(t).unwrap();
/// assert_eq!(
///     bucket_id(IdForm::Compound, Per::Hour, "dispositivoId", "hora", &Bson::from("sensor-1"), hour, 0).unwrap(),
///     Bson::Document(doc! { "dispositivoId": "sensor-1", "hora": hour }),
/// );
/// ```
pub fn bucket_id(
    form: IdForm,
    per: Per,
    series_field: &str,
    period_field: &str,
    series: &Bson,
    start: DateTime,
    seq: u32,
) -> Result<Bson, BucketError> {
    Ok(match form {
        IdForm::String => {
            let mut id = format!("{}:{}", series_text(series)?, per.label(start)?);
            if seq > 0 {
                id.push_str(&format!("#{seq}"));
            }
            Bson::String(id)
        }
        IdForm::Compound => {
            let mut id = doc! { series_field: series.clone(), period_field: start };
            if seq > 0 {
                id.insert("seq", i64::from(seq));
            }
            Bson::Document(id)
        }
    })
}

pub(super) fn period_value(spec: &BucketSpec, start: DateTime) -> Result<Bson, BucketError> {
    Ok(match spec.period_kind {
        PeriodKind::Date => Bson::DateTime(start),
        PeriodKind::Label => Bson::String(spec.per.label(start)?),
    })
}

/// The value at a dotted path of a document.
pub(super) fn at_path<'d>(doc: &'d Document, path: &str) -> Option<&'d Bson> {
    let mut parts = path.split('.');
    let mut value = doc.get(parts.next()?)?;
    for part in parts {
        value = value.as_document()?.get(part)?;
    }
    Some(value)
}

pub(super) fn item_time(doc: &Document, spec: &BucketSpec, index: usize) -> Result<DateTime, BucketError> {
    match at_path(doc, spec.time) {
        Some(Bson::DateTime(t)) => Ok(*t),
        _ => Err(BucketError::ItemTime { index, path: spec.time }),
    }
}

/// A number as f64, or a date as its milliseconds, for comparisons.
pub(super) fn ordinal(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) if !d.is_nan() => Some(*d),
        Bson::DateTime(t) => Some(t.timestamp_millis() as f64),
        _ => None,
    }
}

pub(super) fn convert(value: &Bson, ty: AggregateType, field: &'static str) -> Result<Bson, BucketError> {
    let bad = |detail: String| BucketError::Aggregate { field, detail };
    match (ty, value) {
        (AggregateType::Date, Bson::DateTime(_)) => Ok(value.clone()),
        (AggregateType::Date, other) => Err(bad(format!("expected a date, found {other}"))),
        (AggregateType::Double, v) => match v {
            Bson::Int32(i) => Ok(Bson::Double(f64::from(*i))),
            Bson::Int64(i) => Ok(Bson::Double(*i as f64)),
            Bson::Double(d) => Ok(Bson::Double(*d)),
            other => Err(bad(format!("expected a number, found {other}"))),
        },
        (AggregateType::Int32 | AggregateType::Int64, v) => {
            let i: i64 = match v {
                Bson::Int32(i) => i64::from(*i),
                Bson::Int64(i) => *i,
                other => return Err(bad(format!("expected an integer, found {other}"))),
            };
            if ty == AggregateType::Int64 {
                Ok(Bson::Int64(i))
            } else {
                i32::try_from(i).map(Bson::Int32).map_err(|_| bad(format!("{i} does not fit in an int32")))
            }
        }
    }
}

/// `$inc`/`$min`/`$max` for the aggregates over `items`.
pub(super) fn aggregate_update(spec: &BucketSpec, items: &[Bson]) -> Result<Document, BucketError> {
    let (mut inc, mut min, mut max) = (Document::new(), Document::new(), Document::new());
    for a in spec.aggregates {
        let values: Vec<&Bson> = items
            .iter()
            .map(|d| {
                d.as_document().and_then(|d| at_path(d, a.of)).ok_or_else(|| BucketError::Aggregate {
                    field: a.field,
                    detail: format!("an item has no `{}`", a.of),
                })
            })
            .collect::<Result<_, _>>()?;
        match a.op {
            AggregateOp::Sum => {
                let sum = match a.ty {
                    AggregateType::Double => {
                        let mut s = 0.0;
                        for v in &values {
                            s += convert(v, AggregateType::Double, a.field)?.as_f64().unwrap_or(0.0);
                        }
                        Bson::Double(s)
                    }
                    ty => {
                        let mut s: i64 = 0;
                        for v in &values {
                            let i = match convert(v, AggregateType::Int64, a.field)? {
                                Bson::Int64(i) => i,
                                _ => 0,
                            };
                            s = s.checked_add(i).ok_or_else(|| BucketError::Aggregate {
                                field: a.field,
                                detail: "the sum overflows".into(),
                            })?;
                        }
                        convert(&Bson::Int64(s), ty, a.field)?
                    }
                };
                inc.insert(a.field, sum);
            }
            AggregateOp::Min | AggregateOp::Max => {
                let mut best: Option<(&Bson, f64)> = None;
                for v in &values {
                    let o = ordinal(v).ok_or_else(|| BucketError::Aggregate {
                        field: a.field,
                        detail: format!("`{v}` is not a number or a date"),
                    })?;
                    let better = match best {
                        None => true,
                        Some((_, b)) => {
                            (a.op == AggregateOp::Min && o < b) || (a.op == AggregateOp::Max && o > b)
                        }
                    };
                    if better {
                        best = Some((v, o));
                    }
                }
                if let Some((v, _)) = best {
                    let target = if a.op == AggregateOp::Min { &mut min } else { &mut max };
                    target.insert(a.field, convert(v, a.ty, a.field)?);
                }
            }
        }
    }
    let mut out = Document::new();
    for (op, d) in [("$inc", inc), ("$min", min), ("$max", max)] {
        if !d.is_empty() {
            out.insert(op, d);
        }
    }
    Ok(out)
}

/// The id of `B`'s bucket `seq` of a period. An overflow bucket's compound id goes
/// through `B::BucketId`, so its `seq` has the type the id declares (an `Option<i32>`
/// is written as an int32, an `i64` as a long) and the validator built from that type
/// accepts it.
fn id_for<B: Bucket>(series: &Bson, start: DateTime, seq: u32) -> Result<Bson, BucketError> {
    let spec = &B::BUCKET;
    let id = bucket_id(spec.id, spec.per, spec.series, spec.period, series, start, seq)?;
    if spec.id == IdForm::String || seq == 0 {
        return Ok(id);
    }
    let bad = |detail: String, source: Option<Box<dyn std::error::Error + Send + Sync>>| {
        BucketError::SeqField { id: Box::new(id.clone()), detail, source }
    };
    let typed: B::BucketId = bson_compat::from_bson(id.clone())
        .map_err(|e| bad(format!("the id type does not read it back: {e}"), Some(Box::new(e))))?;
    let written = crate::core::access::literal::literal(&typed)
        .map_err(|e| bad(format!("the id type does not write it: {e}"), Some(Box::new(e))))?;
    let seq_back = written.as_document().and_then(|d| crate::core::append::stored_count(d.get("seq")));
    if seq_back != Some(i64::from(seq)) {
        return Err(bad("the id type has no `seq` field that keeps the number (add `seq: Option<i32>` with `skip_serializing_if = \"Option::is_none\"`)".into(), None));
    }
    Ok(written)
}

/// Appends one item to its bucket: one `update` command in the common case.
pub async fn append<B: Bucket>(
    db: &Database,
    series: &B::Series,
    item: &B::Item,
) -> Result<Appended, BucketError> {
    match append_many::<B>(db, series, std::slice::from_ref(item)).await {
        // One item, not in doubt: it was not stored, and the cause says why.
        Err(BucketError::Incomplete(i)) if i.in_doubt.is_none() => Err(i.cause),
        other => other,
    }
}

/// Appends items, grouped by period: one `update` per bucket they fill in the common
/// case, whatever their number. Items keep their order within a period.
///
/// An error after the first update was sent is [`BucketError::Incomplete`]: it lists,
/// by index into `items`, what each bucket stored, the one update in doubt and what
/// was never sent. [`resume`] with the same items stores exactly the missing ones,
/// also after the call's future was dropped (a task aborted, a timeout).
///
/// When the bucket model keeps a `sync` summary, the append and the summary run in one
/// transaction of their own (each bucket's count and the cap counter read in it first:
/// a refused insert would abort it): an error before its commit stores nothing, and
/// [`BucketError::Incomplete`] comes only from a capped period, whose granted items
/// are stored.
pub async fn append_many<B: Bucket>(
    db: &Database,
    series: &B::Series,
    items: &[B::Item],
) -> Result<Appended, BucketError> {
    let items: Vec<&B::Item> = items.iter().collect();
    append_refs::<B>(db, series, &items).await
}

/// [`append_many`] over borrowed items.
///
/// When the bucket model keeps data that must commit with its writes (a `sync`
/// summary), the whole append runs in one transaction of its own with that data
/// ([`crate::core::transaction::for_write`]): every bucket written and its summaries
/// commit together, or nothing is stored. A capped period's refusal is not a failure
/// of the transaction: the items granted are stored and committed, and the error lists
/// the rest as [`append_groups`] does without one.
async fn append_refs<B: Bucket>(
    db: &Database,
    series: &B::Series,
    items: &[&B::Item],
) -> Result<Appended, BucketError> {
    let spec = &B::BUCKET;
    let series_bson = crate::core::access::literal::literal(series)?;
    if spec.id == IdForm::String {
        series_text(&series_bson)?;
    }
    let groups = group_by_period::<B>(items)?;
    let effects = crate::core::write::Effects::of::<B>();
    effects.check(db).map_err(|e| BucketError::Derived(Box::new(e)))?;
    // What an append changes, for step 4's hooks: the items, the count, the stamps.
    let mut appended = doc! { "$push": { spec.items: { "$each": [] } }, "$inc": { spec.count: 1 } };
    effects.on_update(&mut appended);
    if effects.commits_with_source() {
        let (series_bson, groups, appended) = (&series_bson, &groups, &appended);
        let own = crate::core::transaction::for_write(
            db.client(),
            None,
            |tx| {
                Box::pin(async move {
                    match append_groups::<B>(db, series_bson, groups, effects, appended, Some(&mut **tx))
                        .await
                    {
                        Ok(report) => Ok(Ok(report)),
                        // Capped: what was granted is stored, and commits.
                        Err(BucketError::Incomplete(i)) if matches!(i.cause, BucketError::Capped { .. }) => {
                            Ok(Err(BucketError::Incomplete(i)))
                        }
                        Err(e) => Err(e),
                    }
                })
            },
            // Aborted with the transaction: nothing was stored.
            |e| unstored(e, items.len()),
            BucketError::Mongo,
            BucketError::Derived,
        );
        if let Some(done) = own.await {
            return done?;
        }
    }
    append_groups::<B>(db, &series_bson, &groups, effects, &appended, None).await
}

/// An error of an append whose transaction was aborted: nothing of it is stored, so an
/// [`Incomplete`] lists every item as never sent.
fn unstored(e: BucketError, items: usize) -> BucketError {
    match e {
        BucketError::Incomplete(i) => BucketError::Incomplete(Box::new(Incomplete {
            cause: i.cause,
            appended: Appended::default(),
            stored: Vec::new(),
            in_doubt: None,
            unsent: (0..items).collect(),
        })),
        other => other,
    }
}

/// The append of [`append_refs`], period by period, in `session`'s running
/// transaction when given (the buckets then filled by [`GuardedAppend::run_in`], the
/// cap counters by [`Counter::reserve_in`], and each written bucket's summaries
/// applied in it).
async fn append_groups<B: Bucket>(
    db: &Database,
    series_bson: &Bson,
    groups: &Groups,
    effects: crate::core::write::Effects,
    appended: &Document,
    mut session: Option<&mut ClientSession>,
) -> Result<Appended, BucketError> {
    let spec = &B::BUCKET;
    let series_bson = series_bson.clone();
    let collection = db.collection::<Document>(B::COLLECTION);
    let mut report = Appended::default();
    let mut stored: Vec<(Bson, Vec<usize>)> = Vec::new();
    for (g, (start, indices, docs)) in groups.iter().enumerate() {
        let start = *start;
        let base = id_for::<B>(&series_bson, start, 0)?;
        // Built before any place is reserved, so an error here leaves none behind.
        let mut on_insert =
            doc! { spec.series: series_bson.clone(), spec.period: period_value(spec, start)? };
        if let Some(stamp) = spec.version {
            on_insert.insert(stamp.field, stamp.value());
        }
        // The bucket model's stamps (the write pipeline's step 2): `#[created_at]`
        // when the append creates the bucket; `#[updated_at]` and `#[revision]` with
        // every append, in `extra` below.
        if let Some(created) = effects.stamps().created {
            on_insert.insert(created, bson::DateTime::now());
        }
        // With a cap, the items' places are reserved first; only those granted are
        // appended, and the rest of the period's items are refused.
        let counter = spec.cap.map(|cap| Counter {
            collection: db.collection::<Document>(&cap_collection_name(B::COLLECTION)),
            id: base.clone(),
            start,
            cap,
        });
        let unsent_from = |from: usize| {
            let mut unsent: Vec<usize> = indices[from..].to_vec();
            unsent.extend(groups[g + 1..].iter().flat_map(|(_, i, _)| i.iter().copied()));
            unsent.sort_unstable();
            unsent
        };
        let granted = match &counter {
            None => docs.len(),
            Some(c) => match c.reserve_in(docs.len(), &mut report, session.as_deref_mut()).await {
                Ok(n) => n,
                Err(cause) => {
                    // The reservation was sent, so this is an `append_many` error after
                    // an update like any other; nothing of this period was appended.
                    return Err(BucketError::Incomplete(Box::new(Incomplete {
                        cause,
                        appended: report,
                        stored,
                        in_doubt: None,
                        unsent: unsent_from(0),
                    })));
                }
            },
        };
        let id_of = |seq: u32| id_for::<B>(&series_bson, start, seq);
        let extra = |chunk: &[Bson]| {
            let mut update = aggregate_update(spec, chunk)?;
            effects.on_update(&mut update);
            Ok(update)
        };
        let run = GuardedAppend {
            collection: collection.clone(),
            hint_key: format!("{}\u{0}{}\u{0}{base}", db.name(), B::COLLECTION),
            id_of: &id_of,
            on_insert,
            items_field: spec.items,
            count_field: spec.count,
            max: spec.max,
            extra: &extra,
        };
        let mut ledger = Ledger::default();
        let outcome = if granted == 0 {
            Ok(())
        } else {
            match session.as_deref_mut() {
                Some(session) => {
                    run.run_in(docs[..granted].to_vec(), &mut report, &mut ledger, session).await
                }
                None => run.run(docs[..granted].to_vec(), &mut report, &mut ledger).await,
            }
        };
        let mut next = 0;
        for (id, n) in ledger.writes {
            stored.push((id, indices[next..next + n].to_vec()));
            next += n;
        }
        let cause = match outcome {
            Ok(()) if granted == docs.len() => continue,
            Ok(()) => BucketError::Capped {
                series: Box::new(series_bson.clone()),
                period: start,
                cap: spec.cap.unwrap_or(0),
            },
            Err(cause) => cause,
        };
        let in_doubt = ledger.in_doubt.map(|(id, n)| {
            let v = indices[next..next + n].to_vec();
            next += n;
            (id, v)
        });
        // What was stored changed its buckets: their derived data is kept in line
        // before the error is returned (a failure here is logged, the append's own
        // error being the one to report).
        for (id, _) in &stored {
            match effects.after_in(db, id, Some(appended), None, session.as_deref_mut()).await {
                Ok(()) => {}
                // In a transaction that is to commit what was stored (a capped
                // period), its summaries must be in it: fail it instead.
                Err(e) if session.is_some() => return Err(BucketError::Derived(Box::new(e))),
                Err(e) => {
                    crate::core::trace::event!(WARN, error = %e, "derived data of an appended bucket not kept in line")
                }
            }
        }
        if let Some(c) = &counter {
            // Places granted to items certainly not stored (never sent, or refused by
            // the server) are given back; those of an update in doubt are kept, so the
            // counter never counts fewer items than the buckets hold.
            c.release_in(granted.saturating_sub(next), &mut report, session.as_deref_mut()).await;
        }
        return Err(BucketError::Incomplete(Box::new(Incomplete {
            cause,
            appended: report,
            stored,
            in_doubt,
            unsent: unsent_from(next),
        })));
    }
    // Step 4 of the write pipeline: what is derived from the written buckets (their
    // cached keys, copies of them), now that every item is stored.
    for (id, _) in &stored {
        effects
            .after_in(db, id, Some(appended), None, session.as_deref_mut())
            .await
            .map_err(|e| BucketError::Derived(Box::new(e)))?;
    }
    Ok(report)
}

/// Items grouped by period in the order periods first appear, each with its indices
/// in `items` and its BSON.
type Groups = Vec<(DateTime, Vec<usize>, Vec<Bson>)>;

fn group_by_period<B: Bucket>(items: &[&B::Item]) -> Result<Groups, BucketError> {
    let spec = &B::BUCKET;
    let mut groups: Groups = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let doc = bson_compat::to_document(item)?;
        let start = spec.per.start(item_time(&doc, spec, index)?)?;
        let at = match groups.iter().position(|(s, _, _)| *s == start) {
            Some(at) => at,
            None => {
                groups.push((start, Vec::new(), Vec::new()));
                groups.len() - 1
            }
        };
        groups[at].1.push(index);
        groups[at].2.push(Bson::Document(doc));
    }
    Ok(groups)
}

/// Appends those of `items` that `series`' buckets do not hold yet: the retry after
/// an interrupted [`append_many`] (an [`Incomplete`] error, a dropped future), with
/// the same items, stores each exactly once.
///
/// It reads the buckets of each period the items fall in (one `find` per period)
/// and counts the stored items by their exact BSON; an item is missing when the call
/// holds more copies of it than the period's buckets do. So an item equal, field for
/// field, to one already stored in its period by another call counts as stored:
/// give items something that tells them apart (their time, to the millisecond) when
/// equal items are meant to repeat.
pub async fn resume<B: Bucket>(
    db: &Database,
    series: &B::Series,
    items: &[B::Item],
) -> Result<Appended, BucketError> {
    use std::collections::HashMap;
    let spec = &B::BUCKET;
    let series_bson = crate::core::access::literal::literal(series)?;
    let collection = db.collection::<Document>(B::COLLECTION);
    let mut missing: Vec<usize> = Vec::new();
    let refs: Vec<&B::Item> = items.iter().collect();
    for (start, indices, docs) in group_by_period::<B>(&refs)? {
        let filter = doc! { spec.series: { "$eq": series_bson.clone() }, spec.period: { "$eq": period_value(spec, start)? } };
        let mut cursor = collection.find(filter).projection(doc! { spec.items: 1 }).await?;
        let mut held: HashMap<Vec<u8>, usize> = HashMap::new();
        while let Some(bucket) = futures_util::TryStreamExt::try_next(&mut cursor).await? {
            for item in super::read::bucket_items(&bucket, spec)? {
                *held.entry(bson_compat::to_vec(item)?).or_default() += 1;
            }
        }
        for (index, doc) in indices.into_iter().zip(docs) {
            let Bson::Document(doc) = doc else { continue };
            match held.get_mut(&bson_compat::to_vec(&doc)?) {
                Some(n) if *n > 0 => *n -= 1,
                _ => missing.push(index),
            }
        }
    }
    let rest: Vec<&B::Item> = missing.iter().map(|&i| &items[i]).collect();
    append_refs::<B>(db, series, &rest).await.map_err(|e| match e {
        // Indices into `rest` become indices into `items`.
        BucketError::Incomplete(mut i) => {
            let back = |v: &mut Vec<usize>| v.iter_mut().for_each(|x| *x = missing[*x]);
            i.stored.iter_mut().for_each(|(_, v)| back(v));
            if let Some((_, v)) = i.in_doubt.as_mut() {
                back(v);
            }
            back(&mut i.unsent);
            BucketError::Incomplete(i)
        }
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patterns::bucket::spec::Aggregate;

    #[test]
    fn aggregates_write_the_declared_types() {
        const AGGS: &[Aggregate] = &[
            Aggregate { field: "sum", op: AggregateOp::Sum, of: "v", ty: AggregateType::Double },
            Aggregate { field: "n", op: AggregateOp::Sum, of: "n", ty: AggregateType::Int32 },
            Aggregate { field: "lo", op: AggregateOp::Min, of: "v", ty: AggregateType::Double },
            Aggregate { field: "last", op: AggregateOp::Max, of: "t", ty: AggregateType::Date },
        ];
        let spec = BucketSpec {
            series: "s",
            period: "p",
            period_kind: PeriodKind::Date,
            per: Per::Day,
            max: 10,
            items: "items",
            time: "t",
            count: "count",
            cap: None,
            id: IdForm::String,
            aggregates: AGGS,
            version: None,
        };
        let items = vec![
            Bson::Document(doc! { "t": DateTime::from_millis(5), "v": 2_i32, "n": 1_i32 }),
            Bson::Document(doc! { "t": DateTime::from_millis(9), "v": 0.5, "n": 2_i32 }),
        ];
        let u = aggregate_update(&spec, &items).unwrap();
        assert_eq!(
            u,
            doc! {
                "$inc": { "sum": 2.5, "n": 3_i32 },
                "$min": { "lo": 0.5 },
                "$max": { "last": DateTime::from_millis(9) },
            }
        );
        let bad = vec![Bson::Document(doc! { "t": DateTime::from_millis(5), "v": "x", "n": 1_i32 })];
        assert!(matches!(aggregate_update(&spec, &bad), Err(BucketError::Aggregate { field: "sum", .. })));
    }
}
