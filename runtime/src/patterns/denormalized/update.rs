//! Updating a source document and the copies its update may touch, in one
//! transaction or in the documented sequential order.

use crate::core::hooks::Derived;
use crate::core::write::Effects;
use bson::{doc, Bson, Document};
use mongodb::error::{TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};
use mongodb::options::{ReturnDocument, UpdateModifications};
use mongodb::{ClientSession, Database};

use super::apply::enqueue;
use super::refresh::after_write;
use super::spec::{dependents, touches};
use crate::core::denormalized::refresh::{options, projection, value_at, CopyWrite};
use crate::core::denormalized::{CopyError, CopySpec, Refresh};
use crate::core::model::{eq, IdOf, Identified};
// The transaction rules every docshape transaction follows (`docshape::transaction` too).
use crate::core::transaction::{
    after_commit, backoff, is_transient as retry_transaction, mongo_error_in, no_transactions, scoped,
    with_session, COMMIT_ATTEMPTS, TRANSACTION_TIME,
};
use crate::core::write::Deferred;

/// Whether [`update_one_with`] writes the source and its copies in one transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Atomicity {
    /// A transaction when the deployment has them (a replica set or a sharded
    /// cluster), the sequential order otherwise (see the [module docs](crate::denormalized)). A
    /// standalone server is found out by its refusal of the first write, which has no
    /// effect; no command is spent asking.
    #[default]
    Auto,
    /// Always a transaction: [`CopyError::NoTransactions`] on a standalone server.
    Transaction,
    /// Never a transaction: the source, then each copy, in the documented order.
    Sequential,
}

/// [`update_one_with`]'s settings: `UpdateOptions::default()` and the setter,
/// `UpdateOptions::default().atomicity(Atomicity::Sequential)`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct UpdateOptions {
    /// Whether the writes are one transaction. Default [`Atomicity::Auto`].
    pub atomicity: Atomicity,
}

impl UpdateOptions {
    /// Sets the field `atomicity`.
    pub fn atomicity(mut self, atomicity: Atomicity) -> Self {
        self.atomicity = atomicity;
        self
    }
}

/// What one touched copy got from [`update_one`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyAction {
    /// A sync copy, written in the call.
    Synced {
        /// Documents referencing the source.
        matched: u64,
        /// Documents whose copy changed.
        modified: u64,
    },
    /// An async copy: its job is in the queue.
    Enqueued,
    /// A `Never` copy: left as it was, a snapshot.
    Kept,
}

/// One copy an update touched, and what was done with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyUpdate {
    /// The copy.
    pub copy: &'static CopySpec,
    /// What was done.
    pub action: CopyAction,
}

/// What [`update_one`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceUpdate {
    /// Source documents matched: 0 or 1. With 0, no copy was touched.
    pub matched: u64,
    /// Source documents modified, when known: an update that touches a sync copy is
    /// made with `findAndModify` (for the new value), which does not say; `None` then.
    pub modified: Option<u64>,
    /// Whether the writes were one transaction.
    pub transaction: bool,
    /// The copies the update may have touched, in registry order (only when the
    /// source matched).
    pub copies: Vec<CopyUpdate>,
}

impl SourceUpdate {
    /// Copy documents modified by sync copies.
    pub fn documents_updated(&self) -> u64 {
        self.copies
            .iter()
            .map(|c| match c.action {
                CopyAction::Synced { modified, .. } => modified,
                _ => 0,
            })
            .sum()
    }

    /// Jobs enqueued for async copies.
    pub fn jobs_enqueued(&self) -> u64 {
        self.copies.iter().filter(|c| c.action == CopyAction::Enqueued).count() as u64
    }
}

/// Updates the source document `{_id: id}` of `S` with `update` (an update document or
/// pipeline), and every copy of a field it may touch by the copy's policy, with
/// [`Atomicity::Auto`]: see the [module docs](crate::denormalized) for what is written, in which
/// order, and what an error leaves.
///
/// ```no_run
/// # use docshape::Model;
/// # #[derive(serde::Serialize, serde::Deserialize, Model)]
/// # #[model(collection = "users")]
/// # struct User { #[serde(rename = "_id")] id: String, name: String }
/// # async fn run(db: &docshape::mongodb::Database) -> Result<(), docshape::denormalized::CopyError> {
/// use docshape::bson::doc;
/// let done = docshape::denormalized::update_one::<User>(db, "u1", doc! { "$set": { "name": "Ada" } }).await?;
/// println!("{} posts renamed, {} refreshes queued", done.documents_updated(), done.jobs_enqueued());
/// # Ok(()) }
/// ```
pub async fn update_one<S: Identified>(
    db: &Database,
    id: &(impl IdOf<S> + ?Sized),
    update: impl Into<UpdateModifications>,
) -> Result<SourceUpdate, CopyError> {
    update_one_with::<S>(db, id, update, &UpdateOptions::default()).await
}

