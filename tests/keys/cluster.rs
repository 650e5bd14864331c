//! The seed's key catalog over a Redis Cluster of three primaries (the testkit's local
//! one, or `REDIS_CLUSTER_URLS`): every kind's operations through a cluster
//! connection, with the TTLs observed; a sharded counter whose shards live on several
//! primaries sums without a cross-slot `MGET`.

use std::collections::BTreeSet;

use docshape::keys::prelude::*;
use docshape::redis::cluster_async::ClusterConnection;
use docshape::KeyFamily;

use super::{EmailQueue, OrderCounter, Product, ProductCache, RateWindow, UserSession};

async fn cluster() -> ClusterConnection {
    docshape_testkit::redis::cluster().expect("a Redis Cluster for the tests").connection().await.unwrap()
}

async fn pttl(conn: &mut ClusterConnection, key: &str) -> i64 {
    docshape::redis::cmd("PTTL").arg(key).query_async(conn).await.unwrap()
}

/// The primary (`host:port`) that serves `key`'s slot, from `CLUSTER SLOTS`.
async fn owner(conn: &mut ClusterConnection, key: &str) -> String {
    let slot: i64 = docshape::redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query_async(conn).await.unwrap();
    let ranges: Vec<docshape::redis::Value> =
        docshape::redis::cmd("CLUSTER").arg("SLOTS").query_async(conn).await.unwrap();
    for range in ranges {
        let docshape::redis::Value::Array(parts) = range else { continue };
        let (docshape::redis::Value::Int(start), docshape::redis::Value::Int(end)) = (&parts[0], &parts[1])
        else {
            continue;
        };
        if (*start..=*end).contains(&slot) {
            let docshape::redis::Value::Array(primary) = &parts[2] else { break };
            let host = match &primary[0] {
                docshape::redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                other => format!("{other:?}"),
            };
            let docshape::redis::Value::Int(port) = primary[1] else { break };
            return format!("{host}:{port}");
        }
    }
    panic!("no primary serves slot {slot}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_local_cluster_has_three_primaries_sharing_every_slot() {
    let mut conn = cluster().await;
    let info: String = docshape::redis::cmd("CLUSTER").arg("INFO").query_async(&mut conn).await.unwrap();
    assert!(info.contains("cluster_state:ok"), "{info}");
    assert!(info.contains("cluster_slots_assigned:16384"), "{info}");
    if !docshape_testkit::redis::cluster().unwrap().is_external() {
        assert!(info.contains("cluster_size:3"), "{info}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_kind_works_through_a_cluster_connection() {
    let mut conn = cluster().await;

    // string, with its fixed TTL.
    let cache = ProductCache { id: "cl-9f3e".into() };
    let product = Product { name: "Lamp".into(), price_cents: 4900 };
    cache.set(&mut conn, &product).await.unwrap();
    assert_eq!(cache.get(&mut conn).await.unwrap(), Some(product));
    let ttl = pttl(&mut conn, &cache.key()).await;
    assert!((295_000..=300_000).contains(&ttl), "{ttl}");

    // hash, sliding.
    let session = UserSession { id: "cl-u42".into() };
    session.hset(&mut conn, "token", "abc").await.unwrap();
    assert_eq!(session.hget(&mut conn, "token").await.unwrap().as_deref(), Some("abc"));
    assert!(pttl(&mut conn, &session.key()).await > 30 * 86_400_000 - 5_000);

    // counter with a fixed window: the expiry is set once, by the first increment.
    let window = RateWindow { ip: "203.0.113.9".parse().unwrap(), minute: 202608051211 };
    window.delete(&mut conn).await.unwrap();
    assert_eq!(window.incr(&mut conn, 1).await.unwrap(), 1);
    docshape::redis::cmd("PEXPIRE").arg(window.key()).arg(60_000).exec_async(&mut conn).await.unwrap();
    assert_eq!(window.incr(&mut conn, 1).await.unwrap(), 2);
    let ttl = pttl(&mut conn, &window.key()).await;
    assert!((0..=60_000).contains(&ttl), "a later increment moved the window's end: {ttl}");

    // list, no TTL.
    let queue = EmailQueue;
    queue.delete(&mut conn).await.unwrap();
    queue.push(&mut conn, "mail_1").await.unwrap();
    queue.push(&mut conn, "mail_2").await.unwrap();
    assert_eq!(queue.len(&mut conn).await.unwrap(), 2);
    assert_eq!(queue.pop(&mut conn).await.unwrap().as_deref(), Some("mail_1"));
    assert_eq!(pttl(&mut conn, "queue:emails").await, -1);
    queue.delete(&mut conn).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sharded_counter_spread_over_primaries_sums_exactly() {
    let mut conn = cluster().await;
    let counter = OrderCounter;
    let mut owners = BTreeSet::new();
    for key in counter.shard_keys() {
        owners.insert(owner(&mut conn, &key).await);
    }
    assert!(owners.len() > 1, "the 16 shards should live on more than one primary: {owners:?}");

    counter.delete(&mut conn).await.unwrap();
    assert_eq!(counter.sum(&mut conn).await.unwrap(), 0);
    let mut expected = 0;
    for shard in 0..16 {
        counter.incr_shard(&mut conn, shard, i64::from(shard) + 1).await.unwrap();
        expected += i64::from(shard) + 1;
    }
    for i in 0..40 {
        counter.incr(&mut conn, i % 3).await.unwrap();
        expected += i % 3;
    }
    assert_eq!(counter.sum(&mut conn).await.unwrap(), expected);
    assert_eq!(counter.delete(&mut conn).await.unwrap(), 16);
    assert_eq!(counter.sum(&mut conn).await.unwrap(), 0);
}

/// A family with keys on every primary: `scan` on the cluster connection would visit one
/// node; `scan_cluster` visits each primary and finds every key once.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, KeyFamily)]
#[key(pattern = "clscan:item:{id}", kind = string, ttl = "1h")]
struct ClusterItem {
    id: u32,
}

#[tokio::test(flavor = "multi_thread")]
async fn scan_cluster_visits_every_primary() {
    let mut conn = cluster().await;
    let items: Vec<ClusterItem> = (0..300).map(|id| ClusterItem { id }).collect();
    let mut owners = BTreeSet::new();
    for item in &items {
        item.set(&mut conn, "x").await.unwrap();
        owners.insert(owner(&mut conn, &item.key()).await);
    }
    if !docshape_testkit::redis::cluster().unwrap().is_external() {
        assert_eq!(owners.len(), 3, "300 keys spread over the three primaries");
    }
    // A lookalike and a key that is not UTF-8, on whatever node they hash to.
    docshape::redis::cmd("SET").arg("clscan:item:1:extra").arg("x").exec_async(&mut conn).await.unwrap();
    docshape::redis::cmd("SET")
        .arg(b"clscan:item:\xff\xfe".as_slice())
        .arg("x")
        .exec_async(&mut conn)
        .await
        .unwrap();

    // What one SCAN loop on the cluster connection sees: one node's keys, at most.
    if !docshape_testkit::redis::cluster().unwrap().is_external() {
        let one_node = ClusterItem::scan(&mut conn).await.map(|v| v.len()).unwrap_or(0);
        assert!(one_node < items.len(), "a plain SCAN saw {one_node} of {} keys", items.len());
    }
    let report = ClusterItem::scan_cluster(&mut conn).await.unwrap();
    let found: BTreeSet<ClusterItem> = report.values.into_iter().collect();
    assert_eq!(found, items.iter().cloned().collect::<BTreeSet<_>>(), "every key once, from every primary");
    assert_eq!((report.not_utf8, report.not_of_family), (1, 1));
}
