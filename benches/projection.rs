//! BSON bytes a read row moves with its projection (`fields(...)`: the generated view)
//! and without it (whole documents), on the shop's read rows, with realistic
//! documents: an order of 12 lines, a product with a long description and 20
//! attributes; and a paginated row (the seed's "posts by user, newest first", fields
//! needed: title and created_at), whose pages read its view.
//!
//! Each row runs once each way on the same filter, sort and limit; the bytes are the
//! replies' BSON sizes as the driver's command monitoring reports them (what crossed
//! the connection, cursor envelope included). `cargo bench -p docshape-benches --bench
//! projection` prints the table; under `cargo test` it runs the same and checks that
//! every projected read moves fewer bytes.

use docshape::bson;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bson::{doc, oid::ObjectId, DateTime, Document};
use docshape::refs::Ref;
use docshape::Model;
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;
use shop_models::{Address, Customer, LineItem, Order, Payment, Product, Status, Tier};

/// The seed's feed: a post with a body the feed does not show.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Model)]
#[model(collection = "bench_posts")]
#[index(keys(author_id, created_at = -1, _id = -1))]
#[access(
    name = "posts_by_author",
    operation = "Posts by user, newest first",
    filter(author_id),
    sort(created_at = -1),
    fields(title, created_at),
    freq = "500 r/s",
    paginate
)]
struct Post {
    #[serde(rename = "_id")]
    id: String,
    author_id: String,
    title: String,
    body: String,
    created_at: DateTime,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bytes = Arc::new(AtomicUsize::new(0));
    let counter = bytes.clone();
    let handler = EventHandler::callback(move |e: CommandEvent| {
        if let CommandEvent::Succeeded(s) = e {
            counter.fetch_add(
                docshape::bson_compat::to_vec(&s.reply).map(|v| v.len()).unwrap_or(0),
                Ordering::SeqCst,
            );
        }
    });
    let client = testkit::server()?.client_with(|o| o.command_event_handler = Some(handler)).await?;
    let db = client.database("docshape_bench_projection");
    db.drop().await?;
    docshape::sync_all(&db, Default::default()).await?;

    let alice = Customer {
        id: ObjectId::new(),
        name: "Alice Martin".into(),
        email: "alice@example.com".into(),
        address: Address {
            street: "1 Main Street, Flat 4".into(),
            city: "Springfield".into(),
            postcode: "12345".into(),
        },
        tier: Tier::Gold,
        created_at: DateTime::now(),
    };
    Customer::collection(&db).insert_one(&alice).await?;
    let products: Vec<Product> = (0..40)
        .map(|i| Product {
            sku: format!("A-{i}"),
            name: format!("Product number {i}"),
            price_cents: 100 + i,
            tags: vec!["kitchen".into(), format!("t{}", i % 4)],
            attributes: (0..20)
                .map(|k| (format!("attribute_{k}"), format!("value {k} of product {i}")))
                .collect::<BTreeMap<_, _>>(),
        })
        .collect();
    Product::collection(&db).insert_many(&products).await?;
    let orders: Vec<Order> = (0..30)
        .map(|i| Order {
            id: format!("ord_{i}"),
            user_id: Ref::new(alice.id),
            created_at: DateTime::from_millis(DateTime::now().timestamp_millis() - i * 60_000),
            user_name: alice.name.clone(),
            status: if i % 2 == 0 { Status::Paid } else { Status::Shipped },
            items: (0..12)
                .map(|k| LineItem { sku: format!("A-{k}"), qty: 1 + k as u16, unit_price_cents: 100 })
                .collect(),
            payment: Payment::Card { last4: "4242".into() },
            total_cents: 7800,
            schema_version: 1,
        })
        .collect();
    Order::collection(&db).insert_many(&orders).await?;
    docshape::sync::<Post>(&db).await?;
    let posts: Vec<Post> = (0..30)
        .map(|i| Post {
            id: format!("p_{i:02}"),
            author_id: "u_42".into(),
            title: format!("A post of a title of some length, number {i}"),
            body: "A paragraph of the post's text, repeated. ".repeat(40),
            created_at: DateTime::from_millis(DateTime::now().timestamp_millis() - i * 60_000),
        })
        .collect();
    Post::collection(&db).insert_many(&posts).await?;

    // Bytes moved since the last call.
    let mut mark = 0;
    let mut taken = || {
        let now = bytes.load(Ordering::SeqCst);
        let delta = now - mark;
        mark = now;
        delta
    };
    async fn whole(
        db: &mongodb::Database,
        collection: &str,
        filter: Document,
        sort: Option<Document>,
        limit: i64,
    ) -> mongodb::error::Result<usize> {
        let collection = db.collection::<Document>(collection);
        let mut find = collection.find(filter).limit(limit);
        if let Some(sort) = sort {
            find = find.sort(sort);
        }
        Ok(find.await?.try_collect::<Vec<_>>().await?.len())
    }
    let since = DateTime::from_millis(0);
    let mut rows = Vec::new();
    taken();
    let n = Order::load_order("ord_3").first(1, &db).await?.len();
    let p = taken();
    let m = whole(&db, Order::COLLECTION, doc! { "_id": "ord_3" }, None, 1).await?;
    rows.push(("load_order (1 order)", n, p, m, taken()));
    let n = Order::orders_of_customer(Ref::new(alice.id)).first(20, &db).await?.len();
    let p = taken();
    let m = whole(&db, Order::COLLECTION, doc! { "user_id": alice.id }, Some(doc! { "created_at": -1 }), 20)
        .await?;
    rows.push(("orders_of_customer (first 20)", n, p, m, taken()));
    let n = Order::orders_to_ship(Status::Paid, since..).first(20, &db).await?.len();
    let p = taken();
    let m =
        whole(&db, Order::COLLECTION, doc! { "status": "paid", "created_at": { "$gte": since } }, None, 20)
            .await?;
    rows.push(("orders_to_ship (first 20)", n, p, m, taken()));
    let n = Product::products_by_tag("kitchen").first(20, &db).await?.len();
    let p = taken();
    let m = whole(&db, Product::COLLECTION, doc! { "tags": "kitchen" }, Some(doc! { "price_cents": 1 }), 20)
        .await?;
    rows.push(("products_by_tag (first 20)", n, p, m, taken()));
    let n = Customer::customer_by_email("alice@example.com").first(1, &db).await?.len();
    let p = taken();
    let m = whole(&db, Customer::COLLECTION, doc! { "email": "alice@example.com" }, None, 1).await?;
    rows.push(("customer_by_email (1 customer)", n, p, m, taken()));
    let n = Post::posts_by_author("u_42").page_size(20).fetch(&db).await?.items.len();
    let p = taken();
    // The page's own `find` reads one more than the page, to know whether another
    // follows: the whole-document read asks for the same.
    let m = whole(
        &db,
        Post::COLLECTION,
        doc! { "author_id": "u_42" },
        Some(doc! { "created_at": -1, "_id": -1 }),
        21,
    )
    .await?
    .min(20);
    rows.push(("posts_by_author (a page of 20, paginated)", n, p, m, taken()));

    println!(
        "| read row | documents | bytes, projected (view) | bytes, whole documents | projected / whole |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (name, n, projected, m, whole) in &rows {
        assert_eq!(n, m, "{name}: both reads return the same documents");
        assert!(*n > 0, "{name}: the read finds documents");
        println!("| {name} | {n} | {projected} | {whole} | {:.2}x |", *projected as f64 / *whole as f64);
        assert!(projected < whole, "{name}: the projection reads less");
    }
    Ok(())
}
