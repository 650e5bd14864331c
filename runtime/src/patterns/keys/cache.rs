//! Read-through caches: an access row answered from a key family first.
//!
//! patterns-en: "Every pattern must map to one indexed query *or key lookup*". A read
//! row that names a string family with `cache = ProductCache` (the seed's
//! `cache:product:{id}`, "invalidate on product write") reads through it:
//!
//! - [`CachedFind::one`] sends `GET` (`GETEX` for a sliding TTL); on a hit it returns
//!   the cached value, with no MongoDB command; on a miss it runs the row's indexed
//!   query and stores what it found with `SET ... EX ttl`, the family's TTL. A document
//!   that does not exist is not cached (the next read asks again).
//! - The model's write rows take the connection too ([`CachedUpdate::run`]) and delete
//!   the key of the document they updated after the update, so the next read fills
//!   the cache again from the new document.
//!
//! - docshape's other writers of the model — the versioned `save`, `update_one`,
//!   `modify` and backfill, and `denormalized::update_one` — delete the keys too once a
//!   connection is installed for the database with [`invalidate_on_write`]: they have
//!   no connection parameter, so they use that one.
//! - Staleness is a product decision, never an accident (patterns-en). Without an
//!   installed connection, every docshape writer of the model (the write rows'
//!   [`CachedUpdate::uncached`] too) refuses before writing anything, with
//!   [`CopyError::CacheNotInvalidated`] naming the family — unless the family declares
//!   its TTL as the accepted staleness, `#[key(..., staleness = "ttl")]` (shown in the
//!   key catalog's notes): then the writers leave its keys, and a read may return the
//!   old value until the key expires.
//!
//! Writes made outside docshape — the raw driver (`Model::collection(db)`), another
//! program, the shell — do not touch the cache: for them, too, the TTL is the bound.
//! Choose the TTL with that in mind, or delete the key yourself (`KeyFamily::delete`).
//!
//! A cached row filters on `_id` alone, and its family has one placeholder, whose type
//! is the model's `_id` type ([`CachesId`]): the key is built from the id value itself,
//! by the family's own encoding of that type, never from another type's text. So two
//! distinct ids never share a key (`"007"` and `"7"` are two `String` ids and two keys;
//! a `u64` family cannot cache `String` ids at all, which is a compile error under
//! `cache = ...`), and an `_id` of type `Bson` or `Document` cannot be cached (no
//! placeholder type holds every value of those exactly). The family's value type is
//! the row's result type (the model, or the row's view).
//!
//! On a tenant model (`#[model(tenant = org_id)]`) a cached row filters on the tenant
//! and the `_id`, `filter(org_id, _id)`, and its family has two placeholders, the tenant
//! then the id ([`CachesTenantId`]): `cache:project:{org}:{id}`. The key of one
//! tenant's read is never another tenant's (each value is escaped into its own segment,
//! so a tenant text cannot add a segment or spell another key), and it is filled only
//! with what the row's query returned, which carries `{org_id: {$eq: tenant}}`: no
//! document of one tenant is ever cached under, or served from, another tenant's key.
//! A writer knows a document by its `_id`; to delete its keys it reads the written
//! documents' tenants (one `find` by `_id`, projected on the tenant, per batch), since
//! a document never changes tenant (a write row setting the tenant is refused at
//! compile time).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use bson::{Bson, Document};
use futures_util::future::BoxFuture;
use mongodb::Database;
use redis::aio::ConnectionLike;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::core::access::literal::{in_filter, Literal};
use crate::core::access::{Find, FindError, Projection, Update, UpdateError, Updated};
use crate::core::denormalized::CopyError;
use crate::core::hooks::{CopyWriteHook, Derived, SourceWriteGuard, SourceWriteHook};
use crate::core::model::Model;
use crate::core::trace::event;
use crate::patterns::keys::{
    CachesId, CachesTenantId, KeyError, KeyFamily, KeySpec, OwnedOf, Staleness, StringFamily, ValueOf,
};

