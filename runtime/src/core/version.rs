//! What reading or writing a document stored at some schema version can fail with
//! ([`VersionError`]): the `Model` trait names it for the readers that decode stored
//! documents (paginators, references), so it lives in the core; the versioning
//! pattern ([`crate::versioning`]) produces it.

// A `VersionError` names the document (`_id` as `Bson`) it concerns, which makes it
// large; errors here are rare and cost a round trip anyway, so the size is not boxed away.
#![allow(clippy::result_large_err)]

use crate::core::bson_compat;
use std::fmt;

use bson::Bson;

use crate::core::descriptor::CopyError;

/// Why a generated upgrade chain failed, before the collection and `_id` are known.
#[derive(Debug)]
#[non_exhaustive]
pub enum StepFailure {
    /// The document did not deserialize as the shape of `version`.
    Decode {
        /// The version whose shape was expected.
        version: i64,
        /// What bson said.
        source: bson_compat::DeError,
    },
    /// A document step returned an error.
    Step {
        /// The version the step upgrades.
        version: i64,
        /// The step's error, as text.
        detail: String,
    },
    /// No step upgrades `version`.
    NoPath {
        /// The version.
        version: i64,
    },
}

impl StepFailure {
    #[doc(hidden)]
    pub fn decode(version: i64) -> impl FnOnce(bson_compat::DeError) -> Self {
        move |source| Self::Decode { version, source }
    }

    #[doc(hidden)]
    pub fn step<E: fmt::Display>(version: i64) -> impl FnOnce(E) -> Self {
        move |e| Self::Step { version, detail: e.to_string() }
    }
}

/// What went wrong reading or writing a versioned document. Every variant that concerns
/// one document names its collection and `_id`.
#[derive(Debug)]
#[non_exhaustive]
pub enum VersionError {
    /// The document is at a version newer than this code knows.
    NewerVersion {
        /// The collection.
        collection: &'static str,
        /// The document's `_id`.
        id: Bson,
        /// Its version.
        version: i64,
        /// The newest version this code reads.
        current: i64,
    },
    /// The document is at an old version that has no upgrade step.
    NoPath {
        /// The collection.
        collection: &'static str,
        /// The document's `_id`.
        id: Bson,
        /// Its version.
        version: i64,
        /// The versions this code reads.
        known: Vec<i64>,
    },
    /// The version field holds something that is not an integer.
    BadVersionField {
        /// The collection.
        collection: &'static str,
        /// The document's `_id`.
        id: Bson,
        /// The field's name.
        field: &'static str,
        /// What it holds.
        value: Bson,
    },
    /// The document does not have the shape its version declares, or a step failed.
    Upgrade {
        /// The collection.
        collection: &'static str,
        /// The document's `_id`.
        id: Bson,
        /// The version it is stored at.
        version: i64,
        /// What failed.
        failure: StepFailure,
    },
    /// The document changed between reading and writing, more times than the
    /// [`RetryPolicy`](crate::versioning::RetryPolicy) allows (or once, for [`Loaded::save`](crate::versioning::Loaded::save)).
    Conflict {
        /// The collection.
        collection: &'static str,
        /// The document's `_id`.
        id: Bson,
        /// How many attempts were made.
        attempts: u32,
    },
    /// A document read for writing back has no `_id` (a projection left it out).
    NoId {
        /// The collection.
        collection: &'static str,
    },
    /// No document has this `_id`.
    NotFound {
        /// The collection.
        collection: &'static str,
        /// The `_id` looked for.
        id: Bson,
    },
    /// The value did not serialize as a document.
    Encode(bson_compat::SerError),
    /// The driver or the server refused an operation.
    Mongo(mongodb::error::Error),
    /// The document was written, but a denormalized copy of it could not be refreshed
    /// or queued (see [`crate::denormalized`]; [`crate::denormalized::repair`] brings it back), or
    /// its cached keys could not be deleted ([`CopyError::Derived`]).
    Copies(Box<CopyError>),
    /// Nothing was written: a pattern keeping data derived from the document could not
    /// have done its part (its cached keys, with no connection installed to delete
    /// them: [`CopyError::CacheNotInvalidated`]), or data that must commit with the
    /// write (a `sync` summary) failed in the transaction started for it, which was
    /// aborted.
    Refused(Box<CopyError>),
}

impl fmt::Display for VersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NewerVersion { collection, id, version, current } => write!(
                f,
                "{collection} {id}: stored at version {version}, newer than this code's {current}; deploy the newer reader"
            ),
            Self::NoPath { collection, id, version, known } => write!(
                f,
                "{collection} {id}: version {version} has no upgrade step (this code reads versions {known:?})"
            ),
            Self::BadVersionField { collection, id, field, value } => {
                write!(f, "{collection} {id}: the version field `{field}` holds {value}, not an integer")
            }
            Self::Upgrade { collection, id, version, failure } => {
                write!(f, "{collection} {id}: cannot read version {version}: ")?;
                match failure {
                    StepFailure::Decode { version: v, source } => write!(f, "not the shape of version {v}: {source}"),
                    StepFailure::Step { version: v, detail } => write!(f, "the step from version {v} failed: {detail}"),
                    StepFailure::NoPath { version: v } => write!(f, "version {v} has no upgrade step"),
                }
            }
            Self::Conflict { collection, id, attempts } => write!(
                f,
                "{collection} {id}: changed by another writer while being written ({attempts} attempts); read it again"
            ),
            Self::NotFound { collection, id } => write!(f, "{collection} {id}: no such document"),
            Self::NoId { collection } => {
                write!(f, "{collection}: a document without `_id` cannot be written back; read it with its `_id`")
            }
            Self::Encode(e) => write!(f, "cannot encode the document: {e}"),
            Self::Mongo(e) => write!(f, "MongoDB: {e}"),
            Self::Copies(e) => write!(f, "written, but what is derived from it is not in line: {e}"),
            Self::Refused(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for VersionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Upgrade { failure: StepFailure::Decode { source, .. }, .. } => Some(source),
            Self::Encode(e) => Some(e),
            Self::Mongo(e) => Some(e),
            Self::Copies(e) | Self::Refused(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<mongodb::error::Error> for VersionError {
    fn from(e: mongodb::error::Error) -> Self {
        Self::Mongo(e)
    }
}
