//! Every row of the seed's catalog as a family, with the TTL observed after each
//! operation, and the commands the seed writes.

use std::collections::BTreeMap;
use std::time::Duration;

use docshape::keys::prelude::*;
use docshape::redis::aio::MultiplexedConnection;

use super::{pttl, raw_get, redis, EmailQueue, OrderCounter, Product, ProductCache, RateWindow, UserSession};

const DAY_MS: i64 = 86_400_000;

/// A TTL within `margin` ms below `full` (the time the round trips took).
fn near(ttl: i64, full: i64) -> bool {
    ttl <= full && ttl > full - 5_000
}

#[tokio::test(flavor = "multi_thread")]
async fn session_hash_has_a_30_day_sliding_ttl_extended_by_reads() {
    let mut conn = redis().await;
    let session = UserSession { id: "u_42".into() };
    let key = session.key();
    assert_eq!(key, "user:u_42:session");
    // On a shared REDIS_URL server, a run that failed may have left it behind.
    session.delete(&mut conn).await.unwrap();
    assert_eq!(pttl(&mut conn, &key).await, -2);

    session.hset_many(&mut conn, &[("token", "t0k3n"), ("device", "phone")]).await.unwrap();
    assert!(near(pttl(&mut conn, &key).await, 30 * DAY_MS));

    // Time passes: leave one second of the thirty days.
    let _: () = docshape::redis::cmd("PEXPIRE").arg(&key).arg(1_000).query_async(&mut conn).await.unwrap();
    assert!(pttl(&mut conn, &key).await <= 1_000);
    let fields = session.hgetall(&mut conn).await.unwrap();
    assert_eq!(
        fields,
        BTreeMap::from([("device".to_owned(), "phone".to_owned()), ("token".to_owned(), "t0k3n".to_owned())])
    );
    assert!(near(pttl(&mut conn, &key).await, 30 * DAY_MS), "a read starts the 30 days again");

    let _: () = docshape::redis::cmd("PEXPIRE").arg(&key).arg(1_000).query_async(&mut conn).await.unwrap();
    assert_eq!(session.hget(&mut conn, "token").await.unwrap().as_deref(), Some("t0k3n"));
    assert!(near(pttl(&mut conn, &key).await, 30 * DAY_MS), "so does reading one field");

    let _: () = docshape::redis::cmd("PEXPIRE").arg(&key).arg(1_000).query_async(&mut conn).await.unwrap();
    session.hset(&mut conn, "device", "laptop").await.unwrap();
    assert!(near(pttl(&mut conn, &key).await, 30 * DAY_MS), "and a write");

    assert!(session.hdel(&mut conn, "device").await.unwrap());
    assert!(near(pttl(&mut conn, &key).await, 30 * DAY_MS));
    assert_eq!(session.delete(&mut conn).await.unwrap(), 1);
    assert_eq!(pttl(&mut conn, &key).await, -2);
    assert!(session.hgetall(&mut conn).await.unwrap().is_empty());
    assert_eq!(pttl(&mut conn, &key).await, -2, "reading a missing session does not create it");
}

