//! Each consistency word reaches the server as its read preference, read concern and
//! session: asserted on the commands as sent (command monitoring).

use docshape::bson;
use std::time::Duration;

use bson::{doc, Bson, Document};
use docshape::access::{AccessPattern, Consistency};
use docshape::mongodb::options::{FindOptions, UpdateOptions};
use docshape::Model;
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "carts")]
#[index(keys(owner))]
#[access(name = "cart_strong", filter(_id), consistency = "strong")]
#[access(name = "add_to_cart", filter(_id), freq = "50 w/s", consistency = "strong (same doc)")]
#[access(name = "cart_page", filter(_id), freq = "500 r/s", consistency = "read-your-writes")]
#[access(name = "carts_of_owner", filter(owner), freq = "5 r/s", consistency = "eventual ok")]
#[access(name = "carts_lagging", filter(owner), consistency = "Eventual (≤ 2 min)")]
#[access(name = "carts_bare", filter(owner))]
struct Cart {
    #[serde(rename = "_id")]
    id: String,
    owner: String,
    items: Vec<String>,
}

/// `maxStalenessSeconds`, whichever integer type the driver wrote it as.
fn seconds(preference: &Document) -> Option<i64> {
    match preference.get("maxStalenessSeconds")? {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        _ => None,
    }
}

fn pattern(name: &str) -> &'static AccessPattern {
    Cart::ACCESS_PATTERNS.iter().find(|p| p.name == name).unwrap()
}

#[test]
fn the_words_parse_into_the_closed_vocabulary() {
    assert_eq!(pattern("cart_strong").guarantee, Consistency::Strong);
    assert_eq!(pattern("add_to_cart").guarantee, Consistency::StrongSameDoc);
    assert_eq!(pattern("cart_page").guarantee, Consistency::ReadYourWrites);
    assert_eq!(pattern("carts_of_owner").guarantee, Consistency::Eventual { max_staleness: None });
    assert_eq!(
        pattern("carts_lagging").guarantee,
        Consistency::Eventual { max_staleness: Some(Duration::from_secs(120)) }
    );
    assert_eq!(pattern("carts_bare").guarantee, Consistency::Unspecified);
    // The rendered table keeps the author's words.
    assert_eq!(pattern("carts_lagging").consistency, "Eventual (≤ 2 min)");
    assert!(Cart::access_table().contains("| Eventual (≤ 2 min) |"));
}

/// A client that discovers the server's topology, as an application's does (the test
/// server's own URI connects directly, which makes the driver send `primaryPreferred`
/// for every read), and whether the server is a replica set member.
async fn discovering_client(log: &testkit::CommandLog) -> (docshape::mongodb::Client, bool) {
    let handler = log.handler();
    let client = testkit::server()
        .unwrap()
        .client_with(|o| {
            o.direct_connection = Some(false);
            o.command_event_handler = Some(handler);
        })
        .await
        .unwrap();
    let hello = client.database("admin").run_command(doc! { "hello": 1 }).await.unwrap();
    (client, hello.contains_key("setName"))
}

