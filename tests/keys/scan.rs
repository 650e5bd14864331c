//! Iterating a family: `SCAN` with its `MATCH` pattern, never `KEYS`, returning
//! exactly the family's keys when lookalikes share the database.

use std::collections::BTreeSet;

use docshape::keys::prelude::*;
use docshape::redis::aio::MultiplexedConnection;
use docshape::KeyFamily;

use super::redis;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, KeyFamily)]
#[key(pattern = "scan:item:{id}", kind = string, ttl = "1h")]
struct Item {
    id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, KeyFamily)]
#[key(pattern = "scan:n:{n}:views", kind = counter, ttl = "1h")]
struct Views {
    n: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, KeyFamily)]
#[key(pattern = "scan:hits:{0..7}", kind = sharded_counter, ttl = "1h")]
struct Hits;

async fn set(conn: &mut MultiplexedConnection, key: &str) {
    let _: () = docshape::redis::cmd("SET").arg(key).arg("1").query_async(conn).await.unwrap();
}

async fn command_calls(conn: &mut MultiplexedConnection, command: &str) -> u64 {
    let info: String = docshape::redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn scan_returns_exactly_the_familys_keys() {
    let mut conn = redis().await;
    // More keys than one SCAN call returns, including values that need escaping.
    let mut items: BTreeSet<Item> = (0..1_200).map(|n| Item { id: format!("i{n}") }).collect();
    items.extend(["a:b", "*", "", "ñ", "x%y", "{tag}"].map(|id| Item { id: id.into() }));
    for item in &items {
        item.set(&mut conn, "v").await.unwrap();
    }
    let views: BTreeSet<Views> = [0, 7, 42, u32::MAX].map(|n| Views { n }).into();
    for v in &views {
        v.incr(&mut conn, 1).await.unwrap();
    }
    Hits.incr_shard(&mut conn, 0, 1).await.unwrap();
    Hits.incr_shard(&mut conn, 5, 1).await.unwrap();

    // Lookalikes: the glob matches them, the family's pattern does not.
    for key in [
        "scan:item:a:b",    // `*` matched across `:`
        "scan:item:%zz",    // not an escaped value
        "scan:item:%41",    // `A` escaped: not how docshape writes it
        "scan:item:a b",    // a raw space
        "scan:items:x",     // another literal
        "scan:n:007:views", // not how 7 is written
        "scan:n:x:views",   // not a u32
        "scan:n:4294967296:views",
        "scan:n:1:2:views",
        "scan:hits:8", // outside the shard range
        "scan:hits:05",
        "scan:hits:x",
    ] {
        set(&mut conn, key).await;
    }

    let keys_before = command_calls(&mut conn, "keys").await;
    let scans_before = command_calls(&mut conn, "scan").await;

    let found: BTreeSet<Item> = Item::scan(&mut conn).await.unwrap().into_iter().collect();
    assert_eq!(found.len(), items.len());
    assert_eq!(found, items);
    let found: BTreeSet<Views> = Views::scan(&mut conn).await.unwrap().into_iter().collect();
    assert_eq!(found, views);
    // Two shards exist; the counter is one value.
    assert_eq!(Hits::scan(&mut conn).await.unwrap(), [Hits]);

    assert!(command_calls(&mut conn, "scan").await > scans_before + 2, "several SCAN calls");
    assert_eq!(command_calls(&mut conn, "keys").await, keys_before, "never KEYS");
}

/// A key another program wrote that is not UTF-8 is skipped and counted; the scan goes
/// on and returns every value of the family.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_that_is_not_utf8_is_skipped_and_counted() {
    let mut conn = redis().await;
    let items: BTreeSet<Item> = (0..700).map(|n| Item { id: format!("u8-{n}") }).collect();
    for item in &items {
        item.set(&mut conn, "v").await.unwrap();
    }
    let mut raw = b"scan:item:".to_vec();
    raw.extend_from_slice(&[0xff, 0xfe]);
    let _: () = docshape::redis::cmd("SET").arg(&raw).arg("1").query_async(&mut conn).await.unwrap();
    set(&mut conn, "scan:item:a b").await;

    let found: BTreeSet<Item> = Item::scan(&mut conn).await.unwrap().into_iter().collect();
    assert!(found.is_superset(&items));
    let report = Item::scan_report(&mut conn).await.unwrap();
    assert!(report.values.iter().cloned().collect::<BTreeSet<_>>().is_superset(&items));
    assert_eq!(report.not_utf8, 1);
    assert!(report.not_of_family >= 1);
}
