//! Bringing a source document's copies back in line: on demand ([`repair`]), and
//! after another docshape writer changed the source (the write hook).

use bson::{doc, Bson, Document};
use futures_util::future::BoxFuture;
use mongodb::options::UpdateModifications;
use mongodb::Database;

use super::apply::{apply, enqueue, ApplyError};
use super::spec::{dependents, projection, touches, value_at};
use crate::core::copy::{CopyError, CopySpec, Refresh};
use crate::core::hooks::SourceWriteHook;
use crate::core::model::{eq, IdOf, Identified};

/// One copy [`repair`] brought in line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyRepair {
    /// The copy.
    pub copy: &'static CopySpec,
    /// Copy documents modified.
    pub documents_updated: u64,
}

// The versioned writers reach the copies through this hook: versioning does not
// import this pattern.
inventory::submit! { SourceWriteHook { after_write: after_write_hook } }

fn after_write_hook<'a>(
    db: &'a Database,
    source: &'static str,
    id: &'a Bson,
    update: Option<&'a Document>,
) -> BoxFuture<'a, Result<(), CopyError>> {
    Box::pin(after_source_write(db, source, id, update))
}

/// Keeps the copies of source document `id` (in `source`) in line after a write made
/// by another docshape writer (the versioned `save`, `update_one`, `modify` and
/// backfill), as [`update_one`] does: every refreshed copy the write may have touched
/// (`update`, or any copy when `None`) is written now (`Sync`, sequentially, from one
/// read of the source) or queued (`Async`). Nothing is read or written when the
/// source has no such copy.
async fn after_source_write(
    db: &Database,
    source: &'static str,
    id: &Bson,
    update: Option<&Document>,
) -> Result<(), CopyError> {
    let specs: Vec<&'static CopySpec> = dependents(source)
        .into_iter()
        .filter(|c| c.refresh != Refresh::Never)
        .filter(|c| update.is_none_or(|u| touches(&UpdateModifications::Document(u.clone()), c.source_field)))
        .collect();
    if specs.is_empty() {
        return Ok(());
    }
    let sync: Vec<&'static CopySpec> = specs.iter().copied().filter(|c| c.refresh == Refresh::Sync).collect();
    if !sync.is_empty() {
        let found = db
            .collection::<Document>(source)
            .find_one(doc! { "_id": eq(id.clone()) })
            .projection(projection(sync.iter().map(|c| c.source_field)))
            .await
            .map_err(|error| CopyError::Source { collection: source, id: id.clone(), error })?;
        if let Some(document) = found {
            for spec in &sync {
                let value = value_at(&document, spec.source_field);
                let target = db.collection::<Document>(spec.collection);
                if let Err(ApplyError::Target(error) | ApplyError::Lease(error)) =
                    apply(&target, spec, id, value.as_ref(), 1000, None).await
                {
                    return Err(CopyError::Refresh { copy: spec.key(), id: id.clone(), error });
                }
            }
        }
    }
    for spec in specs.into_iter().filter(|c| matches!(c.refresh, Refresh::Async { .. })) {
        enqueue(db, spec, id).await.map_err(|error| CopyError::Queue { operation: "enqueue", error })?;
    }
    Ok(())
}

/// Re-copies, now, the source document `{_id: id}` of `S` into every copy of it that
/// is refreshed (`Sync` or `Async`; a `Never` copy is a snapshot and is left alone),
/// in registry order, in batches of 1,000 documents. Idempotent: only copies that
/// differ are written. A pending job of an async copy stays queued; its worker will
/// find nothing left to write.
pub async fn repair<S: Identified>(
    db: &Database,
    id: &(impl IdOf<S> + ?Sized),
) -> Result<Vec<CopyRepair>, CopyError> {
    let id = id.id_bson().map_err(|error| CopyError::IdEncode { collection: S::COLLECTION, error })?;
    let specs: Vec<&'static CopySpec> =
        dependents(S::COLLECTION).into_iter().filter(|c| c.refresh != Refresh::Never).collect();
    let source = db.collection::<Document>(S::COLLECTION);
    let found = source
        .find_one(doc! { "_id": eq(id.clone()) })
        .projection(projection(specs.iter().map(|c| c.source_field)))
        .await
        .map_err(|error| CopyError::Source { collection: S::COLLECTION, id: id.clone(), error })?;
    let Some(document) = found else {
        return Err(CopyError::SourceNotFound { collection: S::COLLECTION, id });
    };
    let mut out = Vec::new();
    for spec in specs {
        let value = value_at(&document, spec.source_field);
        let target = db.collection::<Document>(spec.collection);
        let applied = match apply(&target, spec, &id, value.as_ref(), 1000, None).await {
            Ok(applied) => applied,
            Err(ApplyError::Target(error) | ApplyError::Lease(error)) => {
                return Err(CopyError::Refresh { copy: spec.key(), id, error })
            }
        };
        out.push(CopyRepair { copy: spec, documents_updated: applied.modified });
    }
    Ok(out)
}
