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
//! assert_eq!(docshape::bson_compat::to_document(&post).unwrap(),
//!            docshape::bson::doc! { "_id": "p_777", "author_id": "u_42" });
//! // And validated as one.
//! use docshape::validator::Schema;
//! assert_eq!(<Ref<User>>::schema(), docshape::bson::doc! { "bsonType": "string" });
//! ```

use crate::core::bson_compat;
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use bson::{doc, Bson, Document, RawDocumentBuf};
use futures_util::future::BoxFuture;
use futures_util::TryStreamExt;
use mongodb::Database;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::core::model::{eq, Model, NoTenant};
use crate::core::size::{MaxBsonSize, Unsized};
use crate::core::validator::Schema;

pub use crate::core::model::{IdOf, Identified};

/// The `_id` of a `T`, typed: a `Ref<User>` cannot be passed where a `Ref<Product>` is
/// expected, and it is stored (and validated) exactly as the user's `_id`.
pub struct Ref<T: Identified> {
    id: T::Id,
    marker: PhantomData<fn() -> T>,
}

impl<T: Identified> IdOf<T> for Ref<T> {
    fn id_bson(&self) -> Result<Bson, bson_compat::SerError> {
        self.to_bson()
    }
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

    /// The `_id` as BSON, as a query on `T`'s collection spells it: written
    /// literally ([`crate::access::literal()`]), as the driver writes a stored `_id`.
    pub fn to_bson(&self) -> Result<Bson, bson_compat::SerError> {
        crate::core::access::literal::literal(&self.id)
    }

    /// Loads the referenced document: `Ok(None)` when it does not exist. Only for a
    /// model without a tenant ([`NoTenant`]): a tenant model's documents are loaded
    /// within a tenant with [`Ref::load_in`], and this call is a compile error.
    // A boxed future, not an `async fn`: the bound is then one error under the call,
    // where an `async fn`'s future would repeat it under the call and the `.await`.
    pub fn load<'a>(&'a self, db: &'a Database) -> BoxFuture<'a, Result<Option<T>, RefError>>
    where
        T: NoTenant + DeserializeOwned + Send,
    {
        Box::pin(find_one(db, self))
    }

