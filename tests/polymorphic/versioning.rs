//! A versioned polymorphic collection: one schema version for the whole enum, stored
//! by every variant under one name. Version 1 stored a purchase's `amount` in dollars
//! and a click's `url`; version 2 stores `amount_cents` and `target`. The one document
//! step sees the tag and upgrades each variant its own way.

use docshape::access::FindError;
use docshape::bson::oid::ObjectId;
use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::versioning::{self, BackfillOptions, StepFailure, VersionError, Versioned};
use docshape::Model;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};

use crate::validator::is_validation_failure;

/// Orders and the clicks that led to them. The version field is `v` in both variants,
/// under another Rust name in `Click`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[model(collection = "versioned_orders", strict, version = 2, migrate(v1(document = order_v1_to_v2)))]
#[index(keys(user, at = -1))]
#[access(name = "activity_of_user", filter(user), sort(at = -1))]
#[access(name = "purchases_of_user", variant = Purchase, filter(user), sort(at = -1))]
#[access(name = "amounts_of_user", variant = Purchase, filter(user), fields(order_id, amount_cents))]
#[access(name = "discount", variant = Purchase, filter(_id), update(inc(amount_cents)))]
pub enum Order {
    Click {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        at: DateTime,
        target: String,
        #[schema_version]
        #[serde(rename = "v")]
        version: i32,
    },
    #[serde(rename = "buy")]
    Purchase {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        at: DateTime,
        order_id: String,
        #[validate(minimum = 0)]
        amount_cents: i64,
        #[schema_version]
        v: i32,
    },
}

/// Version 1 to 2, per variant: a purchase's dollars become cents, a click's `url`
/// becomes its `target`.
fn order_v1_to_v2(mut doc: Document) -> Result<Document, String> {
    match doc.get_str("kind") {
        Ok("buy") => {
            let cents = match doc.remove("amount") {
                Some(Bson::Double(dollars)) if dollars.is_finite() => (dollars * 100.0).round() as i64,
                Some(Bson::Int32(dollars)) => i64::from(dollars) * 100,
                Some(Bson::Int64(dollars)) => dollars.checked_mul(100).ok_or("amount out of range")?,
                other => {
                    let other = other.map_or_else(|| "missing".to_owned(), |b| b.to_string());
                    return Err(format!("a v1 purchase's amount is a number of dollars, not {other}"));
                }
            };
            doc.insert("amount_cents", cents);
        }
        Ok("click") => {
            if let Some(url) = doc.remove("url") {
                doc.insert("target", url);
            }
        }
        _ => {}
    }
    Ok(doc)
}

const AT: i64 = 1_700_000_000_000;

