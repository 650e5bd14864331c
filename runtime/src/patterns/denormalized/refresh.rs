//! The copies a docshape write touched, brought in line: what [`update_one`] does
//! without a transaction and what the write hook does after the versioned writers and
//! the write rows, the same way (see the [module docs](crate::denormalized)).
//!
//! [`update_one`]: super::update_one

use bson::{Bson, Document};
use futures_util::future::BoxFuture;
use mongodb::options::UpdateModifications;
use mongodb::Database;

use super::apply::enqueue;
use super::spec::{dependents, touches};
use super::update::{CopyAction, CopyUpdate};
use crate::core::denormalized::refresh::{
    cleared, refresh, via_filter, write_copy, Batching, CopyWrite, WriteError, Written,
};
use crate::core::denormalized::{CopyError, CopySpec, OnDelete, Refresh};
use crate::core::hooks::{Derived, SourceWriteHook};
use crate::core::registry::soft_delete_of;

/// After the source document `id` (in `source`) was written, brings the copies it may
/// have touched (`touched`, in registry order) in line: each async copy's job is
/// enqueued, then the sync copies are written from the source's value and settled
/// (core's [`refresh`]). `first` is the source as the write returned it (projected to
/// the sync copies' fields), when the writer has it.
///
/// Errors, each after the source was written: [`CopyError::Copy`] (`source_updated:
/// true`) naming the copy whose job or write failed, the copies before it (jobs first,
/// then sync copies) being done; [`CopyError::Unsettled`]; and, once every other copy
/// document is written, [`CopyError::Refused`] naming the documents the server refused.
pub(super) async fn after_write(
    db: &Database,
    source: &'static str,
    id: &Bson,
    touched: &[&'static CopySpec],
    first: Option<Document>,
) -> Result<Vec<CopyUpdate>, CopyError> {
    let failed = |copy: String, error| CopyError::Copy { copy, id: id.clone(), source_updated: true, error };
    for &spec in touched.iter().filter(|c| matches!(c.refresh, Refresh::Async { .. })) {
        enqueue(db, spec, id).await.map_err(|e| failed(spec.key(), e))?;
    }
    let sync: Vec<&'static CopySpec> =
        touched.iter().copied().filter(|c| c.refresh == Refresh::Sync).collect();
    let mut refreshed = match refresh(db, source, id, &sync, first, None).await {
        Ok(refreshed) => refreshed,
        Err(CopyError::Refresh { copy, error, .. }) => return Err(failed(copy, error)),
        Err(other) => return Err(other),
    };
    if !refreshed.found {
        // No live source: the write soft-deleted it. Each copy is as its source's
        // delete leaves it.
        refreshed.copies = deleted(db, id, &sync).await?;
    }
    let refused = refreshed.refused();
    if !refused.is_empty() {
        return Err(CopyError::Refused { id: id.clone(), documents: refused });
    }
    if let Some(crossed) = refreshed.cross_tenant(id) {
        return Err(crossed);
    }
    Ok(touched
        .iter()
        .map(|&copy| {
            let action = match copy.refresh {
                Refresh::Never => CopyAction::Kept,
                Refresh::Async { .. } => CopyAction::Enqueued,
                Refresh::Sync => {
                    let written =
                        refreshed.copies.iter().find(|(s, _)| std::ptr::eq(*s, copy)).map(|(_, w)| w);
                    CopyAction::Synced {
                        matched: written.map_or(0, |w| w.matched),
                        modified: written.map_or(0, |w| w.modified),
                    }
                }
            };
            CopyUpdate { copy, action }
        })
        .collect())
}

// The versioned writers and the write rows reach the copies through this hook: they
// do not import this pattern.
inventory::submit! { SourceWriteHook { kind: Derived::Denormalized, after_write: after_write_hook } }

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
/// backfill, the write rows), as [`update_one`](super::update_one) does without a
/// transaction ([`after_write`]): every refreshed copy the write may have touched
/// (`update`, or any copy when `None`). Nothing is read or written when the source has
/// no such copy.
async fn after_source_write(
    db: &Database,
    source: &'static str,
    id: &Bson,
    update: Option<&Document>,
) -> Result<(), CopyError> {
    // A write of a soft-delete source's deletion date (`delete_by_id`, `restore_by_id`)
    // deletes or restores it: every copy follows.
    let written =
        |field: &str| update.is_none_or(|u| touches(&UpdateModifications::Document(u.clone()), field));
    let deletion = soft_delete_of(source).is_some_and(written);
    let touched: Vec<&'static CopySpec> = dependents(source)
        .into_iter()
        .filter(|c| c.refresh != Refresh::Never)
        .filter(|c| deletion || written(c.source_field))
        .collect();
    if touched.is_empty() {
        return Ok(());
    }
    after_write(db, source, id, &touched, None).await.map(drop)
}

/// The sync copies `sync` of the source `id`, which has no live document (soft-deleted),
/// made what a deleted source leaves: `keep` leaves them, `clear` clears them (into the
/// documents of the source's tenant only, for a copy between tenant models), `report`
/// is [`CopyError::SourceDeleted`] when documents still reference it.
async fn deleted(
    db: &Database,
    id: &Bson,
    sync: &[&'static CopySpec],
) -> Result<Vec<(&'static CopySpec, Written)>, CopyError> {
    let mut out = Vec::new();
    for &spec in sync {
        let failed = |error| CopyError::Refresh { copy: spec.key(), id: id.clone(), error };
        let target = db.collection::<Document>(spec.collection);
        let written = match spec.on_delete {
            OnDelete::Keep => Written::default(),
            OnDelete::Clear(how) => {
                let value = cleared(how);
                let write = CopyWrite { spec, source: id, value: value.as_ref(), only: None, tenant: None };
                match write_copy(&target, &write, Batching::Whole).await {
                    Ok(written) => written,
                    Err(WriteError::Target(e) | WriteError::Guard(e)) => return Err(failed(e)),
                    Err(WriteError::Derived(e)) => return Err(e),
                }
            }
            OnDelete::Report => {
                let documents = target.count_documents(via_filter(spec, id)).await.map_err(failed)?;
                if documents > 0 {
                    return Err(CopyError::SourceDeleted { copy: spec.key(), id: id.clone(), documents });
                }
                Written::default()
            }
        };
        out.push((spec, written));
    }
    Ok(out)
}
