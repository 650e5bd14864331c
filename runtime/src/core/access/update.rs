//! Write rows: an `#[access]` row that declares `update(...)` is a typed
//! single-command update of one document.
//!
//! ```text
//! #[access(name = "add_item", operation = "Add item to cart", filter(_id),
//!          update(push(items)), freq = "50 w/s", consistency = "strong (same doc)")]
//! ```
//!
//! generates `Cart::add_item(id, item)`, whose [`Update::run`] sends one command: the
//! row's filter (every value under `$eq`) and the update (`$push` of `{$each: [v]}`,
//! `$set`, `$inc`, `$pull` of the typed values), as an `update` when the filter names `_id`, else
//! as a `findAndModify` projected to `_id` (which tells which document it wrote). A
//! `push` into an array with a bound (`#[embed(max = N)]` or
//! `#[validate(max_items = N)]`) also requires `"items.<N-1>": {$exists: false}` in
//! that same filter: the server checks the bound and applies the push atomically, so
//! any number of concurrent writers never take the array past `N`. A full array is
//! [`UpdateError::Full`], a missing document [`UpdateError::NotFound`]; telling them
//! apart costs one more read, only when nothing was updated.
//!
//! After the write, the hooks of the patterns that keep data derived from the
//! document run (copies of its fields are refreshed or queued), as for every docshape
//! writer.

mod error;

pub use error::UpdateError;

use bson::{doc, Bson, Document};
use mongodb::{ClientSession, Database};

use crate::core::access::find::{FindError, NoSession, SessionSlot};
use crate::core::access::literal::{Chained, Literal};
use crate::core::descriptor::AccessPattern;
use crate::core::descriptor::CopyError;
use crate::core::model::Model;

/// A bounded array a `push` writes into: its stored path and bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushBound {
    /// The array's stored path.
    pub field: &'static str,
    /// The most items it may hold.
    pub max: u64,
}

/// The update document of a write row, built from typed values by generated code,
/// each written by the literal encoder. The calls chain by value, the first value the
/// encoder refuses kept for [`build`](Self::build), as [`FilterBuilder`]'s.
///
/// [`FilterBuilder`]: crate::core::access::find::FilterBuilder
#[derive(Debug, Default, Clone)]
pub struct UpdateBuilder {
    update: Document,
    bounds: Vec<PushBound>,
    /// The `_id` an upsert sets on insert, made fresh for this call.
    generated_id: Option<Bson>,
    values: Chained,
}

impl UpdateBuilder {
    /// An empty update.
    pub fn new() -> Self {
        Self::default()
    }

    fn op(&mut self, op: &str) -> &mut Document {
        if !self.update.contains_key(op) {
            self.update.insert(op, Document::new());
        }
        match self.update.get_mut(op) {
            Some(Bson::Document(d)) => d,
            _ => unreachable!("inserted as a document above"),
        }
    }

    /// `update[op][path]` = `value` written literally, unless a value was refused.
    fn put<T: serde::Serialize + ?Sized>(mut self, op: &str, path: &str, value: &T) -> Self {
        if let Some(value) = self.values.write(value) {
            self.op(op).insert(path, value);
        }
        self
    }

    /// `$set: {path: value}`.
    pub fn set<T: serde::Serialize + ?Sized>(self, path: &str, value: &T) -> Self {
        self.put("$set", path, value)
    }

    /// `$inc: {path: by}`.
    pub fn inc<T: serde::Serialize + ?Sized>(self, path: &str, by: &T) -> Self {
        self.put("$inc", path, by)
    }

    /// `$push: {path: {$each: [item]}}`, refused by the filter when `bound` says the
    /// array is full. The `$each` form makes the server read `item` as the element,
    /// whatever it holds: a document element shaped as `$push` modifiers
    /// (`{$each: [...], $slice: 0}`) is pushed, not obeyed, so it can neither empty the
    /// array nor push several elements past the bound guard.
    pub fn push<T: serde::Serialize + ?Sized>(
        mut self,
        path: &str,
        item: &T,
        bound: Option<PushBound>,
    ) -> Self {
        if let Some(item) = self.values.write(item) {
            self.op("$push").insert(path, Literal::stored(item).each());
        }
        self.bounds.extend(bound);
        self
    }

