//! A row on a variant reads that variant's documents, into that variant's type: its
//! command carries the discriminator's `$eq`. A row on the enum reads every variant.

use docshape::bson::doc;
use docshape::Model;
use docshape_testkit as testkit;

use super::{events, ClicksOfUserView, Event, PurchaseByOrderView};

/// The single `find` the call sent.
fn one_find(log: &testkit::CommandLog) -> docshape::bson::Document {
    let commands = log.take();
    let names: Vec<&str> = commands.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["find"], "one command per call");
    commands.into_iter().next().unwrap().1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_variant_finder_carries_the_discriminator() {
    let (db, log) = testkit::monitored("poly_finders").await.unwrap();
    docshape::sync::<Event>(&db).await.unwrap();
    Event::collection(&db).insert_many(events("u1", "o1")).await.unwrap();
    Event::collection(&db).insert_many(events("u2", "o2")).await.unwrap();
    log.clear();

    let clicks: Vec<ClicksOfUserView> = Event::clicks_of_user("u1").all(&db).await.unwrap();
    assert_eq!(clicks.len(), 1);
    assert_eq!((clicks[0].user.as_str(), clicks[0].target.as_str()), ("u1", "buy-button"));
    let find = one_find(&log);
    assert_eq!(
        find.get_document("filter").unwrap(),
        &doc! { "user": { "$eq": "u1" }, "kind": { "$eq": "click" } }
    );

    let purchase: PurchaseByOrderView = Event::purchase_by_order("o2").one(&db).await.unwrap().expect("o2");
    assert_eq!((purchase.user.as_str(), purchase.amount_cents), ("u2", 4999));
    let find = one_find(&log);
    assert_eq!(
        find.get_document("filter").unwrap(),
        &doc! { "order_id": { "$eq": "o2" }, "kind": { "$eq": "buy" } }
    );

    let big = Event::big_purchases("u1", 1000..).all(&db).await.unwrap();
    assert_eq!(big.len(), 1);
    assert_eq!(big[0].order_id, "o1");
    let find = one_find(&log);
    let filter = find.get_document("filter").unwrap();
    assert_eq!(filter.get_document("kind").unwrap(), &doc! { "$eq": "buy" });

    // A hostile value is compared literally, and the tag still holds.
    assert!(Event::purchase_by_order("{\"$ne\": null}").one(&db).await.unwrap().is_none());
    one_find(&log);

    // The enum's own row reads every variant, with no discriminator.
    let all: Vec<Event> = Event::events_of_user("u1").all(&db).await.unwrap();
    assert_eq!(all.len(), 3);
    let find = one_find(&log);
    assert_eq!(find.get_document("filter").unwrap(), &doc! { "user": { "$eq": "u1" } });
}

