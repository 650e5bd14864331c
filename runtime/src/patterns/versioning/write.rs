//! Reading for writing back, and writing with a compare-and-set on the document as
//! read: `save`, `update_one`, `modify`.

use crate::core::bson_compat;
use bson::{doc, Bson, Document};
use futures_util::TryStreamExt;
use mongodb::{ClientSession, Database};

use super::decode::{decode_at, id_of, require_id, stored_version, Versioned};
use crate::core::access::literal::Literal;
use crate::core::model::{eq, IdOf, Identified};
use crate::core::version::VersionError;
use crate::core::write::Effects;

/// The current shape of `value` as stored: serialized, with the current version in the
/// BSON type serde writes for the field (an `i32` field stays an int).
pub(super) fn encode<T: Versioned>(value: &T) -> Result<Document, VersionError> {
    let mut document = bson_compat::to_document(value).map_err(VersionError::Encode)?;
    let version = match document.get(T::VERSION_FIELD) {
        Some(Bson::Int32(_)) => i32::try_from(T::VERSION).map_or(Bson::Int64(T::VERSION), Bson::Int32),
        Some(Bson::Double(_)) => Bson::Double(T::VERSION as f64),
        _ => Bson::Int64(T::VERSION),
    };
    document.insert(T::VERSION_FIELD, version);
    Ok(document)
}

/// Matches the document only while every field it had when read still holds the same
/// value (its version included, or its absence): the compare of compare-and-set.
/// Field by field with `$eq`, so that the `_id` index serves it and a stored value
/// that looks like an operator is compared, not run.
///
/// A field whose name a filter would read as a path or an operator (a dot anywhere, a
/// leading `$`: legal names since MongoDB 5) is compared by name with `$getField`
/// inside `$expr`. Only those fields go there, beside the `_id` equality, because a
/// server may plan an `$expr` filter as a collection scan.
pub(super) fn unchanged_since<T: Versioned>(original: &Document) -> Document {
    let mut filter = doc! { "_id": eq(id_of(original)) };
    let mut by_name = Vec::new();
    for (key, value) in original.iter().filter(|(k, _)| *k != "_id") {
        if !is_plain_name(key) {
            let field = doc! { "$getField": { "field": { "$literal": key.clone() }, "input": "$$ROOT" } };
            // An expression's `$eq` is exact (an array is not an element, a missing
            // field is not null).
            by_name.push(Literal::stored(value.clone()).equals_expr(field));
            continue;
        }
        // A query's `$eq` on a field also matches an array holding the value as an
        // element, so each condition excludes that: a value changed into such an array
        // by another writer (`"x"` into `["x", "y"]`) is a change, not the same value.
        let condition = match value {
            // `$eq: null` also matches a missing field: a removed field would pass.
            Bson::Null => doc! { "$type": "null", "$not": { "$type": "array" } },
            // `$eq: [..]` also matches an array holding that array as an element, of any
            // size: `$size` and no such element leave the array itself.
            Bson::Array(items) => {
                let mut condition = Literal::stored(value.clone()).eq();
                condition.insert("$size", items.len() as i64);
                condition.insert("$not", doc! { "$elemMatch": Literal::stored(value.clone()).eq() });
                condition
            }
            _ => {
                let mut condition = Literal::stored(value.clone()).eq();
                condition.insert("$not", doc! { "$type": "array" });
                condition
            }
        };
        filter.insert(key.clone(), condition);
    }
    if !original.contains_key(T::VERSION_FIELD) {
        filter.insert(T::VERSION_FIELD, doc! { "$exists": false });
    }
    if !by_name.is_empty() {
        filter.insert("$expr", doc! { "$and": by_name });
    }
    filter
}

/// Whether a filter or an update reads `key` as the name of one top-level field.
pub(super) fn is_plain_name(key: &str) -> bool {
    !key.contains('.') && !key.starts_with('$')
}

/// A document read as the current type, with what is needed to write it back safely.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    /// The document as the current type.
    pub value: T,
    /// The version it was stored at.
    pub stored_version: i64,
    original: Document,
}

impl<T: Versioned> Loaded<T> {
    /// Reads `document` (as returned by the server) as the current type.
    pub fn from_document(document: Document) -> Result<Self, VersionError> {
        let stored_version = stored_version::<T>(&document)?;
        let value = decode_at(stored_version, document.clone())?;
        Ok(Self { value, stored_version, original: document })
    }