/// A click and a purchase of `user` as version 1 stored them, without the version field.
fn v1_documents(user: &str, order_id: &str) -> (ObjectId, ObjectId, [Document; 2]) {
    let (click, purchase) = (ObjectId::new(), ObjectId::new());
    let docs = [
        doc! { "_id": click, "kind": "click", "user": user, "at": DateTime::from_millis(AT), "url": "/buy" },
        doc! {
            "_id": purchase, "kind": "buy", "user": user, "at": DateTime::from_millis(AT + 1),
            "order_id": order_id, "amount": 49.99,
        },
    ];
    (click, purchase, docs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finders_upgrade_documents_of_every_variant() {
    let db = docshape_testkit::database("poly_versioned_finders").await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    let raw = db.collection::<Document>("versioned_orders");
    // Written by another program, before this code existed: both variants at v1.
    let (click, purchase, docs) = v1_documents("u1", "o1");
    raw.insert_many(docs).await.unwrap();
    let click_v2 = Order::Click {
        id: click,
        user: "u1".into(),
        at: DateTime::from_millis(AT),
        target: "/buy".into(),
        version: 2,
    };
    let purchase_v2 = Order::Purchase {
        id: purchase,
        user: "u1".into(),
        at: DateTime::from_millis(AT + 1),
        order_id: "o1".into(),
        amount_cents: 4999,
        v: 2,
    };

    // The enum's row reads both variants, upgraded.
    let all: Vec<Order> = Order::activity_of_user("u1").all(&db).await.unwrap();
    assert_eq!(all, [purchase_v2.clone(), click_v2.clone()]);
    // A variant's row reads its variant's fields, upgraded.
    let purchases = Order::purchases_of_user("u1").all(&db).await.unwrap();
    assert_eq!(purchases.len(), 1);
    let p = &purchases[0];
    assert_eq!((p.id, p.order_id.as_str(), p.amount_cents, p.v), (purchase, "o1", 4999, 2));
    // A variant's view reads the upgraded document's fields, not the stored ones.
    let amounts = Order::amounts_of_user("u1").all(&db).await.unwrap();
    assert_eq!(amounts.len(), 1);
    assert_eq!((amounts[0].order_id.as_str(), amounts[0].amount_cents), ("o1", 4999));
    // Reads do not write: the documents are still at v1.
    assert_eq!(raw.count_documents(doc! { "v": { "$exists": true } }).await.unwrap(), 0);
    assert!(docshape::versioning::reads::<Order>().get(&1).copied().unwrap_or(0) >= 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_v1_document_is_a_typed_error() {
    let db = docshape_testkit::database("poly_versioned_malformed").await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    let raw = db.collection::<Document>("versioned_orders");
    // The step refuses an amount that is no number.
    let bad_amount = ObjectId::new();
    raw.insert_one(doc! {
        "_id": bad_amount, "kind": "buy", "user": "u2", "at": DateTime::from_millis(AT),
        "order_id": "o2", "amount": "ten dollars",
    })
    .await
    .unwrap();
    let e = Order::purchases_of_user("u2").all(&db).await.map(|v| v.len()).unwrap_err();
    let FindError::Version(e) = e else { panic!("{e:?}") };
    assert!(
        matches!(&*e, VersionError::Upgrade { collection: "versioned_orders", version: 1, id, failure: StepFailure::Step { version: 1, .. } } if *id == Bson::ObjectId(bad_amount)),
        "{e:?}"
    );
    assert!(e.to_string().contains("dollars, not \"ten dollars\""), "{e}");
    // A click the step leaves alone, whose `at` is no date, does not decode as v2.
    let bad_at = ObjectId::new();
    raw.insert_one(doc! { "_id": bad_at, "kind": "click", "user": "u3", "at": "yesterday", "url": "/" })
        .await
        .unwrap();
    let e = Order::activity_of_user("u3").all(&db).await.map(|v| v.len()).unwrap_err();
    let FindError::Version(e) = e else { panic!("{e:?}") };
    assert!(
        matches!(&*e, VersionError::Upgrade { version: 1, id, failure: StepFailure::Decode { version: 2, .. }, .. } if *id == Bson::ObjectId(bad_at)),
        "{e:?}"
    );
}

#[test]
fn each_variant_branch_is_pinned_to_the_current_version() {
    let validator = Order::validator();
    let schema = validator.get_document("$jsonSchema").unwrap();
    let branches = schema.get_array("anyOf").unwrap();
    // One branch per variant at version 2, then version 1's.
    assert_eq!(branches.len(), 3, "{schema}");
    for (branch, kind) in branches.iter().zip(["click", "buy"]) {
        let branch = branch.as_document().unwrap();
        let properties = branch.get_document("properties").unwrap();
        assert_eq!(properties.get_document("kind").unwrap().get_array("enum").unwrap(), &[Bson::from(kind)]);
        assert_eq!(properties.get_document("v").unwrap().get_array("enum").unwrap(), &[Bson::Int64(2)]);
        let required = branch.get_array("required").unwrap();
        assert!(required.contains(&Bson::from("v")) && required.contains(&Bson::from("kind")), "{branch}");
        assert_eq!(branch.get_bool("additionalProperties").ok(), Some(false), "{branch}");
    }
    let old = branches[2].as_document().unwrap().get_document("properties").unwrap();
    assert_eq!(old.get_document("v").unwrap().get_array("enum").unwrap(), &[Bson::Int64(1)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_validator_admits_both_versions_and_refuses_a_mix_of_variants() {
    let db = docshape_testkit::database("poly_versioned_validator").await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    let raw = db.collection::<Document>("versioned_orders");
    let (_, _, docs) = v1_documents("u1", "o1");
    raw.insert_many(docs).await.unwrap();
    let click = || {
        doc! {
            "_id": ObjectId::new(), "kind": "click", "user": "u1", "at": DateTime::from_millis(AT),
            "target": "/", "v": 2,
        }
    };
    raw.insert_one(click()).await.unwrap();
    raw.insert_one(doc! {
        "_id": ObjectId::new(), "kind": "buy", "user": "u1", "at": DateTime::from_millis(AT),
        "order_id": "o3", "amount_cents": 100_i64, "v": 2,
    })
    .await
    .unwrap();
    // A v2 click carrying a purchase's field.
    let mut mixed = click();
    mixed.insert("amount_cents", 10_i64);
    assert!(is_validation_failure(&raw.insert_one(mixed).await.unwrap_err()));
    // A v2 purchase's fields under the click tag.
    let e = raw
        .insert_one(doc! {
            "_id": ObjectId::new(), "kind": "click", "user": "u1", "at": DateTime::from_millis(AT),
            "order_id": "o4", "amount_cents": 10_i64, "v": 2,
        })
        .await
        .unwrap_err();
    assert!(is_validation_failure(&e), "{e}");
    // A version this code does not know.
    let mut newer = click();
    newer.insert("v", 3);
    assert!(is_validation_failure(&raw.insert_one(newer).await.unwrap_err()));
    // A v2 variant's own bounds hold.
    let e = raw
        .insert_one(doc! {
            "_id": ObjectId::new(), "kind": "buy", "user": "u1", "at": DateTime::from_millis(AT),
            "order_id": "o5", "amount_cents": -1_i64, "v": 2,
        })
        .await
        .unwrap_err();
    assert!(is_validation_failure(&e), "{e}");
    assert_eq!(raw.count_documents(doc! {}).await.unwrap(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_of_every_variant_stamp_the_version() {
    let db = docshape_testkit::database("poly_versioned_stamp").await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    let raw = db.collection::<Document>("versioned_orders");
    let at = DateTime::from_millis(AT);
    let mut click =
        Order::Click { id: ObjectId::new(), user: "u1".into(), at, target: "/".into(), version: 0 };
    let mut purchase = Order::Purchase {
        id: ObjectId::new(),
        user: "u1".into(),
        at,
        order_id: "o1".into(),
        amount_cents: 1,
        v: 0,
    };
    // Inserted at the current version, whatever the value's field says.
    for value in [&click, &purchase] {
        versioning::insert_one(&db, value).await.unwrap();
    }
    let stored: Vec<Document> =
        raw.find(doc! {}).sort(doc! { "at": 1, "kind": -1 }).await.unwrap().try_collect().await.unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|d| d.get_i32("v").ok() == Some(2)), "{stored:?}");
    // The stamp sets the field of whichever variant the value is.
    click.stamp();
    purchase.stamp();
    assert!(matches!(click, Order::Click { version: 2, .. }), "{click:?}");
    assert!(matches!(purchase, Order::Purchase { v: 2, .. }), "{purchase:?}");

    // A v1 document of each variant, saved back: upgraded and stamped in place.
    let (click_id, purchase_id, docs) = v1_documents("u2", "o2");
    raw.insert_many(docs).await.unwrap();
    for id in [click_id, purchase_id] {
        let mut loaded = versioning::find_one::<Order>(&db, doc! { "_id": id }).await.unwrap().unwrap();
        assert!(loaded.is_outdated());
        loaded.save(&db).await.unwrap();
    }
    let click = raw.find_one(doc! { "_id": click_id }).await.unwrap().unwrap();
    assert_eq!((click.get_str("target").ok(), click.get_i32("v").ok()), (Some("/buy"), Some(2)), "{click}");
    assert!(!click.contains_key("url"), "{click}");
    let purchase = raw.find_one(doc! { "_id": purchase_id }).await.unwrap().unwrap();
    assert_eq!(
        (purchase.get_i64("amount_cents").ok(), purchase.get_i32("v").ok()),
        (Some(4999), Some(2)),
        "{purchase}"
    );
    assert!(!purchase.contains_key("amount"), "{purchase}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_upgrades_every_variant_and_reports_the_unreadable() {
    let db = docshape_testkit::database("poly_versioned_backfill").await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    let raw = db.collection::<Document>("versioned_orders");
    for i in 0..5 {
        let (_, _, docs) = v1_documents(&format!("u{i}"), &format!("o{i}"));
        raw.insert_many(docs).await.unwrap();
    }
    let broken = ObjectId::new();
    raw.insert_one(doc! {
        "_id": broken, "kind": "buy", "user": "u9", "at": DateTime::from_millis(AT),
        "order_id": "o9", "amount": "free",
    })
    .await
    .unwrap();
    let report = versioning::backfill::<Order>(&db, BackfillOptions::default().batch_size(3)).await.unwrap();
    assert_eq!(report.progress.upgraded, 10, "{report:?}");
    assert_eq!(report.failures.len(), 1, "{report:?}");
    assert!(
        matches!(&report.failures[0], VersionError::Upgrade { id, .. } if *id == Bson::ObjectId(broken)),
        "{report:?}"
    );
    assert_eq!(raw.count_documents(doc! { "v": 2 }).await.unwrap(), 10);
    assert_eq!(raw.count_documents(doc! { "kind": "buy", "amount_cents": 4999_i64 }).await.unwrap(), 5);
    assert_eq!(raw.count_documents(doc! { "kind": "click", "target": "/buy" }).await.unwrap(), 5);
    // The unreadable one is left as it was.
    let left = raw.find_one(doc! { "_id": broken }).await.unwrap().unwrap();
    assert_eq!(left.get_str("amount").ok(), Some("free"));
    // Every readable document now reads without an upgrade.
    let all: Vec<Order> = Order::activity_of_user("u0").all(&db).await.unwrap();
    assert_eq!(all.len(), 2);
}

/// A write row on one variant of a versioned model writes the current shape: a v1
/// purchase is upgraded in place (dollars to cents, the version stamped), then written;
/// a v1 click's `_id` is not the row's document, and stays as stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_row_on_a_variant_upgrades_an_old_document_then_writes() {
    let db = docshape_testkit::database("poly_versioned_write").await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    let raw = db.collection::<Document>("versioned_orders");
    let (click, purchase, docs) = v1_documents("u1", "o1");
    raw.insert_many(docs).await.unwrap();

    Order::discount(purchase, -999_i64).run(&db).await.unwrap();
    let stored = raw.find_one(doc! { "_id": purchase }).await.unwrap().unwrap();
    assert_eq!(stored.get_i64("amount_cents").ok(), Some(4000), "{stored}");
    assert_eq!(stored.get_i32("v").ok(), Some(2), "{stored}");
    assert!(!stored.contains_key("amount"), "{stored}");

    let wrong = Order::discount(click, 1_i64).run(&db).await.unwrap_err();
    assert!(matches!(wrong, docshape::access::UpdateError::NotFound { .. }), "{wrong:?}");
    let untouched = raw.find_one(doc! { "_id": click }).await.unwrap().unwrap();
    assert_eq!(untouched.get_str("url").ok(), Some("/buy"), "{untouched}");
    assert!(!untouched.contains_key("v") && !untouched.contains_key("amount_cents"), "{untouched}");
}