    /// `$min: {path: value}`: stored when the field is missing or greater.
    pub fn min<T: serde::Serialize + ?Sized>(self, path: &str, value: &T) -> Self {
        self.put("$min", path, value)
    }

    /// `$max: {path: value}`: stored when the field is missing or smaller.
    pub fn max<T: serde::Serialize + ?Sized>(self, path: &str, value: &T) -> Self {
        self.put("$max", path, value)
    }

    /// `$unset: {path: ""}`: removes the field.
    pub fn unset(mut self, path: &str) -> Self {
        self.op("$unset").insert(path, "");
        self
    }

    /// Whether no operator was added yet.
    pub fn is_empty(&self) -> bool {
        self.update.is_empty()
    }

    /// The update document, or the first value the encoder refused: for a writer that
    /// sends it itself (a pattern's own command), without a write row around it. A
    /// `push` bound is not in it: it belongs to the write row's filter.
    pub fn into_document(self) -> Result<Document, crate::core::bson_compat::SerError> {
        self.build().map(|b| b.update)
    }

    /// `$setOnInsert: {path: value}`: written only when an upsert creates the document.
    pub fn set_on_insert<T: serde::Serialize + ?Sized>(self, path: &str, value: &T) -> Self {
        self.put("$setOnInsert", path, value)
    }

    /// `$setOnInsert: {_id: id}` with an `_id` made fresh for this call (a new
    /// `ObjectId`): the document an upsert finds holds it exactly when this call
    /// created it.
    pub fn generated_id<T: serde::Serialize + ?Sized>(mut self, id: &T) -> Self {
        if let Some(id) = self.values.write(id) {
            self.op("$setOnInsert").insert("_id", id.clone());
            self.generated_id = Some(id);
        }
        self
    }

    /// The value `$setOnInsert` writes at `path`, when it writes one.
    pub(crate) fn on_insert(&self, path: &str) -> Option<&Bson> {
        self.update.get_document("$setOnInsert").ok()?.get(path)
    }

    /// `$pull: {path: {$eq: item}}`: removes the elements equal to `item`. The `$eq`
    /// keeps a document `item` from being read as a condition on the elements.
    pub fn pull<T: serde::Serialize + ?Sized>(mut self, path: &str, item: &T) -> Self {
        if let Some(item) = self.values.write(item) {
            self.op("$pull").insert(path, Literal::stored(item).eq());
        }
        self
    }

    /// The update, or the first value the encoder refused.
    pub fn build(mut self) -> Result<Self, crate::core::bson_compat::SerError> {
        let values = std::mem::take(&mut self.values);
        values.finish(self)
    }
}

/// One write row's update, typed: see the [module docs](self). `S` is where it runs:
/// outside a session by default, in one after [`Update::session`].
#[must_use = "an update does nothing until `run`"]
pub struct Update<T, S = NoSession> {
    pattern: &'static AccessPattern,
    filter: Result<Document, crate::core::bson_compat::SerError>,
    update: Result<UpdateBuilder, crate::core::bson_compat::SerError>,
    /// A versioned model's version field and current version: only current documents
    /// are written.
    version: Option<(&'static str, i64)>,
    /// A versioned model's upgrade in place, run when the document is older.
    upgrade: Option<Upgrade>,
    pub(crate) session: S,
    _model: std::marker::PhantomData<fn() -> T>,
}

/// Upgrades the stored document with this `_id` to the current version in place, with
/// the versioning pattern's compare-and-set (a concurrent writer's change is never
/// overwritten: a lost race writes nothing), in the write's session when it has one.
/// Generated code passes the versioning pattern's; the core only calls it.
pub type Upgrade =
    for<'a> fn(
        &'a Database,
        Bson,
        Option<&'a mut ClientSession>,
    ) -> futures_util::future::BoxFuture<'a, Result<(), crate::core::version::VersionError>>;

/// How many times a write row on a versioned model upgrades an older document and
/// writes again before it reports [`UpdateError::OldVersion`]: each lost race means
/// another writer changed the document in between.
const UPGRADE_ATTEMPTS: u32 = 4;