    /// The document's `_id`.
    pub fn id(&self) -> Bson {
        id_of(&self.original)
    }

    /// Whether the stored document is older than the current version.
    pub fn is_outdated(&self) -> bool {
        self.stored_version < T::VERSION
    }

    /// Whether the stored document lacks what a current one carries: an older version,
    /// or no version field at all (`missing` equal to the current version).
    pub(super) fn needs_stamp(&self) -> bool {
        self.is_outdated() || !self.original.contains_key(T::VERSION_FIELD)
    }

    /// Writes [`Loaded::value`] back, at the current version, if every field the
    /// document had when read still holds the same value; otherwise
    /// [`VersionError::Conflict`], and nothing is written.
    ///
    /// The write is an update of what differs (`$set` of changed and new fields,
    /// `$unset` of removed ones), not a replacement, so a field another writer added
    /// since the read survives. After a save, the value is what is stored, so it can be
    /// saved again.
    pub async fn save(&mut self, db: &Database) -> Result<(), VersionError> {
        self.save_in(db, None).await
    }

    /// [`Loaded::save`] inside `session`: the compare-and-set is sent in it (in its
    /// transaction when one runs), and the hooks of derived data run after the commit
    /// when it is a [`transaction`](crate::transaction)'s.
    pub async fn save_in_session(
        &mut self,
        db: &Database,
        session: &mut mongodb::ClientSession,
    ) -> Result<(), VersionError> {
        self.save_in(db, Some(session)).await
    }

    async fn save_in(
        &mut self,
        db: &Database,
        session: Option<&mut mongodb::ClientSession>,
    ) -> Result<(), VersionError> {
        let span = crate::core::trace::span!("versioning.save", collection = T::COLLECTION);
        let saved = crate::core::trace::in_span(span.clone(), self.save_inner(db, session)).await;
        if let Err(e) = &saved {
            span.in_scope(|| crate::core::trace::event!(DEBUG, error = %e, "not saved"));
        }
        saved
    }

    async fn save_inner(
        &mut self,
        db: &Database,
        mut session: Option<&mut mongodb::ClientSession>,
    ) -> Result<(), VersionError> {
        require_id::<T>(&self.original)?;
        let effects = Effects::of::<T>();
        effects.check(db).map_err(|e| VersionError::Refused(Box::new(e)))?;
        let new = encode(&self.value)?;
        let running = crate::core::transaction::in_transaction(session.as_deref_mut()).await?;
        let saved = match !running && effects.commits_with_source() {
            // The write and the summaries that must commit with it, in a transaction
            // of their own (see `crate::core::write`); in the caller's session when
            // given. The value is brought in line once it committed.
            true => {
                let (original, encoded) = (&self.original, &new);
                let own = crate::core::transaction::for_write(
                    db.client(),
                    session.as_deref_mut(),
                    |tx| Box::pin(write_save::<T>(db, original, encoded, Some(&mut **tx))),
                    unwritten,
                    VersionError::from,
                    VersionError::Copies,
                );
                match own.await {
                    Some(done) => done?,
                    None => write_save::<T>(db, &self.original, &new, session).await?,
                }
            }
            false => write_save::<T>(db, &self.original, &new, session).await?,
        };
        let Saved { set, unset, stamped } = saved;
        self.value.stamp();
        self.stored_version = T::VERSION;
        for key in unset.keys() {
            self.original.remove(key);
        }
        self.original.extend(set);
        if !stamped.is_empty() {
            self.original.extend(stamped.clone());
            // The value holds the stamps as stored too.
            let mut value = encode(&self.value)?;
            value.extend(stamped);
            self.value = bson_compat::from_document(value).map_err(|source| VersionError::Upgrade {
                collection: T::COLLECTION,
                id: self.id(),
                version: T::VERSION,
                failure: crate::core::version::StepFailure::Decode { version: T::VERSION, source },
            })?;
        }
        Ok(())
    }
}

/// A versioned writer's error from a transaction started for its write, which was
/// aborted with it: "written, but its derived data failed" is "nothing was written".
fn unwritten(e: VersionError) -> VersionError {
    match e {
        VersionError::Copies(e) => VersionError::Refused(e),
        e => e,
    }
}

/// What a versioned save wrote: the fields set and unset, and the stamps stored.
struct Saved {
    set: Document,
    unset: Document,
    stamped: Document,
}

