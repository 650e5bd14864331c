//! Writing a source's value into its denormalized copies: the one path every docshape
//! writer takes (the denormalized pattern's `update_one`, its write hook behind the
//! versioned writers and the write rows, `repair`, `reconcile` and the worker, and the
//! relation pattern's `insert_one`). It lives in core because two patterns use it.
//!
//! Three rules, each in one place:
//!
//! - **What is written** ([`statement`], [`stale_filter`]): the copies of a source
//!   document are the documents whose `via` equals its `_id`, literally and never as
//!   an array element ([`via_filter`]); a copy receives the value as the copy's own type
//!   stores it ([`stored`]): an absent or null source value is no field at all when the
//!   copy's type omits `None` (`$unset`), and `null` when it always writes the field.
//! - **Refusals** ([`write_copy`]): a copy document the server refuses to write (its
//!   validator, a duplicate key, a value it cannot store: any per-document write error)
//!   is left as it is and reported as a [`Refusal`] with its `_id` and the server's
//!   reason; every other document is still written. Only the server or the network
//!   failing stops the write.
//! - **What is derived from a copy document** ([`write_copy`]): every document
//!   rewritten is handed to the copy-write hooks (`core::hooks::CopyWriteHook`) by
//!   `_id` once its write is acknowledged, so the keys pattern deletes a cached
//!   document's keys whichever writer refreshed its copy. A collection that no hook
//!   watches keeps its one `update_many` by reference.
//! - **Tenants** ([`holder_tenant`], [`write_copy`]): a copy between two tenant models
//!   (`#[model(tenant = ...)]` on both) is written only into the documents of the
//!   source's own tenant; a document of another tenant that references the source (a
//!   reference written around docshape, whose writers refuse one) is left as it was and
//!   reported ([`Written::cross_tenant`], then `CopyError::CrossTenant`).
//! - **Settling** ([`refresh`]): a writer that is not in a transaction reads the
//!   source again after writing its copies, and writes again each copy whose source
//!   value moved meanwhile, until a read shows the values it wrote (bounded by
//!   [`SETTLE_TIME`]). Whatever the interleaving of such writers, the last value of the
//!   source is the last one written to its copies.

use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use futures_util::future::BoxFuture;
use futures_util::TryStreamExt;
use mongodb::error::{ErrorKind, WriteFailure, RETRYABLE_WRITE_ERROR, TRANSIENT_TRANSACTION_ERROR};
use mongodb::{Collection, Database};

use super::{Cleared, CopyError, CopySpec, Refusal};
use crate::core::access::{in_filter, not_in_filter, Literal};
use crate::core::error::server_message;
use crate::core::model::eq;
use crate::core::trace;
pub(crate) use tenant::holder_tenant;
use tenant::{other_tenants, source_tenant};

/// How long a settling writer keeps writing copies again whose source concurrent
/// writers keep changing (each round means one of them made progress).
pub(crate) const SETTLE_TIME: Duration = Duration::from_secs(120);

/// Copy documents written per `update_many` when a whole-copy write falls back to
/// batches (one of its documents was refused).
const FALLBACK_BATCH: usize = 1000;

static NULL: Bson = Bson::Null;

/// The value at a dotted path through embedded documents; `None` when absent.
pub(crate) fn value_at(document: &Document, path: &str) -> Option<Bson> {
    let mut current = document;
    let mut segments = path.split('.').peekable();
    while let Some(segment) = segments.next() {
        let value = current.get(segment)?;
        if segments.peek().is_none() {
            return Some(value.clone());
        }
        current = value.as_document()?;
    }
    None
}

/// A projection of `fields`, without a path under another one (the server refuses
/// `{a: 1, "a.b": 1}`).
pub(crate) fn projection<'f>(fields: impl Iterator<Item = &'f str>) -> Document {
    let mut fields: Vec<&str> = fields.collect();
    fields.sort_unstable();
    fields.dedup();
    let mut out = Document::new();
    for f in &fields {
        let covered =
            fields.iter().any(|g| g != f && f.starts_with(g) && f.as_bytes().get(g.len()) == Some(&b'.'));
        if !covered {
            out.insert(*f, 1);
        }
    }
    out
}