impl<T, S> std::fmt::Debug for Update<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Update")
            .field("pattern", &self.pattern.name)
            .field("filter", &self.filter)
            .field("update", &self.update)
            .finish()
    }
}

/// How many times an upsert that lost the race to insert its document (a duplicate
/// key) is sent again before the error is returned. One retry updates the document the
/// winner inserted; more are needed only when that one is deleted meanwhile, or when
/// the duplicate is on another unique index (then no retry can succeed).
const DUPLICATE_ATTEMPTS: u32 = 4;

/// What one write did: updated the document with this `_id`, or (an upsert) inserted it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Wrote {
    Updated(Bson),
    Inserted(Bson),
}

/// What a write row's update did.
#[derive(Debug, Clone, PartialEq)]
pub struct Updated {
    /// The `_id` of the document it updated.
    pub id: Bson,
}

impl<T: Model> Update<T> {
    /// The update of the write row at `index` of the model's `ACCESS_PATTERNS`.
    /// Generated code calls this; use the generated method. (The row is looked up here,
    /// in generic code, for the reason given at `Find::row`.)
    pub fn row(
        index: usize,
        filter: Result<Document, crate::core::bson_compat::SerError>,
        update: Result<UpdateBuilder, crate::core::bson_compat::SerError>,
    ) -> Self {
        Self {
            pattern: &T::ACCESS_PATTERNS[index],
            filter,
            update,
            version: None,
            upgrade: None,
            session: NoSession,
            _model: std::marker::PhantomData,
        }
    }

    /// The same update inside `session`: in its transaction when one is running (with
    /// [`crate::transaction`], what is derived from the document is brought in line
    /// after the commit), and after the session's earlier writes when it is causally
    /// consistent. The same command is sent. On a model with a `sync` summary, a
    /// session that runs no transaction runs one for this write, as a write without a
    /// session does ([`crate::guide::writes`]).
    pub fn session(self, session: &mut ClientSession) -> Update<T, &mut ClientSession> {
        Update {
            pattern: self.pattern,
            filter: self.filter,
            update: self.update,
            version: self.version,
            upgrade: self.upgrade,
            session,
            _model: std::marker::PhantomData,
        }
    }

    /// Writes only documents whose `field` holds `current` (a versioned model's version
    /// field). Generated code calls this for versioned models.
    pub fn versioned(mut self, field: &'static str, current: i64) -> Self {
        self.version = Some((field, current));
        self
    }

    /// Upgrades an older document in place with `upgrade`, then writes: the seed's lazy
    /// migration, where the writer persists the upgraded shape. Generated code calls
    /// this for versioned models.
    pub fn upgrading(mut self, upgrade: Upgrade) -> Self {
        self.upgrade = Some(upgrade);
        self
    }
}

