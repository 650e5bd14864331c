//! The write pipeline: the effects a model declares once, applied by every docshape
//! writer around its command, in one order, from this one module.
//!
//! Each writer builds its own command (a write row's `update` or `findAndModify`, a
//! versioned save's compare-and-set, a bucket's guarded upsert, a copy refresh's
//! bulk write), because their shapes and their retries differ; what happens around
//! the command is not theirs to decide. For a write to a document of `collection`,
//! [`Effects`] applies, in this order:
//!
//! 1. **Guards** ([`Effects::check`]), before anything is sent: every pattern that
//!    keeps data derived from the collection's documents confirms it will be able to
//!    do its part afterwards (cached keys with no connection to delete them refuse
//!    the write), so a refused write writes nothing.
//! 2. **Stamps** ([`Effects::on_update`], [`Effects::on_upsert`],
//!    [`Effects::on_insert`]), inside the command itself: `#[updated_at]` from the
//!    server's clock (`$currentDate`), `#[revision]` incremented (`$inc`),
//!    `#[created_at]` on creation ([`crate::stamps`]). One command: no window in which
//!    the document is written and not stamped.
//! 3. **The command**, the writer's own. A revision-guarded write that matched nothing
//!    reads once to tell a conflict ([`crate::access::UpdateError::Conflict`]) from a
//!    missing document.
//! 4. **Derived data** ([`Effects::after`]), once the write is acknowledged: the
//!    document's denormalized copies elsewhere (written now or queued for the worker,
//!    per copy), then the cached keys that read it. In a [`crate::transaction`]'s body
//!    this waits for the commit (an aborted attempt's writes are forgotten with it).
//!    A writer of copies ([`Effects::after_copies`]) has only the caches to keep:
//!    copies are not sources of further copies.
//!    A write made in a session ([`Effects::after_in`]) first offers the session to
//!    the derived data that must commit with the source (a `sync` summary): when the
//!    session runs a transaction, it is written in it, before the commit, so both
//!    commit or neither.
//!
//! When the collection keeps data that must commit with its writes (a `sync`
//! summary, [`Effects::commits_with_source`]) and the caller gave no transaction, the
//! writers that take a session (write and upsert rows, inserts, versioned saves,
//! soft deletes and restores) and `versioning::update_one` and `modify` run steps 3
//! and 4 in a transaction of their own
//! ([`crate::core::transaction::for_write`]; in the caller's session when it gave one
//! that runs none): the command and that data commit together or not at all, and the
//! rest of step 4 waits for the commit. So do outlier pushes and bucket appends (in
//! a transaction always their own: they take no session). `denormalized::update_one`
//! does the same in the transaction it runs for the source and its copies
//! ([`crate::core::transaction::scoped`], then
//! [`crate::core::transaction::after_commit`]).
//!
//! An insert creates a document: it has step 2, and of step 4 only the summaries it
//! counts in ([`Effects::after_insert`], or [`Effects::after_insert_in`] for one made
//! in a session): no copy of it exists elsewhere yet, and a cached row never caches a
//! miss.
//!
//! The writers that go through it: write and upsert rows (`core::access::update`),
//! inserts (`relation::insert_one`, `relation::insert_many` and their `_in` session
//! forms, `versioning::insert_one` and `insert_one_in`), soft deletes and restores (`core::soft_delete`),
//! versioned saves, `versioning::update_one` and `modify` and backfill
//! (`patterns::versioning`), `denormalized::update_one`, every copy refresh (the
//! worker, the watcher, `reconcile`, `repair`: `core::denormalized::refresh`),
//! outlier pushes (`patterns::outlier`), bucket appends (`patterns::bucket`) and
//! time-series inserts (`patterns::timeseries`).
//!
//! Steps 1 and 4 are kept by patterns this layer does not import (the copies by
//! `denormalized`, the caches by `keys`): they register their part in
//! [`crate::core::hooks`] at link time, because what they keep is declared on other
//! types than the model written (a copy on the model that holds it, a cache on a key
//! family). The pipeline is the only caller of those hooks.

use std::sync::{Arc, Mutex, PoisonError};

use bson::{Bson, Document};
use mongodb::{ClientSession, Database};

use crate::core::descriptor::CopyError;
use crate::core::descriptor::Stamps;
use crate::core::hooks::{self, Derived};
use crate::core::model::Model;