/// What the copy's own type stores for the source's `value`, as serde would write the
/// copy: an absent or null value is no field at all when the copy's type omits `None`
/// ([`Cleared::Unset`]), and `null` when it always writes the field ([`Cleared::Null`]);
/// anything else as it is.
pub(crate) fn stored<'a>(spec: &CopySpec, value: Option<&'a Bson>) -> Option<&'a Bson> {
    match value {
        None | Some(Bson::Null) => match spec.null {
            Cleared::Unset => None,
            Cleared::Null => Some(&NULL),
        },
        other => other,
    }
}

/// The value a cleared copy is given (`on_delete = "clear"`): none (`$unset`) or null.
pub(crate) fn cleared(how: Cleared) -> Option<Bson> {
    match how {
        Cleared::Unset => None,
        Cleared::Null => Some(Bson::Null),
    }
}

/// Where a copy sits: the arrays on its way, each as a path relative to the element
/// of the array before it (the document itself for the first), and the path from the
/// innermost array's element (or the document) to the sub-document holding the copy
/// and its `via`.
struct Layout {
    /// `["answers", "comments"]` for a copy in `answers.comments.author_name` when
    /// both are arrays.
    hops: Vec<String>,
    /// The path from the innermost element to the copy's sub-document, with a
    /// trailing dot (`"meta."`), or empty.
    tail: String,
}

/// The copy's own name and its `via`'s inside the sub-document holding them.
fn leaf(path: &str) -> &str {
    path.rsplit_once('.').map_or(path, |(_, l)| l)
}

impl Layout {
    fn of(spec: &CopySpec) -> Self {
        let container = spec.field.rsplit_once('.').map_or("", |(c, _)| c);
        let mut hops = Vec::new();
        let mut from = 0;
        for array in spec.arrays {
            // `arrays` are prefixes of the copy's path, outermost first (the derive
            // writes them so); a malformed one is left out rather than misplaced.
            let Some(rest) = array.get(from..).filter(|_| container.starts_with(array)) else { continue };
            hops.push(rest.trim_start_matches('.').to_owned());
            from = array.len();
        }
        let tail = container.get(from..).unwrap_or("").trim_start_matches('.');
        let tail = if tail.is_empty() { String::new() } else { format!("{tail}.") };
        Layout { hops, tail }
    }

    /// `condition` (keys relative to the copy's sub-document) as a filter relative to
    /// the element of array `from` (`None`: the document): each array further in is
    /// an `$elemMatch`, so that the conditions hold of one element, not of any.
    fn wrap(&self, from: Option<usize>, condition: Document) -> Document {
        let mut out: Document =
            condition.into_iter().map(|(k, v)| (format!("{}{k}", self.tail), v)).collect();
        let first = from.map_or(0, |i| i + 1);
        for hop in self.hops[first.min(self.hops.len())..].iter().rev() {
            out = doc! { hop.as_str(): { "$elemMatch": out } };
        }
        out
    }

    /// The copy's update path: `answers.$[d0].comments.$[d1].author_name`.
    fn update_path(&self, spec: &CopySpec) -> String {
        let mut path = String::new();
        for (i, hop) in self.hops.iter().enumerate() {
            path.push_str(&format!("{hop}.$[d{i}]."));
        }
        format!("{path}{}{}", self.tail, leaf(spec.field))
    }
}

/// The reference's condition: `id` compared literally, and never an array that merely
/// contains it (the server's `$eq` matches an array by its elements; such a reference
/// names no one source, and reconcile reports it as such).
fn via_condition(id: &Bson) -> Document {
    // The value through the literal encoder; the array exclusion is a constant.
    let mut condition = eq(id.clone());
    condition.insert("$not", doc! { "$type": "array" });
    condition
}

