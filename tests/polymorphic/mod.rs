//! Polymorphic collections on a real server: an event store whose documents are the
//! variants of one internally tagged enum.

// clippy's `duplicated_attributes` misreads repeated keys across derive helper
// attributes (`#[access(filter(user))]` twice) as duplicates: rust-clippy#13238.
#![allow(clippy::duplicated_attributes)]

mod copies;
mod finders;
mod indexes;
mod newtype;
mod relations;
mod size;
mod validator;
mod versioning;
mod writes;

use docshape::bson::oid::ObjectId;
use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

/// Three shapes in one collection. `Purchase` is stored as `"buy"`; its `order_id` is
/// unique among purchases only, and its `(user, amount_cents)` index holds purchases only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[model(collection = "events", strict)]
#[index(keys(user, at = -1))]
#[access(name = "events_of_user", filter(user), sort(at = -1))]
#[access(name = "clicks_of_user", variant = Click, filter(user), sort(at = -1), view(derive(Debug, PartialEq, Deserialize)))]
#[access(name = "purchase_by_order", variant = Purchase, filter(order_id))]
#[access(name = "big_purchases", variant = Purchase, filter(user), range(amount_cents), fields(order_id, amount_cents))]
pub enum Event {
    Click {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        at: DateTime,
        target: String,
    },
    View {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        at: DateTime,
        page: String,
        #[serde(rename = "ms")]
        duration_ms: i64,
    },
    #[serde(rename = "buy")]
    #[index(keys(user, amount_cents), partial_filter = r#"{"amount_cents": {"$gt": 0}}"#)]
    Purchase {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        at: DateTime,
        #[index(unique)]
        order_id: String,
        #[validate(minimum = 0)]
        amount_cents: i64,
    },
}

/// One event of each variant for `user`.
pub fn events(user: &str, order_id: &str) -> Vec<Event> {
    let at = DateTime::from_millis(1_700_000_000_000);
    vec![
        Event::Click { id: ObjectId::new(), user: user.into(), at, target: "buy-button".into() },
        Event::View { id: ObjectId::new(), user: user.into(), at, page: "/cart".into(), duration_ms: 1200 },
        Event::Purchase {
            id: ObjectId::new(),
            user: user.into(),
            at,
            order_id: order_id.into(),
            amount_cents: 4999,
        },
    ]
}

/// Every event type round-trips: written by serde, accepted by the validator, read back equal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_variant_round_trips() {
    let db = docshape_testkit::database("poly_roundtrip").await.unwrap();
    docshape::sync::<Event>(&db).await.unwrap();
    let written = events("u1", "o1");
    Event::collection(&db).insert_many(&written).await.unwrap();
    for event in &written {
        let id = match event {
            Event::Click { id, .. } | Event::View { id, .. } | Event::Purchase { id, .. } => *id,
        };
        let read = Event::collection(&db)
            .find_one(docshape::bson::doc! { "_id": id })
            .await
            .unwrap()
            .expect("stored");
        assert_eq!(&read, event);
    }
    let raw = db.collection::<docshape::bson::Document>("events");
    let kinds: Vec<String> = raw
        .distinct("kind", docshape::bson::doc! {})
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.to_string())
        .collect();
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    assert!(kinds.contains(&"\"buy\"".to_owned()), "the renamed variant is stored by its name: {kinds:?}");
}

/// A document that references one event of the polymorphic collection.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "event_notes")]
#[index(keys(event))]
pub struct EventNote {
    #[serde(rename = "_id")]
    pub id: i64,
    pub event: docshape::refs::Ref<Event>,
}

/// A `Ref<Event>` holds the `_id` every variant shares: it is validated as that type,
/// and loads the variant stored there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_to_the_enum_loads_the_variant_it_names() {
    use docshape::bson::{doc, Document};
    let db = docshape_testkit::database("poly_ref").await.unwrap();
    docshape::sync::<Event>(&db).await.unwrap();
    docshape::sync::<EventNote>(&db).await.unwrap();
    let written = events("u1", "o1");
    Event::collection(&db).insert_many(&written).await.unwrap();
    let Event::Purchase { id, .. } = &written[2] else { unreachable!() };
    let note = EventNote { id: 1, event: docshape::refs::Ref::new(*id) };
    EventNote::collection(&db).insert_one(&note).await.unwrap();
    let stored = EventNote::collection(&db).find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(stored.event.load(&db).await.unwrap(), Some(written[2].clone()));
    // The reference is validated as the shared `_id`: an ObjectId, not a string.
    let wrong = db
        .collection::<Document>("event_notes")
        .insert_one(doc! { "_id": 2, "event": id.to_hex() })
        .await
        .unwrap_err();
    assert!(wrong.to_string().contains("failed validation") || wrong.to_string().contains("121"), "{wrong}");
}
