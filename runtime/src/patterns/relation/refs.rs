//! Typed references between models: [`Ref<T>`] holds the `_id` of a `T`, stored as
//! exactly that `_id` value, and loads it: one document with [`load_one`], many in
//! one `$in` query with [`load_many`] (never one query per reference), in the order
//! asked, with the missing ones reported rather than skipped.
//!
//! ```
//! use docshape::refs::Ref;
//! use docshape::Model;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Model)]
//! #[model(collection = "users")]
//! struct User {
//!     #[serde(rename = "_id")]
//!     id: String,
//!     #[validate(max_length = 100)]
//!     name: String,
//! }
//!
//! #[derive(Serialize, Deserialize, Model)]
//! #[model(collection = "posts")]
//! struct Post {
//!     #[serde(rename = "_id")]
//!     id: String,
//!     author_id: Ref<User>,
//! }
//!
//! let post = Post { id: "p_777".into(), author_id: Ref::new("u_42".to_string()) };
//! // Stored as the user's `_id`, nothing more.
//! assert_eq!(docshape::bson::to_document(&post).unwrap(),
//!            docshape::bson::doc! { "_id": "p_777", "author_id": "u_42" });
//! // And validated as one.
//! use docshape::validator::Schema;
//! assert_eq!(<Ref<User>>::schema(), docshape::bson::doc! { "bsonType": "string" });
//! ```

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use bson::{doc, Bson, Document, RawDocumentBuf};
use futures_util::TryStreamExt;
use mongodb::Database;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::core::model::Model;
use crate::core::size::MaxBsonSize;
use crate::core::validator::Schema;

/// A model whose documents can be referenced: the Rust type of its `_id`.
///
/// `#[derive(Model)]` implements it: `Id` is the type of the field stored as `_id`
/// (inside its `Option`, when the server assigns it), or `ObjectId` when the struct
/// has no such field and the driver generates one.
pub trait Identified: Model {
    /// The type of the `_id` field.
    type Id: Serialize + DeserializeOwned + Send + Sync;
}

/// The `_id` of a `T`, typed: a `Ref<User>` cannot be passed where a `Ref<Product>` is
/// expected, and it is stored (and validated) exactly as the user's `_id`.
pub struct Ref<T: Identified> {
    id: T::Id,
    marker: PhantomData<fn() -> T>,
}

impl<T: Identified> Ref<T> {
    /// A reference to the `T` whose `_id` is `id`.
    pub fn new(id: T::Id) -> Self {
        Self { id, marker: PhantomData }
    }

    /// The referenced `_id`.
    pub fn id(&self) -> &T::Id {
        &self.id
    }

    /// The referenced `_id`, by value.
    pub fn into_id(self) -> T::Id {
        self.id
    }

    /// The `_id` as BSON, as a query on `T`'s collection spells it.
    pub fn to_bson(&self) -> Result<Bson, bson::ser::Error> {
        bson::to_bson(&self.id)
    }

    /// Loads the referenced document: `Ok(None)` when it does not exist.
    pub async fn load(&self, db: &Database) -> Result<Option<T>, RefError>
    where
        T: DeserializeOwned,
    {
        load_one(db, self).await
    }
}

impl<T: Identified> Clone for Ref<T>
where
    T::Id: Clone,
{
    fn clone(&self) -> Self {
        Self::new(self.id.clone())
    }
}

impl<T: Identified> Copy for Ref<T> where T::Id: Copy {}

impl<T: Identified> fmt::Debug for Ref<T>
where
    T::Id: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ref<{}>({:?})", T::COLLECTION, self.id)
    }
}

impl<T: Identified> PartialEq for Ref<T>
where
    T::Id: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl<T: Identified> Eq for Ref<T> where T::Id: Eq {}

impl<T: Identified> Hash for Ref<T>
where
    T::Id: Hash,
{
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl<T: Identified> PartialOrd for Ref<T>
where
    T::Id: PartialOrd,
{
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.id.partial_cmp(&other.id)
    }
}

impl<T: Identified> Ord for Ref<T>
where
    T::Id: Ord,
{
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.id.cmp(&other.id)
    }
}

impl<T: Identified> Serialize for Ref<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.id.serialize(serializer)
    }
}

