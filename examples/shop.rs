//! The shop: docshape's whole modelling story, end to end, on a real server.
//!
//! 1. The model is plain serde structs with attributes: customers, products and
//!    orders, with embedded addresses and line items, a tagged payment enum and a
//!    historical snapshot of the customer's name on each order (patterns-en's
//!    `user_name`: "historical snapshot is correct here").
//! 2. docshape generates each collection's `$jsonSchema` validator, before any data
//!    exists (printed below as JSON).
//! 3. `sync` creates the collections with their validators; a second `sync` changes
//!    nothing.
//! 4. The application writes through typed collections; anything else that writes
//!    meets the same rules on the server.
//! 5. Each collection declares its access patterns (the seed's table) and its indexes;
//!    the compiler refuses a pattern no index serves, and `explain` on the real server
//!    confirms every pattern uses the index chosen at compile time.
//!
//! Run: `cargo run -p docshape-examples --example shop` (no server needed: the testkit
//! starts a local one; set `MONGODB_URI` to use a real mongod).

// clippy's `duplicated_attributes` reads equal keys in different `#[access]` rows
// (two `consistency = "eventual ok"`) as duplicates; it is a known false positive for
// derive helper attributes (rust-clippy#13238).
#![allow(clippy::duplicated_attributes)]

use bson::oid::ObjectId;
use bson::{doc, DateTime, Document};
use docshape::{Embedded, Model};
use docshape_examples::{fresh_database, why};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "customers", strict)]
#[access(
    name = "customer_by_email",
    operation = "Sign in by email, any case",
    filter(email(case_insensitive)),
    fields(name, tier),
    freq = "20 r/s",
    consistency = "strong"
)]
struct Customer {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[validate(min_length = 1, max_length = 80)]
    name: String,
    #[validate(pattern = r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$")]
    #[index(unique, case_insensitive)]
    email: String,
    address: Address,
    tier: Tier,
    created_at: DateTime,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
#[embedded(strict)]
struct Address {
    street: String,
    city: String,
    #[validate(pattern = "^[0-9]{5}$")]
    postcode: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
#[serde(rename_all = "lowercase")]
enum Tier {
    Standard,
    Gold,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "products", strict)]
#[access(
    name = "product_by_sku",
    operation = "Product page",
    filter(_id),
    fields(name, price_cents),
    freq = "800 r/s",
    consistency = "eventual ok"
)]
#[access(
    name = "products_by_tag",
    operation = "Browse a tag, cheapest first",
    filter(tags),
    sort(price_cents = 1),
    freq = "100 r/s",
    consistency = "eventual ok"
)]
#[index(keys(tags, price_cents))]
struct Product {
    #[serde(rename = "_id")]
    #[validate(pattern = "^[A-Z]-[0-9]+$")]
    sku: String,
    #[validate(min_length = 2, max_length = 120)]
    name: String,
    #[validate(minimum = 1)]
    price_cents: u32,
    #[validate(max_items = 10, unique_items)]
    tags: Vec<String>,
    attributes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "orders", strict)]
#[index(keys(user_id, created_at = -1))]
#[index(keys(status, created_at))]
#[access(
    name = "load_order",
    operation = "Load order page",
    filter(_id),
    fields(items, status, user_name),
    freq = "500 r/s",
    consistency = "read-your-writes"
)]
#[access(
    name = "orders_of_customer",
    operation = "A customer's orders, newest first",
    filter(user_id),
    sort(created_at = -1),
    fields(_id, status, total_cents),
    freq = "50 r/s",
    consistency = "read-your-writes"
)]
#[access(
    name = "orders_to_ship",
    operation = "Paid orders since a time, for the warehouse",
    filter(status),
    range(created_at),
    fields(items),
    freq = "1 r/s",
    consistency = "eventual ok"
)]
struct Order {
    #[serde(rename = "_id")]
    id: String,
    user_id: ObjectId,
    created_at: DateTime,
    /// Copy of the customer's name at order time: a historical snapshot, never refreshed.
    user_name: String,
    status: Status,
    #[validate(min_items = 1, max_items = 100)]
    items: Vec<LineItem>,
    payment: Payment,
    #[validate(minimum = 0)]
    total_cents: i64,
    schema_version: i32,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
#[serde(rename_all = "lowercase")]
enum Status {
    Pending,
    Paid,
    Shipped,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
#[embedded(strict)]
struct LineItem {
    sku: String,
    #[validate(minimum = 1, maximum = 999)]
    qty: u16,
    unit_price_cents: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
#[serde(tag = "method", rename_all = "snake_case")]
enum Payment {
    Card {
        #[validate(pattern = "^[0-9]{4}$")]
        last4: String,
    },
    Transfer {
        reference: String,
    },
    CashOnDelivery,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("== 1. the validators, generated from the types (no database yet)");
    println!("orders: {}\n", Order::validator_json());

