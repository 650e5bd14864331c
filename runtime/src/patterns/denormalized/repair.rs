//! Bringing a source document's copies back in line: on demand ([`repair`]), and for
//! a whole copy at once ([`reconcile`]).

use bson::{doc, Bson, Document};
use futures_util::TryStreamExt;
use mongodb::Database;

use super::apply::enqueue_many;
use super::spec::dependents;
use crate::core::access::literal::{in_filter, Literal};
use crate::core::denormalized::refresh::{
    cleared, instances, is_refusal, projection, refresh, stored, value_at, write_copy, Batching, CopyWrite,
    WriteError,
};
use crate::core::denormalized::{CopyError, CopySpec, OnDelete, Refresh};
use crate::core::error::server_message;
use crate::core::model::{IdOf, Identified};
use crate::core::registry::soft_delete_of;

/// One copy [`repair`] brought in line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyRepair {
    /// The copy.
    pub copy: &'static CopySpec,
    /// Copy documents modified.
    pub documents_updated: u64,
}

/// Re-copies, now, the source document `{_id: id}` of `S` into every copy of it that
/// is refreshed (`Sync` or `Async`; a `Never` copy is a snapshot and is left alone),
/// in registry order, by the path every writer outside a transaction takes: one
/// `update_many` per copy, then the source read again and what moved written again
/// (see the [module docs](crate::denormalized)). Idempotent: only copies that differ
/// are modified. A pending job of an async copy stays queued; its worker will find
/// nothing left to write. Copy documents the server refuses are left as they were and
/// named in [`CopyError::Refused`], after every other one is written.
pub async fn repair<S: Identified>(
    db: &Database,
    id: &(impl IdOf<S> + ?Sized),
) -> Result<Vec<CopyRepair>, CopyError> {
    let id = id.id_bson().map_err(|error| CopyError::IdEncode { collection: S::COLLECTION, error })?;
    let specs: Vec<&'static CopySpec> =
        dependents(S::COLLECTION).into_iter().filter(|c| c.refresh != Refresh::Never).collect();
    if specs.is_empty() {
        // Nothing to re-copy; still say whether there is such a source.
        let found = db
            .collection::<Document>(S::COLLECTION)
            .find_one(doc! { "_id": crate::core::model::eq(id.clone()) })
            .projection(doc! { "_id": 1 })
            .await
            .map_err(|error| CopyError::Source { collection: S::COLLECTION, id: id.clone(), error })?;
        return match found {
            Some(_) => Ok(Vec::new()),
            None => Err(CopyError::SourceNotFound { collection: S::COLLECTION, id }),
        };
    }
    let refreshed = refresh(db, S::COLLECTION, &id, &specs, None, None).await?;
    if !refreshed.found {
        return Err(CopyError::SourceNotFound { collection: S::COLLECTION, id });
    }
    let refused = refreshed.refused();
    if !refused.is_empty() {
        return Err(CopyError::Refused { id, documents: refused });
    }
    if let Some(crossed) = refreshed.cross_tenant(&id) {
        return Err(crossed);
    }
    Ok(refreshed
        .copies
        .into_iter()
        .map(|(copy, written)| CopyRepair { copy, documents_updated: written.modified })
        .collect())
}

/// How many copy documents [`reconcile`] reads at a time.
pub(super) const RECONCILE_BATCH: usize = 500;

/// A stored copy document [`reconcile`] left as it is, once per document and run.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// The copy document's `_id`.
    pub id: Bson,
    /// Why it was left.
    pub reason: SkipReason,
}

/// Why [`reconcile`] left a copy document as it is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SkipReason {
    /// Its reference is an array, a regular expression, an operator-shaped document or
    /// another value that names no one source (the worker's filter leaves such
    /// documents alone too).
    Reference,
    /// Its reference could not be looked up (the server refused the lookup).
    Lookup(String),
    /// The server refused to write the copy (its validator, say: the source's value
    /// is not what the copy's type stores, or the document is invalid otherwise).
    Refused(String),
    /// The document belongs to another tenant than the source it references (both
    /// models declare `#[model(tenant = ...)]`): a reference written around docshape;
    /// the source's value is not copied into it.
    CrossTenant,
}

/// What [`reconcile`] did for one copy.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyReconcile {
    /// The copy.
    pub copy: &'static CopySpec,
    /// Copy documents read.
    pub documents_seen: u64,
    /// Source documents whose copies differed and were written.
    pub sources_stale: u64,
    /// Copy documents modified.
    pub documents_updated: u64,
    /// Source documents not found (deleted, or never there) for copies that were
    /// not already as their `on_delete` leaves them (with `keep`: every one).
    pub sources_missing: u64,
    /// Jobs enqueued to report a deleted source (`on_delete = "report"`).
    pub jobs_enqueued: u64,
    /// The documents left as they are, each once with its `_id`: a reference that names
    /// no one source, or a write the server refused. Reconcile goes on past them.
    pub skipped: Vec<Skipped>,
}