impl<'de, T: Identified> Deserialize<'de> for Ref<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::Id::deserialize(deserializer).map(Self::new)
    }
}

impl<T: Identified> Schema for Ref<T>
where
    T::Id: Schema,
{
    fn schema() -> Document {
        T::Id::schema()
    }
    fn schema_some() -> Document {
        T::Id::schema_some()
    }
}

impl<T: Identified> MaxBsonSize for Ref<T>
where
    T::Id: MaxBsonSize,
{
    const MAX_BSON_SIZE: Option<usize> = <T::Id as MaxBsonSize>::MAX_BSON_SIZE;
    const UNSIZED: &'static str = <T::Id as MaxBsonSize>::UNSIZED;
}

/// Why references could not be loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum RefError {
    /// The driver or the server refused the query.
    Mongo {
        /// The referenced collection.
        collection: &'static str,
        /// What the driver said.
        source: Box<mongodb::error::Error>,
    },
    /// An `_id` could not be written as BSON.
    Id {
        /// The referenced collection.
        collection: &'static str,
        /// What serde said.
        source: Box<bson::ser::Error>,
    },
    /// A referenced document exists but does not decode as the model.
    Decode {
        /// The referenced collection.
        collection: &'static str,
        /// The document's `_id`, as stored.
        id: Box<Bson>,
        /// What went wrong.
        detail: String,
    },
    /// [`Referents::all`]: some references point at no document.
    Missing {
        /// The referenced collection.
        collection: &'static str,
        /// The `_id`s that were not found, in the order asked.
        ids: Vec<Bson>,
    },
}

impl fmt::Display for RefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Mongo { collection, source } => {
                write!(f, "loading references from `{collection}`: {source}")
            }
            Self::Id { collection, source } => {
                write!(
                    f,
                    "a reference into `{collection}` has an `_id` that cannot be written as BSON: {source}"
                )
            }
            Self::Decode { collection, id, detail } => {
                write!(f, "`{collection}` document {id} does not decode: {detail}")
            }
            Self::Missing { collection, ids } => {
                let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "{} reference(s) into `{collection}` point at no document: {}",
                    ids.len(),
                    ids.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for RefError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Mongo { source, .. } => Some(source.as_ref()),
            Self::Id { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// Decodes a stored document the way generated readers do: a versioned model
/// upgrades older versions.
fn decode<T: Model + DeserializeOwned>(raw: &RawDocumentBuf) -> Result<T, RefError> {
    let fail = |detail: String| RefError::Decode {
        collection: T::COLLECTION,
        id: Box::new(
            raw.get("_id").ok().flatten().and_then(|v| Bson::try_from(v).ok()).unwrap_or(Bson::Null),
        ),
        detail,
    };
    match T::DECODE_STORED {
        None => bson::from_slice::<T>(raw.as_bytes()).map_err(|e| fail(e.to_string())),
        Some(decode) => {
            let document = Document::try_from(raw.as_ref()).map_err(|e| fail(e.to_string()))?;
            decode(document).map_err(|e| fail(e.to_string()))
        }
    }
}

/// Loads the document `r` references: `Ok(None)` when there is none.
pub async fn load_one<T: Identified + DeserializeOwned>(
    db: &Database,
    r: &Ref<T>,
) -> Result<Option<T>, RefError> {
    let id =
        r.to_bson().map_err(|source| RefError::Id { collection: T::COLLECTION, source: Box::new(source) })?;
    let found = db
        .collection::<RawDocumentBuf>(T::COLLECTION)
        .find_one(doc! { "_id": id })
        .await
        .map_err(|source| RefError::Mongo { collection: T::COLLECTION, source: Box::new(source) })?;
    found.as_ref().map(decode).transpose()
}

/// A key under which a stored `_id` and a referenced one meet: the BSON value's own
/// bytes, so ids of any type (strings, ObjectIds, compound documents) compare as the
/// server compares them for equality of equal types.
fn id_key(id: &Bson) -> Vec<u8> {
    let mut key = vec![id.element_type() as u8];
    match bson::to_vec(&doc! { "k": id.clone() }) {
        Ok(bytes) => key.extend(bytes),
        Err(_) => key.extend(id.to_string().into_bytes()),
    }
    key
}

/// The documents [`load_many`] found, one slot per reference asked, in that order.
pub struct Referents<T: Identified> {
    items: Vec<Option<T>>,
    missing: Vec<Bson>,
}

impl<T: Identified> Referents<T> {
    /// One entry per reference, in the order given; `None` where no document has that
    /// `_id`. A reference asked twice gets the document twice.
    pub fn items(&self) -> &[Option<T>] {
        &self.items
    }

    /// The entries, by value.
    pub fn into_items(self) -> Vec<Option<T>> {
        self.items
    }

    /// The `_id`s that point at no document, in the order asked (each once).
    pub fn missing(&self) -> &[Bson] {
        &self.missing
    }

    /// Every referenced document, in order, or [`RefError::Missing`] naming the
    /// dangling references.
    pub fn all(self) -> Result<Vec<T>, RefError> {
        if self.missing.is_empty() {
            Ok(self.items.into_iter().flatten().collect())
        } else {
            Err(RefError::Missing { collection: T::COLLECTION, ids: self.missing })
        }
    }
}

impl<T: Identified + fmt::Debug> fmt::Debug for Referents<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Referents").field("items", &self.items).field("missing", &self.missing).finish()
    }
}

