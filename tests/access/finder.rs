//! Read rows: one command each, exactly the row's filter, sort and projection.

use bson::{doc, Bson, DateTime, Document};
use docshape::bson;
use docshape::Model;
use docshape_testkit as testkit;
use futures_util::TryStreamExt;

use super::{order, Order, OrderRow};
use docshape::Embedded;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Owner {
    pub id: String,
}

/// Parameters of every kind: a nested path, `Bson`, `Document`, `serde_json::Value`,
/// and a range over `Bson`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "access_hostile")]
#[index(keys("owner.id"))]
#[index(keys(meta))]
#[index(keys(extra))]
#[index(keys(json))]
#[index(keys(owner_key, rank))]
#[access(name = "by_owner", filter("owner.id"))]
#[access(name = "by_meta", filter(meta))]
#[access(name = "by_extra", filter(extra), fields(meta))]
#[access(name = "by_json", filter(json))]
#[access(name = "ranked", filter(owner_key), range(rank))]
pub struct Hostile {
    #[serde(rename = "_id")]
    pub id: i64,
    pub owner: Owner,
    pub owner_key: String,
    pub meta: Bson,
    pub extra: Document,
    pub json: serde_json::Value,
    pub rank: Bson,
}

async fn seeded(hint: &str) -> (testkit::TestDb, testkit::CommandLog) {
    let (db, log) = testkit::monitored(hint).await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    let orders = vec![
        order("o1", "c1", 1, "paid"),
        order("o2", "c1", 2, "paid"),
        order("o3", "c1", 3, "shipped"),
        order("o4", "c2", 4, "paid"),
        order("o5", "c2", 5, "paid"),
    ];
    Order::collection(&db).insert_many(&orders).await.unwrap();
    log.clear();
    (db, log)
}