/// The declared effects of a write to one collection, applied in the order of the
/// [module docs](self).
#[derive(Debug, Clone, Copy)]
pub struct Effects {
    collection: &'static str,
    stamps: Stamps,
    /// Derived data the writer keeps itself (`denormalized::update_one` writes the
    /// copies in its own transaction): its guard and hook are skipped.
    kept: Option<Derived>,
    /// Derived data already written in the write's transaction
    /// ([`Effects::after_in`]): its hook is skipped after the write.
    in_transaction: Option<Derived>,
}

impl Effects {
    /// The effects of writing a document of model `T`.
    pub fn of<T: Model>() -> Self {
        Effects { collection: T::COLLECTION, stamps: T::STAMPS, kept: None, in_transaction: None }
    }

    /// The effects of writing a document of `collection`, from the registry: for the
    /// writers that know a collection, not a type (the copy refresh).
    pub fn of_collection(collection: &'static str) -> Self {
        Effects { collection, stamps: Stamps::of_collection(collection), kept: None, in_transaction: None }
    }

    /// The same effects but `kind`, which the writer keeps in line itself.
    pub fn keeping(mut self, kind: Derived) -> Self {
        self.kept = Some(kind);
        self
    }

    /// The model's stamps.
    pub fn stamps(&self) -> Stamps {
        self.stamps
    }

    /// Step 1: whether the write may go ahead. No I/O.
    // The hooks' error, `CopyError`, is large but rare.
    #[allow(clippy::result_large_err)]
    pub fn check(&self, db: &Database) -> Result<(), CopyError> {
        let checked = hooks::before_source_write_except(self.kept, db, self.collection);
        if let Err(e) = &checked {
            crate::core::trace::event!(DEBUG, collection = self.collection, error = %e, "write refused before sending");
        }
        checked
    }

    /// Step 2 for an update of an existing document (an update document of operators).
    pub fn on_update(&self, update: &mut Document) {
        self.stamps.on_update(update);
    }

    /// Step 2 for an upsert: [`Effects::on_update`], and `#[created_at]` on insert.
    pub fn on_upsert(&self, update: &mut Document) {
        self.stamps.on_upsert(update);
    }

    /// Step 2 for a document about to be inserted.
    pub fn on_insert(&self, document: &mut Document) {
        self.stamps.on_insert(document);
    }

    /// Step 4 after a write of document `id` by `update` (`None`: created, replaced or
    /// changed in unknown ways, so every copy of it is refreshed). `in_session`: the
    /// write was made in a session, which may be a running transaction's.
    pub async fn after(
        &self,
        db: &Database,
        id: &Bson,
        update: Option<&Document>,
        in_session: bool,
    ) -> Result<(), CopyError> {
        if in_session && defer(*self, db, id, update) {
            crate::core::trace::event!(
                DEBUG,
                collection = self.collection,
                "derived data deferred to the commit"
            );
            return Ok(());
        }
        let skip: Vec<Derived> = self.kept.into_iter().chain(self.in_transaction).collect();
        hooks::after_source_write_except(&skip, db, self.collection, id, update).await
    }

    /// Step 4 after a write of document `id` by `update` made in `session` (`None`:
    /// outside any), as [`Effects::after`]; when the session runs a transaction, what
    /// must commit with the source (a `sync` summary's application, an `async` one's
    /// queue record) is written in it first, before the caller commits.
    ///
    /// `written`: the document as the write left it, when the writer's command
    /// returned it (see [`Effects::reads_document`]).
    pub async fn after_in(
        &self,
        db: &Database,
        id: &Bson,
        update: Option<&Document>,
        written: Option<&Document>,
        session: Option<&mut ClientSession>,
    ) -> Result<(), CopyError> {
        self.after_in_from(db, id, update, written, hooks::Prior::Unknown, session).await
    }

    /// [`Effects::after_in`] for a writer that also knows the document as it was
    /// before the write (`prior`: its command returned it), which saves what is kept
    /// in the transaction a read of its old state (a summary's old contribution).
    pub(crate) async fn after_in_from(
        &self,
        db: &Database,
        id: &Bson,
        update: Option<&Document>,
        written: Option<&Document>,
        prior: hooks::Prior<'_>,
        session: Option<&mut ClientSession>,
    ) -> Result<(), CopyError> {
        let Some(session) = session else { return self.after(db, id, update, false).await };
        let mut rest = *self;
        // One kind registers such a hook (the summaries); more would need a set here.
        rest.in_transaction =
            hooks::in_source_session(db, self.collection, id, written, prior, session).await?.pop();
        rest.after(db, id, update, true).await
    }