/// Brings every document of a refreshed copy in line with its source, whoever wrote
/// either: the whole copy collection is read once, 500 documents at a
/// time (`via` and the copy's field only), the sources of each batch are read with one
/// `$in` on `_id`, and every source whose copies differ is written as [`repair`]
/// writes it. A copy whose source is missing follows its `on_delete`: `keep` leaves it,
/// `clear` clears it, `report` enqueues its job (whose worker reports
/// [`CopyError::SourceDeleted`]).
///
/// Memory stays within a batch of copies and their sources. A `via` that is an array
/// or a regular expression names no one source (an `_id` is neither) and is left
/// alone. Writes made while it runs may or may not be seen: a change stream opened
/// before it started (what [`Watcher`](super::Watcher) does) catches those. A
/// `refresh = "never"` copy is a snapshot: [`CopyError::UnknownCopy`].
pub async fn reconcile(db: &Database, copy: &'static CopySpec) -> Result<CopyReconcile, CopyError> {
    if copy.refresh == Refresh::Never {
        return Err(CopyError::UnknownCopy { copy: copy.key() });
    }
    reconcile_in(db, copy, RECONCILE_BATCH).await
}

pub(super) async fn reconcile_in(
    db: &Database,
    spec: &'static CopySpec,
    batch: usize,
) -> Result<CopyReconcile, CopyError> {
    let batch = batch.max(1);
    let target = db.collection::<Document>(spec.collection);
    let scan = |error| CopyError::Refresh { copy: spec.key(), id: Bson::Null, error };
    let mut report = CopyReconcile {
        copy: spec,
        documents_seen: 0,
        sources_stale: 0,
        documents_updated: 0,
        sources_missing: 0,
        jobs_enqueued: 0,
        skipped: Vec::new(),
    };
    // The sources whose copies were written: a write covers every copy of a source,
    // wherever its documents fall in the scan, so each source is written (and each
    // refused copy reported) once per reconcile, not once per chunk.
    let mut handled = std::collections::HashSet::new();
    let mut cursor = target
        .find(spec.scoped(doc! { spec.via: { "$exists": true } }))
        .projection(projection([spec.via, spec.field].into_iter().chain(spec.variant.map(|v| v.tag))))
        .batch_size(u32::try_from(batch).unwrap_or(u32::MAX))
        .await
        .map_err(scan)?;
    let mut chunk = Vec::with_capacity(batch);
    loop {
        let next = cursor.try_next().await.map_err(scan)?;
        let done = next.is_none();
        if let Some(document) = next {
            report.documents_seen += 1;
            chunk.push(document);
        }
        if chunk.len() >= batch || (done && !chunk.is_empty()) {
            reconcile_chunk(db, spec, &std::mem::take(&mut chunk), batch, &mut handled, &mut report).await?;
        }
        if done {
            return Ok(report);
        }
    }
}

/// What a copy should hold, once its source was looked for.
enum Wanted {
    Value(Option<Bson>),
    Report,
    Keep,
}

/// A key under which two equal BSON values are equal bytes.
fn key(value: &Bson) -> Vec<u8> {
    crate::core::bson_compat::to_vec(&doc! { "": value.clone() }).unwrap_or_default()
}

/// A reference that may name a source: an array or a regular expression names none
/// (`_id` is neither), and a `$eq` on it would match by element or by pattern; nor
/// does a document with a `$`-prefixed key at any depth (the server stores none in an
/// `_id`), which another program's operator-shaped reference is.
fn names_one(value: &Bson) -> bool {
    fn operator_shaped(value: &Bson) -> bool {
        match value {
            Bson::Document(d) => d.iter().any(|(k, v)| k.starts_with('$') || operator_shaped(v)),
            Bson::Array(items) => items.iter().any(operator_shaped),
            _ => false,
        }
    }
    !matches!(
        value,
        Bson::Array(_)
            | Bson::RegularExpression(_)
            | Bson::JavaScriptCode(_)
            | Bson::JavaScriptCodeWithScope(_)
    ) && !operator_shaped(value)
}

