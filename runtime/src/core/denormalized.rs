//! The descriptors of denormalized copies ([`CopySpec`], [`Refresh`]) that
//! [`Model::COPIES`](crate::Model::COPIES) carries, and the error of keeping copies in
//! line ([`CopyError`]): a versioned write reports it too, through
//! [`crate::core::hooks`]. Updating, queueing and repairing copies is the denormalized
//! pattern's ([`crate::denormalized`]).

// A `CopyError` names the document (`_id` as `Bson`) and carries the driver's error:
// large, but rare and behind a round trip anyway.
#![allow(clippy::result_large_err)]

use crate::core::bson_compat;
use std::fmt;
use std::time::Duration;

use bson::{Bson, Document};

use crate::core::relation::Variant;

pub(crate) mod refresh;

/// When a denormalized copy is brought back in line with its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refresh {
    /// Never: the copy is a snapshot taken when the document was written (an order's
    /// `user_name` is the name at the time of the order, and should stay so).
    Never,
    /// In the same call that updates the source.
    Sync,
    /// By a worker draining a durable queue; the copy may lag its source by at most
    /// `max_stale`, a product decision stated in the model.
    Async {
        /// How stale the copy may be: the worker serves older jobs first.
        max_stale: Duration,
    },
}

/// What a copy holds once its source document is deleted
/// (`#[denormalized(..., on_delete = "keep" | "clear" | "report")]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OnDelete {
    /// The last value copied stays (the default): the copy was true when written, and
    /// removing it destroys what the reader saw.
    #[default]
    Keep,
    /// The copy is emptied, as its type allows (only an `Option` copy, or one with
    /// `skip_serializing_if`, can be).
    Clear(Cleared),
    /// The copy stays, and its refresh job fails with [`CopyError::SourceDeleted`],
    /// recorded on the job and kept in the queue (so [`lag`](crate::denormalized::lag) counts
    /// it) until no document references the deleted source any more.
    Report,
}

/// How a cleared copy is written, so that its model's validator still accepts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cleared {
    /// `$unset`: the field has `skip_serializing_if`, so it may be absent.
    Unset,
    /// `$set: null`: an `Option` field that is always written (required, nullable).
    Null,
}

/// One denormalized copy, as declared on the model that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CopySpec {
    /// The collection holding the copy (`"posts"`).
    pub collection: &'static str,
    /// The copy's stored path (`"author_name"`; `"comments.author_name"` for a copy
    /// inside the embedded documents of `comments`).
    pub field: &'static str,
    /// The stored path of the field that references the source document
    /// (`"author_id"`, `"comments.author_id"`): it holds the source's `_id`. It sits in
    /// the same (sub-)document as the copy.
    pub via: &'static str,
    /// The stored paths of the arrays that hold the copy's sub-documents, outermost
    /// first (`["comments"]`; empty for a copy at the top level or in sub-documents
    /// only): each document's elements that reference the source are the ones
    /// written, through array filters.
    pub arrays: &'static [&'static str],
    /// The source's collection (`"users"`).
    pub source: &'static str,
    /// The stored path of the copied field in the source (`"name"`).
    pub source_field: &'static str,
    /// When the copy is refreshed.
    pub refresh: Refresh,
    /// Why the copy exists, as written in the attribute (`reason = "..."`).
    pub reason: Option<&'static str>,
    /// What the copy holds once its source document is deleted.
    pub on_delete: OnDelete,
    /// How the copy's own type stores a null source value: [`Cleared::Unset`] when the
    /// field has `skip_serializing_if` (serde omits `None`, and the validator forbids
    /// `null`), [`Cleared::Null`] otherwise.
    pub null: Cleared,
    /// For a copy in one variant of a polymorphic model, that variant: only the
    /// documents whose discriminator holds its value hold the copy (another variant
    /// may store a field of the same name with another meaning), and every filter on
    /// `via` says so.
    pub variant: Option<Variant>,
}

impl CopySpec {
    /// `"posts.author_name"`: the copy's name in the refresh queue and in reports;
    /// `"tasks.owner_name (kind: \"review\")"` for a copy in one variant, so that two
    /// variants' copies of one name are told apart.
    pub fn key(&self) -> String {
        match self.variant {
            None => format!("{}.{}", self.collection, self.field),
            Some(v) => format!("{}.{} ({}: {:?})", self.collection, self.field, v.tag, v.value),
        }
    }

