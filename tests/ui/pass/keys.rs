// Key families of every kind, generic and with raw identifiers, next to names that
// would break unhygienic generated code.

use docshape::keys::prelude::*;
use docshape::keys::{catalog_markdown, check_catalog, KeyKind, Ttl};
use docshape::KeyFamily;
use serde::{Deserialize, Serialize};

#[allow(dead_code)]
type Result = ();
#[allow(dead_code)]
struct Vec;
#[allow(dead_code)]
mod __ds {}

#[derive(Serialize, Deserialize)]
pub struct Product {
    pub name: std::string::String,
}

#[derive(KeyFamily)]
#[key(pattern = "user:{id}:session", kind = hash, ttl = "30d", sliding, note = "auth token data")]
pub struct UserSession {
    pub id: std::string::String,
}

#[derive(KeyFamily)]
#[key(pattern = "cache:product:{id}", kind = "string", value = Product, ttl = "300s")]
struct ProductCache {
    id: u64,
}

#[derive(KeyFamily)]
#[key(pattern = "rate:{ip}:{minute}", kind = counter, ttl = "120", note = "rate limiting window")]
struct RateWindow {
    ip: std::net::IpAddr,
    minute: u64,
}

#[derive(KeyFamily)]
#[key(pattern = "queue:{type}:jobs", kind = list, value = "std::vec::Vec<Product>", ttl = "none", reason = "durable store elsewhere")]
struct Jobs {
    r#type: std::string::String,
}

#[derive(KeyFamily)]
#[key(pattern = "online:{room}", kind = set, ttl = "10m")]
struct Online<T: std::fmt::Display + std::str::FromStr>
where
    T::Err: std::fmt::Display,
{
    room: T,
}

#[derive(KeyFamily)]
#[key(pattern = "leaderboard:{season}", kind = sorted_set, ttl = "90d", sliding)]
struct Leaderboard {
    season: u16,
}

#[derive(KeyFamily)]
#[key(pattern = "counter:orders:{0..=15}", kind = sharded_counter, ttl = "none", reason = "a running total")]
struct OrderCounter;

#[derive(KeyFamily)]
#[key(pattern = "cache:config", kind = string, ttl = "1h")]
struct ConfigCache {}

// Operations are there for each kind (their futures are `Send`).
fn is_send<T: Send>(_: &T) {}

#[allow(dead_code)]
async fn operations(conn: &mut docshape::redis::aio::MultiplexedConnection) {
    is_send(&UserSession { id: "u".into() }.hset(conn, "token", "t"));
    is_send(&ProductCache { id: 1 }.set(conn, &Product { name: "p".into() }));
    is_send(&RateWindow { ip: [127, 0, 0, 1].into(), minute: 1 }.incr(conn, 1));
    is_send(&Jobs { r#type: "mail".into() }.pop(conn));
    is_send(&Online { room: 7u32 }.members(conn));
    is_send(&Leaderboard { season: 1 }.range(conn, 0, -1));
    is_send(&OrderCounter.sum(conn));
    is_send(&ConfigCache {}.get(conn));
    is_send(&UserSession::scan(conn));
}

// A constant, so checked when the case compiles.
const _: () = assert!(Jobs::SPEC.json);

pub(super) fn main() {
    assert_eq!(Jobs { r#type: "mail".into() }.key(), "queue:mail:jobs");
    assert_eq!(Jobs::SPEC.placeholders().collect::<std::vec::Vec<_>>(), ["type"]);
    assert_eq!(Online { room: 7u32 }.key(), "online:7");
    assert_eq!(Online::<u32>::parse_key("online:7").unwrap().room, 7);
    assert_eq!(RateWindow::SPEC.ttl, Ttl::After { seconds: 120, sliding: false, spelled: "120s" });
    assert_eq!(OrderCounter::SPEC.kind, KeyKind::ShardedCounter);
    assert_eq!(OrderCounter.shard_keys().len(), 16);
    assert_eq!(ConfigCache {}.key(), "cache:config");
    assert!(ConfigCache::parse_key("cache:config").is_ok());
    let specs = [
        &UserSession::SPEC,
        &ProductCache::SPEC,
        &RateWindow::SPEC,
        &Jobs::SPEC,
        &Online::<u32>::SPEC,
        &Leaderboard::SPEC,
        &OrderCounter::SPEC,
        &ConfigCache::SPEC,
    ];
    check_catalog(&specs).unwrap();
    assert!(catalog_markdown(&specs)
        .contains("| `queue:{type}:jobs` | list(json) | none | durable store elsewhere |"));
}