/// The filter of the documents holding copies of `spec` that reference source `id`
/// (for a copy inside arrays, the documents with at least one such element).
pub(crate) fn via_filter(spec: &CopySpec, id: &Bson) -> Document {
    spec.scoped(Layout::of(spec).wrap(None, doc! { leaf(spec.via): via_condition(id) }))
}

/// The update that makes a copy hold `value` as the copy's type stores it ([`stored`]):
/// `$set`, or `$unset`, and its array filters: inside arrays, the elements written are
/// those whose `via` is `id` ([`via_condition`]), every other element is left alone.
pub(crate) fn change(spec: &CopySpec, id: &Bson, value: Option<&Bson>) -> (Document, Vec<Document>) {
    let layout = Layout::of(spec);
    let path = layout.update_path(spec);
    let mut update = match stored(spec, value) {
        Some(v) => doc! { "$set": { path: v.clone() } },
        None => doc! { "$unset": { path: "" } },
    };
    // A copy's refresh is a modification of the document holding it: its model's
    // `#[updated_at]` and `#[revision]` move, in the same command.
    crate::core::write::Effects::of_collection(spec.collection).on_update(&mut update);
    let filters = (0..layout.hops.len())
        .map(|i| {
            let inner = layout.wrap(Some(i), doc! { leaf(spec.via): via_condition(id) });
            inner.into_iter().map(|(k, v)| (format!("d{i}.{k}"), v)).collect()
        })
        .collect();
    (update, filters)
}

/// The filter of the documents holding a copy that differs from `value` as the copy
/// stores it (inside arrays: an element that references `id` and differs).
pub(crate) fn stale_filter(spec: &CopySpec, id: &Bson, value: Option<&Bson>) -> Document {
    let condition = match stored(spec, value) {
        // `$ne: null` would leave out a document without the field (the server's null
        // equality matches a missing field), which the copy's type does write.
        Some(Bson::Null) => doc! { "$not": { "$type": "null" } },
        // Through the literal encoder: a stored regex is a value, which `$ne` refuses.
        Some(v) => Literal::stored(v.clone()).ne(),
        None => doc! { "$exists": true },
    };
    spec.scoped(
        Layout::of(spec).wrap(None, doc! { leaf(spec.via): via_condition(id), leaf(spec.field): condition }),
    )
}

/// Each place a copy of `spec` sits in `document`: its reference and its value (`None`
/// when absent), one per array element on the way; none when a sub-document or an
/// array on the way is absent or not one.
pub(crate) fn instances(spec: &CopySpec, document: &Document) -> Vec<(Option<Bson>, Option<Bson>)> {
    // A document of another variant holds none, whatever fields it shares.
    if !spec.holds(document) {
        return Vec::new();
    }
    let layout = Layout::of(spec);
    let mut level: Vec<&Document> = vec![document];
    for hop in &layout.hops {
        level = level
            .into_iter()
            .filter_map(|d| value_ref(d, hop))
            .filter_map(Bson::as_array)
            .flatten()
            .filter_map(Bson::as_document)
            .collect();
    }
    level
        .into_iter()
        .map(|d| {
            let at = |name: &str| value_at(d, &format!("{}{name}", layout.tail));
            (at(leaf(spec.via)), at(leaf(spec.field)))
        })
        // A sub-document path that is absent holds no copy.
        .filter(|(via, value)| layout.tail.is_empty() || via.is_some() || value.is_some())
        .collect()
}