/// The single `find` the call sent.
fn one_find(log: &testkit::CommandLog) -> Document {
    let commands = log.take();
    let names: Vec<&str> = commands.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["find"], "one command per call");
    commands.into_iter().next().unwrap().1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_lookup_reads_one_view_in_one_find() {
    let (db, log) = seeded("access_finder_one").await;
    let view = Order::load_order("o2").one(&db).await.unwrap().expect("o2 exists");
    // The view holds exactly the row's fields, typed as the model's.
    let super::LoadOrderView { lines, status, buyer } = view;
    assert_eq!((lines.len(), status.as_str(), buyer.id.as_str()), (1, "paid", "c1"));
    let find = one_find(&log);
    assert_eq!(find.get_document("filter").unwrap(), &doc! { "_id": { "$eq": "o2" } });
    assert_eq!(
        find.get_document("projection").unwrap(),
        &doc! { "lines": 1, "status": 1, "buyer": 1, "_id": 0 }
    );
    assert_eq!(find.get_i64("limit").unwrap(), 1);
    assert!(Order::load_order("nope").one(&db).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sorted_row_returns_its_first_n_in_order_with_the_stored_names() {
    let (db, log) = seeded("access_finder_first").await;
    let rows: Vec<OrderRow> = Order::orders_of_customer("c1").first(2, &db).await.unwrap();
    assert_eq!(
        rows,
        vec![
            OrderRow { id: "o3".into(), status: "shipped".into(), total_cents: 100 },
            OrderRow { id: "o2".into(), status: "paid".into(), total_cents: 100 },
        ]
    );
    let find = one_find(&log);
    assert_eq!(find.get_document("filter").unwrap(), &doc! { "customer_id": { "$eq": "c1" } });
    assert_eq!(find.get_document("sort").unwrap(), &doc! { "created_at": -1 });
    // serde's rename reaches the projection: `total_cents` is stored as `total`.
    assert_eq!(find.get_document("projection").unwrap(), &doc! { "_id": 1, "status": 1, "total": 1 });
    assert_eq!(find.get_i64("limit").unwrap(), 2);
    // A row without fields reads whole documents, as the model.
    let whole: Vec<Order> = Order::orders_of_buyer("c2").all(&db).await.unwrap();
    assert_eq!(whole.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(), ["o5", "o4"]);
    let find = one_find(&log);
    assert_eq!(find.get_document("filter").unwrap(), &doc! { "buyer.id": { "$eq": "c2" } });
    assert!(!find.contains_key("projection"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_take_typed_bounds() {
    let (db, log) = seeded("access_finder_range").await;
    let at = |m: i64| DateTime::from_millis(1_700_000_000_000 + m * 60_000);
    let ids = |v: Vec<Order>| v.into_iter().map(|o| o.id).collect::<Vec<_>>();
    let mut got = ids(Order::orders_since("paid", at(2)..at(5)).all(&db).await.unwrap());
    got.sort();
    assert_eq!(got, ["o2", "o4"]);
    let find = one_find(&log);
    assert_eq!(
        find.get_document("filter").unwrap(),
        &doc! { "status": { "$eq": "paid" }, "created_at": { "$gte": at(2), "$lt": at(5) } }
    );
    let mut got = ids(Order::orders_since("paid", at(2)..=at(5)).all(&db).await.unwrap());
    got.sort();
    assert_eq!(got, ["o2", "o4", "o5"]);
    assert_eq!(
        one_find(&log).get_document("filter").unwrap(),
        &doc! { "status": { "$eq": "paid" }, "created_at": { "$gte": at(2), "$lte": at(5) } }
    );
    assert_eq!(Order::orders_since("paid", ..).count(&db).await.unwrap(), 4);
    assert_eq!(Order::orders_since("paid", at(4)..).count(&db).await.unwrap(), 2);
    let streamed: Vec<Order> =
        Order::orders_since("paid", ..at(3)).stream(&db).await.unwrap().try_collect().await.unwrap();
    assert_eq!(streamed.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_values_match_nothing_in_untyped_parameters() {
    let db = testkit::database("access_finder_hostile").await.unwrap();
    docshape::sync::<Hostile>(&db).await.unwrap();
    let docs: Vec<Hostile> = (0..6)
        .map(|i| {
            let who = if i < 3 { "a" } else { "b" };
            Hostile {
                id: i,
                owner: Owner { id: who.into() },
                owner_key: who.into(),
                meta: Bson::String(who.into()),
                extra: doc! { "k": who },
                json: serde_json::json!(who),
                rank: Bson::Int64(i),
            }
        })
        .collect();
    Hostile::collection(&db).insert_many(&docs).await.unwrap();
    // The honest values find the owner's three documents through every parameter.
    assert_eq!(Hostile::by_owner("a").count(&db).await.unwrap(), 3);
    assert_eq!(Hostile::by_meta(Bson::from("b")).count(&db).await.unwrap(), 3);
    assert_eq!(Hostile::by_extra(doc! { "k": "a" }).all(&db).await.unwrap().len(), 3);
    assert_eq!(Hostile::by_json(serde_json::json!("a")).count(&db).await.unwrap(), 3);
    assert_eq!(Hostile::ranked("a", Bson::Int64(1)..).count(&db).await.unwrap(), 2);
    for op in [doc! { "$ne": null }, doc! { "$gt": "" }, doc! { "$regex": "." }, doc! { "$exists": true }] {
        let json: serde_json::Value = Bson::Document(op.clone()).into_relaxed_extjson();
        assert_eq!(Hostile::by_owner(op.to_string()).count(&db).await.unwrap(), 0, "{op}");
        assert_eq!(Hostile::by_meta(Bson::Document(op.clone())).count(&db).await.unwrap(), 0, "{op}");
        assert!(Hostile::by_meta(Bson::Document(op.clone())).one(&db).await.unwrap().is_none(), "{op}");
        assert!(Hostile::by_extra(op.clone()).first(10, &db).await.unwrap().is_empty(), "{op}");
        assert_eq!(Hostile::by_json(json).count(&db).await.unwrap(), 0, "{op}");
        // Under a comparison operator a document is compared as a value: no number
        // sorts after a document, so nothing matches.
        assert_eq!(Hostile::ranked("a", Bson::Document(op.clone())..).count(&db).await.unwrap(), 0, "{op}");
    }
    // The same operator written into a hand-made filter matches everything: the difference.
    assert_eq!(Hostile::collection(&db).count_documents(doc! { "meta": { "$ne": null } }).await.unwrap(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_text_in_typed_parameters_is_a_string() {
    let (db, _log) = seeded("access_finder_injection").await;
    // What a request body would hold where a value was expected, passed through a
    // `Bson`-typed escape: the finders' parameters are typed, so only `Into<String>`
    // values reach them; the id and nested-path parameters get the operator as a
    // string, and the range gets it as a bound value.
    for op in [doc! { "$ne": null }, doc! { "$gt": "" }, doc! { "$regex": "." }] {
        let text = op.to_string();
        assert!(Order::load_order(text.clone()).one(&db).await.unwrap().is_none(), "{op}");
        assert!(Order::orders_of_customer(text.clone()).first(10, &db).await.unwrap().is_empty(), "{op}");
        assert!(Order::orders_of_buyer(text.clone()).all(&db).await.unwrap().is_empty(), "{op}");
        assert_eq!(Order::orders_since(text.clone(), ..).count(&db).await.unwrap(), 0, "{op}");
    }
    // A hand-written query with the raw operator matches everything: the difference.
    let raw = Order::collection(&db).count_documents(doc! { "_id": { "$ne": Bson::Null } }).await.unwrap();
    assert_eq!(raw, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_row_is_served_by_its_index() {
    let (db, _log) = seeded("access_finder_explain").await;
    testkit::assert_access_patterns_use_indexes::<Order>(&db).await;
}

/// A client that discovers the topology, as an application's does (the test server's
/// own URI connects directly, which makes the driver write `primaryPreferred` for every
/// read), and whether the server is a replica set member.
async fn discovering(log: &testkit::CommandLog) -> (docshape::mongodb::Client, bool) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_method_sends_its_rows_consistency() {
    let (seeded_db, _) = seeded("access_finder_consistency").await;
    let log = testkit::CommandLog::new();
    let (client, replica_set) = discovering(&log).await;
    let db = client.database(seeded_db.name());
    log.clear();

    // strong: majority read concern; `primary` is the default, never written.
    Order::load_order("o1").one(&db).await.unwrap().unwrap();
    let find = one_find(&log);
    assert_eq!(find.get_document("readConcern").unwrap(), &doc! { "level": "majority" });
    assert!(!find.contains_key("$readPreference"), "{find}");

    // eventual ok: any member may answer.
    Order::orders_of_customer("c1").first(5, &db).await.unwrap();
    let find = one_find(&log);
    assert!(!find.contains_key("readConcern"), "{find}");
    if replica_set {
        assert_eq!(find.get_document("$readPreference").unwrap(), &doc! { "mode": "secondaryPreferred" });
    }
    Order::orders_since("paid", ..).count(&db).await.unwrap();
    let commands = log.take();
    assert_eq!(commands.len(), 1);
    if replica_set {
        assert_eq!(
            commands[0].1.get_document("$readPreference").unwrap(),
            &doc! { "mode": "secondaryPreferred" },
            "{:?}",
            commands[0]
        );
    }

    // strong (same doc), on a write row: majority writes.
    Order::set_status("o1", "paid").run(&db).await.unwrap();
    let commands = log.take();
    assert_eq!(commands[0].0, "update");
    assert_eq!(commands[0].1.get_document("writeConcern").unwrap().get_str("w").unwrap(), "majority");

    // Inside a causally consistent session the read carries the session and waits
    // for the session's writes (`afterClusterTime`).
    let mut session = client.start_session().causal_consistency(true).await.unwrap();
    db.collection::<Document>(Order::COLLECTION)
        .insert_one(docshape::bson_compat::to_document(&order("o9", "c9", 9, "paid")).unwrap())
        .session(&mut session)
        .await
        .unwrap();
    let time = session.operation_time();
    log.clear();
    let seen = Order::orders_of_customer("c9").session(&mut session).first(5, &db).await.unwrap();
    assert_eq!(seen.len(), 1, "the read sees the session's write");
    let find = one_find(&log);
    assert!(find.contains_key("lsid"), "{find}");
    if let Some(time) = time {
        assert_eq!(
            find.get_document("readConcern").unwrap().get("afterClusterTime"),
            Some(&Bson::Timestamp(time))
        );
    }
}