/// Why a cached read or write failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum CacheError {
    /// The indexed query failed.
    Find(FindError),
    /// The write failed; the key was not deleted.
    Update(UpdateError),
    /// Redis refused the read, the fill or the delete, or the cached text does not
    /// decode. After a write, the document is updated but its key may still hold the
    /// old value (until its TTL).
    Key(KeyError),
}

impl std::fmt::Display for CacheError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Find(e) => write!(f, "{e}"),
            Self::Update(e) => write!(f, "{e}"),
            Self::Key(e) => write!(f, "cache: {e}"),
        }
    }
}

impl std::error::Error for CacheError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Find(e) => Some(e),
            Self::Update(e) => Some(e),
            Self::Key(e) => Some(e),
        }
    }
}

impl From<KeyError> for CacheError {
    fn from(e: KeyError) -> Self {
        Self::Key(e)
    }
}

/// How a model's documents are cached in the family `F`, by `_id`s of type `I`: the
/// family value of a read and the key builder of a write. Generated code gets it from
/// [`cache_of`].
pub struct CacheOf<F, I> {
    /// The family value for a document `_id`.
    pub family: fn(I) -> F,
    /// What a write does with the family's keys.
    pub written: CachedFamily,
}

/// How a tenant model's documents are cached in the family `F`, by tenants of type
/// `T` and `_id`s of type `I`. Generated code gets it from [`cache_in`].
pub struct CacheIn<F, T, I> {
    /// The family value for a document of a tenant.
    pub family: fn(T, I) -> F,
    /// What a write does with the family's keys.
    pub written: CachedFamily,
}

/// A family caching a model, as its writers see it: the keys of a written document,
/// and the family's [`Staleness`] decision.
#[derive(Debug, Clone, Copy)]
pub struct CachedFamily {
    /// The keys to delete after a write (see [`keys_for_written`]).
    pub keys: WrittenKeys,
    /// The family's spec (its name and staleness).
    pub spec: fn() -> &'static KeySpec,
    /// On a tenant model, the stored name of the tenant field, whose value is part of
    /// the key: a writer reads it from the written documents.
    pub tenant: Option<&'static str>,
}

fn spec_of<F: KeyFamily>() -> &'static KeySpec {
    &F::SPEC
}

/// The one place where a cached row's family is checked against the model's `_id`
/// type: the read and the writers of the model both call it, with the same types under
/// the same tokens, so a family of another type is one error.
pub const fn cache_of<F: CachesId<I>, I: DeserializeOwned>() -> CacheOf<F, I> {
    CacheOf {
        family: F::for_id,
        written: CachedFamily { keys: keys_for_written::<F, I>, spec: spec_of::<F>, tenant: None },
    }
}

/// [`cache_of`] for a tenant model whose tenant field `tenant` has the type `T`: the
/// one place where the family is checked against the tenant's and the `_id`'s types.
pub const fn cache_in<F, T, I>(tenant: &'static str) -> CacheIn<F, T, I>
where
    F: CachesTenantId<T, I>,
    T: DeserializeOwned,
    I: DeserializeOwned,
{
    CacheIn {
        family: F::for_tenant_id,
        written: CachedFamily { keys: keys_in_written::<F, T, I>, spec: spec_of::<F>, tenant: Some(tenant) },
    }
}

/// The compile-time check of a cached row whose value holds a denormalized copy: its
/// family must not accept staleness up to its TTL, or a cached view could be older
/// than the copy's `max_stale` by the TTL besides (the copy writers delete the keys
/// only when they are bound to). Generated code evaluates it in a `const`, whose
/// error is `message`.
pub const fn copies_invalidated<F: KeyFamily>(message: &str) {
    if matches!(F::SPEC.staleness, Staleness::Ttl) {
        panic!("{}", message);
    }
}

/// The keys to delete after a write to the document `id` of a model whose `_id` type
/// is `I`, cached by the family `F`: the stored `_id` is read as an `I` (as the model
/// reads it) and its key built as a read of that id builds it.
pub fn keys_for_written<F: CachesId<I>, I: DeserializeOwned>(
    id: &Bson,
    _tenant: Option<&Bson>,
) -> Result<Vec<String>, KeyError> {
    Ok(F::for_id(read_as(id, "_id")?).shard_keys())
}

/// [`keys_for_written`] on a tenant model: the key of the document `id` of the tenant
/// `tenant` (as stored in the document). Without a tenant there is no key to build.
pub fn keys_in_written<F, T, I>(id: &Bson, tenant: Option<&Bson>) -> Result<Vec<String>, KeyError>
where
    F: CachesTenantId<T, I>,
    T: DeserializeOwned,
    I: DeserializeOwned,
{
    let Some(tenant) = tenant else {
        return Err(KeyError::BadValue {
            placeholder: "tenant",
            text: String::new(),
            detail: format!("the written document {id} has no tenant"),
        });
    };
    Ok(F::for_tenant_id(read_as(tenant, "tenant")?, read_as(id, "_id")?).shard_keys())
}

/// A stored value read as the type the model reads it as.
fn read_as<V: DeserializeOwned>(value: &Bson, placeholder: &'static str) -> Result<V, KeyError> {
    crate::core::bson_compat::from_bson(value.clone()).map_err(|e| KeyError::BadValue {
        placeholder,
        text: value.to_string(),
        detail: e.to_string(),
    })
}

/// A read row answered from its key family first: see the [module docs](self).
#[must_use = "a finder does nothing until `one`"]
pub struct CachedFind<F, V> {
    find: Find<V>,
    family: Result<F, KeyError>,
}

impl<F, V> std::fmt::Debug for CachedFind<F, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedFind").field("find", &self.find).finish()
    }
}

