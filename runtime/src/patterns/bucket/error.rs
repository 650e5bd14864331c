//! What can go wrong with buckets.

use std::fmt;

use bson::{Bson, DateTime};

use crate::core::append::AppendContention;

/// Why a bucket operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BucketError {
    /// The driver or the server refused an operation.
    Mongo(mongodb::error::Error),
    /// An item or the series did not serialize to BSON.
    Serialize(bson::ser::Error),
    /// A stored bucket or item did not deserialize into the model.
    Decode(bson::de::Error),
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
        }
    }
}

impl std::error::Error for BucketError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Mongo(e) => Some(e),
            Self::Serialize(e) => Some(e),
            Self::Decode(e) => Some(e),
            _ => None,
        }
    }
}

impl From<mongodb::error::Error> for BucketError {
    fn from(e: mongodb::error::Error) -> Self {
        Self::Mongo(e)
    }
}

impl From<bson::ser::Error> for BucketError {
    fn from(e: bson::ser::Error) -> Self {
        Self::Serialize(e)
    }
}

impl From<AppendContention> for BucketError {
    fn from(e: AppendContention) -> Self {
        Self::Contention { id: e.id }
    }
}

impl From<bson::de::Error> for BucketError {
    fn from(e: bson::de::Error) -> Self {
        Self::Decode(e)
    }
}