    /// Loads the referenced document within `tenant`, of a model declared
    /// `#[model(tenant = ...)]`: `Ok(None)` when it does not exist or belongs to another
    /// tenant; a soft-deleted document is none either. The tenant is compared with
    /// `$eq`, never read as an operator. On a model without a tenant, as [`Ref::load`]
    /// but for the soft delete.
    pub async fn load_in<V>(&self, db: &Database, tenant: &V) -> Result<Option<T>, RefError>
    where
        T: Model + DeserializeOwned,
        V: Serialize + ?Sized,
    {
        let fail = |source| RefError::Id { collection: T::COLLECTION, source: Box::new(source) };
        let mut filter = doc! { "_id": eq(self.to_bson().map_err(fail)?) };
        if let Some(field) = T::TENANT {
            filter.insert(field, eq(crate::core::access::literal::literal(tenant).map_err(fail)?));
        }
        if let Some(field) = T::SOFT_DELETE {
            filter.insert(field, Bson::Null);
        }
        let found = db
            .collection::<RawDocumentBuf>(T::COLLECTION)
            .find_one(filter)
            .await
            .map_err(|source| RefError::Mongo { collection: T::COLLECTION, source: Box::new(source) })?;
        found.as_ref().map(decode).transpose()
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
    // The referenced model's `_id` with its field's constraints: a `Ref<User>` over a
    // `String` id with `max_length = 64` is stored as such a string, and its size
    // (`MaxBsonSize` below) counts on that bound, which the validator enforces.
    fn schema() -> Document {
        T::id_schema()
    }
    fn schema_some() -> Document {
        T::id_schema()
    }
}

/// As large as `T`'s `_id`, with that field's bounds ([`Identified::ID_SIZE`]): a
/// `Ref<User>` over a `String` `_id` with `#[validate(max_length = 64)]` is bounded.
impl<T: Identified> MaxBsonSize for Ref<T> {
    const MAX_BSON_SIZE: Option<usize> = T::ID_SIZE.0;
    const UNSIZED: Unsized = Unsized::Ref { id: &T::ID_SIZE.1 };
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
        source: Box<bson_compat::SerError>,
    },
    /// A referenced document exists but does not decode as the model.
    Decode {
        /// The referenced collection.
        collection: &'static str,
        /// The document's `_id`, as stored.
        id: Box<Bson>,
        /// What the decoder said (serde's error, the raw document's, or a versioned
        /// model's upgrade error).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// [`load_many`] asked again for the ids a full reply left out and the server's
    /// answer settled none of them (documents larger than a reply can carry, or ids
    /// the server matches but this process cannot). Asking once more would loop.
    NoProgress {
        /// The referenced collection.
        collection: &'static str,
        /// How many distinct ids were still unsettled.
        pending: usize,
    },
    /// [`insert_one`](crate::relation::insert_one) inserted the document, then bringing
    /// its refreshed copies in line with a source that changed meanwhile failed, or the
    /// server refused the copy's new value
    /// ([`CopyError::Refused`](crate::core::denormalized::CopyError::Refused)): the
    /// document holds the values it was inserted with. Also an insert's `sync` summary
    /// that failed in the insert's transaction (the inner error's `source_updated` is
    /// `false`): then nothing was inserted.
    Copies {
        /// The inserted document's collection.
        collection: &'static str,
        /// What went wrong, naming the copy.
        source: Box<crate::core::denormalized::CopyError>,
    },
    /// A document of a model with a tenant references, for a denormalized copy, a
    /// source document of another tenant: the copy is not filled from it and the
    /// document is not written (a copy never carries another tenant's data).
    CrossTenant {
        /// The referencing document's collection.
        collection: &'static str,
        /// The source's collection.
        source: &'static str,
        /// The referenced source document's `_id`.
        id: Box<Bson>,
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
            Self::Decode { collection, id, source } => {
                write!(f, "`{collection}` document {id} does not decode: {source}")
            }
            Self::NoProgress { collection, pending } => write!(
                f,
                "loading references from `{collection}`: asked again for {pending} id(s) a full reply left out, and the answer settled none; stopped rather than ask forever"
            ),
            // Data that had to commit with the insert (a `sync` summary) failed in the
            // insert's transaction, which was aborted with it.
            Self::Copies { collection, source }
                if matches!(**source, crate::core::denormalized::CopyError::Copy { source_updated: false, .. }) =>
            {
                write!(f, "a `{collection}` document was not inserted: {source}")
            }
            Self::Copies { collection, source } => {
                write!(f, "a `{collection}` document was inserted, and its copies were not refreshed: {source}")
            }
            Self::CrossTenant { collection, source, id } => write!(
                f,
                "a `{collection}` document references `{source}` document {id} of another tenant for a copy; refused"
            ),
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
            Self::Decode { source, .. } => Some(source.as_ref()),
            Self::Copies { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// Decodes a stored document the way generated readers do: a versioned model
/// upgrades older versions.
fn decode<T: Model + DeserializeOwned>(raw: &RawDocumentBuf) -> Result<T, RefError> {
    let fail = |source: Box<dyn std::error::Error + Send + Sync>| RefError::Decode {
        collection: T::COLLECTION,
        id: Box::new(
            raw.get("_id").ok().flatten().and_then(|v| Bson::try_from(v).ok()).unwrap_or(Bson::Null),
        ),
        source,
    };
    match T::DECODE_STORED {
        None => bson_compat::from_slice::<T>(raw.as_bytes()).map_err(|e| fail(Box::new(e))),
        Some(decode) => {
            let document = Document::try_from(raw.as_ref()).map_err(|e| fail(Box::new(e)))?;
            decode(document).map_err(|e| fail(Box::new(e)))
        }
    }
}

/// Loads the document `r` references: `Ok(None)` when there is none. Only for a
/// model without a tenant ([`NoTenant`]; a tenant model's: [`Ref::load_in`]).
// Boxed for the reason given at `Ref::load`.
pub fn load_one<'a, T: Identified + NoTenant + DeserializeOwned + Send>(
    db: &'a Database,
    r: &'a Ref<T>,
) -> BoxFuture<'a, Result<Option<T>, RefError>> {
    Box::pin(find_one(db, r))
}

async fn find_one<T: Identified + DeserializeOwned>(
    db: &Database,
    r: &Ref<T>,
) -> Result<Option<T>, RefError> {
    let id =
        r.to_bson().map_err(|source| RefError::Id { collection: T::COLLECTION, source: Box::new(source) })?;
    let found = db
        .collection::<RawDocumentBuf>(T::COLLECTION)
        .find_one(doc! { "_id": eq(id) })
        .await
        .map_err(|source| RefError::Mongo { collection: T::COLLECTION, source: Box::new(source) })?;
    found.as_ref().map(decode).transpose()
}

/// A key under which a stored `_id` and a referenced one meet when the server would
/// call them equal: numbers by value whatever their BSON type (an `int32` stored by the
/// shell, an `i64` asked by Rust), documents and arrays element by element, every other
/// value by its type and bytes.
fn id_key(id: &Bson) -> Vec<u8> {
    let mut key = Vec::new();
    push_key(id, &mut key);
    key
}

fn push_key(value: &Bson, key: &mut Vec<u8>) {
    // A number that is a whole value within i64 is keyed as that integer; any other
    // number by its f64 bits (the server compares mixed numbers by value too).
    fn number(key: &mut Vec<u8>, whole: Option<i64>, float: f64) {
        key.push(b'n');
        match whole {
            Some(i) => {
                key.push(b'i');
                key.extend(i.to_be_bytes());
            }
            None => {
                key.push(b'f');
                let bits = if float.is_nan() { f64::NAN.to_bits() } else { float.to_bits() };
                key.extend(bits.to_be_bytes());
            }
        }
    }
    fn whole(f: f64) -> Option<i64> {
        // i64::MAX as f64 rounds up to 2^63, which no i64 holds.
        (f.is_finite() && f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64).then_some(f as i64)
    }
    match value {
        Bson::Int32(i) => number(key, Some(i64::from(*i)), f64::from(*i)),
        Bson::Int64(i) => number(key, Some(*i), *i as f64),
        Bson::Double(f) => number(key, whole(*f), if *f == 0.0 { 0.0 } else { *f }),
        Bson::Decimal128(d) => match d.to_string().parse::<f64>() {
            Ok(f) => number(key, whole(f), f),
            Err(_) => {
                key.push(b'd');
                key.extend(d.bytes());
            }
        },
        Bson::Document(d) => {
            key.push(b'{');
            for (k, v) in d {
                key.extend(k.as_bytes());
                key.push(0);
                push_key(v, key);
            }
            key.push(b'}');
        }
        Bson::Array(items) => {
            key.push(b'[');
            for v in items {
                push_key(v, key);
            }
            key.push(b']');
        }
        other => {
            key.push(other.element_type() as u8);
            match bson_compat::to_vec(&doc! { "k": other.clone() }) {
                Ok(bytes) => key.extend(bytes),
                Err(_) => key.extend(other.to_string().into_bytes()),
            }
        }
    }
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
/// reference to a document that does not exist. Only for a model without a tenant
/// ([`NoTenant`]): a tenant model's would be read across tenants.
// Boxed for the reason given at `Ref::load`.
pub fn load_many<'a, T: Identified + NoTenant + DeserializeOwned + Send>(
    db: &'a Database,
    refs: &'a [Ref<T>],
) -> BoxFuture<'a, Result<Referents<T>, RefError>> {
    Box::pin(find_many(db, refs))
}

async fn find_many<T: Identified + DeserializeOwned>(
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
            // Each id is matched literally: a regex or operator-shaped id asks for
            // the document holding that value, never for the documents it would match.
            .find(crate::core::access::literal::in_filter(
                "_id",
                asking.iter().cloned().map(crate::core::access::literal::Literal::stored),
            ))
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
        let before = asking.len();
        asking.retain(|id| !found.contains_key(&id_key(id)));
        // The progress argument: each round must settle at least one id, or asking
        // again would send the same query forever.
        if asking.len() == before {
            return Err(RefError::NoProgress { collection: T::COLLECTION, pending: asking.len() });
        }
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

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use bson::{doc, Bson, Decimal128};

    use super::id_key;

    #[test]
    fn numbers_meet_by_value_whatever_their_type() {
        let five = id_key(&Bson::Int64(5));
        assert_eq!(id_key(&Bson::Int32(5)), five);
        assert_eq!(id_key(&Bson::Double(5.0)), five);
        assert_eq!(id_key(&Bson::Decimal128(Decimal128::from_str("5").unwrap())), five);
        assert_ne!(id_key(&Bson::Double(5.5)), five);
        assert_ne!(id_key(&Bson::String("5".into())), five);
        assert_eq!(id_key(&Bson::Double(-0.0)), id_key(&Bson::Int32(0)));
        assert_eq!(id_key(&Bson::Double(2f64.powi(63))), id_key(&Bson::Double(2f64.powi(63))));
        assert_ne!(id_key(&Bson::Double(2f64.powi(63))), id_key(&Bson::Int64(i64::MAX)));
        // Inside compound ids too, where the field order still counts.
        let a = id_key(&Bson::Document(doc! { "d": 1_i32, "h": 2_i64 }));
        assert_eq!(a, id_key(&Bson::Document(doc! { "d": 1_i64, "h": 2.0 })));
        assert_ne!(a, id_key(&Bson::Document(doc! { "h": 2_i64, "d": 1_i32 })));
        assert_eq!(id_key(&Bson::Array(vec![1_i32.into()])), id_key(&Bson::Array(vec![1_i64.into()])));
    }
}