    let db = fresh_database("docshape_shop").await?;

    println!("== 2. sync creates each collection with its validator and indexes");
    for report in [
        docshape::sync::<Customer>(&db).await?,
        docshape::sync::<Product>(&db).await?,
        docshape::sync::<Order>(&db).await?,
    ] {
        println!("   {report}");
    }

    println!("== 3. the application writes through typed collections");
    let alice = Customer {
        id: ObjectId::new(),
        name: "Alice".into(),
        email: "alice@example.com".into(),
        address: Address { street: "1 Main St".into(), city: "Springfield".into(), postcode: "12345".into() },
        tier: Tier::Gold,
        created_at: DateTime::now(),
    };
    Customer::collection(&db).insert_one(&alice).await?;
    let products = [
        Product {
            sku: "A-1".into(),
            name: "Espresso cup".into(),
            price_cents: 1250,
            tags: vec!["kitchen".into()],
            attributes: BTreeMap::from([("color".into(), "white".into())]),
        },
        Product {
            sku: "B-7".into(),
            name: "Tea towel".into(),
            price_cents: 800,
            tags: vec![],
            attributes: BTreeMap::new(),
        },
    ];
    Product::collection(&db).insert_many(&products).await?;
    let order = Order {
        id: "ord_81".into(),
        user_id: alice.id,
        created_at: DateTime::now(),
        user_name: alice.name.clone(),
        status: Status::Paid,
        items: vec![
            LineItem { sku: "A-1".into(), qty: 2, unit_price_cents: 1250 },
            LineItem { sku: "B-7".into(), qty: 1, unit_price_cents: 800 },
        ],
        payment: Payment::Card { last4: "4242".into() },
        total_cents: 3300,
        schema_version: 1,
    };
    Order::collection(&db).insert_one(&order).await?;
    println!("   stored customer {}, {} products, order {}", alice.name, products.len(), order.id);

    println!("== 4. writes from anywhere else meet the same rules");
    let orders = db.collection::<Document>("orders");
    let mut good = bson::to_document(&order)?;
    good.insert("_id", "ord_82");
    let attempts = [
        ("an order with no items", {
            let mut d = good.clone();
            d.insert("items", bson::Bson::Array(vec![]));
            d
        }),
        ("a status the enum does not have", {
            let mut d = good.clone();
            d.insert("status", "lost");
            d
        }),
        ("a card payment without last4", {
            let mut d = good.clone();
            d.insert("payment", doc! { "method": "card" });
            d
        }),
        ("a field the model does not have (strict)", {
            let mut d = good.clone();
            d.insert("coupon", "FREE");
            d
        }),
        ("qty as a string", {
            let mut d = good.clone();
            d.insert("items", bson::bson!([{ "sku": "A-1", "qty": "2", "unit_price_cents": 1250_i64 }]));
            d
        }),
    ];
    for (what, document) in attempts {
        match orders.insert_one(document).await {
            Ok(_) => return Err(format!("the server admitted {what}").into()),
            Err(e) => println!("   rejected {what}: {}", why(&e)),
        }
    }
    orders.insert_one(good).await?;
    println!("   admitted the well-formed order ord_82");

    println!("== 5. every access pattern is served by the index chosen at compile time");
    print!(
        "{}",
        docshape::access::access_tables(&[
            (Customer::COLLECTION, Customer::ACCESS_PATTERNS),
            (Product::COLLECTION, Product::ACCESS_PATTERNS),
            (Order::COLLECTION, Order::ACCESS_PATTERNS),
        ])
    );
    let mut outcomes = docshape::access::explain_access_patterns::<Customer>(&db).await?;
    outcomes.extend(docshape::access::explain_access_patterns::<Product>(&db).await?);
    outcomes.extend(docshape::access::explain_access_patterns::<Order>(&db).await?);
    for outcome in &outcomes {
        if !outcome.is_served() {
            return Err(format!("explain disagrees: {outcome}").into());
        }
        println!("   explain {outcome}");
    }

    println!("== 6. sync is idempotent");
    for report in [
        docshape::sync::<Customer>(&db).await?,
        docshape::sync::<Product>(&db).await?,
        docshape::sync::<Order>(&db).await?,
    ] {
        assert!(report.is_unchanged());
        println!("   {report}");
    }

    let read_back: Vec<Order> = {
        use futures_util::TryStreamExt;
        Order::collection(&db).find(doc! {}).await?.try_collect().await?
    };
    println!("== done: {} orders stored, every one of them valid", read_back.len());
    Ok(())
}
