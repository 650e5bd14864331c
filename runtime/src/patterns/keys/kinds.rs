//! One trait per kind of key, with that kind's operations (feature `redis`), each
//! applying the family's TTL decision.
//!
//! TTL, for every kind:
//! - a fixed TTL (`ttl = "120s"`) starts when the key is created: a write sets it only
//!   where the key has none (what `EXPIRE key N NX` says on Redis 7; here a one-key
//!   script, the same on 6.2), so a running expiry is left alone (the seed's rate
//!   window), and a string's `SET ... EX N` starts a new value's life;
//! - a sliding TTL (`ttl = "30d", sliding`) starts again at every read and write
//!   (`EXPIRE key N`, or `GETEX` for strings);
//! - `ttl = "none"` never sets one.
//!
//! A write and its `EXPIRE` go in one round trip that the server runs whole (a
//! `MULTI`/`EXEC`, or that script), so no key is left without its TTL when a client
//! dies between the two.

use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::KeyError;
use super::family::KeyFamily;

#[cfg(feature = "redis")]
use {
    super::spec::Ttl,
    redis::{aio::ConnectionLike, FromRedisValue, ToRedisArgs},
    std::collections::BTreeMap,
    std::future::Future,
};

/// How a family's values are stored: [`Text`] as they are, [`Json`] as JSON.
pub trait Encoding {
    /// What is written (`str` for text).
    type Value: ?Sized;
    /// What is read back (`String` for text).
    type Owned;
    /// The stored text of a value.
    fn encode(value: &Self::Value) -> Result<String, KeyError>;
    /// A value from its stored text.
    fn decode(text: String) -> Result<Self::Owned, KeyError>;
}

/// Values stored as they are: a family without `value = Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text {}

impl Encoding for Text {
    type Value = str;
    type Owned = String;
    fn encode(value: &str) -> Result<String, KeyError> {
        Ok(value.to_owned())
    }
    fn decode(text: String) -> Result<String, KeyError> {
        Ok(text)
    }
}

/// Values stored as JSON text: a family with `value = Type`.
pub struct Json<T>(PhantomData<fn() -> T>);

impl<T: Serialize + DeserializeOwned> Encoding for Json<T> {
    type Value = T;
    type Owned = T;
    fn encode(value: &T) -> Result<String, KeyError> {
        serde_json::to_string(value).map_err(KeyError::Json)
    }
    fn decode(text: String) -> Result<T, KeyError> {
        serde_json::from_str(&text).map_err(KeyError::Json)
    }
}

/// The value type a family writes.
pub type ValueOf<F> = <<F as Stored>::Encoding as Encoding>::Value;
/// The value type a family reads.
pub type OwnedOf<F> = <<F as Stored>::Encoding as Encoding>::Owned;

/// A family that stores values: it says how they are encoded.
pub trait Stored: KeyFamily {
    /// [`Text`] or [`Json`] of the `value` type.
    type Encoding: Encoding;
}

/// The `EXPIRE` a sliding write adds to its `MULTI`. A fixed TTL is not set here: it
/// is [`FIXED_TTL`]'s job, since it must not move once set.
#[cfg(feature = "redis")]
fn ttl_on_write(pipe: &mut redis::Pipeline, key: &str, ttl: Ttl) {
    if let Ttl::After { seconds, sliding: true, .. } = ttl {
        pipe.cmd("EXPIRE").arg(key).arg(seconds).ignore();
    }
}

/// A write under a fixed TTL: the command, then an expiry only where the key has none,
/// so the window runs from the key's creation. `EXPIRE ... NX` says the same from Redis
/// 7.0 on; the script says it on 6.2 as well, and is as atomic as a `MULTI` (one key,
/// so a cluster serves it too). `KEYS[1]` the key, `ARGV[1]` the seconds, `ARGV[2]`
/// the command, the rest its arguments.
#[cfg(feature = "redis")]
const FIXED_TTL: &str = "local reply = redis.call(ARGV[2], KEYS[1], unpack(ARGV, 3)) \
if redis.call('TTL', KEYS[1]) == -1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end \
return reply";

#[cfg(feature = "redis")]
fn refresh_on_read(pipe: &mut redis::Pipeline, key: &str, ttl: Ttl) {
    if let Ttl::After { seconds, sliding: true, .. } = ttl {
        pipe.cmd("EXPIRE").arg(key).arg(seconds).ignore();
    }
}

