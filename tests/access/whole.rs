//! A write row's `set(field)` takes the field's whole type (a `Vec<T>`, an `Option<T>`,
//! an embedded struct) while `push`/`pull` take one element; and a write the server
//! refuses (its validator) is reported as [`UpdateError::WriteRefused`], not as a
//! failed find.

use bson::doc;
use docshape::access::UpdateError;
use docshape::bson;
use docshape::{Embedded, Model};
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

/// One line of a basket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct LineItem {
    pub sku: String,
    pub qty: i32,
}

/// Where a basket ships.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Address {
    pub city: String,
}

/// A basket: an array of embedded items, an optional note and an embedded address,
/// each written whole by a row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "access_baskets")]
#[index(keys(owner))]
#[access(name = "replace_items", filter(_id), update(set(items)), consistency = "strong (same doc)")]
#[access(name = "add_item", filter(_id), update(push(items)), consistency = "strong (same doc)")]
#[access(name = "annotate", filter(_id), update(set(note), set(ship_to)), consistency = "strong (same doc)")]
#[access(name = "recode", filter(_id), update(set(code)), consistency = "strong (same doc)")]
#[access(name = "recode_owners", filter(owner), update(set(code)), consistency = "strong (same doc)")]
pub struct Basket {
    #[serde(rename = "_id")]
    pub id: String,
    pub owner: String,
    #[validate(max_length = 5)]
    pub code: String,
    #[embed(max = 20)]
    pub items: Vec<LineItem>,
    pub note: Option<String>,
    pub ship_to: Address,
}

fn basket(id: &str) -> Basket {
    Basket {
        id: id.into(),
        owner: "ann".into(),
        code: "b1".into(),
        items: vec![LineItem { sku: "A-1".into(), qty: 1 }],
        note: None,
        ship_to: Address { city: "Leeds".into() },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_writes_a_whole_array_option_and_embedded_field_the_validator_accepts() {
    let db = testkit::database("access_whole_set").await.unwrap();
    docshape::sync::<Basket>(&db).await.unwrap();
    Basket::collection(&db).insert_one(basket("k1")).await.unwrap();

    let items = vec![LineItem { sku: "B-2".into(), qty: 2 }, LineItem { sku: "C-3".into(), qty: 5 }];
    Basket::replace_items("k1", items.clone()).run(&db).await.unwrap();
    Basket::add_item("k1", LineItem { sku: "D-4".into(), qty: 1 }).run(&db).await.unwrap();
    Basket::annotate("k1", Some("leave at the door".to_owned()), Address { city: "York".into() })
        .run(&db)
        .await
        .unwrap();
    let raw = db
        .collection::<bson::Document>("access_baskets")
        .find_one(doc! { "_id": "k1" })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        raw.get_array("items").unwrap().len(),
        3,
        "the array was written whole, then pushed to: {raw}"
    );
    let stored = Basket::collection(&db).find_one(doc! { "_id": "k1" }).await.unwrap().unwrap();
    let mut expected = items;
    expected.push(LineItem { sku: "D-4".into(), qty: 1 });
    assert_eq!(stored.items, expected);
    assert_eq!(stored.note.as_deref(), Some("leave at the door"));
    assert_eq!(stored.ship_to.city, "York");
    // `None` clears the option, as serde writes it.
    Basket::annotate("k1", None::<String>, Address { city: "York".into() }).run(&db).await.unwrap();
    assert_eq!(Basket::collection(&db).find_one(doc! { "_id": "k1" }).await.unwrap().unwrap().note, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_the_validator_refuses_is_a_refused_write() {
    let db = testkit::database("access_whole_refused").await.unwrap();
    docshape::sync::<Basket>(&db).await.unwrap();
    Basket::collection(&db).insert_one(basket("k1")).await.unwrap();

    // By `_id`: an `update` command, whose write error is the validator's.
    match Basket::recode("k1", "far too long").run(&db).await {
        Err(UpdateError::WriteRefused { collection: "access_baskets", code: 121, message, source }) => {
            assert!(!message.is_empty());
            assert!(
                source.to_string().contains("121") || source.to_string().to_lowercase().contains("valid"),
                "{source}"
            );
        }
        other => panic!("expected WriteRefused with code 121, got {other:?}"),
    }
    // By another field: a `findAndModify`, whose command error is the validator's.
    match Basket::recode_owners("ann", "far too long").run(&db).await {
        Err(UpdateError::WriteRefused { code: 121, .. }) => {}
        other => panic!("expected WriteRefused with code 121, got {other:?}"),
    }
    let stored = Basket::collection(&db).find_one(doc! { "_id": "k1" }).await.unwrap().unwrap();
    assert_eq!(stored.code, "b1", "nothing was written");
}
