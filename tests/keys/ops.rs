//! The other kinds (set, sorted set, text strings, JSON lists, sliding counters) with
//! their TTLs observed after each operation, and bad input as typed errors.

use docshape::keys::prelude::*;
use docshape::keys::KeyError;
use docshape::KeyFamily;
use serde::{Deserialize, Serialize};

use super::{pttl, raw_get, redis};

#[derive(Debug, PartialEq, KeyFamily)]
#[key(pattern = "online:{room}", kind = set, ttl = "10m", note = "who is in a room")]
struct RoomMembers {
    room: String,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_set_takes_its_ttl_at_creation() {
    let mut conn = redis().await;
    let room = RoomMembers { room: "lobby".into() };
    let key = room.key();
    room.delete(&mut conn).await.unwrap();
    assert!(room.add(&mut conn, "u_1").await.unwrap());
    let first = pttl(&mut conn, &key).await;
    assert!(first > 595_000 && first <= 600_000, "{first}");
    assert!(!room.add(&mut conn, "u_1").await.unwrap(), "already a member");
    assert!(room.add(&mut conn, "u_2").await.unwrap());
    assert!(room.contains(&mut conn, "u_2").await.unwrap());
    assert!(!room.contains(&mut conn, "u_3").await.unwrap());
    let mut members = room.members(&mut conn).await.unwrap();
    members.sort();
    assert_eq!(members, ["u_1", "u_2"]);
    let _: () = docshape::redis::cmd("PEXPIRE").arg(&key).arg(30_000).query_async(&mut conn).await.unwrap();
    assert!(room.add(&mut conn, "u_4").await.unwrap());
    assert!(pttl(&mut conn, &key).await <= 30_000, "a fixed TTL is not moved by writes");
    assert!(room.remove(&mut conn, "u_4").await.unwrap());
    assert!(!room.remove(&mut conn, "u_4").await.unwrap());
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Player {
    name: String,
}

#[derive(Debug, PartialEq, KeyFamily)]
#[key(pattern = "leaderboard:{season}", kind = sorted_set, value = Player, ttl = "90d", sliding)]
struct Leaderboard {
    season: u16,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sorted_set_of_json_members_with_a_sliding_ttl() {
    let mut conn = redis().await;
    let board = Leaderboard { season: 2026 };
    let key = board.key();
    assert_eq!(key, "leaderboard:2026");
    board.delete(&mut conn).await.unwrap();
    let (ana, bo) = (Player { name: "Ana".into() }, Player { name: "Bo".into() });
    assert!(board.add(&mut conn, 30.0, &ana).await.unwrap());
    assert!(board.add(&mut conn, 10.5, &bo).await.unwrap());
    assert!(!board.add(&mut conn, 40.0, &ana).await.unwrap(), "moved, not added");
    let full = 90 * 86_400_000;
    assert!(pttl(&mut conn, &key).await > full - 5_000);
    let _: () = docshape::redis::cmd("PEXPIRE").arg(&key).arg(1_000).query_async(&mut conn).await.unwrap();
    assert_eq!(board.range(&mut conn, 0, -1).await.unwrap(), [(bo.clone(), 10.5), (ana.clone(), 40.0)]);
    assert!(pttl(&mut conn, &key).await > full - 5_000, "a read of a sliding family extends it");
    assert_eq!(board.score(&mut conn, &ana).await.unwrap(), Some(40.0));
    assert_eq!(board.score(&mut conn, &Player { name: "Cy".into() }).await.unwrap(), None);
    assert!(board.remove(&mut conn, &bo).await.unwrap());
    assert_eq!(board.range(&mut conn, 0, 0).await.unwrap(), [(ana, 40.0)]);
}

#[derive(Debug, PartialEq, KeyFamily)]
#[key(pattern = "flag:{name}", kind = string, ttl = "1h")]
struct Flag {
    name: String,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_text_string_is_stored_as_it_is() {
    let mut conn = redis().await;
    let flag = Flag { name: "dark mode".into() };
    assert_eq!(flag.key(), "flag:dark%20mode");
    flag.set(&mut conn, "on").await.unwrap();
    assert_eq!(raw_get(&mut conn, &flag.key()).await.as_deref(), Some("on"));
    assert!(pttl(&mut conn, &flag.key()).await > 3_595_000);
    assert_eq!(flag.get(&mut conn).await.unwrap().as_deref(), Some("on"));
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Job {
    to: String,
    template: String,
}

#[derive(Debug, PartialEq, KeyFamily)]
#[key(pattern = "queue:jobs:{tenant}", kind = list, value = Job, ttl = "7d", note = "per-tenant jobs")]
struct JobQueue {
    tenant: String,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_json_list_with_a_fixed_ttl() {
    let mut conn = redis().await;
    let queue = JobQueue { tenant: "acme".into() };
    queue.delete(&mut conn).await.unwrap();
    let job = Job { to: "a@example.com".into(), template: "welcome".into() };
    assert_eq!(queue.push(&mut conn, &job).await.unwrap(), 1);
    assert!(pttl(&mut conn, &queue.key()).await > 7 * 86_400_000 - 5_000);
    assert_eq!(queue.pop(&mut conn).await.unwrap(), Some(job));
    // Text another writer pushed, that is not a Job: an error, never a panic.
    let _: () =
        docshape::redis::cmd("RPUSH").arg(queue.key()).arg("{oops").query_async(&mut conn).await.unwrap();
    assert!(matches!(queue.pop(&mut conn).await, Err(KeyError::Json(_))));
}

#[derive(Debug, PartialEq, KeyFamily)]
#[key(pattern = "seen:{user}", kind = counter, ttl = "1h", sliding, note = "idle expiry")]
struct SeenCounter {
    user: u64,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sliding_counter_is_extended_by_increments_and_reads() {
    let mut conn = redis().await;
    let seen = SeenCounter { user: 9 };
    seen.delete(&mut conn).await.unwrap();
    assert_eq!(seen.incr(&mut conn, 2).await.unwrap(), 2);
    let _: () =
        docshape::redis::cmd("PEXPIRE").arg(seen.key()).arg(1_000).query_async(&mut conn).await.unwrap();
    assert_eq!(seen.incr(&mut conn, -1).await.unwrap(), 1);
    assert!(pttl(&mut conn, &seen.key()).await > 3_595_000, "EXPIRE without NX when sliding");
    let _: () =
        docshape::redis::cmd("PEXPIRE").arg(seen.key()).arg(1_000).query_async(&mut conn).await.unwrap();
    assert_eq!(seen.get(&mut conn).await.unwrap(), 1);
    assert!(pttl(&mut conn, &seen.key()).await > 3_595_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn redis_errors_are_typed() {
    let mut conn = redis().await;
    let seen = SeenCounter { user: 10 };
    let _: () =
        docshape::redis::cmd("SET").arg(seen.key()).arg("not a number").query_async(&mut conn).await.unwrap();
    match seen.incr(&mut conn, 1).await {
        Err(KeyError::Redis(e)) => assert!(e.to_string().contains("not an integer"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_keys_are_errors_not_panics() {
    use super::RateWindow;
    for key in [
        "",
        "rate",
        "rate:1.2.3.4",
        "rate:1.2.3.4:5:6",
        "ratE:1.2.3.4:5",
        "rate:1.2.3.4:x",
        "rate:1.2.3.4:-1",
        "rate:999.2.3.4:5",
        "rate:1.2.3.4:05",
        "rate:1.2.3.4:%35",
        "rate:%zz:5",
        "rate:::",
        "rate:2001%3aDB8%3A%3A1:5",
        "rate:2001%3ADB8%3A%3A1:5",
        "rate:1.2.3.4:99999999999999999999999",
    ] {
        let err = RateWindow::parse_key(key).expect_err(key);
        assert!(!err.to_string().is_empty());
    }
    assert!(matches!(RateWindow::parse_key("rate:1.2.3.4:05"), Err(KeyError::NotCanonical { .. })));
    assert!(matches!(
        RateWindow::parse_key("rate:1.2.3.4:x"),
        Err(KeyError::BadValue { placeholder: "minute", .. })
    ));
    assert!(matches!(RateWindow::parse_key("rate:1.2.3.4"), Err(KeyError::Mismatch { .. })));
    assert!(matches!(
        RateWindow::SPEC.key(&["1.2.3.4"], None),
        Err(KeyError::WrongValueCount { expected: 2, got: 1, .. })
    ));
    assert!(matches!(RateWindow::SPEC.key(&["1.2.3.4", "5"], Some(1)), Err(KeyError::NoSuchShard { .. })));
}