    /// Whether what a write in a transaction keeps in line reads the written document
    /// (a `sync` summary computes its contribution from it): a writer whose command can
    /// return it (a `findAndModify`) then does, and passes it to
    /// [`Effects::after_in`], which saves a read. No I/O.
    pub fn reads_document(&self) -> bool {
        hooks::session_write_reads_document(self.collection)
    }

    /// Whether the collection keeps data that must commit with its writes (a `sync`
    /// summary): a writer given no transaction then runs its command and that data in
    /// one transaction of its own ([`crate::core::transaction::for_write`]), so that
    /// both commit or neither, and what the write derives after it (copies, cached
    /// keys) waits for that commit. No I/O.
    pub(crate) fn commits_with_source(&self) -> bool {
        hooks::session_write_owns_write(self.collection)
    }

    /// Whether what a write in a transaction keeps in line costs less from the
    /// document as it was and the update sent than from the document as written (a
    /// `sync` summary on a server with `bulkWrite`): a write row's command then returns
    /// the former, passed to [`Effects::after_in_from`]. No I/O.
    pub(crate) fn reads_prior(&self) -> bool {
        hooks::session_write_reads_prior(self.collection)
    }

    /// Step 4 after document `id` was inserted (not in a session): the summaries it
    /// counts in ([`crate::core::hooks::after_source_insert`]).
    pub async fn after_insert(&self, db: &Database, id: &Bson) -> Result<(), CopyError> {
        hooks::after_source_insert(db, self.collection, id).await
    }

    /// Step 4 after document `id` was inserted in `session` (`None`: outside any): in
    /// a running transaction, the summaries it counts in are written in it (from
    /// `written`, the inserted document, when it holds its `_id`; else read in the
    /// transaction), so they commit with the insert; otherwise as
    /// [`Effects::after_insert`], after the write.
    pub async fn after_insert_in(
        &self,
        db: &Database,
        id: &Bson,
        written: Option<&Document>,
        session: Option<&mut ClientSession>,
    ) -> Result<(), CopyError> {
        if let Some(session) = session {
            let kept =
                hooks::in_source_session(db, self.collection, id, written, hooks::Prior::Absent, session)
                    .await?;
            if kept.contains(&Derived::Summary) {
                return Ok(());
            }
        }
        self.after_insert(db, id).await
    }

    /// Step 4 after a copy writer rewrote the documents `ids` (one batch, at most a
    /// few thousand) of this collection.
    pub async fn after_copies(&self, db: &Database, ids: &[Bson]) -> Result<(), CopyError> {
        hooks::after_copy_write(db, self.collection, ids).await
    }

    /// Whether step 4 of a copy writer needs the `_id`s of the documents it rewrites.
    pub fn copies_watched(&self) -> bool {
        hooks::copy_write_watched(self.collection)
    }
}

// The writes of a running transaction wait here for its commit: kept with the writer
// that defers them, so that the transaction (which drains them) reads the writer and
// not the other way round.

/// A hook run deferred to the commit: what a write row wrote in the transaction.
pub(crate) struct Written {
    pub(crate) effects: Effects,
    pub(crate) db: Database,
    pub(crate) id: Bson,
    pub(crate) update: Option<Document>,
}

pub(crate) type Deferred = Arc<Mutex<Vec<Written>>>;

tokio::task_local! {
    /// Set while a [`crate::core::transaction::transaction`]'s body runs: the writes whose hooks wait for the commit.
    pub(crate) static AFTER_COMMIT: Deferred;
    /// Set with [`AFTER_COMMIT`]: the logical session id (`lsid`) of the running
    /// transaction's session, so that a write made in it is known to be in a
    /// transaction from docshape's own state.
    pub(crate) static TRANSACTION_SESSION: Document;
}

/// Defers what is derived from a document written in the session of a running
/// [`crate::core::transaction::transaction`] to its commit (an aborted attempt's writes are forgotten with it):
/// `true` when deferred, `false` when no transaction's body is running, so the caller
/// ([`crate::core::write::Effects::after`]) applies it now.
fn defer(effects: Effects, db: &Database, id: &Bson, update: Option<&Document>) -> bool {
    AFTER_COMMIT
        .try_with(|d| {
            d.lock().unwrap_or_else(PoisonError::into_inner).push(Written {
                effects,
                db: db.clone(),
                id: id.clone(),
                update: update.cloned(),
            })
        })
        .is_ok()
}