    /// Whether `document` is of the copy's variant (every document is, for a copy of a
    /// model that is not polymorphic).
    pub(crate) fn holds(&self, document: &Document) -> bool {
        self.variant.is_none_or(|v| document.get_str(v.tag).ok() == Some(v.value))
    }

    /// `filter` restricted to the documents of the copy's variant.
    pub(crate) fn scoped(&self, mut filter: Document) -> Document {
        if let Some(v) = self.variant {
            filter.insert(v.tag, crate::core::model::eq(Bson::from(v.value)));
        }
        filter
    }
}

/// Whether every refreshed copy inside `nested` (and inside its own embedded types)
/// has its `via` path (`comments.author_id`) among `leading_keys`, the first keys of
/// its model's full indexes: the `unindexed_via` rule, evaluated at compile time for
/// copies the model only knows through its fields' types. Nesting deeper than eight
/// levels is not checked.
#[doc(hidden)]
pub const fn nested_vias_indexed(nested: &crate::core::relation::Nested, leading_keys: &[&str]) -> bool {
    let mut parts: [&str; 10] = [""; 10];
    walk_vias(nested, &mut parts, 0, leading_keys)
}

const fn walk_vias(
    n: &crate::core::relation::Nested,
    parts: &mut [&str; 10],
    depth: usize,
    keys: &[&str],
) -> bool {
    if depth + 2 > parts.len() {
        return true;
    }
    parts[depth] = n.field;
    let mut i = 0;
    while i < n.copies.len() {
        let c = &n.copies[i];
        if !matches!(c.refresh, Refresh::Never) {
            parts[depth + 1] = c.via;
            let mut found = false;
            let mut k = 0;
            while k < keys.len() {
                found |= joined_eq(parts, depth + 2, keys[k]);
                k += 1;
            }
            if !found {
                return false;
            }
        }
        i += 1;
    }
    let mut j = 0;
    while j < n.nested.len() {
        if !walk_vias(&n.nested[j], parts, depth + 1, keys) {
            return false;
        }
        j += 1;
    }
    true
}

/// Whether the first `n` of `parts`, joined by dots (empty ones left out, as a
/// flattened field is), spell `full`.
const fn joined_eq(parts: &[&str; 10], n: usize, full: &str) -> bool {
    let f = full.as_bytes();
    let (mut pos, mut i, mut first) = (0, 0, true);
    while i < n {
        let p = parts[i].as_bytes();
        if !p.is_empty() {
            if !first {
                if pos >= f.len() || f[pos] != b'.' {
                    return false;
                }
                pos += 1;
            }
            first = false;
            let mut j = 0;
            while j < p.len() {
                if pos >= f.len() || f[pos] != p[j] {
                    return false;
                }
                pos += 1;
                j += 1;
            }
        }
        i += 1;
    }
    pos == f.len()
}

/// The copies held inside the embedded types of every registered model, each with
/// its model's collection and its full stored paths (`comments.author_name`), in a
/// stable order; an outlier's overflow collection holds its items' copies too. Built
/// once: the registry does not change while a program runs.
pub(crate) fn nested_copies() -> &'static [&'static CopySpec] {
    static ALL: std::sync::OnceLock<Vec<&'static CopySpec>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut found: Vec<(&'static str, Placed)> = Vec::new();
        for model in crate::core::registry::models() {
            found.extend(placed(model.nested).into_iter().map(|p| (model.collection, p)));
        }
        let mut extra: Vec<_> = inventory::iter::<crate::core::registry::RegisteredCollection>
            .into_iter()
            .filter(|c| !c.nested.is_empty())
            .map(|c| ((c.spec)().name, c.nested))
            .collect();
        extra.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, nested) in extra {
            let name: &'static str = Box::leak(name.into_boxed_str());
            found.extend(placed(nested).into_iter().map(|p| (name, p)));
        }
        // Leaked once for the program's life, like the derive's own `&'static` specs.
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        found
            .into_iter()
            .map(|(collection, p)| {
                let arrays: Vec<&'static str> = p.arrays.into_iter().map(leak).collect();
                let spec = CopySpec {
                    collection,
                    field: leak(p.field),
                    via: leak(p.via),
                    arrays: Box::leak(arrays.into_boxed_slice()),
                    variant: p.variant.or(p.copy.variant),
                    ..*p.copy
                };
                &*Box::leak(Box::new(spec))
            })
            .collect()
    })
}

