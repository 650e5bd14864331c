//! The [`KeyFamily`] trait the derive implements: building and parsing a family's keys.

use std::fmt;
use std::str::FromStr;

#[cfg(feature = "redis")]
use {redis::aio::ConnectionLike, std::future::Future};

use super::error::KeyError;
use super::escape;
use super::spec::KeySpec;

/// A Redis key family: a struct whose fields fill the placeholders of its pattern.
/// Derive it with `#[derive(KeyFamily)]` and `#[key(...)]` (see the [module](crate::keys)).
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
    /// matches but that are not the family's (`*` also matches `:`), and keys that are
    /// not UTF-8 (another program's bytes), are left out; each value is returned once
    /// even when `SCAN` returns its key twice (it may) or it has several shards.
    /// Values are in no particular order. [`KeyFamily::scan_report`] also says how many
    /// keys were left out.
    #[cfg(feature = "redis")]
    fn scan<C>(conn: &mut C) -> impl Future<Output = Result<Vec<Self>, KeyError>> + Send
    where
        C: ConnectionLike + Send,
        Self: Send,
    {
        async move { Ok(Self::scan_report(conn).await?.values) }
    }

    /// [`KeyFamily::scan`], with the count of keys the glob matched that were left
    /// out. A `SCAN` reply that hands back the cursor it was sent (no progress: the
    /// scan would never end) is [`KeyError::ScanStalled`].
    #[cfg(feature = "redis")]
    fn scan_report<C>(conn: &mut C) -> impl Future<Output = Result<ScanReport<Self>, KeyError>> + Send
    where
        C: ConnectionLike + Send,
        Self: Send,
    {
        let pattern = Self::SPEC.match_pattern();
        async move {
            let mut scanning = Scanning::new();
            let mut cursor: u64 = 0;
            loop {
                // Bytes, not text: one key that is not UTF-8 must not fail the reply.
                let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(500)
                    .query_async(conn)
                    .await?;
                scanning.absorb(keys);
                match scanning.advance(cursor, next)? {
                    Some(next) => cursor = next,
                    None => return Ok(scanning.report),
                }
            }
        }
    }

    /// [`KeyFamily::scan_report`] over a Redis Cluster (feature `redis-cluster`): every
    /// primary is scanned to its end (`CLUSTER NODES` names them; one `SCAN` loop per
    /// primary, sent to that node), since a `SCAN` on a cluster connection would visit
    /// one node's keys only.
    #[cfg(feature = "redis-cluster")]
    fn scan_cluster(
        conn: &mut redis::cluster_async::ClusterConnection,
    ) -> impl Future<Output = Result<ScanReport<Self>, KeyError>> + Send
    where
        Self: Send,
    {
        super::cluster::scan_report::<Self>(conn)
    }
}

/// A scan in progress: what it found so far, each value once.
#[cfg(feature = "redis")]
pub(crate) struct Scanning<T> {
    seen: std::collections::HashSet<String>,
    pub(crate) report: ScanReport<T>,
}

#[cfg(feature = "redis")]
impl<T: KeyFamily> Scanning<T> {
    pub(crate) fn new() -> Self {
        Self {
            seen: std::collections::HashSet::new(),
            report: ScanReport { values: Vec::new(), not_utf8: 0, not_of_family: 0 },
        }
    }

    /// One `SCAN` reply's keys: the family's values kept once, the rest counted.
    pub(crate) fn absorb(&mut self, keys: Vec<Vec<u8>>) {
        for key in keys {
            let Ok(key) = String::from_utf8(key) else {
                self.report.not_utf8 += 1;
                continue;
            };
            match T::parse_key(&key) {
                Ok(value) => {
                    if self.seen.insert(value.key()) {
                        self.report.values.push(value);
                    }
                }
                Err(_) => self.report.not_of_family += 1,
            }
        }
    }

    /// The cursor to send next, `None` when the server's iteration is over; a reply
    /// that hands back the cursor it was sent would never end: [`KeyError::ScanStalled`].
    pub(crate) fn advance(&self, cursor: u64, next: u64) -> Result<Option<u64>, KeyError> {
        if next == 0 {
            Ok(None)
        } else if next == cursor {
            Err(KeyError::ScanStalled { pattern: T::SPEC.pattern, cursor })
        } else {
            Ok(Some(next))
        }
    }
}

/// What [`KeyFamily::scan_report`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanReport<T> {
    /// The family's values, each once, in no particular order.
    pub values: Vec<T>,
    /// Keys the glob matched that are not UTF-8, so no key of the family.
    pub not_utf8: u64,
    /// Keys the glob matched that are UTF-8 but not the family's (a lookalike, a
    /// value that does not parse, a key not written as docshape writes it); a key
    /// `SCAN` returned twice counts twice.
    pub not_of_family: u64,
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

/// A key family that caches documents whose `_id` has the type `I`: its one
/// placeholder is of that type, and holds the id itself.
///
/// `#[derive(KeyFamily)]` implements it for every family with exactly one placeholder,
/// for that placeholder's type. A `cache = Family` row needs `Family: CachesId<Id>`
/// for the model's `_id` type `Id`, so a family over another type is a compile error
/// rather than keys built from the id's text (where `"007"` and `7` would meet).
#[diagnostic::on_unimplemented(
    message = "the key family `{Self}` cannot cache documents whose `_id` is a `{I}`",
    label = "its one placeholder must have the `_id`'s type",
    note = "a cached row's key holds the id value itself: give the family one placeholder field of type `{I}`, the model's `_id` type (an `_id` of type `Bson` or `Document` cannot be cached)"
)]
pub trait CachesId<I>: KeyFamily {
    /// The family value whose one placeholder is `id`.
    fn for_id(id: I) -> Self;
}

/// A key family that caches the documents of a tenant model (`#[model(tenant =
/// org_id)]`) whose tenant has the type `T` and whose `_id` has the type `I`: its two
/// placeholders are, in the pattern's order, the tenant and the id
/// (`"cache:project:{org}:{id}"`).
///
/// `#[derive(KeyFamily)]` implements it for every family with exactly two placeholders,
/// for their types in the pattern's order. A `cache = Family` row of a tenant model
/// needs `Family: CachesTenantId<Tenant, Id>`, so that the key holds the tenant: one
/// tenant's read never finds another tenant's cached document under its key.
#[diagnostic::on_unimplemented(
    message = "the key family `{Self}` cannot cache documents of a tenant model whose tenant is a `{T}` and whose `_id` is a `{I}`",
    label = "its two placeholders must be the tenant's type, then the `_id`'s",
    note = "a tenant model's cached row keys each document by its tenant and its id: give the family two placeholders, the tenant's (a field of type `{T}`) then the id's (a field of type `{I}`)"
)]
pub trait CachesTenantId<T, I>: KeyFamily {
    /// The family value whose placeholders are `tenant` and `id`.
    fn for_tenant_id(tenant: T, id: I) -> Self;
}

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