/// Gives each copy of `spec` in `document` (a document about to be written) the value
/// `value_of` returns for its reference, as the copy's type stores it.
pub(crate) fn fill(
    spec: &CopySpec,
    document: &mut Document,
    value_of: &mut dyn FnMut(&Bson) -> Option<Option<Bson>>,
) {
    fn walk(
        spec: &CopySpec,
        hops: &[String],
        tail: &str,
        d: &mut Document,
        value_of: &mut dyn FnMut(&Bson) -> Option<Option<Bson>>,
    ) {
        if let Some((hop, rest)) = hops.split_first() {
            if let Some(Bson::Array(items)) = value_mut(d, hop) {
                for item in items.iter_mut().filter_map(|i| match i {
                    Bson::Document(d) => Some(d),
                    _ => None,
                }) {
                    walk(spec, rest, tail, item, value_of);
                }
            }
            return;
        }
        let holder = if tail.is_empty() {
            Some(d)
        } else {
            match value_mut(d, tail.trim_end_matches('.')) {
                Some(Bson::Document(h)) => Some(h),
                _ => None,
            }
        };
        let Some(holder) = holder else { return };
        let Some(via) = holder.get(leaf(spec.via)).cloned() else { return };
        let Some(value) = value_of(&via) else { return };
        match stored(spec, value.as_ref()) {
            Some(v) => {
                holder.insert(leaf(spec.field), v.clone());
            }
            None => {
                holder.remove(leaf(spec.field));
            }
        }
    }
    if !spec.holds(document) {
        return;
    }
    let layout = Layout::of(spec);
    walk(spec, &layout.hops, &layout.tail, document, value_of);
}

/// The value at a dotted path, borrowed.
fn value_ref<'d>(document: &'d Document, path: &str) -> Option<&'d Bson> {
    let (first, rest) = path.split_once('.').map_or((path, None), |(f, r)| (f, Some(r)));
    let value = document.get(first)?;
    match rest {
        None => Some(value),
        Some(rest) => value_ref(value.as_document()?, rest),
    }
}

/// The value at a dotted path, mutably.
fn value_mut<'d>(document: &'d mut Document, path: &str) -> Option<&'d mut Bson> {
    let (first, rest) = path.split_once('.').map_or((path, None), |(f, r)| (f, Some(r)));
    let value = document.get_mut(first)?;
    match rest {
        None => Some(value),
        Some(rest) => match value {
            Bson::Document(d) => value_mut(d, rest),
            _ => None,
        },
    }
}

/// Whether the server refused this one statement for what it was sent (a validator, a
/// duplicate key, a value or an operator it cannot take), as opposed to the server, the
/// network or the replication failing: a refused copy document is skipped and
/// reported, anything else stops the write.
pub(crate) fn is_refusal(e: &mongodb::error::Error) -> bool {
    if e.contains_label(RETRYABLE_WRITE_ERROR) || e.contains_label(TRANSIENT_TRANSACTION_ERROR) {
        return false;
    }
    matches!(e.kind.as_ref(), ErrorKind::Write(WriteFailure::WriteError(_)) | ErrorKind::Command(_))
}

/// The options of a copy's update: its array filters, when it sits inside arrays.
pub(crate) fn options(array_filters: &[Document]) -> mongodb::options::UpdateOptions {
    let mut options = mongodb::options::UpdateOptions::default();
    if !array_filters.is_empty() {
        options.array_filters = Some(array_filters.to_vec());
    }
    options
}

/// One copy of one source document, and the value it should hold.
#[derive(Clone, Copy)]
pub(crate) struct CopyWrite<'a> {
    /// The copy.
    pub(crate) spec: &'a CopySpec,
    /// The source document's `_id`.
    pub(crate) source: &'a Bson,
    /// The source's value (`None`: the source has no such field).
    pub(crate) value: Option<&'a Bson>,
    /// Only this copy document (the one an insert just wrote), not every copy of the
    /// source.
    pub(crate) only: Option<&'a Bson>,
    /// The source document's tenant as stored (`Bson::Null` when it has none), read
    /// with its value, for a copy between two tenant models ([`holder_tenant`]); `None`
    /// when the writer did not read it: [`write_copy`] does.
    pub(crate) tenant: Option<&'a Bson>,
}