/// A versioned save's write of `new` (the value, encoded) over `original` (the
/// document as read), compare-and-set, in `session` when given, then what is derived
/// from it: see [`Loaded::save`]. Changes nothing of the value, so that a transaction
/// may run it again.
async fn write_save<T: Versioned>(
    db: &Database,
    original: &Document,
    new: &Document,
    mut session: Option<&mut mongodb::ClientSession>,
) -> Result<Saved, VersionError> {
    let effects = Effects::of::<T>();
    let (mut set, mut unset) = (Document::new(), Document::new());
    for (key, value) in new.iter().filter(|(k, _)| *k != "_id") {
        if original.get(key) != Some(value) {
            set.insert(key.clone(), value.clone());
        }
    }
    for key in original.keys().filter(|k| *k != "_id" && !new.contains_key(k.as_str())) {
        unset.insert(key.clone(), "");
    }
    // The stamps are the write's to set, never the value's: whatever the value
    // holds there is left out, and the write stamps the document itself.
    let stamps = effects.stamps();
    for field in [stamps.created, stamps.updated, stamps.revision].into_iter().flatten() {
        set.remove(field);
        unset.remove(field);
    }
    let collection = db.collection::<Document>(T::COLLECTION);
    let filter = unchanged_since::<T>(original);
    // A key `$set` would read as a path or an operator: replace the document instead
    // (keys with dots or a leading `$`: from maps flattened into the type, or fields
    // another program wrote that the type leaves out).
    let plain = |k: &String| is_plain_name(k);
    // What the write may have changed, for the denormalized copies of this model:
    // `None` for a replacement (anything).
    let mut written: Option<Document> = None;
    // The stamps the write stored, which the document as read then holds.
    let mut stamped = Document::new();
    // The whole document a replacement wrote.
    let mut replaced: Option<Document> = None;
    let matched = if !set.keys().chain(unset.keys()).all(plain) {
        let mut replacement = new.clone();
        replacement.insert("_id", id_of(original));
        // A replacement takes no `$currentDate`: the writer's clock, and the
        // revision as read plus one (the filter holds the one read).
        for field in [stamps.created, stamps.revision].into_iter().flatten() {
            match original.get(field) {
                Some(v) => replacement.insert(field, v.clone()),
                None => replacement.remove(field),
            };
        }
        if let Some(updated) = stamps.updated {
            replacement.insert(updated, bson::DateTime::now());
        }
        if let Some(revision) = stamps.revision {
            let next = crate::core::stamps::revision_of(original.get(revision)).unwrap_or(0) + 1;
            let next = match (stamps.wide_revision, i32::try_from(next)) {
                (false, Ok(n)) => Bson::Int32(n),
                _ => Bson::Int64(next),
            };
            replacement.insert(revision, next);
        }
        stamped = stamps
            .projection()
            .keys()
            .filter_map(|k| Some((k.clone(), replacement.get(k)?.clone())))
            .collect();
        replaced = Some(replacement.clone());
        let replace = collection.replace_one(filter, replacement);
        match session.as_deref_mut() {
            Some(s) => replace.session(s).await?,
            None => replace.await?,
        }
        .matched_count
    } else if set.is_empty() && unset.is_empty() {
        // Nothing to write; still say whether the document is as it was read.
        let count = collection.count_documents(filter);
        match session.as_deref_mut() {
            Some(s) => count.session(s).await?,
            None => count.await?,
        }
    } else {
        let mut update = Document::new();
        if !set.is_empty() {
            update.insert("$set", set.clone());
        }
        if !unset.is_empty() {
            update.insert("$unset", unset.clone());
        }
        let matched = if stamps.is_empty() {
            let write = collection.update_one(filter, update.clone());
            match session.as_deref_mut() {
                Some(s) => write.session(s).await?,
                None => write.await?,
            }
            .matched_count
        } else {
            // Stamped in the same command (`$currentDate`, `$inc`), the stamps
            // returned, so that the next save compares what is stored.
            effects.on_update(&mut update);
            let write = collection
                .find_one_and_update(filter, update.clone())
                .projection(stamps.projection())
                .return_document(mongodb::options::ReturnDocument::After);
            let found = match session.as_deref_mut() {
                Some(s) => write.session(s).await?,
                None => write.await?,
            };
            match found {
                Some(mut found) => {
                    found.remove("_id");
                    stamped = found;
                    1
                }
                None => 0,
            }
        };
        written = Some(update);
        matched
    };
    if matched == 0 {
        return Err(VersionError::Conflict { collection: T::COLLECTION, id: id_of(original), attempts: 1 });
    }
    if !(set.is_empty() && unset.is_empty()) {
        // The compare-and-set matched: the document was `original` in every field it
        // had when read, which is what it was before the write (a field another
        // program added since is caught by the summaries' checks), so what the
        // derived data needs of it comes from here, not from a read: the document as
        // replaced, or as read and the update sent.
        use crate::core::hooks::Prior;
        let (prior, document) = match (&replaced, &written) {
            (Some(replacement), _) => (Prior::Was(original), Some(replacement)),
            (None, Some(update)) => (Prior::Updated { before: original, update }, None),
            (None, None) => (Prior::Unknown, None),
        };
        effects
            .after_in_from(db, &id_of(original), written.as_ref(), document, prior, session)
            .await
            .map_err(|e| VersionError::Copies(Box::new(e)))?;
    }
    Ok(Saved { set, unset, stamped })
}

