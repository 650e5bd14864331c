//! Hooks: how one pattern reacts to what another does, or adds to what the operations
//! produce, without either importing the other.
//!
//! A pattern fills a hook at link time with `inventory::submit!`, the way
//! `#[derive(Model)]` fills the [model registry](crate::registry); the code that acts
//! calls every registered hook and knows none of them by name. On the write path
//! that code is one module, the write pipeline ([`crate::core::write`]): no writer
//! calls a hook itself.
//!
//! - [`SourceWriteHook`]: after a docshape writer changes a document (the versioned
//!   `save`, `update_one`, `modify` and backfill, the write rows, `denormalized::update_one`),
//!   the hooks keep what is derived from it in line: the denormalized pattern refreshes
//!   or queues its copies, the keys pattern deletes cached keys. A writer that already
//!   keeps one kind in line itself (`denormalized::update_one` writes the copies) skips that
//!   hook by its [`Derived`] kind.
//!   Before writing, the same writers run every [`SourceWriteGuard`]: a hook that
//!   could not do its part afterwards (cached keys with no connection to delete them)
//!   refuses the write up front, so nothing is written.
//! - [`CopyWriteHook`]: after a copy writer (core's `write_copy`, behind every
//!   writer of denormalized copies: the source's writers, the worker, the watcher's
//!   reconcile, `reconcile` and `repair`) rewrote documents holding copies, the hooks
//!   keep what is derived from those documents in line: the keys pattern deletes
//!   their cached keys. Copies are not sources of further copies, so the denormalized
//!   pattern registers none.
//! - [`GeneratedFile`]: a file a pattern adds to the artifacts (the relation pattern's
//!   design-decision table, the keys pattern's catalog).

use bson::{Bson, Document};
use futures_util::future::BoxFuture;
use mongodb::{ClientSession, Database};

use crate::core::descriptor::CopyError;
use crate::core::error::Error;

/// Called after a document of collection `source` with `_id` `id` was written by
/// `update` (an update document), or replaced or changed in unknown ways (`None`).
pub type AfterSourceWrite = for<'a> fn(
    db: &'a Database,
    source: &'static str,
    id: &'a Bson,
    update: Option<&'a Document>,
) -> BoxFuture<'a, Result<(), CopyError>>;

/// The kinds of data derived from a source document, one per pattern that keeps such
/// data in line: what a [`SourceWriteHook`] keeps, and what a writer that keeps it
/// itself skips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Derived {
    /// Denormalized copies of source fields in other documents (`denormalized`).
    Denormalized,
    /// Read-through cache keys of the document (`keys::cache`).
    // Registered by the keys pattern under the `redis` feature only.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    Cache,
    /// Summary documents the source document contributes to (`summary`): the only
    /// kind an insert has.
    Summary,
}

/// A reaction to a source document's write, registered by the pattern that keeps
/// data derived from it.
pub struct SourceWriteHook {
    /// What the hook keeps in line, so that a writer doing that itself can skip it.
    pub kind: Derived,
    /// The reaction.
    pub after_write: AfterSourceWrite,
}

inventory::collect!(SourceWriteHook);

/// A check a writer runs before it changes a document of `source`: whether the
/// pattern of kind `kind` will be able to keep its derived data in line afterwards. An
/// error means the writer writes nothing.
pub type BeforeSourceWrite = fn(db: &Database, source: &'static str) -> Result<(), CopyError>;

/// A [`BeforeSourceWrite`] check, registered by the pattern that keeps derived data:
/// the keys pattern refuses a write whose cached keys nobody would delete.
pub struct SourceWriteGuard {
    /// What the guarded hook keeps in line: a writer that keeps it itself skips the
    /// guard too.
    pub kind: Derived,
    /// The check.
    pub check: BeforeSourceWrite,
}

inventory::collect!(SourceWriteGuard);

/// Called after a document of collection `source` with `_id` `id` was written in
/// `session`, before the caller's transaction (if the session runs one) commits:
/// `Ok(true)` when the hook kept its kind of derived data in line **in that
/// transaction** (so it commits or aborts with the write, and the hook's
/// [`SourceWriteHook`] is skipped afterwards), `Ok(false)` when the session runs no
/// transaction and the ordinary hook is to run.
///
/// `written`: the document as the write left it, when the writer's command returned
/// it (in the transaction, it is what a read would return), so the hook need not
/// read it again. `prior`: what the writer knows of the document before the write.
pub type InSourceSession = for<'a> fn(
    db: &'a Database,
    source: &'static str,
    id: &'a Bson,
    written: Option<&'a Document>,
    prior: Prior<'a>,
    session: &'a mut ClientSession,
) -> BoxFuture<'a, Result<bool, CopyError>>;