/// Short TTLs, to watch a sliding session live on through reads and then expire.
#[derive(Debug, PartialEq, docshape::KeyFamily)]
#[key(pattern = "test:session:{id}", kind = hash, ttl = "2s", sliding, note = "a short session")]
struct ShortSession {
    id: u64,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sliding_session_lives_while_it_is_read_and_expires_when_it_is_not() {
    let mut conn = redis().await;
    let session = ShortSession { id: 7 };
    let key = session.key();
    session.delete(&mut conn).await.unwrap();
    session.hset(&mut conn, "token", "abc").await.unwrap();
    assert!(pttl(&mut conn, &key).await > 1_300);
    // Read every 0.8 s for 3.2 s, longer than the 2 s TTL: it never expires.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(800)).await;
        let before = pttl(&mut conn, &key).await;
        assert!((0..=1_250).contains(&before), "{before} ms left before the read");
        assert_eq!(session.hget(&mut conn, "token").await.unwrap().as_deref(), Some("abc"));
        let after = pttl(&mut conn, &key).await;
        // Above what was left before the read: the read started the 2 s again.
        assert!(after > 1_300 && after > before, "the read extended it: {before} -> {after} ms");
    }
    // Then nobody reads it.
    tokio::time::sleep(Duration::from_millis(2_300)).await;
    assert_eq!(pttl(&mut conn, &key).await, -2);
    assert!(session.hgetall(&mut conn).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn product_cache_is_json_set_with_ex_300() {
    let mut conn = redis().await;
    let cache = ProductCache { id: "9f3e".into() };
    let key = cache.key();
    assert_eq!(key, "cache:product:9f3e");
    cache.delete(&mut conn).await.unwrap();
    assert_eq!(cache.get(&mut conn).await.unwrap(), None);

    let product = Product { name: "Kettle".into(), price_cents: 2_999 };
    cache.set(&mut conn, &product).await.unwrap();
    // SET cache:product:9f3e '{"name":...}' EX 300
    assert_eq!(raw_get(&mut conn, &key).await.as_deref(), Some(r#"{"name":"Kettle","price_cents":2999}"#));
    assert!(near(pttl(&mut conn, &key).await, 300_000));

    // A fixed TTL: reads do not extend it.
    let _: () = docshape::redis::cmd("PEXPIRE").arg(&key).arg(60_000).query_async(&mut conn).await.unwrap();
    assert_eq!(cache.get(&mut conn).await.unwrap(), Some(product.clone()));
    assert!(pttl(&mut conn, &key).await <= 60_000);

    // A new value is a new cache entry with its full TTL.
    let cheaper = Product { price_cents: 2_499, ..product };
    cache.set(&mut conn, &cheaper).await.unwrap();
    assert!(near(pttl(&mut conn, &key).await, 300_000));
    assert_eq!(cache.get(&mut conn).await.unwrap(), Some(cheaper));

    // "invalidate on product write"
    assert_eq!(cache.delete(&mut conn).await.unwrap(), 1);
    assert_eq!(cache.get(&mut conn).await.unwrap(), None);

    // Text that is not a Product is an error, not a panic.
    let _: () = docshape::redis::cmd("SET").arg(&key).arg("not json").query_async(&mut conn).await.unwrap();
    assert!(matches!(cache.get(&mut conn).await, Err(docshape::keys::KeyError::Json(_))));
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_window_is_incr_then_expire_120_nx() {
    let mut conn = redis().await;
    let window = RateWindow { ip: "203.0.113.7".parse().unwrap(), minute: 202_608_051_211 };
    let key = window.key();
    assert_eq!(key, "rate:203.0.113.7:202608051211");
    window.delete(&mut conn).await.unwrap();
    assert_eq!(window.get(&mut conn).await.unwrap(), 0);
    assert_eq!(pttl(&mut conn, &key).await, -2);

    assert_eq!(window.incr(&mut conn, 1).await.unwrap(), 1);
    assert!(near(pttl(&mut conn, &key).await, 120_000));

    // Later increments do not move the window's end (NX): say 60 s of it are gone.
    let _: () = docshape::redis::cmd("PEXPIRE").arg(&key).arg(60_000).query_async(&mut conn).await.unwrap();
    assert_eq!(window.incr(&mut conn, 1).await.unwrap(), 2);
    assert_eq!(window.incr(&mut conn, 3).await.unwrap(), 5);
    let ttl = pttl(&mut conn, &key).await;
    assert!(ttl <= 60_000 && ttl > 55_000, "{ttl}");
    assert_eq!(window.get(&mut conn).await.unwrap(), 5);
    assert!(pttl(&mut conn, &key).await <= 60_000, "reading does not extend a window");

    // An IPv6 address holds `:`, which is escaped, so the key keeps three segments.
    let v6 = RateWindow { ip: "2001:db8::1".parse().unwrap(), minute: 202_608_051_211 };
    v6.delete(&mut conn).await.unwrap();
    assert_eq!(v6.key(), "rate:2001%3Adb8%3A%3A1:202608051211");
    assert_eq!(RateWindow::parse_key(&v6.key()).unwrap(), v6);
    assert_eq!(v6.incr(&mut conn, 1).await.unwrap(), 1);
    assert!(near(pttl(&mut conn, &v6.key()).await, 120_000));
}

/// The seed's window, one second long, to watch it end.
#[derive(Debug, PartialEq, docshape::KeyFamily)]
#[key(pattern = "test:rate:{ip}:{minute}", kind = counter, ttl = "1s")]
struct ShortWindow {
    ip: String,
    minute: u64,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_window_expires_and_the_next_one_starts_from_zero() {
    let mut conn = redis().await;
    let window = ShortWindow { ip: "198.51.100.9".into(), minute: 1 };
    window.delete(&mut conn).await.unwrap();
    for n in 1..=5 {
        assert_eq!(window.incr(&mut conn, 1).await.unwrap(), n);
    }
    let ttl = pttl(&mut conn, &window.key()).await;
    assert!((0..=1_000).contains(&ttl), "{ttl}");
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert_eq!(pttl(&mut conn, &window.key()).await, -2, "the window expired");
    assert_eq!(window.get(&mut conn).await.unwrap(), 0);
    assert_eq!(window.incr(&mut conn, 1).await.unwrap(), 1, "a new window");
    let ttl = pttl(&mut conn, &window.key()).await;
    assert!((1..=1_000).contains(&ttl), "with its own TTL: {ttl}");
}

#[tokio::test(flavor = "multi_thread")]
async fn email_queue_is_a_fifo_list_without_ttl() {
    let mut conn = redis().await;
    let queue = EmailQueue;
    assert_eq!(queue.key(), "queue:emails");
    queue.delete(&mut conn).await.unwrap();
    assert_eq!(queue.pop(&mut conn).await.unwrap(), None);
    for (n, id) in ["mail_1", "mail_2", "mail_3"].into_iter().enumerate() {
        assert_eq!(queue.push(&mut conn, id).await.unwrap(), n as u64 + 1);
        assert_eq!(pttl(&mut conn, "queue:emails").await, -1, "no TTL, by decision");
    }
    assert_eq!(queue.len(&mut conn).await.unwrap(), 3);
    assert_eq!(queue.pop(&mut conn).await.unwrap().as_deref(), Some("mail_1"));
    assert_eq!(pttl(&mut conn, "queue:emails").await, -1);
    assert_eq!(queue.pop(&mut conn).await.unwrap().as_deref(), Some("mail_2"));
    assert_eq!(queue.pop(&mut conn).await.unwrap().as_deref(), Some("mail_3"));
    assert_eq!(queue.pop(&mut conn).await.unwrap(), None);
    assert_eq!(pttl(&mut conn, "queue:emails").await, -2);
}

#[tokio::test(flavor = "multi_thread")]
async fn sharded_counter_sums_exactly_under_concurrent_increments() {
    let mut conn = redis().await;
    let counter = OrderCounter;
    assert_eq!(counter.shard_keys().len(), 16);
    assert_eq!(counter.shard_keys()[15], "counter:orders:15");
    counter.delete(&mut conn).await.unwrap();
    assert_eq!(counter.sum(&mut conn).await.unwrap(), 0);

    const TASKS: i64 = 8;
    const EACH: i64 = 250;
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let mut conn: MultiplexedConnection = conn.clone();
            tokio::spawn(async move {
                for i in 0..EACH {
                    // Every task adds 1 or 2; the total is known exactly.
                    OrderCounter.incr(&mut conn, 1 + (t + i) % 2).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let expected: i64 = (0..TASKS).flat_map(|t| (0..EACH).map(move |i| 1 + (t + i) % 2)).sum();
    assert_eq!(counter.sum(&mut conn).await.unwrap(), expected);

    let mut used = 0;
    for key in counter.shard_keys() {
        match pttl(&mut conn, &key).await {
            -2 => {}
            -1 => used += 1,
            ttl => panic!("{key} has a TTL of {ttl} ms; the family decided on none"),
        }
    }
    assert!(used > 1, "increments spread over the shards ({used} used)");

    // A chosen shard, and one outside the range.
    let before = counter.sum(&mut conn).await.unwrap();
    counter.incr_shard(&mut conn, 15, 10).await.unwrap();
    assert_eq!(counter.sum(&mut conn).await.unwrap(), before + 10);
    assert!(matches!(
        counter.incr_shard(&mut conn, 16, 1).await,
        Err(docshape::keys::KeyError::NoSuchShard { shard: 16, .. })
    ));
    assert_eq!(OrderCounter::parse_shard_key("counter:orders:7").unwrap(), (OrderCounter, Some(7)));
    assert!(OrderCounter::parse_key("counter:orders:16").is_err());
    assert!(OrderCounter::parse_key("counter:orders:07").is_err());
    let existing: u64 =
        docshape::redis::cmd("EXISTS").arg(counter.shard_keys()).query_async(&mut conn).await.unwrap();
    assert_eq!(counter.delete(&mut conn).await.unwrap(), existing);
    assert_eq!(counter.sum(&mut conn).await.unwrap(), 0);
}