/// A write (or a sliding read) and its `EXPIRE`, in one `MULTI`/`EXEC`.
#[cfg(feature = "redis")]
fn transaction() -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.atomic();
    pipe
}

/// Whether a command reads or writes its key, which says what it does to the TTL.
#[cfg(feature = "redis")]
#[derive(Clone, Copy)]
enum Access {
    /// A sliding TTL starts again ([`refresh_on_read`]).
    Read,
    /// The family's TTL is applied ([`ttl_on_write`]).
    Write,
}

/// The arguments of a command that takes none after its key (`()` is not a
/// `ToRedisArgs`; an empty array writes nothing).
#[cfg(feature = "redis")]
const NO_ARGS: &[&str; 0] = &[];

/// `command key args...` followed by the `EXPIRE` its access calls for, in one round
/// trip the server runs whole (`MULTI`/`EXEC`, or [`FIXED_TTL`] for a fixed TTL's
/// write); the command's reply (the `EXPIRE`'s is ignored).
/// The pipelined operations on one key all go through here, so none can leave out
/// its TTL step.
///
/// It takes the key already built, not the family, so the future holds no `&self`
/// and is `Send` whether or not the family is `Sync`.
#[cfg(feature = "redis")]
async fn on_key<T: FromRedisValue, C: ConnectionLike + Send>(
    conn: &mut C,
    key: String,
    ttl: Ttl,
    access: Access,
    command: &str,
    args: impl ToRedisArgs + Send,
) -> Result<T, KeyError> {
    if let (Access::Write, Ttl::After { seconds, sliding: false, .. }) = (access, ttl) {
        let reply: T = redis::cmd("EVAL")
            .arg(FIXED_TTL)
            .arg(1)
            .arg(&key)
            .arg(seconds)
            .arg(command)
            .arg(args)
            .query_async(conn)
            .await?;
        return Ok(reply);
    }
    let mut pipe = transaction();
    pipe.cmd(command).arg(&key).arg(args);
    match access {
        Access::Read => refresh_on_read(&mut pipe, &key, ttl),
        Access::Write => ttl_on_write(&mut pipe, &key, ttl),
    }
    let (reply,): (T,) = pipe.query_async(conn).await?;
    Ok(reply)
}

#[cfg(feature = "redis")]
fn decode_all<E: Encoding>(texts: Vec<String>) -> Result<Vec<E::Owned>, KeyError> {
    texts.into_iter().map(E::decode).collect()
}

/// `kind = string`: one value per key, JSON when the family names its `value` type.
///
/// With the `redis` feature: `set` (`SET key value EX ttl`), `get` (`GETEX` with a
/// sliding TTL), `delete` (from [`KeyFamily`]).
pub trait StringFamily: Stored {
    /// Stores the value: `SET key value EX ttl` (no `EX` for `ttl = "none"`).
    #[cfg(feature = "redis")]
    fn set<C>(&self, conn: &mut C, value: &ValueOf<Self>) -> impl Future<Output = Result<(), KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let key = self.key();
        let text = <Self::Encoding as Encoding>::encode(value);
        let ttl = Self::SPEC.ttl;
        async move {
            let mut cmd = redis::cmd("SET");
            cmd.arg(&key).arg(text?);
            if let Ttl::After { seconds, .. } = ttl {
                cmd.arg("EX").arg(seconds);
            }
            cmd.exec_async(conn).await?;
            Ok(())
        }
    }

    /// Reads the value, if the key exists; a sliding TTL starts again (`GETEX`).
    #[cfg(feature = "redis")]
    fn get<C>(&self, conn: &mut C) -> impl Future<Output = Result<Option<OwnedOf<Self>>, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let key = self.key();
        let ttl = Self::SPEC.ttl;
        async move {
            let cmd = match ttl {
                Ttl::After { seconds, sliding: true, .. } => {
                    let mut cmd = redis::cmd("GETEX");
                    cmd.arg(&key).arg("EX").arg(seconds);
                    cmd
                }
                _ => {
                    let mut cmd = redis::cmd("GET");
                    cmd.arg(&key);
                    cmd
                }
            };
            let text: Option<String> = cmd.query_async(conn).await?;
            text.map(<Self::Encoding as Encoding>::decode).transpose()
        }
    }
}

