//! patterns-en's Redis key catalog as code: five key families, their catalog printed as
//! Markdown, and each family's operations run against a real Redis with the TTLs
//! Redis reports.
//!
//! "Document every key family in one table; every cache key has a TTL." Each row is a
//! struct; a family without a TTL decision does not compile.
//!
//! Run: `cargo run --example keys` (starts a local redis-server, or uses `REDIS_URL`).

use std::net::IpAddr;

use docshape::keys::prelude::*;
use docshape::keys::{catalog_markdown, check_catalog};
use docshape::redis::aio::MultiplexedConnection;
use docshape::KeyFamily;
use serde::{Deserialize, Serialize};

#[derive(Debug, KeyFamily)]
#[key(pattern = "user:{id}:session", kind = hash, ttl = "30d", sliding, note = "auth token data")]
struct UserSession {
    id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Product {
    name: String,
    price_cents: u64,
}

#[derive(Debug, KeyFamily)]
#[key(
    pattern = "cache:product:{id}",
    kind = string,
    value = Product,
    ttl = "300s",
    note = "invalidate on product write"
)]
struct ProductCache {
    id: String,
}

#[derive(Debug, KeyFamily)]
#[key(pattern = "rate:{ip}:{minute}", kind = counter, ttl = "120s", note = "rate limiting window")]
struct RateWindow {
    ip: IpAddr,
    minute: u64,
}

/// The queue holds the ids of emails whose records live in the database.
#[derive(Debug, KeyFamily)]
#[key(pattern = "queue:emails", kind = list, ttl = "none", reason = "durable store elsewhere", note = "worker queue")]
struct EmailQueue;

#[derive(Debug, KeyFamily)]
#[key(
    pattern = "counter:orders:{0..15}",
    kind = sharded_counter,
    ttl = "none",
    reason = "a running total: expiring a shard would lose its counts",
    note = "sharded hot counter; SUM on read"
)]
struct OrderCounter;

/// What Redis says of a key's expiry.
async fn ttl(conn: &mut MultiplexedConnection, key: &str) -> Result<String, docshape::redis::RedisError> {
    let seconds: i64 = docshape::redis::cmd("TTL").arg(key).query_async(conn).await?;
    Ok(match seconds {
        -2 => "gone".to_owned(),
        -1 => "no TTL".to_owned(),
        s => format!("TTL {s}s"),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let catalog =
        [&UserSession::SPEC, &ProductCache::SPEC, &RateWindow::SPEC, &EmailQueue::SPEC, &OrderCounter::SPEC];
    // Two families that could name one key would act on each other's data.
    if let Err(overlaps) = check_catalog(&catalog) {
        for o in overlaps {
            eprintln!("{o}");
        }
        return Err("overlapping key families".into());
    }
    println!("## Redis key catalog\n\n{}", catalog_markdown(&catalog));

    let server = docshape_testkit::redis::server()?;
    if server.is_external() {
        println!("server: REDIS_URL");
    } else {
        println!("server: local redis-server at {}", server.url());
    }
    let mut conn = server.database().await?;
    // So the example can run again on a server that keeps its data: SCAN, never KEYS.
    for session in UserSession::scan(&mut conn).await? {
        session.delete(&mut conn).await?;
    }
    EmailQueue.delete(&mut conn).await?;
    OrderCounter.delete(&mut conn).await?;

    println!("\n# user:{{id}}:session (hash, 30d sliding)");
    let session = UserSession { id: "u_42".into() };
    session.hset_many(&mut conn, &[("token", "t0k3n"), ("device", "phone")]).await?;
    println!("HSET {} ... -> {}", session.key(), ttl(&mut conn, &session.key()).await?);
    let _: () = docshape::redis::cmd("EXPIRE").arg(session.key()).arg(60).query_async(&mut conn).await?;
    println!("(a month later) {}", ttl(&mut conn, &session.key()).await?);
    let fields = session.hgetall(&mut conn).await?;
    println!("HGETALL -> {fields:?}, and the read extended it: {}", ttl(&mut conn, &session.key()).await?);

    println!("\n# cache:product:{{id}} (string(json), 300s)");
    let cache = ProductCache { id: "9f3e".into() };
    let kettle = Product { name: "Kettle".into(), price_cents: 2_999 };
    cache.set(&mut conn, &kettle).await?;
    let stored: String = docshape::redis::cmd("GET").arg(cache.key()).query_async(&mut conn).await?;
    println!("SET {} '{stored}' EX 300 -> {}", cache.key(), ttl(&mut conn, &cache.key()).await?);
    println!("get -> {:?}", cache.get(&mut conn).await?);
    cache.delete(&mut conn).await?;
    println!("product written: cache invalidated -> {:?}", cache.get(&mut conn).await?);

    println!("\n# rate:{{ip}}:{{minute}} (int (INCR), 120s)");
    let window = RateWindow { ip: "203.0.113.7".parse()?, minute: 202_608_051_211 };
    for _ in 0..3 {
        let n = window.incr(&mut conn, 1).await?;
        println!(
            "INCR {}; EXPIRE {} 120 NX -> {n}, {}",
            window.key(),
            window.key(),
            ttl(&mut conn, &window.key()).await?
        );
    }
    let v6 = RateWindow { ip: "2001:db8::1".parse()?, minute: 202_608_051_211 };
    println!("an IPv6 client's key keeps three segments: {}", v6.key());

    println!("\n# queue:emails (list, none: durable store elsewhere)");
    for id in ["mail_1", "mail_2"] {
        let len = EmailQueue.push(&mut conn, id).await?;
        println!("RPUSH queue:emails {id} -> {len} waiting, {}", ttl(&mut conn, "queue:emails").await?);
    }
    while let Some(id) = EmailQueue.pop(&mut conn).await? {
        println!("LPOP -> {id}");
    }

    println!("\n# counter:orders:{{0..15}} (int, none: sharded hot counter)");
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let mut conn = conn.clone();
            tokio::spawn(async move {
                for _ in 0..100 {
                    OrderCounter.incr(&mut conn, 1).await?;
                }
                Ok::<_, docshape::keys::KeyError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    println!(
        "4 tasks x 100 increments, each on a random shard; SUM (one MGET) -> {}",
        OrderCounter.sum(&mut conn).await?
    );
    println!("shard 0: {}", ttl(&mut conn, &OrderCounter.shard_key(0)?).await?);

    println!("\n# SCAN {} (never KEYS)", UserSession::SPEC.match_pattern());
    for session in UserSession::scan(&mut conn).await? {
        println!("{session:?}");
    }
    Ok(())
}
