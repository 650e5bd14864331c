//! The validator of a polymorphic collection: one `anyOf` branch per discriminator
//! value, each exactly its variant's schema; under `strict` a document of one variant
//! with a field only another has is refused.

use docshape::bson::oid::ObjectId;
use docshape::bson::{doc, DateTime, Document};
use docshape::Model;

use super::Event;
use crate::validator::is_validation_failure;

#[test]
fn one_branch_per_discriminator_value() {
    let validator = Event::validator();
    let schema = validator.get_document("$jsonSchema").unwrap();
    let branches = schema.get_array("anyOf").unwrap();
    let mut values = Vec::new();
    for branch in branches {
        let branch = branch.as_document().unwrap();
        // The discriminator is required and pins the branch to one value, so at most
        // one branch matches a document.
        assert_eq!(branch.get_array("required").unwrap()[0].as_str(), Some("kind"));
        let kind = branch.get_document("properties").unwrap().get_document("kind").unwrap();
        let value = kind.get_array("enum").unwrap();
        assert_eq!(value.len(), 1);
        values.push(value[0].as_str().unwrap().to_owned());
        assert_eq!(
            branch.get_bool("additionalProperties").ok(),
            Some(false),
            "strict applies to every variant"
        );
        assert!(branch.get_document("properties").unwrap().contains_key("_id"));
    }
    assert_eq!(values, ["click", "view", "buy"]);
    let buy = branches[2].as_document().unwrap().get_document("properties").unwrap();
    assert_eq!(buy.get_document("amount_cents").unwrap().get_i32("minimum").ok(), Some(0));
    let view = branches[1].as_document().unwrap().get_document("properties").unwrap();
    assert!(view.contains_key("ms"), "fields are named as serde stores them");
}

fn click() -> Document {
    doc! {
        "_id": ObjectId::new(), "kind": "click", "user": "u1",
        "at": DateTime::from_millis(1), "target": "b",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_refuses_a_mix_of_variants() {
    let db = docshape_testkit::database("poly_strict").await.unwrap();
    docshape::sync::<Event>(&db).await.unwrap();
    let raw = db.collection::<Document>("events");
    raw.insert_one(click()).await.unwrap();

    // A click carrying a purchase's field.
    let mut mixed = click();
    mixed.insert("amount_cents", 10_i64);
    let e = raw.insert_one(mixed).await.unwrap_err();
    assert!(is_validation_failure(&e), "{e}");
    // A purchase's fields under the click tag, without the click's own.
    let e = raw
        .insert_one(doc! {
            "_id": ObjectId::new(), "kind": "click", "user": "u1", "at": DateTime::from_millis(1),
            "order_id": "o1", "amount_cents": 10_i64,
        })
        .await
        .unwrap_err();
    assert!(is_validation_failure(&e), "{e}");
    // No tag, or a tag no variant has.
    let mut untagged = click();
    untagged.remove("kind");
    assert!(is_validation_failure(&raw.insert_one(untagged).await.unwrap_err()));
    let mut unknown = click();
    unknown.insert("kind", "purchase");
    assert!(is_validation_failure(&raw.insert_one(unknown).await.unwrap_err()));
    // A variant's own bounds hold: a purchase of a negative amount.
    let e = raw
        .insert_one(doc! {
            "_id": ObjectId::new(), "kind": "buy", "user": "u1", "at": DateTime::from_millis(1),
            "order_id": "o1", "amount_cents": -1_i64,
        })
        .await
        .unwrap_err();
    assert!(is_validation_failure(&e), "{e}");
    assert_eq!(raw.count_documents(doc! {}).await.unwrap(), 1);
}
