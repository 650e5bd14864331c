//! The descriptors of denormalized copies ([`CopySpec`], [`Refresh`]) that
//! [`Model::COPIES`](crate::Model::COPIES) carries, and the error of keeping copies in
//! line ([`CopyError`]): a versioned write reports it too, through
//! [`crate::core::hooks`]. Updating, queueing and repairing copies is the denormalized
//! pattern's ([`crate::denormalized`]).

// A `CopyError` names the document (`_id` as `Bson`) and carries the driver's error:
// large, but rare and behind a round trip anyway.
#![allow(clippy::result_large_err)]

use std::fmt;

use bson::{Bson, Document};

use crate::core::descriptor::Variant;
pub use crate::core::descriptor::{Cleared, CopyError, CopySpec, OnDelete, Refresh, Refusal};

/// How many documents of another tenant referencing a source a refresh names
/// ([`CopyError::CrossTenant`]): enough to find them, bounded like any report.
pub(crate) const CROSS_TENANT_REPORTED: usize = 100;

pub(crate) mod refresh;

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
pub const fn nested_vias_indexed(nested: &crate::core::descriptor::Nested, leading_keys: &[&str]) -> bool {
    let mut parts: [&str; 10] = [""; 10];
    walk_vias(nested, &mut parts, 0, leading_keys)
}

const fn walk_vias(
    n: &crate::core::descriptor::Nested,
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
pub(crate) fn placed(nested: &'static [crate::core::descriptor::Nested]) -> Vec<Placed> {
    fn walk(
        prefix: &str,
        arrays: &[String],
        variant: Option<Variant>,
        nested: &'static [crate::core::descriptor::Nested],
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

/// The refresh queue: reserved for the jobs of async copies and async summaries (see
/// the [denormalized module](crate::denormalized)).
pub use crate::core::queue::QUEUE;

/// Where the change-stream watchers of copies' sources keep their positions:
/// reserved for the denormalized pattern (see [`crate::denormalized::Watcher`]).
pub const WATCH_POSITIONS: &str = "docshape_watch";

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
            Self::CrossTenant { copy, id, holders } => write!(
                f,
                "copy {copy} of {id}: {}{} document(s) of another tenant reference the source (written around docshape); left as they were, the source's value went to its own tenant's documents only: {holders:?}",
                holders.len(),
                if holders.len() >= CROSS_TENANT_REPORTED { " or more" } else { "" },
            ),
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