/// A copy inside embedded types, placed: its full stored paths and the arrays on its
/// way.
pub(crate) struct Placed {
    /// The copy as its embedded type declares it.
    pub(crate) copy: &'static CopySpec,
    /// `comments.author_name`.
    pub(crate) field: String,
    /// `comments.author_id`.
    pub(crate) via: String,
    /// `["comments"]`.
    pub(crate) arrays: Vec<String>,
    /// The variant of a polymorphic model whose documents hold it.
    pub(crate) variant: Option<Variant>,
}

/// Every copy inside `nested` (and further down), placed.
pub(crate) fn placed(nested: &'static [crate::core::relation::Nested]) -> Vec<Placed> {
    fn walk(
        prefix: &str,
        arrays: &[String],
        variant: Option<Variant>,
        nested: &'static [crate::core::relation::Nested],
        out: &mut Vec<Placed>,
    ) {
        for n in nested {
            // A variant's entry holds its fields: the copies in and under it are its.
            let variant = n.variant.or(variant);
            // A flattened type's fields sit beside the parent's.
            let path = match (prefix.is_empty(), n.field.is_empty()) {
                (_, true) => prefix.to_owned(),
                (true, false) => n.field.to_owned(),
                (false, false) => format!("{prefix}.{}", n.field),
            };
            let mut arrays = arrays.to_vec();
            if n.many && !path.is_empty() {
                arrays.push(path.clone());
            }
            let at = |name: &str| if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") };
            for copy in n.copies {
                out.push(Placed {
                    copy,
                    field: at(copy.field),
                    via: at(copy.via),
                    arrays: arrays.clone(),
                    variant,
                });
            }
            walk(&path, &arrays, variant, n.nested, out);
        }
    }
    let mut out = Vec::new();
    walk("", &[], None, nested, &mut out);
    out
}

/// The refresh queue: reserved for the denormalized pattern (see [`crate::denormalized`]).
pub const QUEUE: &str = "docshape_refresh";

/// Where the change-stream watchers of copies' sources keep their positions:
/// reserved for the denormalized pattern (see [`crate::denormalized::Watcher`]).
pub const WATCH_POSITIONS: &str = "docshape_watch";

/// A copy document the server refused to write (its validator, a duplicate key, a
/// value it cannot store), left as it was while the other documents were written.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The copy's key (`"posts.author_name"`).
    pub copy: String,
    /// The copy document's `_id`.
    pub id: Bson,
    /// What the server said.
    pub reason: String,
}

