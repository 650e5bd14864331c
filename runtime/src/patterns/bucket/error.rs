//! What can go wrong with buckets.

use crate::core::bson_compat;
use std::fmt;

use bson::{Bson, DateTime};

use crate::core::append::{AppendContention, CorruptCount};

/// Why a bucket operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BucketError {
    /// The driver or the server refused an operation.
    Mongo(mongodb::error::Error),
    /// An item or the series did not serialize to BSON.
    Serialize(bson_compat::SerError),
    /// A stored bucket or item did not deserialize into the model.
    Decode(bson_compat::DeError),
    /// An item has no date at the bucket's `time` path.
    ItemTime {
        /// The item's position in the call.
        index: usize,
        /// The time path.
        path: &'static str,
    },
    /// A date outside the years 1 to 9999, which periods cannot label.
    DateOutOfRange(DateTime),
    /// The series value cannot be written into a string id (only strings, integers
    /// and ObjectIds can).
    SeriesKey(String),
    /// An aggregate's source value is missing, not a number, or overflows its type.
    Aggregate {
        /// The aggregate field.
        field: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// The range's end is before its start.
    EmptyRange,
    /// Buckets kept filling up under other writers for longer than any real
    /// contention explains (a bucket that never has room: an external writer broke
    /// the `count` invariant).
    Contention {
        /// The last bucket id tried.
        id: Bson,
    },
    /// A stored bucket breaks the pattern's invariants (another program wrote it
    /// around the validator): its count is missing, not a whole number, or disagrees
    /// with the guarded filter, or its items are not an array of documents. Appends
    /// and reads stop at once rather than retry or skip.
    CorruptBucket {
        /// The bucket's `_id`.
        id: Box<Bson>,
        /// What is wrong.
        detail: String,
    },
    /// A compound `_id` type that cannot hold an overflow bucket's `seq`: the id
    /// type has no `seq` field, or it does not accept the number.
    SeqField {
        /// The id the runtime tried to write.
        id: Box<Bson>,
        /// What went wrong.
        detail: String,
        /// The serializer's or deserializer's error, when it was one (not when the
        /// number came back changed).
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The series already holds its `cap` items for this period
    /// (`#[bucket(cap = N)]`): the item was refused, and nothing of it was written.
    /// Items of another period or another series are not affected.
    Capped {
        /// The series, as written to the server.
        series: Box<Bson>,
        /// The period's first instant (UTC).
        period: DateTime,
        /// The most items the series keeps per period.
        cap: u32,
    },
    /// `append_many` stopped after sending updates: what each bucket got, what is in
    /// doubt and what was never sent (see [`Incomplete`]). Pass the same items to
    /// [`resume`](super::resume) to store exactly the missing ones.
    Incomplete(Box<Incomplete>),
    /// A stored bucket of a versioned model could not be read at its version (see
    /// [`VersionError`](crate::versioning::VersionError)).
    Version(Box<crate::core::version::VersionError>),
    /// What is derived from the buckets (their cached keys, copies of their fields)
    /// could not be kept in line: refused before anything was written (cached keys
    /// nobody would delete), or failed after every item was stored.
    Derived(Box<crate::core::denormalized::CopyError>),
}

/// What an interrupted `append_many` stored, by index into the items it was given.
#[derive(Debug)]
#[non_exhaustive]
pub struct Incomplete {
    /// Why it stopped.
    pub cause: BucketError,
    /// What was acknowledged before it stopped.
    pub appended: crate::core::append::Appended,
    /// Per acknowledged update: the bucket's `_id` and the indices of the items it
    /// now holds from this call.
    pub stored: Vec<(Bson, Vec<usize>)>,
    /// The bucket and items of the one update whose outcome is unknown (the
    /// connection failed after it was sent): stored, or not, as a whole.
    pub in_doubt: Option<(Bson, Vec<usize>)>,
    /// The items never sent.
    pub unsent: Vec<usize>,
}

impl BucketError {
    /// The error that stopped the operation: the cause of an [`Incomplete`], else
    /// the error itself.
    pub fn root(&self) -> &BucketError {
        match self {
            Self::Incomplete(i) => i.cause.root(),
            other => other,
        }
    }
}

impl fmt::Display for BucketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Mongo(e) => write!(f, "MongoDB: {e}"),
            Self::Serialize(e) => write!(f, "item does not serialize to BSON: {e}"),
            Self::Decode(e) => write!(f, "stored bucket does not match the model: {e}"),
            Self::ItemTime { index, path } => write!(f, "item {index} has no date at `{path}`"),
            Self::DateOutOfRange(t) => {
                write!(f, "{} is outside the years 1 to 9999 that bucket periods cover", t.timestamp_millis())
            }
            Self::SeriesKey(kind) => write!(
                f,
                "a series value of BSON type {kind} cannot be part of a string bucket id; use a string, an integer or an ObjectId"
            ),
            Self::Aggregate { field, detail } => write!(f, "aggregate `{field}`: {detail}"),
            Self::EmptyRange => f.write_str("the range ends before it starts"),
            Self::Contention { id } => write!(f, "gave up appending: bucket {id} and its successors stayed full"),
            Self::CorruptBucket { id, detail } => write!(f, "bucket {id} is corrupt: {detail}"),
            Self::SeqField { id, detail, .. } => {
                write!(f, "the compound `_id` type cannot hold an overflow bucket's `seq` ({id}): {detail}")
            }
            Self::Capped { series, period, cap } => write!(
                f,
                "series {series} already holds its cap of {cap} items for the period starting {}",
                period.try_to_rfc3339_string().unwrap_or_else(|_| period.timestamp_millis().to_string())
            ),
            Self::Incomplete(i) => write!(
                f,
                "append stopped after storing {} items ({} in doubt, {} not sent): {}",
                i.stored.iter().map(|(_, v)| v.len()).sum::<usize>(),
                i.in_doubt.as_ref().map_or(0, |(_, v)| v.len()),
                i.unsent.len(),
                i.cause
            ),
            Self::Version(e) => write!(f, "{e}"),
            Self::Derived(e) => write!(f, "derived data of the buckets: {e}"),
        }
    }
}

impl std::error::Error for BucketError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Mongo(e) => Some(e),
            Self::Serialize(e) => Some(e),
            Self::Decode(e) => Some(e),
            Self::Incomplete(i) => Some(&i.cause),
            Self::Version(e) => Some(e.as_ref()),
            Self::Derived(e) => Some(e.as_ref()),
            Self::SeqField { source: Some(e), .. } => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<mongodb::error::Error> for BucketError {
    fn from(e: mongodb::error::Error) -> Self {
        Self::Mongo(e)
    }
}

impl From<bson_compat::SerError> for BucketError {
    fn from(e: bson_compat::SerError) -> Self {
        Self::Serialize(e)
    }
}

impl From<AppendContention> for BucketError {
    fn from(e: AppendContention) -> Self {
        Self::Contention { id: e.id }
    }
}

impl From<CorruptCount> for BucketError {
    fn from(e: CorruptCount) -> Self {
        Self::CorruptBucket {
            id: Box::new(e.id),
            detail: format!("`{}` holds {}, not a whole number of items", e.field, e.found),
        }
    }
}

impl From<bson_compat::DeError> for BucketError {
    fn from(e: bson_compat::DeError) -> Self {
        Self::Decode(e)
    }
}
