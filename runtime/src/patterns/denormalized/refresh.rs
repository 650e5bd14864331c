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
use crate::core::denormalized::refresh::refresh;
use crate::core::denormalized::{CopyError, CopySpec, Refresh};
use crate::core::hooks::{Derived, SourceWriteHook};

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
    let refreshed = match refresh(db, source, id, &sync, first, None).await {
        Ok(refreshed) => refreshed,
        Err(CopyError::Refresh { copy, error, .. }) => return Err(failed(copy, error)),
        Err(other) => return Err(other),
    };
    let refused = refreshed.refused();
    if !refused.is_empty() {
        return Err(CopyError::Refused { id: id.clone(), documents: refused });
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
    let touched: Vec<&'static CopySpec> = dependents(source)
        .into_iter()
        .filter(|c| c.refresh != Refresh::Never)
        .filter(|c| update.is_none_or(|u| touches(&UpdateModifications::Document(u.clone()), c.source_field)))
        .collect();
    if touched.is_empty() {
        return Ok(());
    }
    after_write(db, source, id, &touched, None).await.map(drop)
}