impl<T: Model, S: SessionSlot> Update<T, S> {
    /// The access pattern this update runs.
    pub fn pattern(&self) -> &'static AccessPattern {
        self.pattern
    }

    /// The filter and update as sent: the row's filter, plus each bounded push's
    /// guard; the update with the model's stamps (`$currentDate` of `#[updated_at]`,
    /// `$inc` of `#[revision]`: see [`crate::stamps`]).
    pub fn command(&self) -> Result<(Document, Document), UpdateError> {
        self.command_as(false)
    }

    /// [`Update::command`]; for an upsert, with `#[created_at]` set on insert.
    fn command_as(&self, upsert: bool) -> Result<(Document, Document), UpdateError> {
        let mut filter = self.filter.clone()?;
        let update = self.update.as_ref().map_err(|e| UpdateError::from(e.clone()))?;
        let mut stamped = update.update.clone();
        let effects = crate::core::write::Effects::of::<T>();
        match upsert {
            true => effects.on_upsert(&mut stamped),
            false => effects.on_update(&mut stamped),
        }
        for b in &update.bounds {
            // The array's element N-1 exists exactly when it holds N or more items.
            filter.insert(format!("{}.{}", b.field, b.max.saturating_sub(1)), doc! { "$exists": false });
        }
        if let Some((field, current)) = self.version {
            filter.insert(field, doc! { "$eq": current });
        }
        Ok((filter, stamped))
    }

    /// Sends the update, one command on success: an `update` when the row names its
    /// document by `_id` (the id is then known), else a `findAndModify`
    /// projected to `_id` (which returns it). When nothing matched, one more read tells
    /// a full array or an older version from a missing document.
    pub async fn run(self, db: &Database) -> Result<Updated, UpdateError> {
        match self.run_as(db, false).await? {
            Wrote::Updated(id) | Wrote::Inserted(id) => Ok(Updated { id }),
        }
    }

    /// [`Update::run`], or with `upsert` an upsert's run, in its span.
    pub(crate) async fn run_as(mut self, db: &Database, upsert: bool) -> Result<Wrote, UpdateError> {
        let span = match upsert {
            true => crate::core::trace::span!("access.upsert", pattern = self.pattern.name),
            false => crate::core::trace::span!("access.update", pattern = self.pattern.name),
        };
        let done = crate::core::trace::in_span(span.clone(), self.run_outer(db, upsert)).await;
        if let Err(e) = &done {
            let _entered = span.enter();
            crate::core::trace::event!(DEBUG, error = %e, "refused");
        }
        done
    }

    /// [`Update::run_inner`], in a transaction of its own when the caller gave none (no
    /// session, or one that runs no transaction: then in that session) and the model
    /// keeps data that must commit with its writes (a `sync` summary): the write's
    /// command, that data, and the commit, so that both commit or neither and no crash
    /// leaves the write without it. What the write derives after it (copies, cached
    /// keys) waits for the commit, as in [`crate::transaction`].
    async fn run_outer(&mut self, db: &Database, upsert: bool) -> Result<Wrote, UpdateError> {
        use crate::core::transaction::{for_write, in_transaction, is_duplicate_key};
        if !crate::core::write::Effects::of::<T>().commits_with_source() {
            return self.run_inner(db, upsert).await;
        }
        let running = in_transaction(self.session.session()).await;
        if running.map_err(|e| UpdateError::of_write(T::COLLECTION, e))? {
            return self.run_inner(db, upsert).await;
        }
        let mut duplicates = 0;
        loop {
            let mongo = |e| UpdateError::of_write(T::COLLECTION, e);
            let Update { pattern, filter, update, version, upgrade, session, .. } = &mut *self;
            let (pattern, filter, update, version, upgrade) =
                (*pattern, &*filter, &*update, *version, *upgrade);
            let own = for_write(
                db.client(),
                session.session(),
                |tx| {
                    let mut update = Update::<T, _> {
                        pattern,
                        filter: filter.clone(),
                        update: update.clone(),
                        version,
                        upgrade,
                        session: &mut **tx,
                        _model: std::marker::PhantomData,
                    };
                    Box::pin(async move { update.run_inner(db, upsert).await })
                },
                |e| match e {
                    // The transaction was aborted with it: nothing was written.
                    UpdateError::AfterWrite(e) => UpdateError::Refused(e),
                    e => e,
                },
                mongo,
                UpdateError::AfterWrite,
            );
            return match own.await {
                // An upsert that lost the race to insert its document aborted the
                // transaction (a write in one is not retried alone): the whole
                // transaction runs again and updates the winner's document, as
                // `run_inner` does outside one.
                Some(Err(refused @ UpdateError::WriteRefused { .. }))
                    if upsert
                        && matches!(&refused, UpdateError::WriteRefused { source, .. } if is_duplicate_key(source)) =>
                {
                    duplicates += 1;
                    if duplicates < DUPLICATE_ATTEMPTS {
                        continue;
                    }
                    Err(refused)
                }
                Some(done) => done,
                // The deployment has no transactions (the driver refused to start one,
                // nothing was sent): the write alone, its summaries then report why
                // they could not follow, as without this path.
                None => self.run_inner(db, upsert).await,
            };
        }
    }

    /// One command when the document is current. An older one is upgraded in place
    /// (compare-and-set) and the write sent again; a race lost to another writer is
    /// retried, a few times. An upsert that loses the race to insert the document
    /// (a duplicate key) is sent again, to update the document the winner inserted.
    async fn run_inner(&mut self, db: &Database, upsert: bool) -> Result<Wrote, UpdateError> {
        crate::core::write::Effects::of::<T>().check(db).map_err(|e| UpdateError::Refused(Box::new(e)))?;
        let mut attempt = 0;
        let mut duplicates = 0;
        loop {
            attempt += 1;
            let error = match self.attempt(db, upsert).await {
                Ok(done) => return Ok(done),
                Err(refused @ UpdateError::WriteRefused { .. })
                    if upsert
                        && matches!(&refused, UpdateError::WriteRefused { source, .. } if crate::core::transaction::is_duplicate_key(source)) =>
                {
                    duplicates += 1;
                    // In a transaction the error aborted it: the transaction is retried
                    // as a whole, never one of its writes.
                    let in_transaction = crate::core::transaction::in_transaction(self.session.session())
                        .await
                        .unwrap_or(true);
                    if duplicates >= DUPLICATE_ATTEMPTS || in_transaction {
                        return Err(refused);
                    }
                    // A document with the key exists: one another writer inserted
                    // between this upsert's read and its insert (mongod retries that
                    // itself only when the filter is exactly a unique index's keys,
                    // by equality, and nothing else), or one the row's guards refuse
                    // (a full array, an older version): the read tells which.
                    match self.why_not(db).await {
                        UpdateError::NotFound { .. } | UpdateError::Changed { .. } => {
                            crate::core::trace::event!(
                                DEBUG,
                                duplicates,
                                "lost the race to insert, writing again"
                            );
                            continue;
                        }
                        other => other,
                    }
                }
                Err(e) => e,
            };
            match error {
                UpdateError::OldVersion { id, .. }
                    if attempt < UPGRADE_ATTEMPTS && self.upgrade.is_some() =>
                {
                    let upgrade = self.upgrade.unwrap_or_else(|| unreachable!("checked above"));
                    crate::core::trace::event!(
                        DEBUG,
                        attempt,
                        "upgrading an older document, then writing again"
                    );
                    upgrade(db, *id, self.session.session())
                        .await
                        .map_err(|e| UpdateError::Upgrade(Box::new(e)))?;
                }
                // Another writer changed the document between the write and the read that
                // explains it: the write is whole or nothing, so send it again.
                UpdateError::Changed { .. } if attempt < UPGRADE_ATTEMPTS && self.upgrade.is_some() => {
                    crate::core::trace::event!(DEBUG, attempt, "changed meanwhile, writing again");
                }
                error => return Err(error),
            }
        }
    }

    async fn attempt(&mut self, db: &Database, upsert: bool) -> Result<Wrote, UpdateError> {
        let (filter, update) = self.command_as(upsert)?;
        let collection = db.collection::<Document>(T::COLLECTION);
        // The filter names the document by `_id` (and perhaps more: a variant's
        // discriminator), so its id is known without the server returning it.
        let by_id = self.filter.as_ref().ok().and_then(|f| match f.get_document("_id") {
            Ok(eq) if eq.len() == 1 => eq.get("$eq").cloned(),
            _ => None,
        });
        let transaction = crate::core::transaction::in_transaction(self.session.session())
            .await
            .map_err(|e| UpdateError::of_write(T::COLLECTION, e))?;
        let effects = crate::core::write::Effects::of::<T>();
        // In a transaction, what commits with the write may read the document (a sync
        // summary): the command returns it as it was, with which the update sent tells
        // both the document's old state and, for the operators a hook can compute, its
        // new one, instead of reads after it. (An upsert keeps its command:
        // `findAndModify` does not say whether it inserted.)
        let returned = transaction && !upsert && effects.reads_document();
        let before = returned && effects.reads_prior();
        let mut document = None;
        let done = if let Some(id) = by_id.filter(|_| !returned) {
            let mut command = crate::core::access::command::update_one(
                self.pattern,
                &collection,
                filter,
                update.clone(),
                transaction,
            );
            if upsert {
                command = command.upsert(true);
            }
            let result = match self.session.session() {
                Some(session) => command.session(session).await,
                None => command.await,
            }
            .map_err(|e| UpdateError::of_write(T::COLLECTION, e))?;
            match result.upserted_id {
                Some(inserted) => Wrote::Inserted(inserted),
                None if result.matched_count == 0 => return Err(self.why_not(db).await),
                None => Wrote::Updated(id),
            }
        } else {
            let mut command = crate::core::access::command::find_one_and_update(
                self.pattern,
                &collection,
                filter,
                update.clone(),
                transaction,
            );
            let generated = self.update.as_ref().ok().and_then(|u| u.generated_id.clone()).filter(|_| upsert);
            if upsert {
                command = command.upsert(true);
            }
            if returned {
                // The whole document (an empty projection is every field), as it was or
                // as written.
                command = command.projection(Document::new()).return_document(if before {
                    mongodb::options::ReturnDocument::Before
                } else {
                    mongodb::options::ReturnDocument::After
                });
            }
            if generated.is_some() {
                // The document after the write: this call created it exactly when it
                // holds the `_id` made for this call. (The document before, `None` for
                // an insert, says the same on mongod; the local server was seen to
                // answer `null` to concurrent upserts that updated.)
                command = command.return_document(mongodb::options::ReturnDocument::After);
            }
            let found = match self.session.session() {
                Some(session) => command.session(session).await,
                None => command.await,
            }
            .map_err(|e| UpdateError::of_write(T::COLLECTION, e))?;
            match found {
                Some(found) => {
                    let id = found.get("_id").cloned().unwrap_or(Bson::Null);
                    if returned {
                        document = Some(found);
                    }
                    match &generated {
                        Some(mine) if *mine == id => Wrote::Inserted(id),
                        _ => Wrote::Updated(id),
                    }
                }
                // Nothing was there before: an upsert inserted the document, with the
                // `_id` it set on insert or its filter's.
                None if upsert => Wrote::Inserted(self.inserted_id().unwrap_or(Bson::Null)),
                None => return Err(self.why_not(db).await),
            }
        };
        // A created document changed in every field: its hooks are told no update.
        let (id, written) = match &done {
            Wrote::Updated(id) => (id, Some(&update)),
            Wrote::Inserted(id) => (id, None),
        };
        let (prior, document) = match &document {
            Some(found) if before => {
                (crate::core::hooks::Prior::Updated { before: found, update: &update }, None)
            }
            found => (crate::core::hooks::Prior::Unknown, found.as_ref()),
        };
        effects
            .after_in_from(db, id, written, document, prior, self.session.session())
            .await
            .map_err(|e| UpdateError::AfterWrite(Box::new(e)))?;
        Ok(done)
    }

    /// The `_id` an upsert gives the document it creates: set on insert, or the
    /// filter's.
    fn inserted_id(&self) -> Option<Bson> {
        let update = self.update.as_ref().ok()?;
        if let Some(id) = update.on_insert("_id") {
            return Some(id.clone());
        }
        self.filter.as_ref().ok()?.get_document("_id").ok()?.get("$eq").cloned()
    }

    /// Nothing matched: is it the row's own filter, an older version, or a bound?
    async fn why_not(&mut self, db: &Database) -> UpdateError {
        let not_found = UpdateError::NotFound { collection: T::COLLECTION, pattern: self.pattern.name };
        let Ok(update) = &self.update else { return not_found };
        let Ok(filter) = self.filter.clone() else { return not_found };
        let collection = db.collection::<Document>(T::COLLECTION);
        // A conditional write: the filter holds the revision the writer read. The same
        // filter without it finds the document, if it is there at another revision.
        if let Some(revision) = T::STAMPS.revision.filter(|r| filter.contains_key(*r)) {
            let mut without = filter.clone();
            without.remove(revision);
            let mut find = collection.find_one(without).projection(doc! { "_id": 1, revision: 1 });
            if let Some(collation) = crate::core::access::command::collation(self.pattern) {
                find = find.collation(collation);
            }
            let found = match self.session.session() {
                Some(session) => find.session(session).await,
                None => find.await,
            };
            let expected = filter.get_document(revision).ok().and_then(|eq| eq.get("$eq"));
            let expected = crate::core::stamps::revision_of(expected);
            match found {
                Ok(Some(doc)) => {
                    let current = crate::core::stamps::revision_of(doc.get(revision));
                    if current != expected || expected.is_none() {
                        return UpdateError::Conflict { collection: T::COLLECTION, current };
                    }
                    // At the revision the writer read: another guard refused the
                    // write (a bound, a version), which the reads below tell.
                }
                Ok(None) => return not_found,
                Err(e) => return e.into(),
            }
        }
        if update.bounds.is_empty() && self.version.is_none() {
            return not_found;
        }
        let mut projection = doc! { "_id": 1 };
        if let Some((field, _)) = self.version {
            projection.insert(field, 1);
        }
        for b in &update.bounds {
            projection.insert(b.field, doc! { "$size": { "$ifNull": [format!("${}", b.field), []] } });
        }
        // The same document the write looked for: the row's collation and sort.
        let mut find = collection.find_one(filter).projection(projection);
        if let Some(collation) = crate::core::access::command::collation(self.pattern) {
            find = find.collation(collation);
        }
        if let Some(sort) = crate::core::access::command::sort_document(self.pattern, false) {
            find = find.sort(sort);
        }
        let found = match self.session.session() {
            Some(session) => find.session(session).await,
            None => find.await,
        };
        let doc = match found {
            Ok(Some(doc)) => doc,
            Ok(None) => return not_found,
            Err(e) => return e.into(),
        };
        let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
        if let Some((field, current)) = self.version {
            let stored = doc.get(field).cloned().unwrap_or(Bson::Null);
            let is_current = match &stored {
                Bson::Int32(v) => i64::from(*v) == current,
                Bson::Int64(v) => *v == current,
                Bson::Double(v) => *v == current as f64,
                _ => false,
            };
            let newer = match &stored {
                Bson::Int32(v) => i64::from(*v) > current,
                Bson::Int64(v) => *v > current,
                Bson::Double(v) => *v > current as f64,
                _ => false,
            };
            if newer {
                return UpdateError::NewerVersion {
                    collection: T::COLLECTION,
                    id: Box::new(id),
                    stored: Box::new(stored),
                    current,
                };
            }
            if !is_current {
                return UpdateError::OldVersion {
                    collection: T::COLLECTION,
                    id: Box::new(id),
                    stored: Box::new(stored),
                    current,
                };
            }
        }
        for b in &update.bounds {
            let held = match doc.get(b.field) {
                Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or(0),
                Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or(0),
                _ => 0,
            };
            if held >= b.max {
                return UpdateError::Full {
                    collection: T::COLLECTION,
                    id: Box::new(id),
                    field: b.field,
                    max: b.max,
                };
            }
        }
        // It matches now, is current and has room: a concurrent writer changed it
        // between the two commands.
        UpdateError::Changed { collection: T::COLLECTION, pattern: self.pattern.name }
    }
}