/// The first document matching `filter`, read as the current type.
pub async fn find_one<T: Versioned>(
    db: &Database,
    filter: Document,
) -> Result<Option<Loaded<T>>, VersionError> {
    match db.collection::<Document>(T::COLLECTION).find_one(filter).await? {
        Some(document) => Loaded::from_document(document).map(Some),
        None => Ok(None),
    }
}

/// Every document matching `filter`, read as the current type. An unreadable document
/// is an error, not a gap: nothing is silently dropped.
pub async fn find<T: Versioned>(db: &Database, filter: Document) -> Result<Vec<Loaded<T>>, VersionError> {
    let mut cursor = db.collection::<Document>(T::COLLECTION).find(filter).await?;
    let mut out = Vec::new();
    while let Some(document) = cursor.try_next().await? {
        out.push(Loaded::from_document(document)?);
    }
    Ok(out)
}

/// Inserts `value` at the current version, whatever its version field says.
pub async fn insert_one<T: Versioned>(db: &Database, value: &T) -> Result<(), VersionError> {
    insert_one_with(db, value, None).await
}

/// [`insert_one`] in `session`: in the transaction it runs, if any (a
/// `docshape::transaction`'s `tx`, or one the caller started), the document and the
/// `sync` summaries it counts in commit together; without one, as [`insert_one`].
pub async fn insert_one_in<T: Versioned>(
    db: &Database,
    value: &T,
    session: &mut ClientSession,
) -> Result<(), VersionError> {
    insert_one_with(db, value, Some(session)).await
}

async fn insert_one_with<T: Versioned>(
    db: &Database,
    value: &T,
    mut session: Option<&mut ClientSession>,
) -> Result<(), VersionError> {
    let mut document = encode(value)?;
    // Its stamps from the writer's clock (step 2 of the write pipeline: an insert has
    // no copies elsewhere and no cached keys yet, a miss being never cached).
    let effects = Effects::of::<T>();
    effects.on_insert(&mut document);
    let running = crate::core::transaction::in_transaction(session.as_deref_mut()).await?;
    if !running && effects.commits_with_source() {
        // The document and the summaries that must commit with it, in a transaction
        // of their own (see `crate::core::write`); in the caller's session when given.
        let own = crate::core::transaction::for_write(
            db.client(),
            session.as_deref_mut(),
            |tx| Box::pin(insert_document::<T>(db, &document, Some(&mut **tx))),
            unwritten,
            VersionError::from,
            VersionError::Copies,
        );
        if let Some(done) = own.await {
            return done;
        }
    }
    insert_document::<T>(db, &document, session).await
}

/// Inserts `document` (encoded, stamped) in `session` when given, then the summaries
/// it counts in.
async fn insert_document<T: Versioned>(
    db: &Database,
    document: &Document,
    mut session: Option<&mut ClientSession>,
) -> Result<(), VersionError> {
    let collection = db.collection::<Document>(T::COLLECTION);
    let command = collection.insert_one(document);
    let id = match session.as_deref_mut() {
        Some(s) => command.session(s).await?,
        None => command.await?,
    }
    .inserted_id;
    let written = document.contains_key("_id").then_some(document);
    Effects::of::<T>()
        .after_insert_in(db, &id, written, session)
        .await
        .map_err(|e| VersionError::Copies(Box::new(e)))?; // summaries
    Ok(())
}

