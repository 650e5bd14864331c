//! Redis key families: patterns-en's "Redis key catalog" as code.
//!
//! "Document every key family in one table; every cache key has a TTL." Each family
//! is a struct whose fields are the placeholders of its key pattern, with
//! `#[derive(KeyFamily)]` and a `#[key(...)]` row of the catalog:
//!
//! ```
//! use docshape::keys::catalog_markdown;
//! use docshape::KeyFamily; // the derive and the trait
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Product { name: String }
//!
//! #[derive(Debug, PartialEq, KeyFamily)]
//! #[key(pattern = "cache:product:{id}", kind = string, value = Product, ttl = "300s",
//!       note = "invalidate on product write")]
//! struct ProductCache { id: String }
//!
//! #[derive(Debug, PartialEq, KeyFamily)]
//! #[key(pattern = "rate:{ip}:{minute}", kind = counter, ttl = "120s", note = "rate limiting window")]
//! struct RateWindow { ip: std::net::IpAddr, minute: u64 }
//!
//! let rate = RateWindow { ip: "203.0.113.7".parse().unwrap(), minute: 202608051211 };
//! assert_eq!(rate.key(), "rate:203.0.113.7:202608051211");
//! assert_eq!(RateWindow::parse_key("rate:203.0.113.7:202608051211").unwrap(), rate);
//! // A value cannot forge a segment: `:` is escaped.
//! assert_eq!(ProductCache { id: "a:b".into() }.key(), "cache:product:a%3Ab");
//! print!("{}", catalog_markdown(&[&ProductCache::SPEC, &RateWindow::SPEC]));
//! ```
//!
//! ## `#[key(...)]`
//!
//! | key | meaning |
//! |---|---|
//! | `pattern = "user:{id}:session"` | `:`-separated segments: literal text, a `{field}` placeholder filling a whole segment, or for a sharded counter one `{first..last}` shard range (inclusive, `{0..15}` is sixteen shards) |
//! | `kind = string \| hash \| counter \| list \| set \| sorted_set \| sharded_counter` | what the keys hold, and so the operations ([`StringFamily`], [`HashFamily`], [`CounterFamily`], [`ListFamily`], [`SetFamily`], [`SortedSetFamily`], [`ShardedCounterFamily`]) |
//! | `value = Type` | for `string`, `hash`, `list`, `set`, `sorted_set`: values are this type, stored as JSON; without it they are text (`&str` in, `String` out) |
//! | `ttl = "300s"` / `"5m"` / `"2h"` / `"30d"` | required: keys expire this long after they are created |
//! | `sliding` | with a TTL: every read and write starts the period again (a session) |
//! | `ttl = "none", reason = "..."` | keys never expire, for a stated reason; refused for keys under `cache:` |
//! | `note = "..."` | the catalog's notes column |
//!
//! Compile-time rules, each an error under the offending tokens: a family without
//! `ttl` (rule `key_ttl`), `ttl = "none"` without a reason (`ttl_reason`), a `cache:`
//! family that never expires (`cache_ttl`), a malformed pattern (unbalanced braces,
//! empty segments, two placeholders in one segment, characters a key cannot hold
//! literally: `* ? [ ] \ % | ` and backquote, whitespace, non-ASCII), a placeholder
//! naming no field, a field missing from the pattern, a shard range outside a sharded
//! counter (or a sharded counter without one), an unknown kind (with "did you mean").
//!
//! ## Placeholder values
//!
//! A field is a placeholder of any type that implements `Display` and `FromStr` as
//! inverses of each other: `String`, the integer types, `IpAddr`, `Uuid`... Its
//! `Display` text is escaped with [`escape`]: RFC 3986's unreserved characters
//! (`A-Z a-z 0-9 - . _ ~`) as they are, every other byte as `%XX`. So a value never
//! holds `:` (it cannot add a segment, or forge another family's literal text), never a
//! glob character of `SCAN MATCH`, never a brace (a Redis Cluster hash tag), and keys
//! are printable ASCII. [`KeyFamily::parse_key`] is the exact inverse of
//! [`KeyFamily::key`]: it accepts only the key a value would build (not `%41` for `A`,
//! not `007` for the integer 7), so each value has one key and each key one value.
//!
//! ## Operations (feature `redis`)
//!
//! Each kind's trait has async operations over any connection of the `redis` crate
//! (`redis::aio::ConnectionLike`: a `MultiplexedConnection`, a `ConnectionManager`),
//! each applying the TTL decision in the same round trip, as the seed writes them:
//!
//! ```text
//! SET cache:product:9f3e '{"name":...}' EX 300        ProductCache.set(&mut conn, &product)
//! INCR rate:203.0.113.7:202608051211                  RateWindow.incr(&mut conn, 1)
//! EXPIRE rate:203.0.113.7:202608051211 120 NX           (INCRBY and EXPIRE in one MULTI/EXEC)
//! ```
//!
//! `EXPIRE ... NX` needs Redis 7.0 or newer. Keys of a family are listed with
//! [`KeyFamily::scan`]: `SCAN` with the family's `MATCH` pattern, never `KEYS`
//! (patterns-en: "`KEYS pattern` blocks the server — always `SCAN` in production").
//!
//! ## The catalog
//!
//! [`catalog_markdown`] renders the seed's table from the families' [`KeySpec`]s, and
//! [`check_catalog`] reports two families whose patterns can name the same key. Both
//! work from the `const` specs alone, without a server.

