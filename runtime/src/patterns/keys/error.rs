//! What can go wrong with a key or a key family's operation.

use std::fmt;

/// What can go wrong with a key or a key family's operation. Bad input is an error,
/// never a panic.
#[derive(Debug)]
#[non_exhaustive]
pub enum KeyError {
    /// The key does not have the family's pattern.
    Mismatch {
        /// The family's pattern.
        pattern: &'static str,
        /// The key.
        key: String,
        /// Where it departs from the pattern.
        reason: String,
    },
    /// A placeholder's text does not parse as its field's type.
    BadValue {
        /// The placeholder.
        placeholder: &'static str,
        /// Its text (unescaped).
        text: String,
        /// The type's parse error.
        detail: String,
    },
    /// The key has the family's pattern but is not the key its value builds (`007`
    /// where the integer 7 is written `7`): it belongs to no value of the family.
    NotCanonical {
        /// The key.
        key: String,
        /// The key the parsed value builds.
        canonical: String,
    },
    /// [`KeySpec::key`](super::KeySpec::key) got a number of values other than the pattern's placeholders.
    WrongValueCount {
        /// The family's pattern.
        pattern: &'static str,
        /// The number of placeholders.
        expected: usize,
        /// The number of values given.
        got: usize,
    },
    /// A shard number outside the pattern's range, or a shard of a family without shards.
    NoSuchShard {
        /// The family's pattern.
        pattern: &'static str,
        /// The shard asked for.
        shard: u32,
    },
    /// A sharded counter's shards add up to more than an `i64` holds.
    Overflow {
        /// The family's pattern.
        pattern: &'static str,
    },
    /// A value could not be written as JSON, or stored text could not be read as the
    /// family's value type.
    Json(serde_json::Error),
    /// `SCAN` answered with the cursor it was sent: the iteration makes no progress.
    ScanStalled {
        /// The family's pattern.
        pattern: &'static str,
        /// The cursor.
        cursor: u64,
    },
    /// Redis refused an operation, or the connection failed.
    #[cfg(feature = "redis")]
    Redis(redis::RedisError),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Mismatch { pattern, key, reason } => {
                write!(f, "`{key}` is not a key of `{pattern}`: {reason}")
            }
            Self::BadValue { placeholder, text, detail } => {
                write!(
                    f,
                    "`{{{placeholder}}}` is `{text}`, which does not parse as its field's type: {detail}"
                )
            }
            Self::NotCanonical { key, canonical } => {
                write!(f, "`{key}` is not the key its value builds (`{canonical}`)")
            }
            Self::WrongValueCount { pattern, expected, got } => {
                write!(f, "`{pattern}` has {expected} placeholders, got {got} values")
            }
            Self::NoSuchShard { pattern, shard } => write!(f, "`{pattern}` has no shard {shard}"),
            Self::Overflow { pattern } => write!(f, "the shards of `{pattern}` add up past i64::MAX"),
            Self::ScanStalled { pattern, cursor } => {
                write!(f, "SCAN of `{pattern}` returned its cursor {cursor} again: no progress")
            }
            Self::Json(e) => write!(f, "JSON: {e}"),
            #[cfg(feature = "redis")]
            Self::Redis(e) => write!(f, "Redis: {e}"),
        }
    }
}

impl std::error::Error for KeyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Json(e) => Some(e),
            #[cfg(feature = "redis")]
            Self::Redis(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(feature = "redis")]
impl From<redis::RedisError> for KeyError {
    fn from(e: redis::RedisError) -> Self {
        Self::Redis(e)
    }
}