/// What a writer knows of a document before its write, for a [`SessionWriteHook`]
/// that needs its old state (a summary's old contribution). A hint the hook
/// verifies in the transaction, never trusted as such: another program may have
/// written the document in between.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Prior<'a> {
    /// Not known (an operator update: its command returns the document as written).
    Unknown,
    /// The write created the document (an insert).
    Absent,
    /// The document as it was, returned by the write's command.
    Was(&'a Document),
    /// The document as it was, returned by the write's command, and the operator
    /// update the command applied to it (the document as written is not returned).
    Updated {
        /// The document before the write.
        before: &'a Document,
        /// The update document sent.
        update: &'a Document,
    },
}

/// A reaction to a source document's write that joins the write's own transaction,
/// registered by a pattern whose derived data must commit with the source (the
/// summaries).
pub struct SessionWriteHook {
    /// What the hook keeps in line.
    pub kind: Derived,
    /// The reaction, in the write's session.
    pub in_session: InSourceSession,
    /// Whether the reaction to a write of `source` reads the written document: a
    /// writer in a transaction then has its command return it.
    pub reads_document: fn(source: &'static str) -> bool,
    /// Whether the reaction to a write of `source` costs less from the document as it
    /// was and the update sent ([`Prior::Updated`]) than from the document as written:
    /// a writer in a transaction then has its command return the former.
    pub reads_prior: fn(source: &'static str) -> bool,
    /// Whether a write of `source` given no transaction is to run in one of its own,
    /// so that what the hook keeps commits with it.
    pub owns_write: fn(source: &'static str) -> bool,
}

inventory::collect!(SessionWriteHook);

/// Runs every [`SessionWriteHook`] for a write of document `id` of `source` made in
/// `session`: the kinds of derived data they kept in line in the session's
/// transaction (none when it runs none).
pub async fn in_source_session(
    db: &Database,
    source: &'static str,
    id: &Bson,
    written: Option<&Document>,
    prior: Prior<'_>,
    session: &mut ClientSession,
) -> Result<Vec<Derived>, CopyError> {
    let mut kept = Vec::new();
    for hook in inventory::iter::<SessionWriteHook> {
        if (hook.in_session)(db, source, id, written, prior, &mut *session).await? {
            kept.push(hook.kind);
        }
    }
    Ok(kept)
}

/// Whether a [`SessionWriteHook`] reads a written document of `source` (so that a
/// writer in a transaction returns it with its command). No I/O.
pub fn session_write_reads_document(source: &'static str) -> bool {
    inventory::iter::<SessionWriteHook>.into_iter().any(|h| (h.reads_document)(source))
}

/// Whether a [`SessionWriteHook`] has a write of `source` given no transaction run in
/// one of its own ([`SessionWriteHook::owns_write`]).
pub fn session_write_owns_write(source: &'static str) -> bool {
    inventory::iter::<SessionWriteHook>.into_iter().any(|h| (h.owns_write)(source))
}

/// Whether a [`SessionWriteHook`] prefers, for a write of `source`, the document as it
/// was and the update sent ([`SessionWriteHook::reads_prior`]).
pub fn session_write_reads_prior(source: &'static str) -> bool {
    inventory::iter::<SessionWriteHook>.into_iter().any(|h| (h.reads_prior)(source))
}

/// Runs every [`SourceWriteGuard`] for a write to `source` that is about to happen
/// but those of the kind `skip`, stopping at the first refusal. No I/O: the guards
/// look at what is installed.
// The hooks' error, `CopyError`, is large but rare: the same type as after a write.
#[allow(clippy::result_large_err)]
pub fn before_source_write_except(
    skip: Option<Derived>,
    db: &Database,
    source: &'static str,
) -> Result<(), CopyError> {
    inventory::iter::<SourceWriteGuard>
        .into_iter()
        .filter(|g| Some(g.kind) != skip)
        .try_for_each(|g| (g.check)(db, source))
}

/// Runs every [`SourceWriteHook`] for one write but those of the kinds `skip` (kept by
/// the writer itself, or in its transaction), in registration order, stopping at the
/// first error. Costs nothing when no hook is interested in `source`.
pub async fn after_source_write_except(
    skip: &[Derived],
    db: &Database,
    source: &'static str,
    id: &Bson,
    update: Option<&Document>,
) -> Result<(), CopyError> {
    for hook in inventory::iter::<SourceWriteHook>.into_iter().filter(|h| !skip.contains(&h.kind)) {
        (hook.after_write)(db, source, id, update).await?;
    }
    Ok(())
}

/// Runs the [`SourceWriteHook`]s of kind [`Derived::Summary`] after document `id` of
/// `source` was inserted: a new document has no copies or cached keys yet, but it
/// counts in the summaries of its collection.
pub async fn after_source_insert(db: &Database, source: &'static str, id: &Bson) -> Result<(), CopyError> {
    for hook in inventory::iter::<SourceWriteHook>.into_iter().filter(|h| h.kind == Derived::Summary) {
        (hook.after_write)(db, source, id, None).await?;
    }
    Ok(())
}

/// Called after a copy writer rewrote the documents `ids` of `collection` (their
/// denormalized copies), once the write is acknowledged. `ids` is one batch (at most a
/// few thousand `_id`s).
pub type AfterCopyWrite = for<'a> fn(
    db: &'a Database,
    collection: &'static str,
    ids: &'a [Bson],
) -> BoxFuture<'a, Result<(), CopyError>>;

/// A reaction to a write of copy documents, registered by the pattern that keeps data
/// derived from them (the keys pattern: their cached keys).
pub struct CopyWriteHook {
    /// Whether the hook has anything to do for a document of `collection`: the copy
    /// writer then learns the `_id`s of exactly the documents it rewrites (it writes
    /// them by `_id`, in batches), instead of one `update_many` by reference.
    pub interested: fn(collection: &'static str) -> bool,
    /// The reaction.
    pub after_write: AfterCopyWrite,
}

inventory::collect!(CopyWriteHook);

/// Whether any [`CopyWriteHook`] must learn which documents of `collection` a copy
/// writer rewrites. No I/O.
pub fn copy_write_watched(collection: &'static str) -> bool {
    inventory::iter::<CopyWriteHook>.into_iter().any(|h| (h.interested)(collection))
}

/// Runs every [`CopyWriteHook`] interested in `collection` after the copy documents
/// `ids` were rewritten, stopping at the first error. Nothing when `ids` is empty.
pub async fn after_copy_write(
    db: &Database,
    collection: &'static str,
    ids: &[Bson],
) -> Result<(), CopyError> {
    if ids.is_empty() {
        return Ok(());
    }
    for hook in inventory::iter::<CopyWriteHook>.into_iter().filter(|h| (h.interested)(collection)) {
        (hook.after_write)(db, collection, ids).await?;
    }
    Ok(())
}

/// A file a pattern adds to the artifacts, built from the registry.
pub struct GeneratedFile {
    /// The file name (no directory).
    pub file_name: &'static str,
    /// Its text, `None` when the program has nothing for it (no key families, say),
    /// or why it cannot be built.
    pub build: fn() -> Result<Option<String>, Error>,
}

inventory::collect!(GeneratedFile);

/// Every registered `GeneratedFile` (above) that has something to say, as `(file name,
/// text)` pairs, ordered by file name; the first error stops.
pub fn generated_files() -> Result<Vec<(&'static str, String)>, Error> {
    let mut out = Vec::new();
    for file in inventory::iter::<GeneratedFile> {
        if let Some(text) = (file.build)()? {
            out.push((file.file_name, text));
        }
    }
    out.sort_by(|a, b| a.0.cmp(b.0));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The hooks are filled from other modules of this crate at link time: a pattern
    // whose registration the linker dropped would fail silently, so check they arrive.
    #[test]
    fn the_patterns_register_their_hooks() {
        let hooks: Vec<Derived> = inventory::iter::<SourceWriteHook>.into_iter().map(|h| h.kind).collect();
        assert!(hooks.contains(&Derived::Denormalized), "{hooks:?}");
        #[cfg(feature = "redis")]
        assert!(hooks.contains(&Derived::Cache), "{hooks:?}");
        let files: Vec<&str> = inventory::iter::<GeneratedFile>.into_iter().map(|f| f.file_name).collect();
        assert!(files.contains(&"DESIGN_DECISIONS.md"), "{files:?}");
        assert!(files.contains(&"KEYS.md"), "{files:?}");
    }
}