/// Loads the documents `refs` point at with one `find` (`{_id: {$in: [...]}}`, each
/// distinct `_id` once, in one batch), never a query per reference; only an answer
/// larger than a reply can carry (16 MB) takes more than one. The answer keeps
/// the order of `refs`, with `None` (and an entry in [`Referents::missing`]) for each
/// reference to a document that does not exist.
pub async fn load_many<T: Identified + DeserializeOwned>(
    db: &Database,
    refs: &[Ref<T>],
) -> Result<Referents<T>, RefError> {
    let mut keys = Vec::with_capacity(refs.len());
    let mut distinct: Vec<Bson> = Vec::new();
    let mut seen = HashMap::new();
    for r in refs {
        let id = r
            .to_bson()
            .map_err(|source| RefError::Id { collection: T::COLLECTION, source: Box::new(source) })?;
        let key = id_key(&id);
        if !seen.contains_key(&key) {
            seen.insert(key.clone(), distinct.len());
            distinct.push(id);
        }
        keys.push(key);
    }
    let mut found: HashMap<Vec<u8>, RawDocumentBuf> = HashMap::with_capacity(distinct.len());
    let mut asking = distinct.clone();
    while !asking.is_empty() {
        let mongo = |source| RefError::Mongo { collection: T::COLLECTION, source: Box::new(source) };
        // One batch, and the cursor closed with it (`singleBatch`): a `getMore` per 101
        // documents, or a last empty one, would be the round trips this function exists
        // to avoid. A reply is capped at 16 MB; if that cut the answer short, the ids
        // not seen yet are asked again, so nothing is reported missing that exists.
        let n = i64::try_from(asking.len()).unwrap_or(i64::MAX);
        let mut cursor = db
            .collection::<RawDocumentBuf>(T::COLLECTION)
            .find(doc! { "_id": { "$in": asking.clone() } })
            .limit(-n)
            .await
            .map_err(mongo)?;
        let mut bytes = 0_usize;
        while let Some(raw) = cursor.try_next().await.map_err(mongo)? {
            bytes += raw.as_bytes().len();
            let Some(id) = raw.get("_id").ok().flatten().and_then(|v| Bson::try_from(v).ok()) else {
                continue;
            };
            found.insert(id_key(&id), raw);
        }
        // Well under the cap: every document that exists was in the batch.
        if bytes < 12 * 1024 * 1024 {
            break;
        }
        asking.retain(|id| !found.contains_key(&id_key(id)));
    }
    let mut items = Vec::with_capacity(refs.len());
    let mut missing = Vec::new();
    let mut reported = std::collections::HashSet::new();
    for key in keys {
        match found.get(&key) {
            Some(raw) => items.push(Some(decode::<T>(raw)?)),
            None => {
                items.push(None);
                if reported.insert(key.clone()) {
                    missing.push(distinct[seen[&key]].clone());
                }
            }
        }
    }
    Ok(Referents { items, missing })
}