/// `kind = hash`: fields with values (a session).
///
/// With the `redis` feature: `hset`, `hset_many`, `hget`, `hgetall`, `hdel`; reads
/// of a sliding family start its TTL again.
pub trait HashFamily: Stored {
    /// Sets one field.
    #[cfg(feature = "redis")]
    fn hset<C>(
        &self,
        conn: &mut C,
        field: &str,
        value: &ValueOf<Self>,
    ) -> impl Future<Output = Result<(), KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let text = <Self::Encoding as Encoding>::encode(value);
        let field = field.to_owned();
        let pairs = text.map(|t| vec![(field, t)]);
        hset_pairs::<Self, C>(self.key(), conn, pairs)
    }

    /// Sets several fields at once.
    #[cfg(feature = "redis")]
    fn hset_many<C>(
        &self,
        conn: &mut C,
        fields: &[(&str, &ValueOf<Self>)],
    ) -> impl Future<Output = Result<(), KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let pairs: Result<Vec<(String, String)>, KeyError> = fields
            .iter()
            .map(|(f, v)| Ok(((*f).to_owned(), <Self::Encoding as Encoding>::encode(v)?)))
            .collect();
        hset_pairs::<Self, C>(self.key(), conn, pairs)
    }

    /// Reads one field.
    #[cfg(feature = "redis")]
    fn hget<C>(
        &self,
        conn: &mut C,
        field: &str,
    ) -> impl Future<Output = Result<Option<OwnedOf<Self>>, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let reply = on_key(conn, self.key(), Self::SPEC.ttl, Access::Read, "HGET", field.to_owned());
        async move {
            let text: Option<String> = reply.await?;
            text.map(<Self::Encoding as Encoding>::decode).transpose()
        }
    }

    /// Reads every field (empty when the key does not exist).
    #[cfg(feature = "redis")]
    fn hgetall<C>(
        &self,
        conn: &mut C,
    ) -> impl Future<Output = Result<BTreeMap<String, OwnedOf<Self>>, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let reply = on_key(conn, self.key(), Self::SPEC.ttl, Access::Read, "HGETALL", NO_ARGS);
        async move {
            let map: BTreeMap<String, String> = reply.await?;
            map.into_iter().map(|(f, t)| Ok((f, <Self::Encoding as Encoding>::decode(t)?))).collect()
        }
    }

    /// Removes one field; whether it was there.
    #[cfg(feature = "redis")]
    fn hdel<C>(&self, conn: &mut C, field: &str) -> impl Future<Output = Result<bool, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let reply = on_key(conn, self.key(), Self::SPEC.ttl, Access::Write, "HDEL", field.to_owned());
        async move {
            let removed: u64 = reply.await?;
            Ok(removed > 0)
        }
    }
}

#[cfg(feature = "redis")]
fn hset_pairs<F: KeyFamily, C: ConnectionLike + Send>(
    key: String,
    conn: &mut C,
    pairs: Result<Vec<(String, String)>, KeyError>,
) -> impl Future<Output = Result<(), KeyError>> + Send + '_ {
    let ttl = F::SPEC.ttl;
    async move {
        let pairs = pairs?;
        if pairs.is_empty() {
            // HSET with no field is a syntax error; nothing to write is nothing to do.
            return Ok(());
        }
        // `HSET key field value field value ...`; the reply (how many fields are new) is
        // not wanted, and `()` takes any reply but an error.
        on_key(conn, key, ttl, Access::Write, "HSET", pairs).await
    }
}

/// `kind = counter`: an integer. With a fixed TTL it is the seed's rate window:
/// `INCR` then an expiry only if the key has none, so the window starts at the first
/// increment and later increments do not extend it.
pub trait CounterFamily: KeyFamily {
    /// Adds `by` (negative to subtract); the new value. The family's TTL is applied
    /// in the same round trip.
    #[cfg(feature = "redis")]
    fn incr<C>(&self, conn: &mut C, by: i64) -> impl Future<Output = Result<i64, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        on_key(conn, self.key(), Self::SPEC.ttl, Access::Write, "INCRBY", by)
    }

    /// The value (0 when the key does not exist); a sliding TTL starts again.
    #[cfg(feature = "redis")]
    fn get<C>(&self, conn: &mut C) -> impl Future<Output = Result<i64, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let reply = on_key(conn, self.key(), Self::SPEC.ttl, Access::Read, "GET", NO_ARGS);
        async move {
            let value: Option<i64> = reply.await?;
            Ok(value.unwrap_or(0))
        }
    }
}

