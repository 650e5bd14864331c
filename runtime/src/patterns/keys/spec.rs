//! The static description of a key family: what `#[key(...)]` declares, as plain data.

use std::fmt;
use std::ops::RangeInclusive;

use super::error::KeyError;
use super::escape::{push_escaped, unescape};

/// One `:`-separated segment of a key pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Segment {
    /// Text every key of the family has here (`cache`, `product`).
    Literal(&'static str),
    /// A field's value, escaped (`{id}`).
    Placeholder(&'static str),
    /// A sharded counter's shard number, from `first` to `last` inclusive
    /// (`{0..15}`: sixteen shards).
    Shards {
        /// The first shard's number.
        first: u32,
        /// The last shard's number (inclusive).
        last: u32,
    },
}

/// What a family's keys hold, and so which operations it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// A string holding one value (`kind = string`): JSON when the family names its
    /// `value` type, raw text otherwise.
    String,
    /// A hash (`kind = hash`): fields and values, a session say.
    Hash,
    /// An integer changed with `INCRBY` (`kind = counter`); with a TTL, a window that
    /// starts at the first increment (rate limiting).
    Counter,
    /// A list used as a FIFO queue (`kind = list`).
    List,
    /// A set (`kind = set`).
    Set,
    /// A sorted set (`kind = sorted_set`).
    SortedSet,
    /// A hot counter split over shard keys (`kind = sharded_counter`): an increment
    /// touches one shard, a read sums them all.
    ShardedCounter,
}

impl KeyKind {
    /// The "Type" column of the catalog (the seed's words: `hash`, `string(json)`,
    /// `int (INCR)`, `list`, `int`).
    pub fn type_name(self, json: bool) -> &'static str {
        match (self, json) {
            (Self::String, true) => "string(json)",
            (Self::String, false) => "string",
            (Self::Hash, true) => "hash(json)",
            (Self::Hash, false) => "hash",
            (Self::Counter, _) => "int (INCR)",
            (Self::List, true) => "list(json)",
            (Self::List, false) => "list",
            (Self::Set, true) => "set(json)",
            (Self::Set, false) => "set",
            (Self::SortedSet, true) => "sorted set(json)",
            (Self::SortedSet, false) => "sorted set",
            (Self::ShardedCounter, _) => "int",
        }
    }
}

/// A family's TTL decision: every family has one, stated in `#[key(ttl = ...)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ttl {
    /// Keys expire `seconds` after they are created (`ttl = "300s"`); with `sliding`,
    /// every read and write starts the period again (`ttl = "30d", sliding`).
    After {
        /// The period, in seconds.
        seconds: u64,
        /// Whether reads and writes extend it.
        sliding: bool,
        /// The period as declared (`"30d"`), for the catalog.
        spelled: &'static str,
    },
    /// Keys never expire, for a stated reason (`ttl = "none", reason = "..."`).
    Never {
        /// Why no TTL is right for this family.
        reason: &'static str,
    },
}

impl fmt::Display for Ttl {
    /// The catalog's TTL column: `300s`, `30d sliding`, `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::After { spelled, sliding: false, .. } => f.write_str(spelled),
            Self::After { spelled, sliding: true, .. } => write!(f, "{spelled} sliding"),
            Self::Never { .. } => f.write_str("none"),
        }
    }
}

/// What docshape's writers do with a family's cached keys when a cached model's
/// document changes (see [`crate::keys::invalidate_on_write`]): a product decision,
/// stated by the family (`#[key(staleness = "ttl")]`) and shown in the key catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Staleness {
    /// The writers delete the written document's keys (the default). A docshape
    /// writer of a model this family caches refuses to write
    /// ([`CopyError::CacheNotInvalidated`](crate::denormalized::CopyError::CacheNotInvalidated))
    /// while no connection is installed to delete them with, so the cache is never
    /// stale by accident.
    #[default]
    Invalidated,
    /// The TTL is the accepted staleness (`staleness = "ttl"`): without an installed
    /// connection the writers leave the keys, and a read may return the old value until
    /// the key expires.
    Ttl,
}

/// The static description of a key family: one row of the key catalog.
/// `#[derive(KeyFamily)]` writes it as `KeyFamily::SPEC`; it needs no Redis, so
/// the catalog can be rendered and checked at build time.
///
/// ```
/// use docshape::keys::{KeyKind, KeySpec, Segment, Staleness, Ttl};
///
/// const PRODUCT: KeySpec = KeySpec {
///     name: "shop::ProductCache",
///     pattern: "cache:product:{id}",
///     segments: &[Segment::Literal("cache"), Segment::Literal("product"), Segment::Placeholder("id")],
///     kind: KeyKind::String,
///     json: true,
///     ttl: Ttl::After { seconds: 300, sliding: false, spelled: "300s" },
///     note: "invalidate on product write",
///     staleness: Staleness::Invalidated,
/// };
/// assert_eq!(PRODUCT.key(&["9f3e"], None).unwrap(), "cache:product:9f3e");
/// assert_eq!(PRODUCT.match_pattern(), "cache:product:*");
/// assert_eq!(PRODUCT.split("cache:product:a%3Ab").unwrap().values, ["a:b"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeySpec {
    /// The Rust type, with its module path (`shop::ProductCache`).
    pub name: &'static str,
    /// The pattern as declared (`cache:product:{id}`).
    pub pattern: &'static str,
    /// The pattern, split at `:`.
    pub segments: &'static [Segment],
    /// What the keys hold.
    pub kind: KeyKind,
    /// Whether values are stored as JSON (the family names a `value` type).
    pub json: bool,
    /// The TTL decision.
    pub ttl: Ttl,
    /// The catalog's notes (`invalidate on product write`); may be empty.
    pub note: &'static str,
    /// Whether a cached value may stay stale after a write, up to the TTL.
    pub staleness: Staleness,
}