mod catalog;
mod escape;
mod kinds;
pub(crate) mod registry;
mod spec;

use std::fmt;
use std::str::FromStr;

pub use catalog::{catalog_markdown, check_catalog, Overlap};
pub use escape::{escape, unescape, EscapeError};
pub use kinds::{
    CounterFamily, Encoding, HashFamily, Json, ListFamily, OwnedOf, SetFamily, ShardedCounterFamily,
    SortedSetFamily, Stored, StringFamily, Text, ValueOf,
};
pub use spec::{KeyKind, KeyParts, KeySpec, Segment, Ttl};

#[cfg(feature = "redis")]
use {redis::aio::ConnectionLike, std::future::Future};

/// The family traits, to bring every operation into scope at once:
/// `use docshape::keys::prelude::*;`.
pub mod prelude {
    pub use super::{
        CounterFamily, HashFamily, KeyFamily, ListFamily, SetFamily, ShardedCounterFamily, SortedSetFamily,
        StringFamily,
    };
}

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
    /// [`KeySpec::key`] got a number of values other than the pattern's placeholders.
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

/// A Redis key family: a struct whose fields fill the placeholders of its pattern.
/// Derive it with `#[derive(KeyFamily)]` and `#[key(...)]` (see the [module](self)).
pub trait KeyFamily: Sized {
    /// The family's catalog row: pattern, kind, TTL decision and notes.
    const SPEC: KeySpec;

    /// The placeholders' values as text (their `Display`), in the pattern's order,
    /// before escaping.
    fn placeholder_values(&self) -> Vec<String>;

    /// The value from its placeholders' texts (unescaped, in the pattern's order),
    /// each parsed with its field's `FromStr`.
    fn from_placeholder_values(values: Vec<String>) -> Result<Self, KeyError>;

    /// The key. A sharded counter has a key per shard: this is its first shard's.
    fn key(&self) -> String {
        render(self, Self::SPEC.check_shard(None).unwrap_or(0))
    }

    /// The key of one shard of a sharded counter.
    fn shard_key(&self, shard: u32) -> Result<String, KeyError> {
        Self::SPEC.check_shard(Some(shard)).map(|n| render(self, n))
    }

    /// Every key of this value: each shard's for a sharded counter, else the one key.
    fn shard_keys(&self) -> Vec<String> {
        match Self::SPEC.shards() {
            Some(range) => range.map(|n| render(self, n)).collect(),
            None => vec![self.key()],
        }
    }