impl CopyWrite<'_> {
    /// The filter of the documents this write may change: those referencing the
    /// source (of the source's tenant, for a copy between tenant models), or `only`.
    fn scope(&self) -> Document {
        let mut filter = via_filter(self.spec, self.source);
        if let Some(only) = self.only {
            filter.insert("_id", eq(only.clone()));
        }
        self.in_tenant(&mut filter);
        filter
    }

    /// Adds the source's tenant to a filter on the copy documents, by `$eq` (a stored
    /// tenant that looks like an operator is compared, never run).
    fn in_tenant(&self, filter: &mut Document) {
        if let (Some(field), Some(tenant)) = (holder_tenant(self.spec), self.tenant) {
            filter.insert(field, eq(tenant.clone()));
        }
    }

    /// The one statement that writes every copy document at once: `(filter, update,
    /// array filters)` for an `update_many` ([`options`]). What a transaction sends,
    /// and a whole-copy write's first attempt.
    pub(crate) fn statement(&self) -> (Document, Document, Vec<Document>) {
        let (update, filters) = change(self.spec, self.source, self.value);
        (self.scope(), update, filters)
    }

    /// [`CopyWrite::statement`] over the documents whose copy differs only: what a
    /// transaction sends for a stamped collection's copies (`#[updated_at]`,
    /// `#[revision]`), whose refresh must stamp the documents it changes and no other.
    pub(crate) fn changing_statement(&self) -> (Document, Document, Vec<Document>) {
        let (update, filters) = change(self.spec, self.source, self.value);
        (self.stale(&[]), update, filters)
    }

    /// The copy documents that differ from the value, leaving out `refused`.
    fn stale(&self, refused: &[Refusal]) -> Document {
        let mut filter = stale_filter(self.spec, self.source, self.value);
        if let Some(only) = self.only {
            filter.insert("_id", eq(only.clone()));
        }
        self.in_tenant(&mut filter);
        if refused.is_empty() {
            return filter;
        }
        let left_out = not_in_filter("_id", refused.iter().map(|r| Literal::stored(r.id.clone())));
        doc! { "$and": [filter, left_out] }
    }
}

/// A hold that must still be this writer's before each batch is written (a worker's
/// lease on its job).
pub(crate) trait Guard: Sync {
    /// Extends the hold; `false` when it is no longer this writer's.
    fn renew(&self) -> BoxFuture<'_, mongodb::error::Result<bool>>;
}

/// How [`write_copy`] writes a copy's documents.
#[derive(Clone, Copy)]
pub(crate) enum Batching<'a> {
    /// One `update_many` over every document referencing the source (one round trip,
    /// and `matched` counts them), falling back to batches when the server refuses a
    /// document: a writer in the source's own call.
    Whole,
    /// The documents that differ, read by one cursor (`_id`s only) and written `size`
    /// at a time by `_id`, `guard` renewed before each write: resumable after a stop,
    /// only what still differs is visited. The worker and reconcile.
    Batches {
        /// Documents per `update_many` (at least 1).
        size: usize,
        /// Renewed before each write; the write stops when it is lost.
        guard: Option<&'a dyn Guard>,
    },
}

/// What [`write_copy`] did.
#[derive(Debug, Default, Clone)]
pub(crate) struct Written {
    /// Documents referencing the source ([`Batching::Whole`]); with batches, after a
    /// refusal, or for a copy in cached documents (written by `_id` so that their keys
    /// can be deleted), the documents visited: those that differed.
    pub(crate) matched: u64,
    /// Documents modified.
    pub(crate) modified: u64,
    /// The documents the server refused, each once, left as they were.
    pub(crate) refused: Vec<Refusal>,
    /// The guard was lost: the write stopped before its end.
    pub(crate) lost_guard: bool,
    /// Documents of another tenant referencing the source, left as they were (at most
    /// [`CROSS_TENANT_REPORTED`]): see [`holder_tenant`].
    pub(crate) cross_tenant: Vec<Bson>,
}

impl Written {
    /// Adds a later write of the same copy: its modifications and refusals (a document
    /// refused again is kept once, with the latest reason).
    pub(crate) fn absorb(&mut self, later: Written) {
        self.modified += later.modified;
        self.lost_guard |= later.lost_guard;
        for id in later.cross_tenant {
            if !self.cross_tenant.contains(&id) {
                self.cross_tenant.push(id);
            }
        }
        for r in later.refused {
            match self.refused.iter_mut().find(|old| old.id == r.id && old.copy == r.copy) {
                Some(old) => old.reason = r.reason,
                None => self.refused.push(r),
            }
        }
    }
}

