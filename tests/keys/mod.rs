//! Redis key families against a real redis-server: the seed's catalog row by row with
//! the TTL observed after each operation, sliding and windowed expiry, a sharded
//! counter under concurrent writers, `SCAN` with lookalike keys present, the catalog
//! table and its overlap check, and property tests of the key encoding.

mod catalog;
mod cluster;
mod ops;
mod props;
mod scan;
mod seed;

use docshape::redis::aio::MultiplexedConnection;
use docshape::KeyFamily;
use serde::{Deserialize, Serialize};

/// patterns-en, "Redis key catalog", row 1.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "user:{id}:session", kind = hash, ttl = "30d", sliding, note = "auth token data")]
pub struct UserSession {
    pub id: String,
}

/// What the product cache holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Product {
    pub name: String,
    pub price_cents: u64,
}

/// Row 2.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(
    pattern = "cache:product:{id}",
    kind = string,
    value = Product,
    ttl = "300s",
    note = "invalidate on product write"
)]
pub struct ProductCache {
    pub id: String,
}

/// Row 3: the seed's windowed counter.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "rate:{ip}:{minute}", kind = counter, ttl = "120s", note = "rate limiting window")]
pub struct RateWindow {
    pub ip: std::net::IpAddr,
    pub minute: u64,
}

/// Row 4: the queue holds ids of emails whose record is in the database.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(
    pattern = "queue:emails",
    kind = list,
    ttl = "none",
    reason = "durable store elsewhere",
    note = "worker queue"
)]
pub struct EmailQueue;

/// Row 5.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(
    pattern = "counter:orders:{0..15}",
    kind = sharded_counter,
    ttl = "none",
    reason = "a running total: expiring a shard would lose its counts",
    note = "sharded hot counter; SUM on read"
)]
pub struct OrderCounter;

/// The seed's catalog, as the program declares it.
pub const SEED: [&docshape::keys::KeySpec; 5] =
    [&UserSession::SPEC, &ProductCache::SPEC, &RateWindow::SPEC, &EmailQueue::SPEC, &OrderCounter::SPEC];

/// A connection to a database of this test's own on the testkit's redis-server.
pub async fn redis() -> MultiplexedConnection {
    docshape_testkit::redis::database().await.expect("a Redis server for the tests")
}

/// The key's remaining time to live in milliseconds, as Redis reports it: -1 when it
/// has none, -2 when the key does not exist.
pub async fn pttl(conn: &mut MultiplexedConnection, key: &str) -> i64 {
    docshape::redis::cmd("PTTL").arg(key).query_async(conn).await.unwrap()
}

/// The stored text of a string key.
pub async fn raw_get(conn: &mut MultiplexedConnection, key: &str) -> Option<String> {
    docshape::redis::cmd("GET").arg(key).query_async(conn).await.unwrap()
}
