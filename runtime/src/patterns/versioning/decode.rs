//! Reading a document stored at any declared version as the current type, and the
//! validator that admits every declared version.

use crate::core::bson_compat;
use std::collections::BTreeMap;
use std::sync::Mutex;

use bson::{doc, Bson, Document};
use serde::Serialize;

use crate::core::model::Model;
use crate::core::version::{StepFailure, VersionError};

/// A model with a schema version: what `#[model(version = N, migrate(...))]` and
/// `#[schema_version]` generate.
pub trait Versioned: Model + Serialize + serde::de::DeserializeOwned {
    /// The current version.
    const VERSION: i64;
    /// The version field's stored name.
    const VERSION_FIELD: &'static str;
    /// The version of a document that has no version field.
    const MISSING_VERSION: i64;
    /// The older versions that have an upgrade step, ascending.
    const OLD_VERSIONS: &'static [i64];

    /// Upgrades a document stored at `version` (older than [`Versioned::VERSION`]) to
    /// the current type, through the declared steps; the result carries the current
    /// version in its version field. Call [`decode`] rather than this.
    fn upgrade(version: i64, document: Document) -> Result<Self, StepFailure>;

    /// Sets the version field to the current version.
    fn stamp(&mut self);

    /// The process's read counter for this model.
    #[doc(hidden)]
    fn read_counter() -> &'static ReadCounter;
}

/// Reads counted by the version they were stored at, for one model in this process.
#[derive(Debug, Default)]
pub struct ReadCounter(Mutex<BTreeMap<i64, u64>>);

impl ReadCounter {
    /// An empty counter (for generated statics).
    pub const fn new() -> Self {
        Self(Mutex::new(BTreeMap::new()))
    }

    fn count(&self, version: i64) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *map.entry(version).or_default() += 1;
    }

    fn snapshot(&self) -> BTreeMap<i64, u64> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// How many documents of `T` this process has read, by the version they were stored
/// at: when the old versions stay at zero for long enough, the old steps can go.
pub fn reads<T: Versioned>() -> BTreeMap<i64, u64> {
    T::read_counter().snapshot()
}

/// The version a document is stored at.
pub fn stored_version<T: Versioned>(document: &Document) -> Result<i64, VersionError> {
    match document.get(T::VERSION_FIELD) {
        None => Ok(T::MISSING_VERSION),
        Some(Bson::Int32(v)) => Ok(i64::from(*v)),
        Some(Bson::Int64(v)) => Ok(*v),
        // The legacy shell writes numbers as doubles.
        Some(Bson::Double(v)) if v.fract() == 0.0 && v.abs() < 9.0e15 => Ok(*v as i64),
        Some(other) => Err(VersionError::BadVersionField {
            collection: T::COLLECTION,
            id: id_of(document),
            field: T::VERSION_FIELD,
            value: other.clone(),
        }),
    }
}

pub(super) fn id_of(document: &Document) -> Bson {
    document.get("_id").cloned().unwrap_or(Bson::Null)
}

/// A document read for writing back must have an `_id`: the compare-and-set is keyed
/// on it.
pub(super) fn require_id<T: Versioned>(document: &Document) -> Result<(), VersionError> {
    if document.contains_key("_id") {
        Ok(())
    } else {
        Err(VersionError::NoId { collection: T::COLLECTION })
    }
}

/// Reads a stored document of any declared version as the current type.
pub fn decode<T: Versioned>(document: Document) -> Result<T, VersionError> {
    let version = stored_version::<T>(&document)?;
    decode_at(version, document)
}

pub(super) fn decode_at<T: Versioned>(version: i64, document: Document) -> Result<T, VersionError> {
    let id = || id_of(&document);
    if version > T::VERSION {
        return Err(VersionError::NewerVersion {
            collection: T::COLLECTION,
            id: id(),
            version,
            current: T::VERSION,
        });
    }
    if version < T::VERSION && !T::OLD_VERSIONS.contains(&version) {
        let mut known = T::OLD_VERSIONS.to_vec();
        known.push(T::VERSION);
        return Err(VersionError::NoPath { collection: T::COLLECTION, id: id(), version, known });
    }
    let id = id();
    // Whatever the stored form (absent, an int, a shell's double), the version reaches
    // serde as a long, which every integer field accepts when it fits.
    let mut document = document;
    if version == T::VERSION || document.contains_key(T::VERSION_FIELD) {
        document.insert(T::VERSION_FIELD, Bson::Int64(version));
    }
    let value = if version == T::VERSION {
        bson_compat::from_document(document).map_err(StepFailure::decode(version))
    } else {
        T::upgrade(version, document)
    };
    let value =
        value.map_err(|failure| VersionError::Upgrade { collection: T::COLLECTION, id, version, failure })?;
    T::read_counter().count(version);
    Ok(value)
}

/// `schema` with the version field pinned to `v`: required at every version but the
/// one a document without the field has.
fn at_version(mut schema: Document, field: &str, v: i64, missing: i64) -> Bson {
    let mut properties = schema.get_document("properties").cloned().unwrap_or_default();
    let mut constraint = properties.get_document(field).cloned().unwrap_or_default();
    constraint.insert("enum", vec![Bson::Int64(v)]);
    properties.insert(field, constraint);
    schema.insert("properties", properties);
    let mut required = schema.get_array("required").cloned().unwrap_or_default();
    required.retain(|r| r.as_str() != Some(field));
    if v != missing {
        required.push(Bson::String(field.to_owned()));
    }
    if required.is_empty() {
        schema.remove("required");
    } else {
        schema.insert("required", required);
    }
    if !schema.contains_key("bsonType") {
        schema.insert("bsonType", "object");
    }
    Bson::Document(schema)
}

/// The validator from the current shapes (the model's, or each variant's), each pinned
/// to the current version, and each older version's shape (any object for a document
/// step) pinned to its own.
fn versions_validator(
    current: impl IntoIterator<Item = Document>,
    field: &str,
    version: i64,
    missing: i64,
    old: Vec<(i64, Option<Document>)>,
) -> Document {
    let mut branches: Vec<Bson> =
        current.into_iter().map(|shape| at_version(shape, field, version, missing)).collect();
    for (v, schema) in old {
        branches.push(at_version(schema.unwrap_or_default(), field, v, missing));
    }
    // The version travels with the validator, so that `sync` from older code can tell
    // it would take the collection back (`description` is free text to the server).
    doc! { "$jsonSchema": { "bsonType": "object", "description": crate::core::spec::schema_version_text(version), "anyOf": branches } }
}

#[doc(hidden)]
/// The validator of a versioned model: `anyOf` the current shape at the current version
/// and each older version's shape (any object for a document step) at its version.
pub fn validator(
    current: Document,
    field: &str,
    version: i64,
    missing: i64,
    old: Vec<(i64, Option<Document>)>,
) -> Document {
    versions_validator([current], field, version, missing, old)
}

#[doc(hidden)]
/// The validator of a versioned polymorphic model: as [`validator`], with the current
/// version pinned in each variant's branch of `current` (an `anyOf`, or the one
/// variant's schema), so that each branch stays exactly its variant's shape; a field
/// the version lets documents lack is optional in every variant.
pub fn variants_validator(
    current: Document,
    field: &str,
    version: i64,
    missing: i64,
    old: Vec<(i64, Option<Document>)>,
) -> Document {
    let variants = match current.get_array("anyOf") {
        Ok(variants) if current.len() == 1 => {
            variants.iter().filter_map(Bson::as_document).cloned().collect()
        }
        _ => vec![current],
    };
    versions_validator(variants, field, version, missing, old)
}