/// Why [`write_copy`] stopped.
pub(crate) enum WriteError {
    /// Reading or writing the copy's collection failed (not a refusal).
    Target(mongodb::error::Error),
    /// Renewing the guard failed.
    Guard(mongodb::error::Error),
    /// The copies were written, then keeping what is derived from the rewritten
    /// documents in line failed (their cached keys were not deleted):
    /// [`CopyError::Derived`].
    Derived(CopyError),
}

/// Makes every copy document of `write` hold its value (see [`Batching`]). A document
/// the server refuses is left as it is and reported in [`Written::refused`]; the others
/// are written.
///
/// A multi-document `update_many` stops at the first document the server refuses, so a
/// refused batch is written again one document at a time, and the refused ones are
/// left out of the rest of the write. `$ne` compares as the server does: numbers of
/// different types with the same value are equal, and so is an array copy that holds
/// the value as an element.
pub(crate) async fn write_copy(
    target: &Collection<Document>,
    write: &CopyWrite<'_>,
    batching: Batching<'_>,
) -> Result<Written, WriteError> {
    // A copy between tenant models: the source's tenant scopes every filter below.
    let read_tenant;
    let mut write = *write;
    let mut cross_tenant = Vec::new();
    if let Some(field) = holder_tenant(write.spec) {
        if write.tenant.is_none() {
            read_tenant =
                source_tenant(target, write.spec, write.source).await.map_err(WriteError::Target)?;
            write.tenant = read_tenant.as_ref();
        }
        if let Some(tenant) = write.tenant {
            cross_tenant = other_tenants(target, &write, field, tenant).await.map_err(WriteError::Target)?;
        }
    }
    let mut written = copy_in_tenant(target, &write, batching).await?;
    written.cross_tenant = cross_tenant;
    Ok(written)
}

/// [`write_copy`] once the write is scoped to its tenant.
async fn copy_in_tenant(
    target: &Collection<Document>,
    write: &CopyWrite<'_>,
    batching: Batching<'_>,
) -> Result<Written, WriteError> {
    // A collection whose documents something derives data from (cached keys) is
    // written by `_id`, in batches: a bulk write by reference says how many documents
    // it changed, not which, and the hooks need exactly those (see `write_batch`).
    // So is a stamped collection's (`#[updated_at]`, `#[revision]`): a write by
    // reference would stamp every document referencing the source, not only those
    // whose copy differs.
    let effects = crate::core::write::Effects::of_collection(write.spec.collection);
    let watched = effects.copies_watched() || !effects.stamps().is_empty();
    let (size, guard) = match batching {
        Batching::Whole if watched => (FALLBACK_BATCH, None),
        Batching::Whole => {
            let (filter, update, filters) = write.statement();
            match target.update_many(filter, update).with_options(options(&filters)).await {
                Ok(done) => {
                    return Ok(Written {
                        matched: done.matched_count,
                        modified: done.modified_count,
                        ..Written::default()
                    })
                }
                Err(e) if is_refusal(&e) => (FALLBACK_BATCH, None),
                Err(e) => return Err(WriteError::Target(e)),
            }
        }
        Batching::Batches { size, guard } => (size.max(1), guard),
    };
    let update = change(write.spec, write.source, write.value);
    let mut written = Written::default();
    // A second pass makes sure nothing was left (it finds nothing unless the copies
    // were written to meanwhile); refused documents are left out of it.
    for _pass in 0..2 {
        let mut cursor = target
            .find(write.stale(&written.refused))
            .projection(doc! { "_id": 1 })
            .batch_size(u32::try_from(size).unwrap_or(u32::MAX))
            .await
            .map_err(WriteError::Target)?;
        let mut found = 0u64;
        let mut ids = Vec::with_capacity(size);
        loop {
            let next = cursor.try_next().await.map_err(WriteError::Target)?;
            if let Some(document) = &next {
                found += 1;
                ids.push(document.get("_id").cloned().unwrap_or(Bson::Null));
            }
            if ids.len() >= size || (next.is_none() && !ids.is_empty()) {
                if let Some(guard) = guard {
                    if !guard.renew().await.map_err(WriteError::Guard)? {
                        written.lost_guard = true;
                        return Ok(written);
                    }
                }
                let batch = std::mem::replace(&mut ids, Vec::with_capacity(size));
                write_batch(target, write, &update, batch, &mut written).await?;
            }
            if next.is_none() {
                break;
            }
        }
        written.matched += found;
        if found == 0 {
            break;
        }
    }
    Ok(written)
}