#[cfg(test)]
mod tests {
    use bson::{doc, Bson};

    use super::{PushBound, UpdateBuilder};
    use crate::core::access::literal::Refused;

    #[test]
    fn the_chain_writes_each_value_in_its_form() {
        // An element shaped as `$push` modifiers is pushed as it is, under `$each`.
        let modifiers = doc! {"$each": [1, 2], "$slice": 0};
        let bound = PushBound { field: "items", max: 3 };
        let built = UpdateBuilder::new()
            .set("name", "a")
            .inc("uses", &1)
            .push("items", &modifiers, Some(bound))
            .pull("tags", &doc! {"$ne": null})
            .set_on_insert("owner", "u1")
            .generated_id(&bson::oid::ObjectId::new())
            .build()
            .unwrap();
        let id = built.generated_id.clone().expect("an id");
        assert_eq!(built.on_insert("_id"), Some(&id));
        assert_eq!(
            built.update,
            doc! {
                "$set": {"name": "a"},
                "$inc": {"uses": 1},
                "$push": {"items": {"$each": [{"$each": [1, 2], "$slice": 0}]}},
                "$pull": {"tags": {"$eq": {"$ne": null}}},
                "$setOnInsert": {"owner": "u1", "_id": id},
            }
        );
        assert_eq!(built.bounds.len(), 1);
        assert!(matches!(built.on_insert("owner"), Some(Bson::String(s)) if s == "u1"));
    }

    #[test]
    fn a_refused_value_fails_the_whole_update() {
        let refused = UpdateBuilder::new().set("a", &1).push("b", &Refused, None).inc("c", &3).build();
        assert!(refused.unwrap_err().to_string().contains("refused on purpose"));
    }
}