#[test]
fn rows_name_the_index_that_holds_their_variant() {
    let index = |name: &str| Event::ACCESS_PATTERNS.iter().find(|p| p.name == name).unwrap().index;
    assert_eq!(index("events_of_user"), Some("user_1_at_-1"));
    assert_eq!(index("clicks_of_user"), Some("user_1_at_-1"));
    assert_eq!(index("purchase_by_order"), Some("order_id_1_buy"));
    assert_eq!(index("big_purchases"), Some("user_1_amount_cents_1_buy"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_finds_each_row_served_by_its_index() {
    let db = testkit::database("poly_explain").await.unwrap();
    docshape::sync::<Event>(&db).await.unwrap();
    Event::collection(&db).insert_many(events("u1", "o1")).await.unwrap();
    assert_eq!(
        Event::POLYMORPHIC_ROWS,
        &[
            ("clicks_of_user", "kind", "click"),
            ("purchase_by_order", "kind", "buy"),
            ("big_purchases", "kind", "buy")
        ]
    );
    let outcomes = docshape::access::explain_access_patterns::<Event>(&db).await.unwrap();
    let outcome = |name: &str| outcomes.iter().find(|o| o.pattern == name).unwrap();
    // The sample query of a variant's row carries its discriminator, so the server may
    // use the index partial to that variant (mongod uses a partial index only for a
    // query whose predicate implies the partial filter).
    assert!(outcome("purchase_by_order").is_served(), "{}", outcome("purchase_by_order"));
    assert!(outcome("events_of_user").is_served(), "{}", outcome("events_of_user"));
    // `clicks_of_user` ({user, kind} sorted by `at`) and `big_purchases` ({user, kind}
    // and a range) are planned as collection scans by the local server, which does so
    // for filters of more than one field in some shapes; mongod serves both from the
    // declared indexes (`kind` is a residual filter on `user_1_at_-1`, and implies the
    // partial filter of `user_1_amount_cents_1_buy`). Where it plans an index, it is
    // the expected one.
    for o in &outcomes {
        assert!(o.is_served() || (o.collection_scan && o.used.is_empty()), "{o}");
    }
    // Without the discriminator, the partial index cannot serve the query, on the
    // local server as on mongod: the row's `$eq` on `kind` is what makes it usable.
    let plan = db
        .run_command(doc! {
            "explain": { "find": "events", "filter": { "order_id": { "$eq": "o1" } } },
            "verbosity": "queryPlanner",
        })
        .await
        .unwrap();
    let plan = plan.get_document("queryPlanner").unwrap().get_document("winningPlan").unwrap();
    assert_eq!(plan.get_str("stage").ok(), Some("COLLSCAN"), "{plan}");
}

#[test]
fn a_unique_index_of_the_variant_bounds_its_row_to_one_document() {
    let load = |name: &str| Event::ACCESS_PATTERNS.iter().find(|p| p.name == name).unwrap().load;
    assert_eq!(load("purchase_by_order").docs_per_call, docshape::access::DocsPerCall::One);
    assert_ne!(load("clicks_of_user").docs_per_call, docshape::access::DocsPerCall::One);
}

/// A row that reads a variant whole projects that variant's fields and the tag, and
/// takes its view from the enum's decoding: a document of another variant is a decode
/// error naming the variant the row reads, never a view filled from the wrong shape.
#[test]
fn a_whole_variant_view_reads_its_variant_only() {
    use docshape::access::{FindError, Projection};
    let fields = <ClicksOfUserView as Projection>::FIELDS.expect("a projection");
    assert_eq!(fields, ["_id", "user", "at", "target", "kind"]);

    let encode = |event: &Event| {
        docshape::bson::RawDocumentBuf::from_bytes(docshape::bson_compat::to_vec(event).unwrap()).unwrap()
    };
    let mut three = events("u1", "o1").into_iter();
    let click = three.next().unwrap();
    let view: ClicksOfUserView = Projection::decode(encode(&click)).unwrap();
    assert_eq!((view.user.as_str(), view.target.as_str()), ("u1", "buy-button"));
    // `view(derive(Deserialize))` gives it serde's own, which reads the same document.
    let read: ClicksOfUserView = docshape::bson_compat::from_slice(encode(&click).as_bytes()).unwrap();
    assert_eq!(read, view);

    let purchase = three.nth(1).unwrap();
    match <ClicksOfUserView as Projection>::decode(encode(&purchase)) {
        Err(FindError::Decode { collection: "events", id: Some(_), source }) => {
            assert!(source.to_string().contains("\"click\""), "{source}")
        }
        other => panic!("a purchase read as a click: {other:?}"),
    }
}

/// A whole variant's view writes what the variant writes, less the tag: the stored
/// names (`_id`, not `id`), in the variant's order, as serde's derive would write them.
#[test]
fn a_whole_variant_view_serializes_as_its_variant_without_the_tag() {
    let id = docshape::bson::oid::ObjectId::new();
    let at = docshape::bson::DateTime::from_millis(1_700_000_000_000);
    let view = PurchaseByOrderView { id, user: "u1".into(), at, order_id: "o1".into(), amount_cents: 4999 };
    let event = Event::Purchase { id, user: "u1".into(), at, order_id: "o1".into(), amount_cents: 4999 };
    let mut stored = docshape::bson_compat::to_document(&event).unwrap();
    assert_eq!(stored.remove("kind"), Some("buy".into()));
    let written = docshape::bson_compat::to_document(&view).unwrap();
    assert_eq!(written, stored);
    let keys: Vec<&str> = written.keys().map(String::as_str).collect();
    assert_eq!(keys, ["_id", "user", "at", "order_id", "amount_cents"]);
    // And the same through a human-readable format.
    let mut json = serde_json::to_value(&event).unwrap();
    assert_eq!(json.as_object_mut().unwrap().remove("kind"), Some("buy".into()));
    assert_eq!(serde_json::to_value(&view).unwrap(), json);
}

/// A variant of sixteen fields and one of seventeen: the two ways a whole variant's
/// view writes itself (through the runtime's one call, and field by field past it).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, Model)]
#[serde(tag = "t")]
#[model(collection = "poly_wide")]
#[index(keys(f1))]
#[access(name = "sixteen_of", variant = Sixteen, filter(f1))]
#[access(name = "seventeen_of", variant = Seventeen, filter(f1))]
pub enum Wide {
    Sixteen {
        #[serde(rename = "_id")]
        id: i64,
        f1: String,
        f2: i32,
        f3: i32,
        f4: i32,
        f5: i32,
        f6: i32,
        f7: i32,
        f8: i32,
        f9: i32,
        f10: i32,
        f11: i32,
        f12: i32,
        f13: i32,
        f14: i32,
        #[serde(rename = "last")]
        f15: bool,
    },
    Seventeen {
        #[serde(rename = "_id")]
        id: i64,
        f1: String,
        f2: i32,
        f3: i32,
        f4: i32,
        f5: i32,
        f6: i32,
        f7: i32,
        f8: i32,
        f9: i32,
        f10: i32,
        f11: i32,
        f12: i32,
        f13: i32,
        f14: i32,
        f15: i32,
        #[serde(rename = "last")]
        f16: bool,
    },
}

#[test]
fn a_view_of_sixteen_fields_and_one_of_seventeen_serialize_as_their_variants() {
    let sixteen = Wide::Sixteen {
        id: 7,
        f1: "a".into(),
        f2: 2,
        f3: 3,
        f4: 4,
        f5: 5,
        f6: 6,
        f7: 7,
        f8: 8,
        f9: 9,
        f10: 10,
        f11: 11,
        f12: 12,
        f13: 13,
        f14: 14,
        f15: true,
    };
    let seventeen = Wide::Seventeen {
        id: 8,
        f1: "b".into(),
        f2: 2,
        f3: 3,
        f4: 4,
        f5: 5,
        f6: 6,
        f7: 7,
        f8: 8,
        f9: 9,
        f10: 10,
        f11: 11,
        f12: 12,
        f13: 13,
        f14: 14,
        f15: 15,
        f16: false,
    };
    let view_16 = match sixteen.clone() {
        Wide::Sixteen { id, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15 } => {
            SixteenOfView { id, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15 }
        }
        Wide::Seventeen { .. } => unreachable!(),
    };
    let view_17 = match seventeen.clone() {
        Wide::Seventeen { id, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16 } => {
            SeventeenOfView { id, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16 }
        }
        Wide::Sixteen { .. } => unreachable!(),
    };
    for (event, written, fields) in [
        (&sixteen, docshape::bson_compat::to_document(&view_16).unwrap(), 16),
        (&seventeen, docshape::bson_compat::to_document(&view_17).unwrap(), 17),
    ] {
        let mut stored = docshape::bson_compat::to_document(event).unwrap();
        assert!(stored.remove("t").is_some());
        assert_eq!(written, stored, "{fields} fields");
        let keys: Vec<&str> = written.keys().map(String::as_str).collect();
        assert_eq!(keys.len(), fields);
        assert_eq!((keys[0], keys[fields - 1]), ("_id", "last"));
        let mut json = serde_json::to_value(event).unwrap();
        assert!(json.as_object_mut().unwrap().remove("t").is_some());
        let view_json = match fields {
            16 => serde_json::to_value(&view_16).unwrap(),
            _ => serde_json::to_value(&view_17).unwrap(),
        };
        assert_eq!(view_json, json, "{fields} fields");
    }
}