/// Writes the copy documents `ids` (found stale) with `update`; on a refusal, one by
/// one, reporting the ones refused.
async fn write_batch(
    target: &Collection<Document>,
    write: &CopyWrite<'_>,
    (update, filters): &(Document, Vec<Document>),
    ids: Vec<Bson>,
    written: &mut Written,
) -> Result<(), WriteError> {
    // `via` again: a document moved to another source since it was found is not given
    // this source's value. The ids are matched literally.
    let mut filter = via_filter(write.spec, write.source);
    write.in_tenant(&mut filter);
    filter.extend(in_filter("_id", ids.iter().cloned().map(Literal::stored)));
    match target.update_many(filter, update.clone()).with_options(options(filters)).await {
        Ok(done) => {
            written.modified += done.modified_count;
            trace::event!(
                DEBUG,
                copy = write.spec.key().as_str(),
                matched = done.matched_count,
                modified = done.modified_count,
                "batch"
            );
            return after_batch(target, write, &ids).await;
        }
        Err(e) if is_refusal(&e) => {}
        Err(e) => return Err(WriteError::Target(e)),
    }
    let mut accepted = Vec::with_capacity(ids.len());
    for id in ids {
        let mut filter = via_filter(write.spec, write.source);
        write.in_tenant(&mut filter);
        filter.insert("_id", eq(id.clone()));
        match target.update_one(filter, update.clone()).with_options(options(filters)).await {
            Ok(done) => {
                written.modified += done.modified_count;
                accepted.push(id);
            }
            Err(e) if is_refusal(&e) => {
                trace::event!(DEBUG, copy = write.spec.key().as_str(), "refused");
                written.refused.push(Refusal { copy: write.spec.key(), id, reason: server_message(&e) });
            }
            Err(e) => return Err(WriteError::Target(e)),
        }
    }
    after_batch(target, write, &accepted).await
}

/// What other patterns derive from the copy documents `ids`, just rewritten, kept in
/// line (a read-through cache's keys deleted): after the write is acknowledged, so a
/// read that fills the cache again reads the new copy. A document of the batch left
/// as it was (its copy had moved to another source meanwhile) loses its keys too,
/// which costs one read, never a stale one.
async fn after_batch(
    target: &Collection<Document>,
    write: &CopyWrite<'_>,
    ids: &[Bson],
) -> Result<(), WriteError> {
    let effects = crate::core::write::Effects::of_collection(write.spec.collection);
    if ids.is_empty() || !effects.copies_watched() {
        return Ok(());
    }
    let db = target.client().database(&target.namespace().db);
    effects.after_copies(&db, ids).await.map_err(WriteError::Derived)
}

/// What [`refresh`] did, per copy in the order given.
#[derive(Debug, Default)]
pub(crate) struct Refreshed {
    /// Whether the source document was found (when it is not, nothing was written).
    pub(crate) found: bool,
    /// Each copy and what was written to it, over every round.
    pub(crate) copies: Vec<(&'static CopySpec, Written)>,
}

impl Refreshed {
    /// Every refused document, of every copy.
    pub(crate) fn refused(&self) -> Vec<Refusal> {
        self.copies.iter().flat_map(|(_, w)| w.refused.iter().cloned()).collect()
    }