async fn reconcile_chunk(
    db: &Database,
    spec: &'static CopySpec,
    chunk: &[Document],
    batch: usize,
    handled: &mut std::collections::HashSet<Vec<u8>>,
    report: &mut CopyReconcile,
) -> Result<(), CopyError> {
    let target = db.collection::<Document>(spec.collection);
    let named = |v: &&Bson| names_one(v);
    let document_id = |d: &Document| d.get("_id").cloned().unwrap_or(Bson::Null);
    // Each document's copies: one at the top level, one per element inside arrays.
    let held: Vec<Vec<(Option<Bson>, Option<Bson>)>> = chunk.iter().map(|d| instances(spec, d)).collect();
    for (document, copies) in chunk.iter().zip(&held) {
        if copies.iter().any(|(via, _)| via.as_ref().is_some_and(|v| !names_one(v))) {
            report.skipped.push(Skipped { id: document_id(document), reason: SkipReason::Reference });
        }
    }
    // Scalars go into one `$in` (the literal encoder's, which compares them literally);
    // each document is looked up alone with `$eq`, so that one the server refuses to
    // look up is skipped, not fatal to the chunk.
    let mut scalars: Vec<Bson> = Vec::new();
    let mut documents: Vec<Bson> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for via in held.iter().flatten().filter_map(|(via, _)| via.as_ref()).filter(named) {
        if seen.insert(key(via)) {
            match via {
                Bson::Document(_) => documents.push(via.clone()),
                _ => scalars.push(via.clone()),
            }
        }
    }
    let sources_collection = db.collection::<Document>(spec.source);
    // A soft-deleted source is a missing one: its copies follow `on_delete`.
    let live = |mut filter: Document| {
        if let Some(field) = soft_delete_of(spec.source) {
            filter.insert(field, Bson::Null);
        }
        filter
    };
    let source_error = |error| CopyError::Refresh { copy: spec.key(), id: Bson::Null, error };
    let mut sources = std::collections::HashMap::new();
    if !scalars.is_empty() {
        let mut found = sources_collection
            .find(live(in_filter("_id", scalars.into_iter().map(Literal::stored))))
            .projection(projection(std::iter::once(spec.source_field)))
            .await
            .map_err(source_error)?;
        while let Some(source) = found.try_next().await.map_err(source_error)? {
            if let Some(id) = source.get("_id") {
                sources.insert(key(id), value_at(&source, spec.source_field));
            }
        }
    }
    let mut unusable = std::collections::HashSet::new();
    for via in documents {
        match sources_collection
            .find_one(live(doc! { "_id": Literal::stored(via.clone()).eq() }))
            .projection(projection(std::iter::once(spec.source_field)))
            .await
        {
            Ok(Some(source)) => {
                sources.insert(key(&via), value_at(&source, spec.source_field));
            }
            Ok(None) => {}
            Err(e) if is_refusal(&e) => {
                let reason = server_message(&e);
                let holds = |copies: &&Vec<(Option<Bson>, Option<Bson>)>| {
                    copies.iter().any(|(v, _)| v.as_ref() == Some(&via))
                };
                for (document, _) in chunk.iter().zip(&held).filter(|(_, c)| holds(c)) {
                    report.skipped.push(Skipped {
                        id: document_id(document),
                        reason: SkipReason::Lookup(reason.clone()),
                    });
                }
                unusable.insert(key(&via));
            }
            Err(e) => return Err(source_error(e)),
        }
    }
    let mut stale: Vec<(Bson, Option<Bson>)> = Vec::new();
    let mut reported: Vec<(&CopySpec, Bson)> = Vec::new();
    for (via, value) in held.iter().flatten() {
        let Some(via) = via.as_ref().filter(named) else { continue };
        let k = key(via);
        if unusable.contains(&k) {
            continue;
        }
        let wanted = match sources.get(&k) {
            Some(value) => Wanted::Value(stored(spec, value.as_ref()).cloned()),
            None => match spec.on_delete {
                OnDelete::Keep => Wanted::Keep,
                OnDelete::Clear(how) => Wanted::Value(cleared(how)),
                OnDelete::Report => Wanted::Report,
            },
        };
        let fresh = match &wanted {
            Wanted::Value(wanted) => value == wanted,
            Wanted::Keep | Wanted::Report => false,
        };
        if fresh || !handled.insert(k) {
            continue;
        }
        if !sources.contains_key(&key(via)) {
            report.sources_missing += 1;
        }
        match wanted {
            Wanted::Value(value) => stale.push((via.clone(), value)),
            Wanted::Report => reported.push((spec, via.clone())),
            Wanted::Keep => {}
        }
    }
    for (id, value) in stale {
        // Resumable batches, as the worker writes; a document the server refuses is
        // skipped and reported, and the others are written.
        let write = CopyWrite { spec, source: &id, value: value.as_ref(), only: None, tenant: None };
        match write_copy(&target, &write, Batching::Batches { size: batch, guard: None }).await {
            Ok(written) => {
                report.sources_stale += u64::from(written.modified > 0);
                report.documents_updated += written.modified;
                report.skipped.extend(
                    written
                        .cross_tenant
                        .into_iter()
                        .map(|id| Skipped { id, reason: SkipReason::CrossTenant }),
                );
                report.skipped.extend(
                    written
                        .refused
                        .into_iter()
                        .map(|r| Skipped { id: r.id, reason: SkipReason::Refused(r.reason) }),
                );
            }
            Err(WriteError::Target(error) | WriteError::Guard(error)) => {
                return Err(CopyError::Refresh { copy: spec.key(), id, error })
            }
            Err(WriteError::Derived(error)) => return Err(error),
        }
    }
    enqueue_many(db, &reported).await.map_err(|error| CopyError::Queue { operation: "enqueue", error })?;
    report.jobs_enqueued += reported.len() as u64;
    Ok(())
}
