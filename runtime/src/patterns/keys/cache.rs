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
//! Writes made any other way — the raw driver (`Model::collection(db)`), another
//! program, docshape's versioned and copy writers — do not touch the cache: the
//! family's TTL is then the bound on how stale a cached value can be. Choose the TTL
//! with that in mind, or delete the key yourself (`KeyFamily::delete`).
//!
//! A cached row filters on `_id` alone, and its family has one placeholder, which is
//! the id's text (`Display`); the family's value type is the row's result type (the
//! model, or the row's view).

use bson::Bson;
use mongodb::Database;
use redis::aio::ConnectionLike;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::core::access::{Find, FindError, Projection, Update, UpdateError, Updated};
use crate::core::model::Model;
use crate::patterns::keys::{KeyError, KeyFamily, OwnedOf, StringFamily, ValueOf};

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

/// The family value for a document `_id`: its one placeholder is the id's text.
pub fn family_for_id<F: KeyFamily, I: std::fmt::Display>(id: &I) -> Result<F, KeyError> {
    F::from_placeholder_values(vec![id.to_string()])
}

/// The keys to delete after a write to the document `id` of a model whose `_id` type
/// is `I`, cached by the family `F`.
pub fn keys_for_written<F: KeyFamily, I: DeserializeOwned + std::fmt::Display>(
    id: &Bson,
) -> Result<Vec<String>, KeyError> {
    let id: I = crate::core::bson_compat::from_bson(id.clone()).map_err(|e| KeyError::BadValue {
        placeholder: "_id",
        text: id.to_string(),
        detail: e.to_string(),
    })?;
    Ok(family_for_id::<F, I>(&id)?.shard_keys())
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

/// Builds the keys to delete after a write to the document with this `_id`.
pub type WrittenKeys = fn(&Bson) -> Result<Vec<String>, KeyError>;

/// A write row of a model whose reads are cached: it deletes the written document's
/// keys after the update.
#[must_use = "an update does nothing until `run`"]
pub struct CachedUpdate<T> {
    update: Update<T>,
    keys: &'static [WrittenKeys],
}

impl<T> std::fmt::Debug for CachedUpdate<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedUpdate").field("update", &self.update).finish()
    }
}

impl<T: Model> CachedUpdate<T> {
    /// A write row with the key builders of every family that caches the model.
    /// Generated code calls this; use the generated method.
    pub fn new(update: Update<T>, keys: &'static [WrittenKeys]) -> Self {
        Self { update, keys }
    }

    /// The update without the cache (for a model cached elsewhere): the key stays.
    pub fn uncached(self) -> Update<T> {
        self.update
    }

    /// The update (one `findAndModify`), then one `DEL` of the document's keys.
    pub async fn run<C>(self, db: &Database, conn: &mut C) -> Result<Updated, CacheError>
    where
        C: ConnectionLike + Send,
    {
        let updated = self.update.run(db).await.map_err(CacheError::Update)?;
        let mut keys = Vec::new();
        for build in self.keys {
            keys.extend(build(&updated.id)?);
        }
        if !keys.is_empty() {
            redis::cmd("DEL").arg(&keys).exec_async(conn).await.map_err(KeyError::from)?;
        }
        Ok(updated)
    }
}
