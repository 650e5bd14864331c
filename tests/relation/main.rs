//! Embed, reference and copy on a real server, with the seeds' models: an order with
//! embedded line items, a user reference and a historical `user_name`; posts with an
//! author reference and an async `author_name`; `usuarios` with an embedded
//! `direccion`. References load in one query, in order, with the missing ones
//! reported; copies are filled at write time; the design-decision table lists them.

#![allow(clippy::duplicated_attributes)]

use docshape::bson;
use docshape::bson::{doc, DateTime, Document};
use docshape::refs::{self, Ref, RefError};
use docshape::relation::{self, RelationKind};
use docshape::{Embedded, Model};
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

mod adversarial;
mod design;
mod hardening;

/// patterns-en: `{ _id: "u_42", name: "Alice" }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(min_length = 1, max_length = 100)]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct LineItem {
    #[validate(max_length = 32)]
    pub sku: String,
    #[validate(minimum = 1)]
    pub qty: i32,
    pub unit_price_cents: i64,
}

/// patterns-en's order: embedded line items (1:few, read and updated together,
/// bounded), a reference to the user, and the user's name as a historical snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "orders")]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: String,
    #[reference(reason = "the user updates independently")]
    pub user_id: Ref<User>,
    #[denormalized(
        from = "User::name",
        via = "user_id",
        refresh = "never",
        reason = "historical snapshot is correct here"
    )]
    pub user_name: String,
    #[validate(allowed = ["pending", "shipped"])]
    pub status: String,
    #[embed(max = 50, reason = "1:few, read and updated with the order")]
    pub items: Vec<LineItem>,
}

/// patterns-en's post: a reference to the author (users <- posts grows without bound)
/// and the author's name, refreshed on rename by an async job, stale at most 5 minutes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1))]
#[access(name = "posts_by_author", filter(author_id), sort(created_at = -1), fields(title, User::name))]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: String,
    #[reference(reason = "a user has unboundedly many posts")]
    pub author_id: Ref<User>,
    #[denormalized(
        from = "User::name",
        via = "author_id",
        refresh = "async",
        max_stale = "5m",
        reason = "the feed shows names without a join; a name may be stale for 5 minutes"
    )]
    pub author_name: String,
    pub title: String,
    pub created_at: DateTime,
}

/// patrones-es: the address is always read with the user, so it is embedded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Direccion {
    pub calle: String,
    pub ciudad: String,
    pub cp: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "usuarios")]
pub struct Usuario {
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    pub id: Option<bson::oid::ObjectId>,
    pub nombre: String,
    #[embed(reason = "siempre se lee con el usuario")]
    pub direccion: Direccion,
}

/// A versioned source: its versioned writers keep its copies in line too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "authors", version = 1)]
pub struct Author {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[schema_version]
    pub schema_version: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "reviews")]
#[index(keys(author_id))]
pub struct Review {
    #[serde(rename = "_id")]
    pub id: i32,
    pub author_id: Ref<Author>,
    #[denormalized(from = "Author::name", via = "author_id", refresh = "sync")]
    pub author_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "articles")]