impl<F, V> CachedFind<F, V>
where
    F: StringFamily + Send + Sync,
    F::Encoding: crate::patterns::keys::Encoding<Value = V, Owned = V>,
    V: Projection + Serialize + DeserializeOwned + Send + Sync + 'static,
    ValueOf<F>: Sized,
    OwnedOf<F>: Sized,
{
    /// A cached finder. Generated code calls this; use the generated method.
    pub fn new(find: Find<V>, family: Result<F, KeyError>) -> Self {
        Self { find, family }
    }

    /// The row's query without the cache: its other terminal calls.
    pub fn uncached(self) -> Find<V> {
        self.find
    }

    /// The key this read uses; `None` when the id does not build one.
    pub fn key(&self) -> Option<String> {
        self.family.as_ref().ok().map(KeyFamily::key)
    }

    /// The document: from the cache (one `GET`), else from the indexed query (one
    /// `find`), then stored in the cache with the family's TTL (one `SET`).
    pub async fn one<C>(self, db: &Database, conn: &mut C) -> Result<Option<V>, CacheError>
    where
        C: ConnectionLike + Send,
    {
        let family = self.family?;
        if let Some(hit) = family.get(conn).await? {
            return Ok(Some(hit));
        }
        let Some(found) = self.find.one(db).await.map_err(CacheError::Find)? else { return Ok(None) };
        family.set(conn, &found).await?;
        Ok(Some(found))
    }
}

/// Builds the keys to delete after a write to the document with this `_id` (and, on a
/// tenant model, this tenant, as stored).
pub type WrittenKeys = fn(&Bson, Option<&Bson>) -> Result<Vec<String>, KeyError>;

/// A write row of a model whose reads are cached: it deletes the written document's
/// keys after the update.
#[must_use = "an update does nothing until `run`"]
pub struct CachedUpdate<T> {
    update: Update<T>,
    families: &'static [CachedFamily],
}

impl<T> std::fmt::Debug for CachedUpdate<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedUpdate").field("update", &self.update).finish()
    }
}

impl<T: Model> CachedUpdate<T> {
    /// A write row with every family that caches the model. Generated code calls
    /// this; use the generated method.
    pub fn new(update: Update<T>, families: &'static [CachedFamily]) -> Self {
        Self { update, families }
    }

    /// The update without this connection: the keys are deleted through a connection
    /// [installed](invalidate_on_write) for the database. With none installed, it
    /// writes nothing and fails ([`CopyError::CacheNotInvalidated`], inside
    /// [`UpdateError::AfterWrite`]) unless every family accepts values stale up to its
    /// TTL (`staleness = "ttl"`), whose keys then stay until they expire.
    pub fn uncached(self) -> Update<T> {
        self.update
    }