/// `kind = list`: a FIFO queue (`RPUSH` to the tail, `LPOP` from the head). A list in
/// Redis is not a durable store: keep the record of each job elsewhere (the seed's
/// note), and use the list to hand work to workers.
pub trait ListFamily: Stored {
    /// Appends a value at the tail; the list's new length.
    #[cfg(feature = "redis")]
    fn push<C>(
        &self,
        conn: &mut C,
        value: &ValueOf<Self>,
    ) -> impl Future<Output = Result<u64, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let key = self.key();
        let text = <Self::Encoding as Encoding>::encode(value);
        async move { on_key(conn, key, Self::SPEC.ttl, Access::Write, "RPUSH", text?).await }
    }

    /// Takes the value at the head, if any.
    #[cfg(feature = "redis")]
    fn pop<C>(&self, conn: &mut C) -> impl Future<Output = Result<Option<OwnedOf<Self>>, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let reply = on_key(conn, self.key(), Self::SPEC.ttl, Access::Read, "LPOP", NO_ARGS);
        async move {
            let text: Option<String> = reply.await?;
            text.map(<Self::Encoding as Encoding>::decode).transpose()
        }
    }

    /// The number of values waiting.
    #[cfg(feature = "redis")]
    fn len<C>(&self, conn: &mut C) -> impl Future<Output = Result<u64, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        on_key(conn, self.key(), Self::SPEC.ttl, Access::Read, "LLEN", NO_ARGS)
    }
}

/// `kind = set`: distinct members.
pub trait SetFamily: Stored {
    /// Adds a member; whether it was new.
    #[cfg(feature = "redis")]
    fn add<C>(
        &self,
        conn: &mut C,
        member: &ValueOf<Self>,
    ) -> impl Future<Output = Result<bool, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        member_write::<Self, C>(self.key(), "SADD", None, <Self::Encoding as Encoding>::encode(member), conn)
    }

    /// Removes a member; whether it was there.
    #[cfg(feature = "redis")]
    fn remove<C>(
        &self,
        conn: &mut C,
        member: &ValueOf<Self>,
    ) -> impl Future<Output = Result<bool, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        member_write::<Self, C>(self.key(), "SREM", None, <Self::Encoding as Encoding>::encode(member), conn)
    }

    /// Whether a value is a member.
    #[cfg(feature = "redis")]
    fn contains<C>(
        &self,
        conn: &mut C,
        member: &ValueOf<Self>,
    ) -> impl Future<Output = Result<bool, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let key = self.key();
        let text = <Self::Encoding as Encoding>::encode(member);
        async move { on_key(conn, key, Self::SPEC.ttl, Access::Read, "SISMEMBER", text?).await }
    }

    /// Every member, in no particular order.
    #[cfg(feature = "redis")]
    fn members<C>(&self, conn: &mut C) -> impl Future<Output = Result<Vec<OwnedOf<Self>>, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let reply = on_key(conn, self.key(), Self::SPEC.ttl, Access::Read, "SMEMBERS", NO_ARGS);
        async move { decode_all::<Self::Encoding>(reply.await?) }
    }
}

/// `SADD`/`SREM`/`ZADD`/`ZREM` of one member with the family's TTL; whether the
/// member count changed.
#[cfg(feature = "redis")]
fn member_write<'c, F: KeyFamily, C: ConnectionLike + Send>(
    key: String,
    command: &'static str,
    score: Option<f64>,
    member: Result<String, KeyError>,
    conn: &'c mut C,
) -> impl Future<Output = Result<bool, KeyError>> + Send + 'c {
    let ttl = F::SPEC.ttl;
    async move {
        // No score (`None`) adds no argument.
        let changed: u64 = on_key(conn, key, ttl, Access::Write, command, (score, member?)).await?;
        Ok(changed > 0)
    }
}