/// What went wrong keeping copies in line. Every variant that concerns one document
/// names its collection or copy and its `_id`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CopyError {
    /// Writing the source document failed; no copy was touched.
    Source {
        /// The source's collection.
        collection: &'static str,
        /// The source document's `_id`.
        id: Bson,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// Writing one copy (a sync copy's `update_many`, or an async copy's job) failed
    /// while updating its source.
    Copy {
        /// The copy's key (`"posts.author_name"`).
        copy: String,
        /// The source document's `_id`.
        id: Bson,
        /// Whether the source was written: `false` when the transaction failed
        /// (nothing was written); `true` otherwise (a sequential update, or a job
        /// enqueued after the commit): the source and the copies before this one are
        /// updated, this one and the ones after it are not (see the
        /// [module docs](crate::denormalized)). Run the update again, or [`repair`](crate::denormalized::repair).
        source_updated: bool,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// The transaction could not commit. Nothing was written, unless the error says
    /// the commit's outcome is unknown (`UnknownTransactionCommitResult`).
    Commit {
        /// The source's collection.
        collection: &'static str,
        /// The source document's `_id`.
        id: Bson,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// [`Atomicity::Transaction`](crate::denormalized::Atomicity::Transaction) was asked for, and the deployment has no transactions
    /// (a standalone server). Nothing was written.
    NoTransactions {
        /// The source's collection.
        collection: &'static str,
    },
    /// Without a transaction, concurrent updates kept changing the source for two
    /// minutes while its sync copy was being written again and again. The source is
    /// updated; the copy may hold an older value: [`repair`](crate::denormalized::repair) once writes calm down.
    Unsettled {
        /// The copy's key.
        copy: String,
        /// The source document's `_id`.
        id: Bson,
        /// How many times the copy was written.
        rounds: u32,
    },
    /// The server refused to write some copy documents of this source (see
    /// [`Refusal`]): they are left as they were, and every other copy document was
    /// written (and settled), and every async copy's job enqueued. Fix the documents
    /// (or the validator), then [`repair`](crate::denormalized::repair). A
    /// [`Worker`](crate::denormalized::Worker) records it as its job's failure.
    Refused {
        /// The source document's `_id`.
        id: Bson,
        /// The refused copy documents, each once.
        documents: Vec<Refusal>,
    },
    /// Reading the source or writing its copies failed in a
    /// [`Worker`](crate::denormalized::Worker), [`repair`](crate::denormalized::repair),
    /// after a versioned writer or a write row, or in filling a new document's copies.
    Refresh {
        /// The copy's key.
        copy: String,
        /// The source document's `_id`.
        id: Bson,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// The refresh queue ([`QUEUE`]) could not be read or written.
    Queue {
        /// What was being done (`"claim"`, `"complete"`, ...).
        operation: &'static str,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// A queued job does not have the documented shape.
    MalformedJob {
        /// The job as stored.
        job: Document,
    },
    /// The copy key names no registered copy that is refreshed (none in this program
    /// has that key, or it is declared `refresh = "never"`).
    UnknownCopy {
        /// The key asked for.
        copy: String,
    },
    /// The id given did not serialize to BSON (an integer beyond `i64`, say); nothing
    /// was sent.
    IdEncode {
        /// The source's collection.
        collection: &'static str,
        /// What the serializer said.
        error: bson_compat::SerError,
    },
    /// [`repair`](crate::denormalized::repair) found no source document with this `_id`.
    SourceNotFound {
        /// The source's collection.
        collection: &'static str,
        /// The `_id` looked for.
        id: Bson,
    },
    /// A copy declared `on_delete = "report"` still has documents referencing a
    /// deleted source: they keep the last value copied. Delete them or point them at
    /// another source; the job completes once none is left.
    SourceDeleted {
        /// The copy's key.
        copy: String,
        /// The deleted source document's `_id`.
        id: Bson,
        /// Documents still referencing it.
        documents: u64,
    },
    /// The deployment has no change streams (a standalone server): a
    /// [`Watcher`](crate::denormalized::Watcher) cannot follow the sources. Run the server
    /// as a replica set (a single-node one will do: `mongod --replSet rs0`, then
    /// `rs.initiate()`), or connect through a sharded cluster's `mongos`.
    NoChangeStreams {
        /// The source collection the watcher tried to follow.
        collection: &'static str,
        /// What the server said.
        error: mongodb::error::Error,
    },
    /// A [`Watcher`](crate::denormalized::Watcher) could not read its change stream or its
    /// stored position.
    Watch {
        /// The source collection.
        collection: &'static str,
        /// What was being done (`"open"`, `"next"`, `"save position"`, ...).
        operation: &'static str,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// The source document was written, then keeping other data derived from it in
    /// line failed: a read-through cache's keys could not be deleted
    /// ([`keys::invalidate_on_write`](crate::keys::invalidate_on_write)). The document
    /// is updated and its copies are refreshed; the cached value may be stale until its
    /// TTL. Deleting the key again (or the next write) puts it right.
    Derived {
        /// The source's collection.
        collection: &'static str,
        /// The source document's `_id`.
        id: Bson,
        /// What was left out of line (`"cached keys"`).
        what: &'static str,
        /// Why.
        error: std::sync::Arc<dyn std::error::Error + Send + Sync>,
    },
    /// A docshape writer refused to change a document of `collection`, whose reads
    /// are cached by the key family `family`, because no connection is installed to
    /// delete the written document's keys (`keys::invalidate_on_write`) and the family
    /// does not accept values stale up to its TTL (`staleness = "ttl"`). Nothing was
    /// written.
    CacheNotInvalidated {
        /// The model's collection.
        collection: &'static str,
        /// The key family that caches it (its Rust type's path).
        family: &'static str,
    },
}

impl fmt::Display for CopyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Source { collection, id, error } => {
                write!(f, "{collection} {id}: the update failed, no copy was touched: {error}")
            }
            Self::Copy { copy, id, source_updated: true, error } => write!(
                f,
                "copy {copy} of {id}: failed after the source was updated (this copy and the ones after it are stale; run the update again or repair): {error}"
            ),
            Self::Copy { copy, id, source_updated: false, error } => {
                write!(f, "copy {copy} of {id}: failed; the transaction wrote nothing: {error}")
            }
            Self::Commit { collection, id, error } => {
                write!(f, "{collection} {id}: the transaction did not commit: {error}")
            }
            Self::NoTransactions { collection } => {
                write!(f, "{collection}: a transaction was required and the deployment has none (a standalone server)")
            }
            Self::Unsettled { copy, id, rounds } => write!(
                f,
                "copy {copy} of {id}: the source kept changing while the copy was written ({rounds} rounds); it may be stale: repair it once writes calm down"
            ),
            Self::Refresh { copy, id, error } => write!(f, "refreshing copy {copy} of {id}: {error}"),
            Self::Refused { id, documents } => {
                write!(f, "copies of {id}: the server refused {} document(s), left as they were (the others were written):", documents.len())?;
                // A bounded message: the list itself is in `documents`.
                for r in documents.iter().take(5) {
                    write!(f, " {} {}: {};", r.copy, r.id, r.reason)?;
                }
                if documents.len() > 5 {
                    write!(f, " and {} more", documents.len() - 5)?;
                }
                Ok(())
            }
            Self::Queue { operation, error } => write!(f, "refresh queue {QUEUE} ({operation}): {error}"),
            Self::MalformedJob { job } => write!(f, "refresh queue {QUEUE}: a job without the documented shape: {job}"),
            Self::UnknownCopy { copy } => write!(
                f,
                "`{copy}` is not a refreshed copy in this program (not registered, or `refresh = \"never\"`)"
            ),
            Self::SourceNotFound { collection, id } => write!(f, "{collection} {id}: no such document"),
            Self::IdEncode { collection, error } => write!(f, "{collection}: the id does not serialize to BSON: {error}"),
            Self::SourceDeleted { copy, id, documents } => write!(
                f,
                "copy {copy} of {id}: the source is deleted and {documents} documents still reference it (on_delete = \"report\"): delete them or point them at another source"
            ),
            Self::NoChangeStreams { collection, error } => write!(
                f,
                "watching {collection}: the deployment has no change streams (a standalone server); run it as a replica set (a single-node one will do: `mongod --replSet rs0`, then `rs.initiate()`) or connect through mongos: {error}"
            ),
            Self::Watch { collection, operation, error } => {
                write!(f, "watching {collection} ({operation}): {error}")
            }
            Self::Derived { collection, id, what, error } => write!(
                f,
                "{collection} {id}: the document was written, but its {what} were not updated (stale until their TTL): {error}"
            ),
            Self::CacheNotInvalidated { collection, family } => write!(
                f,
                "{collection}: nothing written: its documents are cached by {family}, and no connection is installed to delete their keys after a write; call `keys::invalidate_on_write(&db, redis)` at start-up, give the write row its connection (`run(&db, &mut redis)`), or declare `staleness = \"ttl\"` on {family} to accept cached values stale for up to its TTL"
            ),
        }
    }
}

impl std::error::Error for CopyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Source { error, .. }
            | Self::Copy { error, .. }
            | Self::Commit { error, .. }
            | Self::Refresh { error, .. }
            | Self::Queue { error, .. }
            | Self::NoChangeStreams { error, .. }
            | Self::Watch { error, .. } => Some(error),
            Self::IdEncode { error, .. } => Some(error),
            Self::Derived { error, .. } => Some(&**error as &(dyn std::error::Error + 'static)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_was_left() {
        let e = CopyError::UnknownCopy { copy: "posts.x".into() };
        assert!(e.to_string().contains("posts.x"));
        let e = CopyError::Unsettled { copy: "posts.author_name".into(), id: Bson::from("u1"), rounds: 40 };
        assert!(e.to_string().contains("posts.author_name"), "{e}");
        assert!(e.to_string().contains("\"u1\""), "{e}");
    }
}