    /// The update (one `update` or `findAndModify`), then one `DEL` of the document's
    /// keys on `conn`. When a connection is [installed](invalidate_on_write) for `db`,
    /// the update's own hook has already deleted them through it, and `conn` is not
    /// used: one `DEL`, not two.
    pub async fn run<C>(self, db: &Database, conn: &mut C) -> Result<Updated, CacheError>
    where
        C: ConnectionLike + Send,
    {
        if installed(db).is_some() {
            return self.update.run(db).await.map_err(CacheError::Update);
        }
        // The update's hook finds no installed connection; this call deletes the keys
        // itself, so the hook must not warn that nobody will.
        let updated = CALLER_DELETES.scope((), self.update.run(db)).await.map_err(CacheError::Update)?;
        let keys = written_keys(db, T::COLLECTION, self.families.iter(), std::slice::from_ref(&updated.id))
            .await
            .map_err(|e| CacheError::Update(UpdateError::AfterWrite(Box::new(e))))?;
        if !keys.is_empty() {
            redis::cmd("DEL").arg(&keys).exec_async(conn).await.map_err(KeyError::from)?;
        }
        Ok(updated)
    }
}

/// A model whose reads are cached: `#[derive(Model)]` registers one for every model
/// with a `cache = Family` row, so that a write to its collection by any docshape
/// writer knows which keys to delete.
#[derive(Debug)]
pub struct CachedModel {
    /// The model's collection.
    pub collection: &'static str,
    /// Every family that caches it.
    pub families: &'static [CachedFamily],
}

inventory::collect!(CachedModel);

/// Deletes keys through a connection of the application's.
trait Deleter: Send + Sync {
    fn delete(&self, keys: Vec<String>) -> BoxFuture<'_, Result<(), KeyError>>;
}

/// A cloneable connection (a multiplexed connection, a `ConnectionManager`, a cluster
/// connection): each delete runs on a clone, so concurrent writers do not queue on a
/// lock of ours.
struct Cloned<C>(C);

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Deleter for Cloned<C> {
    fn delete(&self, keys: Vec<String>) -> BoxFuture<'_, Result<(), KeyError>> {
        let mut conn = self.0.clone();
        Box::pin(
            async move { redis::cmd("DEL").arg(&keys).exec_async(&mut conn).await.map_err(KeyError::from) },
        )
    }
}

tokio::task_local! {
    /// Set while a [`CachedUpdate::run`] runs its update: it deletes the keys itself.
    static CALLER_DELETES: ();
}

/// The installed connections, by database name.
static INSTALLED: RwLock<Option<HashMap<String, Arc<dyn Deleter>>>> = RwLock::new(None);

fn installed(db: &Database) -> Option<Arc<dyn Deleter>> {
    let map = INSTALLED.read().unwrap_or_else(PoisonError::into_inner);
    map.as_ref()?.get(db.name()).cloned()
}

/// Makes every docshape writer of a cached model in `db` delete the written
/// document's cached keys through `conn`: the versioned `save`, `update_one`, `modify`
/// and backfill, `denormalized::update_one`, and the write rows (whose `run` then needs no
/// connection of its own: [`CachedUpdate::uncached`] is enough); and every writer of
/// denormalized copies (the worker, the watcher, `reconcile`, `repair`), for the
/// documents whose copies it rewrites.
///
/// Call it once at start-up, beside opening the database. It applies to every
/// `Database` handle with this name in the process, replaces a connection installed
/// before, and costs nothing for models without a `cache = ...` row. A `DEL` that
/// fails after a write is reported as [`CopyError::Derived`] (the document is written;
/// the key may hold the old value until its TTL).
///
/// Writes made outside docshape (the raw driver, another program) still leave the
/// keys: see the [module docs](self).
pub fn invalidate_on_write<C>(db: &Database, conn: C)
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let mut map = INSTALLED.write().unwrap_or_else(PoisonError::into_inner);
    map.get_or_insert_with(HashMap::new).insert(db.name().to_owned(), Arc::new(Cloned(conn)));
}

