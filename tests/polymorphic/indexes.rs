//! A variant's indexes are partial to it: `unique` on a purchase's `order_id` is
//! unique among purchases, and a click, which has no `order_id`, is no duplicate of
//! another click (Mongoose #6343). `check` sees a partial index that lost its filter.

use docshape::bson::oid::ObjectId;
use docshape::bson::{doc, DateTime, Document};
use docshape::check::Drift;
use docshape::sync::SyncChange;
use docshape::Model;

use super::{events, Event};

fn is_duplicate(e: &mongodb::error::Error) -> bool {
    e.to_string().contains("E11000")
}

#[test]
fn variant_indexes_are_partial_to_their_variant() {
    let by_name = |name: &str| Event::INDEXES.iter().find(|i| i.name == name).unwrap();
    assert!(by_name("user_1_at_-1").partial_filter.is_none(), "the enum's index holds every variant");
    let order = by_name("order_id_1_buy");
    assert!(order.unique);
    assert_eq!(order.partial_filter_document().unwrap(), doc! { "kind": { "$eq": "buy" } });
    // The user's own partial filter is kept beside the discriminator's, never dropped.
    let amount = by_name("user_1_amount_cents_1_buy");
    assert_eq!(
        amount.partial_filter_document().unwrap(),
        doc! { "kind": { "$eq": "buy" }, "amount_cents": { "$gt": 0 } }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unique_variant_field_is_unique_among_that_variant_only() {
    let db = docshape_testkit::database("poly_unique").await.unwrap();
    let report = docshape::sync::<Event>(&db).await.unwrap();
    assert!(report.changes.contains(&SyncChange::CreatedIndex { name: "order_id_1_buy".into() }), "{report}");
    assert!(docshape::sync::<Event>(&db).await.unwrap().is_unchanged(), "the partial indexes compare equal");
    Event::collection(&db).insert_many(events("u1", "o1")).await.unwrap();
    // Another user's click and view: no `order_id`, and no duplicate of the first ones.
    let more = events("u2", "o2");
    Event::collection(&db).insert_many(&more[..2]).await.unwrap();
    // A second purchase of order o1 is a duplicate.
    let again = Event::Purchase {
        id: ObjectId::new(),
        user: "u3".into(),
        at: DateTime::from_millis(2),
        order_id: "o1".into(),
        amount_cents: 1,
    };
    let e = Event::collection(&db).insert_one(&again).await.unwrap_err();
    assert!(is_duplicate(&e), "{e}");
    assert_eq!(Event::collection(&db).count_documents(doc! {}).await.unwrap(), 5);

    // What the partial filter prevents: the same unique index without it makes the
    // second click, which lacks `order_id` as the first does, a duplicate (null).
    let plain = db.collection::<Document>("events_plain_unique");
    plain
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! { "order_id": 1 })
                .options(mongodb::options::IndexOptions::builder().unique(true).build())
                .build(),
        )
        .await
        .unwrap();
    plain.insert_one(doc! { "_id": 1, "kind": "click" }).await.unwrap();
    let e = plain.insert_one(doc! { "_id": 2, "kind": "click" }).await.unwrap_err();
    assert!(is_duplicate(&e), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reports_a_partial_index_that_lost_its_filter() {
    let db = docshape_testkit::database("poly_drift").await.unwrap();
    docshape::sync::<Event>(&db).await.unwrap();
    assert!(docshape::check::<Event>(&db).await.unwrap().is_clean());
    // Someone rebuilds the purchase index as a plain unique index under the same name.
    db.run_command(doc! { "dropIndexes": "events", "index": "order_id_1_buy" }).await.unwrap();
    db.run_command(doc! {
        "createIndexes": "events",
        "indexes": [{ "key": { "order_id": 1 }, "name": "order_id_1_buy", "unique": true }],
    })
    .await
    .unwrap();
    let report = docshape::check::<Event>(&db).await.unwrap();
    assert!(
        matches!(&report.drift[..], [Drift::IndexDiffers { name, code, server }]
            if name == "order_id_1_buy"
            && code.get_document("partialFilterExpression").is_ok()
            && server.get_document("partialFilterExpression").is_err()),
        "{:?}",
        report.drift
    );
}

/// Two variants each with a unique `code`: two indexes of one key pattern, told apart
/// by their partial filters and names (mongod accepts these from 5.0 on).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, Model)]
#[serde(tag = "t")]
#[model(collection = "codes")]
enum Code {
    #[serde(rename = "coupon")]
    Coupon {
        #[serde(rename = "_id")]
        id: i64,
        #[index(unique)]
        code: String,
    },
    #[serde(rename = "gift")]
    Gift {
        #[serde(rename = "_id")]
        id: i64,
        #[index(unique)]
        code: String,
    },
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_variants_index_one_field_each_for_itself() {
    let db = docshape_testkit::database("poly_codes").await.unwrap();
    docshape::sync::<Code>(&db).await.unwrap();
    assert!(docshape::check::<Code>(&db).await.unwrap().is_clean());
    let codes = Code::collection(&db);
    codes.insert_one(Code::Coupon { id: 1, code: "X".into() }).await.unwrap();
    // The same code as a gift: unique among gifts, not across variants.
    codes.insert_one(Code::Gift { id: 2, code: "X".into() }).await.unwrap();
    let e = codes.insert_one(Code::Gift { id: 3, code: "X".into() }).await.unwrap_err();
    assert!(is_duplicate(&e), "{e}");
    let e = codes.insert_one(Code::Coupon { id: 4, code: "X".into() }).await.unwrap_err();
    assert!(is_duplicate(&e), "{e}");
}