/// [`update_one`] with settings.
pub async fn update_one_with<S: Identified>(
    db: &Database,
    id: &(impl IdOf<S> + ?Sized),
    update: impl Into<UpdateModifications>,
    options: &UpdateOptions,
) -> Result<SourceUpdate, CopyError> {
    let id = id.id_bson().map_err(|error| CopyError::IdEncode { collection: S::COLLECTION, error })?;
    // What other patterns derive from the source must be kept in line after the
    // write, or nothing is written (cached keys nobody would delete).
    // The write pipeline's effects, but the copies, which this writer writes itself
    // (in the source write's transaction when there is one).
    let effects = Effects::of::<S>().keeping(Derived::Denormalized);
    effects.check(db)?;
    let mut update = update.into();
    // The source's stamps, in the same command (a pipeline update is the caller's
    // own: it is sent as given).
    if let UpdateModifications::Document(d) = &mut update {
        effects.on_update(d);
    }
    let written = match &update {
        UpdateModifications::Document(d) => Some(d.clone()),
        _ => None,
    };
    let write = SourceWrite::new(db, S::COLLECTION, id.clone(), update, effects, written);
    // A transaction when a copy is kept in step with the write, or when the source
    // keeps data that must commit with its writes (a `sync` summary).
    let keeps = write.touched.iter().any(|c| c.refresh != Refresh::Never) || effects.commits_with_source();
    let committed = match (keeps, options.atomicity) {
        // One write and nothing to keep in step with it: no transaction needed.
        (false, _) | (_, Atomicity::Sequential) => None,
        (true, Atomicity::Transaction) => match write.transaction().await? {
            Some(done) => Some(done),
            None => return Err(CopyError::NoTransactions { collection: S::COLLECTION }),
        },
        (true, Atomicity::Auto) => write.transaction().await?,
    };
    // In a transaction, the derived data was written in it (the summaries) or after
    // its commit (cached keys). Otherwise: the copies are written by `sequential`;
    // what other patterns derive from the source (a summary, a read-through cache's
    // keys) is kept in line by their hooks, as after every docshape writer.
    match committed {
        Some(done) => Ok(done),
        None => {
            let done = write.sequential().await?;
            if done.matched > 0 {
                write.effects.after(db, &write.id, write.written.as_ref(), false).await?;
            }
            Ok(done)
        }
    }
}

/// Where a source update failed.
enum Stage {
    Source,
    Copy(&'static CopySpec),
}

/// Why one attempt of [`SourceWrite::transaction`] failed.
enum Failed {
    /// A command of the source write or of a copy.
    At(Stage, mongodb::error::Error),
    /// What the write derives in its transaction (a `sync` summary), as the write
    /// pipeline reports it.
    Derived(CopyError),
}

impl Failed {
    /// The driver's error, for the retry rules.
    fn mongo(&self) -> Option<&mongodb::error::Error> {
        match self {
            Failed::At(_, e) => Some(e),
            Failed::Derived(e) => mongo_error_in(e),
        }
    }
}

/// One source update and the copies it touches.
struct SourceWrite<'a> {
    db: &'a Database,
    source: &'static str,
    id: Bson,
    update: UpdateModifications,
    touched: Vec<&'static CopySpec>,
    /// The write pipeline's effects of the source, but the copies (written here).
    effects: Effects,
    /// The update document sent, for the derived data's hooks (`None`: a pipeline).
    written: Option<Document>,
}

impl<'a> SourceWrite<'a> {
    fn new(
        db: &'a Database,
        source: &'static str,
        id: Bson,
        update: UpdateModifications,
        effects: Effects,
        written: Option<Document>,
    ) -> Self {
        let touched = dependents(source).into_iter().filter(|c| touches(&update, c.source_field)).collect();
        Self { db, source, id, update, touched, effects, written }
    }

    fn sync_copies(&self) -> impl Iterator<Item = &'static CopySpec> + '_ {
        self.touched.iter().copied().filter(|c| c.refresh == Refresh::Sync)
    }

    fn error(&self, stage: Stage, error: mongodb::error::Error, source_updated: bool) -> CopyError {
        match stage {
            Stage::Source => CopyError::Source { collection: self.source, id: self.id.clone(), error },
            Stage::Copy(spec) => {
                CopyError::Copy { copy: spec.key(), id: self.id.clone(), source_updated, error }
            }
        }
    }