/// How many times a write retries after losing a race with another writer:
/// `RetryPolicy::default()` and the setter, `RetryPolicy::default().max_attempts(3)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in all, the first included; at least 1.
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    /// Eight attempts: each lost race means another writer made progress.
    fn default() -> Self {
        Self { max_attempts: 8 }
    }
}

impl RetryPolicy {
    /// Sets the field `max_attempts` (at least 1: the first attempt).
    pub const fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }
}

/// What [`update_one`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateOutcome {
    /// The version the document was stored at before.
    pub stored_version: i64,
    /// Whether this call persisted the upgraded shape.
    pub upgraded: bool,
    /// Attempts made, the first included.
    pub attempts: u32,
}

/// Applies `update` (an update document: `$set`, `$inc`, ...) to the current-version
/// document with this `_id`. A document at an older version is first upgraded and
/// written back with a compare-and-set on every field of the document as read, then updated; a
/// lost race reads again, up to `policy.max_attempts`. One round trip when the
/// document is already current.
pub async fn update_one<T: Versioned + Identified>(
    db: &Database,
    id: &(impl IdOf<T> + ?Sized),
    update: Document,
    policy: RetryPolicy,
) -> Result<UpdateOutcome, VersionError> {
    let id = id.id_bson().map_err(VersionError::Encode)?;
    let span = crate::core::trace::span!("versioning.update_one", collection = T::COLLECTION);
    let done = crate::core::trace::in_span(span.clone(), update_one_inner::<T>(db, id, update, policy)).await;
    span.in_scope(|| match &done {
        Ok(o) => crate::core::trace::event!(
            DEBUG,
            attempts = o.attempts,
            upgraded = o.upgraded,
            stored_version = o.stored_version,
            "updated"
        ),
        Err(e) => crate::core::trace::event!(DEBUG, error = %e, "not updated"),
    });
    done
}