/// A key taken apart by [`KeySpec::split`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyParts {
    /// The placeholders' values, unescaped, in the pattern's order.
    pub values: Vec<String>,
    /// The shard number, for a sharded counter.
    pub shard: Option<u32>,
}

impl KeySpec {
    /// The placeholders' names, in the pattern's order.
    pub fn placeholders(&self) -> impl Iterator<Item = &'static str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Placeholder(name) => Some(*name),
            _ => None,
        })
    }

    /// A sharded counter's shard numbers.
    pub fn shards(&self) -> Option<RangeInclusive<u32>> {
        self.segments.iter().find_map(|s| match s {
            Segment::Shards { first, last } => Some(*first..=*last),
            _ => None,
        })
    }

    /// The `SCAN MATCH` pattern of the family: each placeholder and shard becomes `*`.
    /// `*` also matches across `:`, so what `SCAN` returns is filtered through
    /// [`KeySpec::split`] (as `KeyFamily::scan` does). Literal segments hold no glob
    /// character (checked at compile time), and escaped values hold none either.
    pub fn match_pattern(&self) -> String {
        let parts: Vec<&str> = self
            .segments
            .iter()
            .map(|s| match s {
                Segment::Literal(text) => text,
                Segment::Placeholder(_) | Segment::Shards { .. } => "*",
            })
            .collect();
        parts.join(":")
    }

    /// Builds a key from the placeholders' values (in the pattern's order, before
    /// escaping) and, for a sharded counter, a shard number.
    pub fn key(&self, values: &[&str], shard: Option<u32>) -> Result<String, KeyError> {
        let expected = self.placeholders().count();
        if values.len() != expected {
            return Err(KeyError::WrongValueCount { pattern: self.pattern, expected, got: values.len() });
        }
        let shard = self.check_shard(shard)?;
        let mut values = values.iter();
        Ok(self.render(|out| push_escaped(values.next().copied().unwrap_or_default(), out), shard))
    }

    /// The shard to render: the one asked for, the first one when none is, or none
    /// for a family without shards.
    pub(crate) fn check_shard(&self, shard: Option<u32>) -> Result<u32, KeyError> {
        match (self.shards(), shard) {
            (Some(range), Some(n)) if range.contains(&n) => Ok(n),
            (Some(range), None) => Ok(*range.start()),
            (None, None) => Ok(0),
            (_, Some(n)) => Err(KeyError::NoSuchShard { pattern: self.pattern, shard: n }),
        }
    }

    /// Writes the key, with `value` writing each placeholder's escaped value in turn.
    pub(crate) fn render(&self, mut value: impl FnMut(&mut String), shard: u32) -> String {
        let mut out = String::with_capacity(self.pattern.len() + 8);
        for (i, segment) in self.segments.iter().enumerate() {
            if i > 0 {
                out.push(':');
            }
            match segment {
                Segment::Literal(text) => out.push_str(text),
                Segment::Placeholder(_) => value(&mut out),
                Segment::Shards { .. } => out.push_str(&shard.to_string()),
            }
        }
        out
    }

    /// Takes a key of this family apart: the placeholders' values (unescaped) and the
    /// shard. Fails when the key does not have the pattern's segments and literals,
    /// when a value is not escaped as [`super::escape`] writes it, or when a shard is
    /// not a number of the range written without leading zeros.
    pub fn split(&self, key: &str) -> Result<KeyParts, KeyError> {
        let mismatch =
            |reason: String| KeyError::Mismatch { pattern: self.pattern, key: key.to_owned(), reason };
        let parts: Vec<&str> = key.split(':').collect();
        if parts.len() != self.segments.len() {
            return Err(mismatch(format!(
                "{} segments where the pattern has {}",
                parts.len(),
                self.segments.len()
            )));
        }
        let mut out = KeyParts { values: Vec::new(), shard: None };
        for (part, segment) in parts.iter().zip(self.segments) {
            match segment {
                Segment::Literal(text) => {
                    if part != text {
                        return Err(mismatch(format!("`{part}` where the pattern has `{text}`")));
                    }
                }
                Segment::Placeholder(name) => match unescape(part) {
                    Ok(value) => out.values.push(value),
                    Err(e) => return Err(mismatch(format!("`{{{name}}}` is not an escaped value: {e}"))),
                },
                Segment::Shards { first, last } => {
                    let canonical = !part.is_empty()
                        && part.bytes().all(|b| b.is_ascii_digit())
                        && (part.len() == 1 || !part.starts_with('0'));
                    match part.parse::<u32>() {
                        Ok(n) if canonical && (*first..=*last).contains(&n) => out.shard = Some(n),
                        _ => return Err(mismatch(format!("`{part}` is not a shard from {first} to {last}"))),
                    }
                }
            }
        }
        Ok(out)
    }

    /// Whether `key` is a well-formed key of this family (as far as the pattern
    /// tells: whether each value parses as its field's type is the type's business).
    pub fn matches(&self, key: &str) -> bool {
        self.split(key).is_ok()
    }
}