    /// The value a key of this family names: the exact inverse of [`key`](Self::key)
    /// (and of [`shard_key`](Self::shard_key), for every shard).
    fn parse_key(key: &str) -> Result<Self, KeyError> {
        Self::parse_shard_key(key).map(|(value, _)| value)
    }

    /// The value a key names, with its shard for a sharded counter.
    fn parse_shard_key(key: &str) -> Result<(Self, Option<u32>), KeyError> {
        let parts = Self::SPEC.split(key)?;
        let value = Self::from_placeholder_values(parts.values)?;
        let canonical = render(&value, parts.shard.unwrap_or(0));
        if canonical != key {
            return Err(KeyError::NotCanonical { key: key.to_owned(), canonical });
        }
        Ok((value, parts.shard))
    }

    /// Deletes this value's key (every shard's, for a sharded counter); how many
    /// existed.
    #[cfg(feature = "redis")]
    fn delete<C>(&self, conn: &mut C) -> impl Future<Output = Result<u64, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let keys = self.shard_keys();
        async move { Ok(redis::cmd("DEL").arg(&keys).query_async(conn).await?) }
    }

    /// Every value with a key in the database, found with `SCAN cursor MATCH pattern
    /// COUNT 500` until the cursor comes back to 0, never `KEYS`. Keys that the glob
    /// matches but that are not the family's (`*` also matches `:`) are left out, and
    /// each value is returned once even when `SCAN` returns its key twice (it may) or
    /// it has several shards. Values are in no particular order.
    #[cfg(feature = "redis")]
    fn scan<C>(conn: &mut C) -> impl Future<Output = Result<Vec<Self>, KeyError>> + Send
    where
        C: ConnectionLike + Send,
        Self: Send,
    {
        let pattern = Self::SPEC.match_pattern();
        async move {
            let mut seen = std::collections::HashSet::new();
            let mut out = Vec::new();
            let mut cursor: u64 = 0;
            loop {
                let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(500)
                    .query_async(conn)
                    .await?;
                for key in keys {
                    if let Ok(value) = Self::parse_key(&key) {
                        if seen.insert(value.key()) {
                            out.push(value);
                        }
                    }
                }
                if next == 0 {
                    return Ok(out);
                }
                cursor = next;
            }
        }
    }
}

fn render<T: KeyFamily>(value: &T, shard: u32) -> String {
    let values = value.placeholder_values();
    let mut values = values.iter();
    T::SPEC.render(|out| escape::push_escaped(values.next().map_or("", String::as_str), out), shard)
}

/// A type that can fill a placeholder: its `Display` text is escaped into the key and
/// its `FromStr` reads it back, so the two must be inverses (`String`, the integer
/// types, `IpAddr`, `Uuid`... are). Implemented for every type with both.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot fill a key placeholder: it needs `Display` and `FromStr` (with an error that is `Display`)",
    label = "a placeholder of the key pattern",
    note = "a key is written with the field's `Display` and read back with its `FromStr`; `String`, the integers and `IpAddr` have both"
)]
pub trait Placeholder: fmt::Display + FromStr<Err: fmt::Display> {}

impl<T: fmt::Display + FromStr<Err: fmt::Display>> Placeholder for T {}

/// What `#[derive(KeyFamily)]` generates calls.
pub(crate) mod generated {
    use super::*;

    /// A placeholder's text.
    pub fn placeholder_text<T: Placeholder>(value: &T) -> String {
        value.to_string()
    }

    /// The placeholders' texts, checked to be as many as the pattern has.
    pub fn placeholder_texts<const N: usize>(
        spec: &KeySpec,
        values: Vec<String>,
    ) -> Result<[String; N], KeyError> {
        let got = values.len();
        values.try_into().map_err(|_| KeyError::WrongValueCount { pattern: spec.pattern, expected: N, got })
    }

    /// A placeholder's value from its text.
    pub fn parse_placeholder<T: Placeholder>(placeholder: &'static str, text: String) -> Result<T, KeyError> {
        T::from_str(&text).map_err(|e| KeyError::BadValue { placeholder, text, detail: e.to_string() })
    }
}