    /// The first copy whose documents of another tenant reference the source (see
    /// [`holder_tenant`]), as its error.
    pub(crate) fn cross_tenant(&self, id: &Bson) -> Option<CopyError> {
        self.copies.iter().find(|(_, w)| !w.cross_tenant.is_empty()).map(|(spec, w)| CopyError::CrossTenant {
            copy: spec.key(),
            id: id.clone(),
            holders: w.cross_tenant.clone(),
        })
    }
}

/// Writes the source document `id` (in `source`) into its copies `specs` (all of that
/// source) with [`Batching::Whole`], then settles them: the source is read again, each
/// copy whose value moved meanwhile is written again, until a read shows what was
/// written, or [`CopyError::Unsettled`] after [`SETTLE_TIME`].
///
/// `first` is the source as the caller just wrote it (projected to the copied fields),
/// saving the first read; `only` limits the writes to one copy document. Refused
/// documents are in the result, not an error; a failure to read the source or to write
/// a copy is [`CopyError::Refresh`] naming the copy (the first one for a read).
pub(crate) async fn refresh(
    db: &Database,
    source: &'static str,
    id: &Bson,
    specs: &[&'static CopySpec],
    first: Option<Document>,
    only: Option<&Bson>,
) -> Result<Refreshed, CopyError> {
    let Some(&first_spec) = specs.first() else { return Ok(Refreshed { found: true, copies: Vec::new() }) };
    let collection = db.collection::<Document>(source);
    // With the sources' tenant, for copies between tenant models.
    let projection =
        projection(specs.iter().map(|c| c.source_field).chain(specs.iter().filter_map(|c| c.source_tenant)));
    let failed = |spec: &CopySpec, error| CopyError::Refresh { copy: spec.key(), id: id.clone(), error };
    // A soft-deleted source reads as none: its copies are a deleted source's.
    let live = crate::core::registry::live_by_id(source, id);
    let read = || async {
        collection
            .find_one(live.clone())
            .projection(projection.clone())
            .await
            .map_err(|e| failed(first_spec, e))
    };
    let mut copied = match first {
        Some(document) => document,
        None => match read().await? {
            Some(document) => document,
            None => return Ok(Refreshed::default()),
        },
    };
    let mut out = Refreshed { found: true, copies: specs.iter().map(|&s| (s, Written::default())).collect() };
    let mut pending: Vec<usize> = (0..specs.len()).collect();
    let started = Instant::now();
    let mut rounds = 0;
    loop {
        rounds += 1;
        for &i in &pending {
            let spec = specs[i];
            let value = value_at(&copied, spec.source_field);
            let tenant = spec.source_tenant.and_then(|t| copied.get(t));
            let write = CopyWrite { spec, source: id, value: value.as_ref(), only, tenant };
            let target = db.collection::<Document>(spec.collection);
            let done = match write_copy(&target, &write, Batching::Whole).await {
                Ok(done) => done,
                Err(WriteError::Target(e) | WriteError::Guard(e)) => return Err(failed(spec, e)),
                Err(WriteError::Derived(e)) => return Err(e),
            };
            let slot = &mut out.copies[i].1;
            if rounds == 1 {
                slot.matched = done.matched;
            }
            slot.absorb(done);
        }
        // The source as it is now: a copy written from an older value (another write
        // came in between) is written again, so that the last write's value is the
        // last one written whatever the interleaving.
        let Some(now) = read().await? else { return Ok(out) };
        pending = (0..specs.len())
            .filter(|&i| value_at(&now, specs[i].source_field) != value_at(&copied, specs[i].source_field))
            .collect();
        if pending.is_empty() {
            return Ok(out);
        }
        if started.elapsed() >= SETTLE_TIME {
            return Err(CopyError::Unsettled { copy: specs[pending[0]].key(), id: id.clone(), rounds });
        }
        copied = now;
    }
}

mod tenant;
#[cfg(test)]
mod tests;