    /// The source write, with `session` when given: `(matched, modified, the updated
    /// document)`, the document (projected to the sync copies' fields) only when a sync
    /// copy was touched (`findAndModify` returns it; an `update` says `modified`).
    async fn write_source(
        &self,
        mut session: Option<&mut ClientSession>,
    ) -> mongodb::error::Result<(u64, Option<u64>, Option<Document>)> {
        let source = self.db.collection::<Document>(self.source);
        let filter = doc! { "_id": eq(self.id.clone()) };
        if self.sync_copies().next().is_none() {
            let done = with_session!(source.update_one(filter, self.update.clone()), session)?;
            return Ok((done.matched_count, Some(done.modified_count), None));
        }
        let after = with_session!(
            source
                .find_one_and_update(filter, self.update.clone())
                .projection(projection(
                    self.sync_copies()
                        .map(|c| c.source_field)
                        .chain(self.sync_copies().filter_map(|c| c.source_tenant)),
                ))
                .return_document(ReturnDocument::After),
            session
        )?;
        Ok((u64::from(after.is_some()), None, after))
    }

    /// The source write, then every touched copy, in `session`'s transaction: each
    /// sync copy by the one statement that writes it
    /// ([`CopyWrite::statement`]); the async copies' jobs are enqueued after the commit
    /// (see `transaction`).
    ///
    /// Also returns, per copy in documents whose derived data a hook keeps (cached
    /// keys), the `_id`s of the copy documents the transaction rewrites: read in it, so
    /// they are exactly those its `update_many` writes (a document that comes to
    /// reference the source meanwhile conflicts with the transaction instead).
    ///
    /// Then what the write derives that must commit with it (a `sync` summary's
    /// application, an `async` one's job) is written in the transaction by the write
    /// pipeline's session step ([`Effects::after_in`]), which leaves the rest (cached
    /// keys) to the commit: run in [`scoped`], whose caller runs [`after_commit`].
    async fn write(
        &self,
        session: &mut ClientSession,
    ) -> Result<(SourceUpdate, Vec<(&'static CopySpec, Vec<Bson>)>), Failed> {
        let (report, rewritten) =
            self.write_copies(session).await.map_err(|(stage, e)| Failed::At(stage, e))?;
        if report.matched > 0 {
            self.effects
                .after_in(self.db, &self.id, self.written.as_ref(), None, Some(session))
                .await
                .map_err(Failed::Derived)?;
        }
        Ok((report, rewritten))
    }

    /// The source write and the copies of [`SourceWrite::write`].
    async fn write_copies(
        &self,
        session: &mut ClientSession,
    ) -> Result<(SourceUpdate, Vec<(&'static CopySpec, Vec<Bson>)>), (Stage, mongodb::error::Error)> {
        let (matched, modified, after) =
            self.write_source(Some(&mut *session)).await.map_err(|e| (Stage::Source, e))?;
        let mut report = SourceUpdate { matched, modified, transaction: true, copies: Vec::new() };
        let mut rewritten = Vec::new();
        if matched == 0 {
            return Ok((report, rewritten));
        }
        for &spec in &self.touched {
            let action = match spec.refresh {
                Refresh::Never => CopyAction::Kept,
                Refresh::Sync => {
                    let value = after.as_ref().and_then(|a| value_at(a, spec.source_field));
                    // The source's tenant, read in the transaction with its value: a
                    // copy between tenant models goes to its tenant's documents only.
                    let tenant = spec
                        .source_tenant
                        .map(|t| after.as_ref().and_then(|a| a.get(t)).cloned().unwrap_or(Bson::Null));
                    let write = CopyWrite {
                        spec,
                        source: &self.id,
                        value: value.as_ref(),
                        only: None,
                        tenant: tenant.as_ref(),
                    };
                    let effects = Effects::of_collection(spec.collection);
                    let (filter, update, filters) = match effects.stamps().is_empty() {
                        true => write.statement(),
                        false => write.changing_statement(),
                    };
                    let target = self.db.collection::<Document>(spec.collection);
                    if effects.copies_watched() {
                        let ids = ids_in(&target, filter.clone(), session)
                            .await
                            .map_err(|e| (Stage::Copy(spec), e))?;
                        rewritten.push((spec, ids));
                    }
                    let done = target
                        .update_many(filter, update)
                        .with_options(options(&filters))
                        .session(&mut *session)
                        .await
                        .map_err(|e| (Stage::Copy(spec), e))?;
                    CopyAction::Synced { matched: done.matched_count, modified: done.modified_count }
                }
                Refresh::Async { .. } => CopyAction::Enqueued,
            };
            report.copies.push(CopyUpdate { copy: spec, action });
        }
        Ok((report, rewritten))
    }

    /// Without a transaction: the source, then the copies by the path every writer
    /// outside a transaction takes ([`after_write`]: jobs, then sync copies, settled).
    async fn sequential(&self) -> Result<SourceUpdate, CopyError> {
        let (matched, modified, after) =
            self.write_source(None).await.map_err(|e| self.error(Stage::Source, e, true))?;
        let mut report = SourceUpdate { matched, modified, transaction: false, copies: Vec::new() };
        if matched > 0 {
            report.copies = after_write(self.db, self.source, &self.id, &self.touched, after).await?;
        }
        Ok(report)
    }

    /// The writes in one transaction, retried on transient errors; `None` when the
    /// deployment has no transactions (then nothing was written).
    async fn transaction(&self) -> Result<Option<SourceUpdate>, CopyError> {
        let mut session = match self.db.client().start_session().await {
            Ok(s) => s,
            Err(e) if no_transactions(&e) => return Ok(None),
            Err(e) => return Err(self.error(Stage::Source, e, false)),
        };
        let started = std::time::Instant::now();
        let mut attempt = 0;
        'transaction: loop {
            attempt += 1;
            let may_retry =
                |e: &mongodb::error::Error| started.elapsed() < TRANSACTION_TIME && retry_transaction(e);
            match session.start_transaction().await {
                Ok(()) => {}
                Err(e) if no_transactions(&e) => return Ok(None),
                Err(e) => return Err(self.error(Stage::Source, e, false)),
            }
            // What the attempt's writes defer to its commit; an aborted attempt's are
            // forgotten with it.
            let deferred = Deferred::default();
            let lsid = session.id().clone();
            let (report, rewritten) = match scoped(deferred.clone(), lsid, self.write(&mut session)).await {
                Ok(written) => written,
                Err(failed) => {
                    // The server aborts it anyway when this fails; the error that
                    // matters is the one that made us abort.
                    let _ = session.abort_transaction().await;
                    if let Failed::At(Stage::Source, e) = &failed {
                        if attempt == 1 && no_transactions(e) {
                            return Ok(None);
                        }
                    }
                    if failed.mongo().is_some_and(may_retry) {
                        tokio::time::sleep(backoff(attempt)).await;
                        continue 'transaction;
                    }
                    return Err(match failed {
                        Failed::At(stage, e) => self.error(stage, e, false),
                        Failed::Derived(e) => e,
                    });
                }
            };
            let mut commits = 0;
            loop {
                commits += 1;
                match session.commit_transaction().await {
                    Ok(()) => {
                        self.after_commit(&rewritten).await?;
                        let report = self.enqueue_after_commit(report).await?;
                        after_commit(&deferred).await?;
                        return Ok(Some(report));
                    }
                    Err(e)
                        if e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
                            && commits < COMMIT_ATTEMPTS => {}
                    Err(e) if e.contains_label(TRANSIENT_TRANSACTION_ERROR) && may_retry(&e) => {
                        tokio::time::sleep(backoff(attempt)).await;
                        continue 'transaction;
                    }
                    Err(error) => {
                        return Err(CopyError::Commit { collection: self.source, id: self.id.clone(), error })
                    }
                }
            }
        }
    }

    /// What is derived from the copy documents a committed transaction rewrote (their
    /// cached keys), kept in line now that the new copies are visible.
    async fn after_commit(&self, rewritten: &[(&'static CopySpec, Vec<Bson>)]) -> Result<(), CopyError> {
        for (spec, ids) in rewritten {
            for chunk in ids.chunks(1000) {
                Effects::of_collection(spec.collection).after_copies(self.db, chunk).await?;
            }
        }
        Ok(())
    }

    /// The async copies' jobs of a committed transaction. They are not part of it: a
    /// worker renewing its lease on the same job would make the transaction conflict
    /// and start over, for as long as the worker runs. Enqueued after the commit, a job
    /// still comes after the source write, which is what convergence needs.
    async fn enqueue_after_commit(&self, report: SourceUpdate) -> Result<SourceUpdate, CopyError> {
        for c in report.copies.iter().filter(|c| c.action == CopyAction::Enqueued) {
            enqueue(self.db, c.copy, &self.id).await.map_err(|e| self.error(Stage::Copy(c.copy), e, true))?;
        }
        Ok(report)
    }
}

/// The `_id`s of the documents `filter` matches, read in `session`.
async fn ids_in(
    target: &mongodb::Collection<Document>,
    filter: Document,
    session: &mut ClientSession,
) -> mongodb::error::Result<Vec<Bson>> {
    let mut cursor = target.find(filter).projection(doc! { "_id": 1 }).session(&mut *session).await?;
    let mut ids = Vec::new();
    while let Some(document) = cursor.next(&mut *session).await.transpose()? {
        ids.push(document.get("_id").cloned().unwrap_or(Bson::Null));
    }
    Ok(ids)
}