#[index(keys(author_id))]
pub struct Article {
    #[serde(rename = "_id")]
    pub id: i32,
    pub author_id: Ref<Author>,
    #[denormalized(from = "Author::name", via = "author_id", refresh = "async", max_stale = "1m")]
    pub author_name: String,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn user(i: usize) -> User {
    User { id: format!("u_{i}"), name: format!("User {i}") }
}

#[test]
fn loading_1000_references_is_one_query_in_order() {
    runtime().block_on(async {
        let (db, log) = testkit::monitored("refs_many").await.unwrap();
        docshape::sync::<User>(&db).await.unwrap();
        let users: Vec<User> = (0..1000).map(user).collect();
        User::collection(&db).insert_many(&users).await.unwrap();

        // A scrambled order, so that the server's order (by `_id`) is not the one asked.
        let order: Vec<usize> = (0..1000).map(|i| (i * 7919) % 1000).collect();
        let wanted: Vec<Ref<User>> = order.iter().map(|&i| Ref::new(format!("u_{i}"))).collect();
        log.clear();
        let loaded = refs::load_many(&db, &wanted).await.unwrap();
        let commands: Vec<String> = log.names();
        assert_eq!(commands, ["find"], "one query for 1,000 references, no getMore");
        assert!(loaded.missing().is_empty());
        let got: Vec<User> = loaded.all().unwrap();
        let expected: Vec<User> = order.iter().map(|&i| user(i)).collect();
        assert_eq!(got, expected, "in the order asked");

        // Duplicates and dangling references: one slot each, the missing reported once.
        let asked: Vec<Ref<User>> = vec![
            Ref::new("u_5".to_string()),
            Ref::new("u_gone".to_string()),
            Ref::new("u_5".to_string()),
            Ref::new("u_also_gone".to_string()),
            Ref::new("u_gone".to_string()),
        ];
        log.clear();
        let loaded = refs::load_many(&db, &asked).await.unwrap();
        assert_eq!(log.names().len(), 1);
        let find = log.commands()[0].1.clone();
        let ids = find.get_document("filter").unwrap().get_document("_id").unwrap().get_array("$in").unwrap();
        assert_eq!(ids.len(), 3, "each distinct _id asked once: {ids:?}");
        let slots: Vec<Option<String>> =
            loaded.items().iter().map(|u| u.as_ref().map(|u| u.id.clone())).collect();
        assert_eq!(slots, [Some("u_5".into()), None, Some("u_5".into()), None, None]);
        assert_eq!(loaded.missing(), [bson::Bson::from("u_gone"), bson::Bson::from("u_also_gone")]);
        match loaded.all() {
            Err(RefError::Missing { collection: "users", ids }) => assert_eq!(ids.len(), 2),
            other => panic!("expected the missing references, got {other:?}"),
        }

        // No references, no query.
        log.clear();
        assert!(refs::load_many::<User>(&db, &[]).await.unwrap().items().is_empty());
        assert!(log.names().is_empty());

        // One by one.
        assert_eq!(Ref::<User>::new("u_7".into()).load(&db).await.unwrap(), Some(user(7)));
        assert_eq!(Ref::<User>::new("u_nobody".into()).load(&db).await.unwrap(), None);
    });
}

#[test]
fn a_document_that_does_not_decode_is_an_error_naming_it() {
    runtime().block_on(async {
        let db = testkit::database("refs_decode").await.unwrap();
        db.collection::<Document>("users").insert_one(doc! { "_id": "u_bad", "name": 42 }).await.unwrap();
        match refs::load_many::<User>(&db, &[Ref::new("u_bad".into())]).await {
            Err(RefError::Decode { collection: "users", id, .. }) => {
                assert_eq!(*id, bson::Bson::from("u_bad"))
            }
            other => panic!("expected a decode error, got {other:?}"),
        }
    });
}

#[test]
fn an_order_keeps_the_name_at_order_time() {
    runtime().block_on(async {
        let db = testkit::database("orders_snapshot").await.unwrap();
        docshape::sync_all(&db, Default::default()).await.unwrap();
        User::collection(&db).insert_one(User { id: "u_42".into(), name: "Alice".into() }).await.unwrap();
        let mut order = Order {
            id: "ord_81".into(),
            user_id: Ref::new("u_42".into()),
            user_name: String::new(),
            status: "shipped".into(),
            items: vec![LineItem { sku: "A-1".into(), qty: 2, unit_price_cents: 1250 }],
        };
        relation::insert_one(&db, &mut order).await.unwrap();
        assert_eq!(order.user_name, "Alice", "filled from the user at write time");
        let stored =
            db.collection::<Document>("orders").find_one(doc! { "_id": "ord_81" }).await.unwrap().unwrap();
        // The seed's document, field for field.
        assert_eq!(
            stored,
            doc! {
                "_id": "ord_81", "user_id": "u_42", "user_name": "Alice", "status": "shipped",
                "items": [ { "sku": "A-1", "qty": 2, "unit_price_cents": 1250_i64 } ],
            }
        );

        // The user is renamed; the order remembers who ordered.
        User::collection(&db)
            .update_one(doc! { "_id": "u_42" }, doc! { "$set": { "name": "Alicia" } })
            .await
            .unwrap();
        let again = Order::collection(&db).find_one(doc! { "_id": "ord_81" }).await.unwrap().unwrap();
        assert_eq!(again.user_name, "Alice");

        // A reference to nobody is refused, and nothing is written.
        let mut orphan = Order { id: "ord_82".into(), user_id: Ref::new("u_nobody".into()), ..order.clone() };
        match relation::insert_one(&db, &mut orphan).await {
            Err(RefError::Missing { ids, .. }) => assert_eq!(ids, [bson::Bson::from("u_nobody")]),
            other => panic!("expected a missing referent, got {other:?}"),
        }
        assert_eq!(Order::collection(&db).count_documents(doc! {}).await.unwrap(), 1);
    });
}

#[test]
fn the_embedded_bound_reaches_the_server() {
    runtime().block_on(async {
        let db = testkit::database("orders_bound").await.unwrap();
        docshape::sync::<Order>(&db).await.unwrap();
        let item = doc! { "sku": "A-1", "qty": 1, "unit_price_cents": 100_i64 };
        let order = |n: usize| {
            doc! {
                "_id": format!("ord_{n}"), "user_id": "u_42", "user_name": "Alice", "status": "pending",
                "items": vec![item.clone(); n],
            }
        };
        let orders = db.collection::<Document>("orders");
        orders.insert_one(order(50)).await.expect("50 line items are within the bound");
        let refused = orders.insert_one(order(51)).await.expect_err("51 line items are over the bound");
        assert!(
            refused.to_string().contains("121") || refused.to_string().contains("validation"),
            "{refused}"
        );
    });
}

#[test]
fn usuarios_embed_the_address() {
    runtime().block_on(async {
        let db = testkit::database("usuarios_direccion").await.unwrap();
        docshape::sync::<Usuario>(&db).await.unwrap();
        let alicia = Usuario {
            id: None,
            nombre: "Alicia".into(),
            direccion: Direccion {
                calle: "Av. Reforma 123".into(),
                ciudad: "Ciudad de México".into(),
                cp: "06600".into(),
            },
        };
        let id = Usuario::collection(&db).insert_one(&alicia).await.unwrap().inserted_id;
        // One read brings the address with the user.
        let read = Usuario::collection(&db).find_one(doc! { "_id": id.clone() }).await.unwrap().unwrap();
        assert_eq!(read.direccion, alicia.direccion);
        // An address without its city is not one.
        let broken = doc! { "nombre": "Beto", "direccion": { "calle": "Calle 1", "cp": "01000" } };
        assert!(db.collection::<Document>("usuarios").insert_one(broken).await.is_err());
        // `Ref<Usuario>` is an ObjectId, as the `_id` is.
        let r: Ref<Usuario> = Ref::new(id.as_object_id().unwrap());
        assert_eq!(r.load(&db).await.unwrap().unwrap().nombre, "Alicia");
    });
}

#[test]
fn the_design_decision_table_lists_every_relation() {
    let kinds: Vec<(&str, RelationKind)> = Order::RELATIONS.iter().map(|r| (r.field, r.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("user_id", RelationKind::Reference),
            ("items", RelationKind::Embed),
            ("user_name", RelationKind::Copy)
        ]
    );
    let artifacts = docshape::artifacts::registered().unwrap();
    let table = &artifacts.iter().find(|a| a.file_name == "DESIGN_DECISIONS.md").unwrap().contents;
    for row in [
        "| orders | user_id | reference | users | — | — | the user updates independently |",
        "| orders | items | embed | LineItem (array) | ≤ 50 | — | 1:few, read and updated with the order |",
        "| orders | user_name | copy | User::name via `user_id` | — | never (snapshot at write) | historical snapshot is correct here |",
        "| posts | author_name | copy | User::name via `author_id` | — | async, stale ≤ 5m | the feed shows names without a join; a name may be stale for 5 minutes |",
        "| usuarios | direccion | embed | Direccion | — | — | siempre se lee con el usuario |",
    ] {
        assert!(table.contains(row), "missing row {row}\nin\n{table}");
    }
    // The feed reads the copy: the access table names the copy, not a join.
    let feed = &Post::ACCESS_PATTERNS[0];
    assert_eq!(feed.fields, ["title", "author_name"]);
}

#[test]
fn versioned_writers_refresh_the_copies_of_what_they_write() {
    use docshape::denormalized::{self, Worker};
    use docshape::versioning::{self, RetryPolicy};
    runtime().block_on(async {
        let db = testkit::database("versioned_source").await.unwrap();
        docshape::sync_all(&db, Default::default()).await.unwrap();
        Author::collection(&db)
            .insert_one(Author { id: "a1".into(), name: "Ada".into(), schema_version: 1 })
            .await
            .unwrap();
        for i in 0..5 {
            let mut review = Review { id: i, author_id: Ref::new("a1".into()), author_name: String::new() };
            relation::insert_one(&db, &mut review).await.unwrap();
            let mut article = Article { id: i, author_id: Ref::new("a1".into()), author_name: String::new() };
            relation::insert_one(&db, &mut article).await.unwrap();
        }
        let names = |c: &'static str| {
            let db = db.clone();
            async move {
                let mut out: Vec<String> = Vec::new();
                let mut cursor = db.collection::<Document>(c).find(doc! {}).await.unwrap();
                while cursor.advance().await.unwrap() {
                    out.push(
                        cursor.deserialize_current().unwrap().get_str("author_name").unwrap().to_owned(),
                    );
                }
                out
            }
        };
        assert_eq!(names("reviews").await, vec!["Ada"; 5]);

        // `versioning::update_one`: the sync copies in the call, the async one queued.
        versioning::update_one::<Author>(
            &db,
            "a1",
            doc! { "$set": { "name": "Ada King" } },
            RetryPolicy::default(),
        )
        .await
        .unwrap();
        assert_eq!(names("reviews").await, vec!["Ada King"; 5]);
        assert_eq!(names("articles").await, vec!["Ada"; 5]);
        assert_eq!(denormalized::lag(&db).await.unwrap().pending, 1);
        let report = Worker::new(&db).run_until_empty().await.unwrap();
        assert_eq!(report.documents_updated, 5);
        assert_eq!(names("articles").await, vec!["Ada King"; 5]);

        // `versioning::modify` (a save of what changed) does the same.
        versioning::modify::<Author>(&db, "a1", RetryPolicy::default(), |a| a.name = "Ada Lovelace".into())
            .await
            .unwrap();
        assert_eq!(names("reviews").await, vec!["Ada Lovelace"; 5]);
        Worker::new(&db).run_until_empty().await.unwrap();
        assert_eq!(names("articles").await, vec!["Ada Lovelace"; 5]);

        // A write that does not touch the copied field queues nothing.
        versioning::update_one::<Author>(
            &db,
            "a1",
            doc! { "$set": { "schema_version": 1 } },
            RetryPolicy::default(),
        )
        .await
        .unwrap();
        assert_eq!(denormalized::lag(&db).await.unwrap().pending, 0);
    });
}