async fn update_one_inner<T: Versioned + Identified>(
    db: &Database,
    id: Bson,
    update: Document,
    policy: RetryPolicy,
) -> Result<UpdateOutcome, VersionError> {
    let effects = Effects::of::<T>();
    effects.check(db).map_err(|e| VersionError::Refused(Box::new(e)))?;
    let mut update = update;
    // The model's stamps, in the same command.
    effects.on_update(&mut update);
    let collection = db.collection::<Document>(T::COLLECTION);
    let mut upgraded = false;
    let mut stored = T::VERSION;
    let attempts = policy.max_attempts.max(1);
    let mut attempt = 0;
    while attempt < attempts {
        attempt += 1;
        if update_current::<T>(db, &id, &update).await? {
            return Ok(UpdateOutcome { stored_version: stored, upgraded, attempts: attempt });
        }
        let Some(document) = collection.find_one(doc! { "_id": eq(id.clone()) }).await? else {
            return Err(VersionError::NotFound { collection: T::COLLECTION, id });
        };
        let mut loaded = Loaded::<T>::from_document(document)?;
        if !loaded.needs_stamp() {
            // Made current by someone else between the two commands: update again.
            continue;
        }
        stored = loaded.stored_version;
        match loaded.save(db).await {
            // The first upgrade is not the caller's update: it does not use up an
            // attempt (later ones do, so old writers cannot keep this loop going).
            Ok(()) => {
                if !upgraded {
                    attempt -= 1;
                }
                upgraded = true;
            }
            Err(VersionError::Conflict { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Err(VersionError::Conflict { collection: T::COLLECTION, id, attempts })
}

/// One attempt at `update` (stamped) of the current-version document `id`: whether it
/// matched; what is derived from the document brought in line. When the model keeps
/// data that must commit with its writes (a `sync` summary), in a transaction of its
/// own with that data (see `crate::core::write`).
async fn update_current<T: Versioned>(
    db: &Database,
    id: &Bson,
    update: &Document,
) -> Result<bool, VersionError> {
    if Effects::of::<T>().commits_with_source() {
        let own = crate::core::transaction::for_write(
            db.client(),
            None,
            |tx| Box::pin(update_current_in::<T>(db, id, update, Some(&mut **tx))),
            unwritten,
            VersionError::from,
            VersionError::Copies,
        );
        if let Some(done) = own.await {
            return done;
        }
    }
    update_current_in::<T>(db, id, update, None).await
}

/// [`update_current`]'s attempt, in `transaction` when given: there the command
/// returns the document as it was, from which and the update the summaries take
/// their delta without a read.
async fn update_current_in<T: Versioned>(
    db: &Database,
    id: &Bson,
    update: &Document,
    transaction: Option<&mut ClientSession>,
) -> Result<bool, VersionError> {
    let effects = Effects::of::<T>();
    let collection = db.collection::<Document>(T::COLLECTION);
    let filter = doc! { "_id": eq(id.clone()), T::VERSION_FIELD: T::VERSION };
    let copies = |e| VersionError::Copies(Box::new(e));
    let Some(tx) = transaction else {
        if collection.update_one(filter, update.clone()).await?.matched_count == 0 {
            return Ok(false);
        }
        effects.after(db, id, Some(update), false).await.map_err(copies)?;
        return Ok(true);
    };
    let before = collection
        .find_one_and_update(filter, update.clone())
        .projection(Document::new())
        .return_document(mongodb::options::ReturnDocument::Before)
        .session(&mut *tx)
        .await?;
    let Some(before) = before else { return Ok(false) };
    let prior = crate::core::hooks::Prior::Updated { before: &before, update };
    effects.after_in_from(db, id, Some(update), None, prior, Some(tx)).await.map_err(copies)?;
    Ok(true)
}

/// Upgrades the document with this `_id` to the current version in place: read, upgrade,
/// and written back with a compare-and-set on every field as read (a concurrent change
/// makes it write nothing, and return). A missing or already current document is left
/// as it is. Write rows on versioned models run it before writing to an older
/// document (`Update::upgrading`), in the write's session when it has one: inside a
/// transaction the upgrade is part of it, so the transaction's own snapshot sees it
/// (an upgrade outside would stay invisible to it, and conflict with it on mongod).
pub fn upgrade_in_place<'a, T: Versioned + Send + Sync>(
    db: &'a Database,
    id: Bson,
    mut session: Option<&'a mut mongodb::ClientSession>,
) -> futures_util::future::BoxFuture<'a, Result<(), VersionError>> {
    Box::pin(async move {
        let collection = db.collection::<Document>(T::COLLECTION);
        let find = collection.find_one(doc! { "_id": eq(id) });
        let found = match session.as_deref_mut() {
            Some(s) => find.session(s).await?,
            None => find.await?,
        };
        let Some(document) = found else {
            return Ok(());
        };
        let mut loaded = Loaded::<T>::from_document(document)?;
        if !loaded.needs_stamp() {
            return Ok(());
        }
        match loaded.save_in(db, session).await {
            // Lost to another writer: the caller's write tells what the document is now.
            Ok(()) | Err(VersionError::Conflict { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    })
}

/// Read, change, write back: reads the document with this `_id` as the current type,
/// applies `change`, and saves it with a compare-and-set on every field of the document as read,
/// retrying from the read when another writer got there first.
pub async fn modify<T: Versioned + Identified>(
    db: &Database,
    id: &(impl IdOf<T> + ?Sized),
    policy: RetryPolicy,
    change: impl FnMut(&mut T),
) -> Result<T, VersionError> {
    let id = id.id_bson().map_err(VersionError::Encode)?;
    let span = crate::core::trace::span!("versioning.modify", collection = T::COLLECTION);
    let done = crate::core::trace::in_span(span.clone(), modify_inner::<T>(db, id, policy, change)).await;
    if let Err(e) = &done {
        span.in_scope(|| crate::core::trace::event!(DEBUG, error = %e, "not modified"));
    }
    done
}

async fn modify_inner<T: Versioned + Identified>(
    db: &Database,
    id: Bson,
    policy: RetryPolicy,
    mut change: impl FnMut(&mut T),
) -> Result<T, VersionError> {
    let attempts = policy.max_attempts.max(1);
    for _ in 0..attempts {
        let Some(mut loaded) = find_one::<T>(db, doc! { "_id": eq(id.clone()) }).await? else {
            return Err(VersionError::NotFound { collection: T::COLLECTION, id });
        };
        change(&mut loaded.value);
        match loaded.save(db).await {
            Ok(()) => return Ok(loaded.value),
            Err(VersionError::Conflict { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(VersionError::Conflict { collection: T::COLLECTION, id, attempts })
}