/// `kind = sorted_set`: members ordered by a score (a leaderboard).
pub trait SortedSetFamily: Stored {
    /// Adds a member with a score, or moves an existing one; whether it was new.
    #[cfg(feature = "redis")]
    fn add<C>(
        &self,
        conn: &mut C,
        score: f64,
        member: &ValueOf<Self>,
    ) -> impl Future<Output = Result<bool, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        member_write::<Self, C>(
            self.key(),
            "ZADD",
            Some(score),
            <Self::Encoding as Encoding>::encode(member),
            conn,
        )
    }

    /// Removes a member; whether it was there.
    #[cfg(feature = "redis")]
    fn remove<C>(
        &self,
        conn: &mut C,
        member: &ValueOf<Self>,
    ) -> impl Future<Output = Result<bool, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        member_write::<Self, C>(self.key(), "ZREM", None, <Self::Encoding as Encoding>::encode(member), conn)
    }

    /// Members from rank `start` to `stop` inclusive (lowest score first; negative
    /// ranks count from the end, `0, -1` is everything), with their scores.
    #[cfg(feature = "redis")]
    fn range<C>(
        &self,
        conn: &mut C,
        start: i64,
        stop: i64,
    ) -> impl Future<Output = Result<Vec<(OwnedOf<Self>, f64)>, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let args = (start, stop, "WITHSCORES");
        let reply = on_key(conn, self.key(), Self::SPEC.ttl, Access::Read, "ZRANGE", args);
        async move {
            let pairs: Vec<(String, f64)> = reply.await?;
            pairs.into_iter().map(|(m, s)| Ok((<Self::Encoding as Encoding>::decode(m)?, s))).collect()
        }
    }

    /// A member's score, if it is a member.
    #[cfg(feature = "redis")]
    fn score<C>(
        &self,
        conn: &mut C,
        member: &ValueOf<Self>,
    ) -> impl Future<Output = Result<Option<f64>, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let key = self.key();
        let text = <Self::Encoding as Encoding>::encode(member);
        async move { on_key(conn, key, Self::SPEC.ttl, Access::Read, "ZSCORE", text?).await }
    }
}

/// `kind = sharded_counter`: a hot counter split over shard keys
/// (`counter:orders:{0..15}`), so concurrent increments do not all hit one key (or,
/// on a cluster, one node). An increment touches one shard; [`sum`](Self::sum) reads
/// them all with one `MGET`.
pub trait ShardedCounterFamily: KeyFamily {
    /// Adds `by` to a shard picked at random (not a cryptographic choice: it only
    /// spreads the writes); the shard's new value.
    #[cfg(feature = "redis")]
    fn incr<C>(&self, conn: &mut C, by: i64) -> impl Future<Output = Result<i64, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let shard = Self::SPEC.shards().map_or(0, |range| {
            let span = u64::from(range.end() - range.start()) + 1;
            // Bounded by the range's width, which is a u32.
            range.start() + u32::try_from(random_u64() % span).unwrap_or(0)
        });
        self.incr_shard(conn, shard, by)
    }

    /// Adds `by` to the given shard; the shard's new value. A shard outside the
    /// pattern's range is a [`KeyError::NoSuchShard`].
    #[cfg(feature = "redis")]
    fn incr_shard<C>(
        &self,
        conn: &mut C,
        shard: u32,
        by: i64,
    ) -> impl Future<Output = Result<i64, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let key = self.shard_key(shard);
        async move { on_key(conn, key?, Self::SPEC.ttl, Access::Write, "INCRBY", by).await }
    }

    /// The sum of every shard: one `MGET` on a single server, one per slot on a
    /// cluster connection (its client splits the command by slot, where one `MGET`
    /// across slots would be refused). A sliding TTL then starts again on each shard,
    /// one `EXPIRE` per shard, since a cluster cannot take them in one transaction.
    #[cfg(feature = "redis")]
    fn sum<C>(&self, conn: &mut C) -> impl Future<Output = Result<i64, KeyError>> + Send
    where
        C: ConnectionLike + Send,
    {
        let keys = self.shard_keys();
        let ttl = Self::SPEC.ttl;
        let pattern = Self::SPEC.pattern;
        async move {
            let values: Vec<Option<i64>> = redis::cmd("MGET").arg(&keys).query_async(conn).await?;
            if let Ttl::After { seconds, sliding: true, .. } = ttl {
                for key in &keys {
                    redis::cmd("EXPIRE").arg(key).arg(seconds).exec_async(conn).await?;
                }
            }
            values
                .into_iter()
                .flatten()
                .try_fold(0i64, i64::checked_add)
                .ok_or(KeyError::Overflow { pattern })
        }
    }
}

/// A random number from the standard library's per-process random hash keys.
#[cfg(feature = "redis")]
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}
