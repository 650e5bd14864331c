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
//! The attribute's keys are listed in the [attribute
//! reference](crate::guide::attributes#redis-key-families).
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

#[cfg(feature = "redis")]
pub mod cache;
mod catalog;
#[cfg(feature = "redis-cluster")]
mod cluster;
mod error;
mod escape;
mod family;
mod kinds;
pub(crate) mod registry;
mod spec;

#[cfg(feature = "redis")]
pub use cache::{
    invalidate_on_write, stop_invalidating, CacheError, CachedFamily, CachedFind, CachedModel, CachedUpdate,
    WrittenKeys,
};
pub use catalog::{catalog_markdown, check_catalog, Overlap};
pub use error::KeyError;
pub use escape::{escape, unescape, EscapeError};
pub(crate) use family::generated;
pub use family::{CachesId, CachesTenantId, KeyFamily, Placeholder, ScanReport};
pub use kinds::{
    CounterFamily, Encoding, HashFamily, Json, ListFamily, OwnedOf, SetFamily, ShardedCounterFamily,
    SortedSetFamily, Stored, StringFamily, Text, ValueOf,
};
pub use spec::{KeyKind, KeyParts, KeySpec, Segment, Staleness, Ttl};

/// The family traits, to bring every operation into scope at once:
/// `use docshape::keys::prelude::*;`.
pub mod prelude {
    pub use super::{
        CounterFamily, HashFamily, KeyFamily, ListFamily, SetFamily, ShardedCounterFamily, SortedSetFamily,
        StringFamily,
    };
}