/// Removes the connection [installed](invalidate_on_write) for `db`; returns whether
/// there was one. docshape's writers other than the write rows then leave cached
/// keys until their TTL again.
pub fn stop_invalidating(db: &Database) -> bool {
    let mut map = INSTALLED.write().unwrap_or_else(PoisonError::into_inner);
    map.as_mut().is_some_and(|m| m.remove(db.name()).is_some())
}

inventory::submit! { SourceWriteHook { kind: Derived::Cache, after_write: after_write_hook } }
inventory::submit! { SourceWriteGuard { kind: Derived::Cache, check: before_write_guard } }
// The copy writers (the worker, the watcher's reconcile, `reconcile`, `repair`, the
// sources' writers) rewrite other documents than the one written: a cached one's keys
// go too.
inventory::submit! { CopyWriteHook { interested: is_cached, after_write: after_copy_write_hook } }

/// Whether any family caches the documents of `collection`.
fn is_cached(collection: &'static str) -> bool {
    inventory::iter::<CachedModel>.into_iter().any(|m| m.collection == collection && !m.families.is_empty())
}

fn after_copy_write_hook<'a>(
    db: &'a Database,
    collection: &'static str,
    ids: &'a [Bson],
) -> BoxFuture<'a, Result<(), CopyError>> {
    Box::pin(invalidate_copies(db, collection, ids))
}

/// Deletes, in one `DEL`, the cached keys of the documents `ids` of `collection`,
/// whose copies a copy writer just rewrote. With no connection installed, the keys
/// are left (a copy writer has no connection of its own and its write is not
/// refused: the copies it writes are owed to a source write made earlier): logged as
/// [`invalidate`] does.
async fn invalidate_copies(db: &Database, collection: &'static str, ids: &[Bson]) -> Result<(), CopyError> {
    let keys = written_keys(db, collection, families_of(collection), ids).await?;
    if keys.is_empty() {
        return Ok(());
    }
    let Some(deleter) = installed(db) else {
        let accepted = invalidated_families(collection).next().is_none();
        if accepted {
            event!(
                DEBUG,
                collection,
                keys = keys.len(),
                "cached keys left until their TTL (staleness = \"ttl\")"
            );
        } else {
            event!(
                WARN,
                collection,
                keys = keys.len(),
                "cache not invalidated after a copy write: no connection installed (keys::invalidate_on_write)"
            );
        }
        return Ok(());
    };
    // A cluster connection splits a `DEL` of keys in several slots by node.
    deleter.delete(keys).await.map_err(|error| CopyError::Derived {
        collection,
        id: ids.first().cloned().unwrap_or(Bson::Null),
        what: "cached keys",
        error: Arc::new(error),
    })
}

/// The families caching `source` whose keys must be deleted after a write.
fn invalidated_families(source: &'static str) -> impl Iterator<Item = &'static KeySpec> {
    inventory::iter::<CachedModel>
        .into_iter()
        .filter(move |m| m.collection == source)
        .flat_map(|m| m.families.iter().map(|f| (f.spec)()))
        .filter(|spec| spec.staleness == Staleness::Invalidated)
}

/// Refuses a write to a cached model's document, before it is made, when its keys
/// would be left stale by accident: a family that does not accept staleness up to its
/// TTL, no connection installed for the database, and no caller deleting the keys
/// itself ([`CachedUpdate::run`]).
// The hooks' error type (see `core::hooks`).
#[allow(clippy::result_large_err)]
fn before_write_guard(db: &Database, source: &'static str) -> Result<(), CopyError> {
    if installed(db).is_some() || CALLER_DELETES.try_with(|_| ()).is_ok() {
        return Ok(());
    }
    match invalidated_families(source).next() {
        Some(spec) => Err(CopyError::CacheNotInvalidated { collection: source, family: spec.name }),
        None => Ok(()),
    }
}

fn after_write_hook<'a>(
    db: &'a Database,
    source: &'static str,
    id: &'a Bson,
    _update: Option<&'a Document>,
) -> BoxFuture<'a, Result<(), CopyError>> {
    Box::pin(invalidate(db, source, id))
}