/// The last `find` sent, after running `pattern`'s query with its consistency applied.
async fn find_as(
    db: &docshape::mongodb::Database,
    log: &testkit::CommandLog,
    pattern: &AccessPattern,
    filter: Document,
) -> Document {
    log.clear();
    let options = pattern.guarantee.apply_find(FindOptions::default());
    let found: Vec<Cart> =
        Cart::collection(db).find(filter).with_options(options).await.unwrap().try_collect().await.unwrap();
    assert_eq!(found.len(), 1, "{}", pattern.name);
    let finds = log.named("find");
    assert_eq!(finds.len(), 1, "{}: one find", pattern.name);
    finds.into_iter().next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_word_sends_its_read_preference_and_read_concern() {
    let log = testkit::CommandLog::new();
    let (client, replica_set) = discovering_client(&log).await;
    let db = client.database(&format!("ds_{}_consistency_wire", std::process::id()));
    db.drop().await.unwrap();
    let cart = Cart { id: "c_1".into(), owner: "u_1".into(), items: vec!["A-1".into()] };
    Cart::collection(&db).insert_one(&cart).await.unwrap();

    let strong = find_as(&db, &log, pattern("cart_strong"), doc! { "_id": "c_1" }).await;
    assert_eq!(strong.get_document("readConcern").unwrap(), &doc! { "level": "majority" });
    // `primary` is every driver's default, so it is never written on a replica set.
    assert!(!strong.contains_key("$readPreference"), "{strong}");

    for name in ["add_to_cart", "cart_page", "carts_bare"] {
        let filter = if name == "carts_bare" {
            doc! { "owner": "u_1" }
        } else {
            doc! { "_id": "c_1" }
        };
        let sent = find_as(&db, &log, pattern(name), filter).await;
        assert!(!sent.contains_key("readConcern"), "{name}: {sent}");
        assert!(!sent.contains_key("$readPreference"), "{name}: {sent}");
    }

    let eventual = find_as(&db, &log, pattern("carts_of_owner"), doc! { "owner": "u_1" }).await;
    let lagging = find_as(&db, &log, pattern("carts_lagging"), doc! { "owner": "u_1" }).await;
    assert!(!eventual.contains_key("readConcern"), "{eventual}");
    if replica_set {
        assert_eq!(eventual.get_document("$readPreference").unwrap(), &doc! { "mode": "secondaryPreferred" });
        let preference = lagging.get_document("$readPreference").unwrap();
        assert_eq!(preference.get_str("mode").unwrap(), "secondaryPreferred");
        assert_eq!(seconds(preference), Some(120), "{preference}");
    } else {
        // A standalone server has one member: the driver sends no read preference.
        assert!(!eventual.contains_key("$readPreference") && !lagging.contains_key("$readPreference"));
    }
    db.drop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_connection_reads_primary_preferred_except_where_eventual() {
    // The test server's URI connects directly: the driver then asks for
    // `primaryPreferred` whenever the pattern asks for `primary`.
    let (db, log) = testkit::monitored("consistency_direct").await.unwrap();
    let (_, replica_set) = discovering_client(&testkit::CommandLog::new()).await;
    let cart = Cart { id: "c_1".into(), owner: "u_1".into(), items: vec![] };
    Cart::collection(&db).insert_one(&cart).await.unwrap();
    let strong = find_as(&db, &log, pattern("cart_strong"), doc! { "_id": "c_1" }).await;
    let eventual = find_as(&db, &log, pattern("carts_lagging"), doc! { "owner": "u_1" }).await;
    assert_eq!(strong.get_document("readConcern").unwrap(), &doc! { "level": "majority" });
    if replica_set {
        assert_eq!(strong.get_document("$readPreference").unwrap(), &doc! { "mode": "primaryPreferred" });
        let preference = eventual.get_document("$readPreference").unwrap();
        assert_eq!(preference.get_str("mode").unwrap(), "secondaryPreferred");
        assert_eq!(seconds(preference), Some(120));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_your_writes_in_a_causal_session_carries_after_cluster_time() {
    let log = testkit::CommandLog::new();
    let (client, replica_set) = discovering_client(&log).await;
    let db = client.database(&format!("ds_{}_consistency_session", std::process::id()));
    db.drop().await.unwrap();
    let coll = Cart::collection(&db);
    let mut session = client.start_session().causal_consistency(true).await.unwrap();
    let cart = Cart { id: "c_2".into(), owner: "u_2".into(), items: vec![] };
    log.clear();
    coll.insert_one(&cart).session(&mut session).await.unwrap();
    let insert = log.named("insert").pop().unwrap();
    let lsid = insert.get_document("lsid").unwrap().clone();
    assert_eq!(&lsid, session.id());
    let wrote_at = session.operation_time();

    log.clear();
    let options = pattern("cart_page").guarantee.apply_find(FindOptions::default());
    let mut cursor =
        coll.find(doc! { "_id": "c_2" }).with_options(options).session(&mut session).await.unwrap();
    let found: Vec<Cart> = cursor.stream(&mut session).try_collect().await.unwrap();
    assert_eq!(found.len(), 1, "the read sees the session's write");
    let find = log.named("find").pop().unwrap();
    assert_eq!(find.get_document("lsid").unwrap(), &lsid, "the read runs in the caller's session");
    assert!(!find.contains_key("$readPreference"), "{find}");
    match wrote_at {
        Some(time) => {
            let concern = find.get_document("readConcern").unwrap();
            assert_eq!(concern.get("afterClusterTime"), Some(&Bson::Timestamp(time)), "{find}");
            assert!(!concern.contains_key("level"), "read-your-writes adds no level: {find}");
        }
        // A server without cluster times (a standalone) has nothing to wait for.
        None => assert!(!replica_set, "a replica set member reports operationTime"),
    }

    // `strong` in the same session: majority, and still after the session's writes.
    log.clear();
    let options = pattern("cart_strong").guarantee.apply_find(FindOptions::default());
    let mut cursor =
        coll.find(doc! { "_id": "c_2" }).with_options(options).session(&mut session).await.unwrap();
    let _: Vec<Cart> = cursor.stream(&mut session).try_collect().await.unwrap();
    let find = log.named("find").pop().unwrap();
    let concern = find.get_document("readConcern").unwrap();
    assert_eq!(concern.get_str("level").unwrap(), "majority");
    if wrote_at.is_some() {
        assert!(concern.contains_key("afterClusterTime"), "{find}");
    }
    db.drop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strong_writes_are_acknowledged_by_a_majority() {
    let (db, log) = testkit::monitored("consistency_writes").await.unwrap();
    let cart = Cart { id: "c_3".into(), owner: "u_3".into(), items: vec![] };
    Cart::collection(&db).insert_one(&cart).await.unwrap();
    for (name, majority) in
        [("add_to_cart", true), ("cart_strong", true), ("cart_page", false), ("carts_bare", false)]
    {
        log.clear();
        let options = pattern(name).guarantee.apply_update(UpdateOptions::default());
        Cart::collection(&db)
            .update_one(doc! { "_id": { "$eq": "c_3" } }, doc! { "$push": { "items": name } })
            .with_options(options)
            .await
            .unwrap();
        let update = log.named("update").pop().unwrap();
        let concern = update.get_document("writeConcern").ok();
        assert_eq!(
            concern.and_then(|c| c.get_str("w").ok()) == Some("majority"),
            majority,
            "{name}: {update}"
        );
    }
    let stored = Cart::collection(&db).find_one(doc! { "_id": "c_3" }).await.unwrap().unwrap();
    assert_eq!(stored.items, ["add_to_cart", "cart_strong", "cart_page", "carts_bare"]);
}