/// Deletes the cached keys of the document `id` of `source`, if any family caches it.
async fn invalidate(db: &Database, source: &'static str, id: &Bson) -> Result<(), CopyError> {
    let failed = |error: KeyError| CopyError::Derived {
        collection: source,
        id: id.clone(),
        what: "cached keys",
        error: Arc::new(error),
    };
    let keys = written_keys(db, source, families_of(source), std::slice::from_ref(id)).await?;
    if keys.is_empty() {
        return Ok(());
    }
    let Some(deleter) = installed(db) else {
        if CALLER_DELETES.try_with(|_| ()).is_ok() {
            return Ok(());
        }
        // The guard refused the write unless every family accepts staleness up to its
        // TTL; a writer that skipped the guard is still told.
        let accepted = invalidated_families(source).next().is_none();
        if accepted {
            event!(
                DEBUG,
                collection = source,
                keys = keys.len(),
                "cached keys left until their TTL (staleness = \"ttl\")"
            );
        } else {
            event!(
                WARN,
                collection = source,
                keys = keys.len(),
                "cache not invalidated: no connection installed (keys::invalidate_on_write)"
            );
        }
        return Ok(());
    };
    deleter.delete(keys).await.map_err(failed)
}

/// Every family caching the documents of `collection`.
fn families_of(collection: &'static str) -> impl Iterator<Item = &'static CachedFamily> {
    inventory::iter::<CachedModel>
        .into_iter()
        .filter(move |m| m.collection == collection)
        .flat_map(|m| m.families)
}

/// The keys of the written documents `ids` of `collection` in `families`. A family of
/// a tenant model keys a document by its tenant too: the tenants are read from the
/// documents, one `find` by `_id` (the `_id` index) projected on the tenant field, for
/// the batch. A document that is no longer there has no tenant to read and keeps no
/// key of a tenant family (docshape's writers never remove one; a document removed by
/// another program keeps its keys until their TTL, as the module docs say).
async fn written_keys<'f>(
    db: &Database,
    collection: &'static str,
    families: impl Iterator<Item = &'f CachedFamily>,
    ids: &[Bson],
) -> Result<Vec<String>, CopyError> {
    let failed = |id: &Bson, error: KeyError| CopyError::Derived {
        collection,
        id: id.clone(),
        what: "cached keys",
        error: Arc::new(error),
    };
    let mut tenants: HashMap<&'static str, HashMap<String, Bson>> = HashMap::new();
    let mut keys = Vec::new();
    for family in families {
        let Some(field) = family.tenant else {
            for id in ids {
                keys.extend((family.keys)(id, None).map_err(|e| failed(id, e))?);
            }
            continue;
        };
        if !tenants.contains_key(field) {
            let read = tenants_of(db, collection, field, ids).await.map_err(|error| CopyError::Derived {
                collection,
                id: ids.first().cloned().unwrap_or(Bson::Null),
                what: "cached keys (the written documents' tenants)",
                error: Arc::new(error),
            })?;
            tenants.insert(field, read);
        }
        let read = &tenants[field];
        for id in ids {
            if let Some(tenant) = read.get(&id_text(id)) {
                keys.extend((family.keys)(id, Some(tenant)).map_err(|e| failed(id, e))?);
            }
        }
    }
    Ok(keys)
}

/// An `_id` as a map key: its variant and value (`"7"` and `7` stay apart).
fn id_text(id: &Bson) -> String {
    format!("{id:?}")
}

/// The tenant of each document `ids` of `collection`, by [`id_text`].
async fn tenants_of(
    db: &Database,
    collection: &'static str,
    field: &'static str,
    ids: &[Bson],
) -> Result<HashMap<String, Bson>, mongodb::error::Error> {
    let mut out = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    // Through the literal encoder: an `_id` shaped as an operator, or a regex (which
    // `$in` would read as a pattern), is compared as a value.
    let filter = in_filter("_id", ids.iter().cloned().map(Literal::stored));
    let mut cursor =
        db.collection::<Document>(collection).find(filter).projection(bson::doc! { field: 1 }).await?;
    while cursor.advance().await? {
        let found = cursor.deserialize_current()?;
        if let (Some(id), Some(tenant)) = (found.get("_id"), found.get(field)) {
            out.insert(id_text(id), tenant.clone());
        }
    }
    Ok(out)
}
