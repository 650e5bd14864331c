//! The shop: docshape's whole modelling story, end to end, on a real server.
//!
//! 1. The model is plain serde structs with attributes (in `examples/shop-models`):
//!    customers, products and orders, with embedded addresses and line items, a
//!    tagged payment enum and a historical snapshot of the customer's name on each
//!    order (patterns-en's `user_name`: "historical snapshot is correct here").
//! 2. docshape generates each collection's `$jsonSchema` validator, before any data
//!    exists (printed below as JSON); `examples/shop-schema` writes them as files at
//!    build time.
//! 3. `sync_all` creates every registered collection with its validator and indexes;
//!    no model is listed by hand.
//! 4. The application writes through typed collections; anything else that writes
//!    meets the same rules on the server.
//! 5. Each collection declares its access patterns (the seed's table) and its indexes;
//!    the compiler refuses a pattern no index serves, and `explain` on the real server
//!    confirms every pattern uses the index chosen at compile time.
//! 6. The table is the application's query and update API: every read below is a
//!    generated finder returning the row's view (one command, projected), every
//!    update a generated write row (one `update`; the cart's bound holds), and
//!    the product page reads through its Redis cache. The example writes no query or
//!    update of its own; `Model::collection(db)` (the escape hatch) only inserts.
//! 7. `check` finds an index dropped by hand; `sync` puts it back, and a second
//!    `sync` changes nothing.
//! 8. Each relation is a stated decision (embed, reference or copy, with its bound,
//!    refresh policy and reason): the table is printed; the customer is renamed
//!    through its write row, and the order keeps its snapshot.
//!
//! Run: `cargo run -p docshape-examples --example shop` (no server needed: the testkit
//! starts a local MongoDB-wire server and a redis-server; set `MONGODB_URI` and
//! `REDIS_URL` to use real ones).

use docshape::access::UpdateError;
use docshape::bson;
use docshape::bson::oid::ObjectId;
use docshape::bson::{doc, DateTime, Document};
use docshape::keys::KeyFamily;
use docshape::refs::Ref;
use docshape::Model;
use docshape_examples::{fresh_database, why};
use docshape_testkit::CommandLog;
use shop_models::{Address, Customer, LineItem, Order, Payment, Product, ProductCache, Status, Tier};
use std::collections::BTreeMap;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("== 1. the validators, generated from the types (no database yet)");
    println!("orders: {}\n", Order::validator_json());

    let db = fresh_database("docshape_shop").await?;

    println!("== 2. sync_all creates every registered collection with its validator and indexes");
    for report in docshape::sync_all(&db, Default::default()).await? {
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
    let mut order = Order {
        id: "ord_81".into(),
        user_id: Ref::new(alice.id),
        created_at: DateTime::now(),
        // Filled from the customer by `insert_one`: the copy's source is declared.
        user_name: String::new(),
        status: Status::Paid,
        items: vec![
            LineItem { sku: "A-1".into(), qty: 2, unit_price_cents: 1250 },
            LineItem { sku: "B-7".into(), qty: 1, unit_price_cents: 800 },
        ],
        payment: Payment::Card { last4: "4242".into() },
        total_cents: 3300,
        schema_version: 1,
    };
    docshape::relation::insert_one(&db, &mut order).await?;
    println!(
        "   stored customer {}, {} products, order {} (user_name copied: {:?})",
        alice.name,
        products.len(),
        order.id,
        order.user_name
    );

    println!("== 4. writes from anywhere else meet the same rules");
    let orders = db.collection::<Document>("orders");
    let mut good = docshape::bson_compat::to_document(&order)?;
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
    let tables: Vec<_> =
        docshape::registry::models().iter().map(|m| (m.collection, m.access_patterns)).collect();
    print!("{}", docshape::access::access_tables(&tables));
    let mut outcomes = docshape::access::explain_access_patterns::<Customer>(&db).await?;
    outcomes.extend(docshape::access::explain_access_patterns::<Product>(&db).await?);
    outcomes.extend(docshape::access::explain_access_patterns::<Order>(&db).await?);
    for outcome in &outcomes {
        if !outcome.is_served() {
            return Err(format!("explain disagrees: {outcome}").into());
        }
        println!("   explain {outcome}");
    }

    println!("== 6. the table is the API: generated finders and write rows, one command each");
    the_table_is_the_api(&alice, &order).await?;

    println!("== 7. check finds drift; sync repairs it and is then idempotent");
    db.run_command(doc! { "dropIndexes": Order::COLLECTION, "index": "status_1_created_at_1" }).await?;
    let drift: Vec<_> =
        docshape::check::check_all(&db).await?.into_iter().filter(|r| !r.is_clean()).collect();
    if drift.len() != 1 || drift[0].drift.len() != 1 {
        return Err(format!("check should find exactly the dropped index, found {drift:?}").into());
    }
    print!("   after dropping an index by hand: {}", drift[0]);
    for report in docshape::sync_all(&db, Default::default()).await? {
        println!("   {report}");
    }
    for report in docshape::sync_all(&db, Default::default()).await? {
        if !report.is_unchanged() {
            return Err(format!("a second sync changed something: {report}").into());
        }
    }
    if let Some(report) = docshape::check::check_all(&db).await?.into_iter().find(|r| !r.is_clean()) {
        return Err(format!("check after sync: {report}").into());
    }
    println!("   check: every collection matches the code");

    println!("== 8. embed, reference or copy: each relation's decision, and a rename");
    let relations: Vec<_> = docshape::registry::models()
        .iter()
        .filter(|m| !m.relations.is_empty())
        .map(|m| (m.collection, m.relations))
        .collect();
    print!("{}", docshape::relation::design_decisions(&relations));
    Customer::rename_customer(alice.id, "Alice Martin").run(&db).await?;
    let page = Order::load_order("ord_81").one(&db).await?.ok_or("order ord_81 is gone")?;
    if page.user_name != alice.name {
        return Err(format!("the snapshot changed: {:?}", page.user_name).into());
    }
    println!(
        "   renamed the customer with its write row; order ord_81 still says {:?}: a snapshot",
        page.user_name
    );
    let signed_in =
        Customer::customer_by_email("alice@example.com").one(&db).await?.ok_or("alice is gone")?;
    println!("   the customer is now {:?}", signed_in.name);

    let orders = Order::orders_of_customer(Ref::new(alice.id)).count(&db).await?;
    println!("== done: {orders} orders of Alice's stored, every one of them valid");
    Ok(())
}

/// Step 6, on its own client with command monitoring, so each call's commands are shown.
async fn the_table_is_the_api(alice: &Customer, order: &Order) -> Result<(), Box<dyn std::error::Error>> {
    let log = CommandLog::new();
    let client = docshape_testkit::monitored_client(&log).await?;
    let db = client.database("docshape_shop");
    let sent = |log: &CommandLog| log.take().into_iter().map(|(name, _)| name).collect::<Vec<_>>().join(", ");

    // Sign in by email, any case: the case-insensitive index serves it.
    let who = Customer::customer_by_email("ALICE@example.com").one(&db).await?.ok_or("no such customer")?;
    println!("   customer_by_email(\"ALICE@example.com\") -> {who:?}  [{}]", sent(&log));

    // The product page reads through Redis: a miss asks MongoDB and fills the key, a hit does not.
    let redis_server = docshape_testkit::redis::server()?;
    let mut redis = redis_server.database().await?;
    ProductCache { sku: "A-1".into() }.delete(&mut redis).await?;
    let page = Product::product_page("A-1").one(&db, &mut redis).await?.ok_or("no product A-1")?;
    println!(
        "   product_page(\"A-1\") miss -> {page:?}  [{}, then SET {} EX 300]",
        sent(&log),
        ProductCache { sku: "A-1".into() }.key()
    );
    let again = Product::product_page("A-1").one(&db, &mut redis).await?;
    println!("   product_page(\"A-1\") hit  -> {again:?}  [{} MongoDB commands]", log.take().len());
    Product::reprice("A-1", 1100_u32).run(&db, &mut redis).await?;
    let repriced = Product::product_page("A-1").one(&db, &mut redis).await?.ok_or("no product A-1")?;
    println!("   reprice(\"A-1\", 1100) deleted the key; the next read -> {repriced:?}");
    log.clear();

    // Browsing a tag, cheapest first: the view holds three fields, projected by the server.
    let cards = Product::products_by_tag("kitchen").first(10, &db).await?;
    println!("   products_by_tag(\"kitchen\").first(10) -> {cards:?}  [{}]", sent(&log));

    // Add items to the order: one update each, guarded by the embed bound (100).
    let item = LineItem { sku: "B-7".into(), qty: 1, unit_price_cents: 800 };
    let done = Order::add_item(order.id.clone(), item.clone(), 800_i64).run(&db).await?;
    println!("   add_item(\"{}\", B-7) -> {:?}  [{}]", order.id, done.id, sent(&log));
    let page = Order::load_order(order.id.clone()).one(&db).await?.ok_or("the order is gone")?;
    println!(
        "   load_order(\"{}\") -> {} items, {} cents, status {:?}  [{}]",
        order.id,
        page.items.len(),
        page.total_cents,
        page.status,
        sent(&log)
    );
    match Order::add_item("ord_404".to_owned(), item, 800_i64).run(&db).await {
        Err(UpdateError::NotFound { .. }) => {
            println!("   add_item on a missing order -> NotFound, nothing written")
        }
        other => return Err(format!("add_item on a missing order answered {other:?}").into()),
    }
    log.clear();

    // A customer's orders, newest first, and the warehouse's range query.
    let mine = Order::orders_of_customer(Ref::new(alice.id)).first(20, &db).await?;
    println!("   orders_of_customer(alice).first(20) -> {mine:?}  [{}]", sent(&log));
    let since = DateTime::from_millis(DateTime::now().timestamp_millis() - 3_600_000);
    let to_ship = Order::orders_to_ship(Status::Paid, since..).count(&db).await?;
    println!("   orders_to_ship(paid, last hour..).count() -> {to_ship}  [{}]", sent(&log));
    Order::set_status(order.id.clone(), Status::Shipped).run(&db).await?;
    let to_ship = Order::orders_to_ship(Status::Paid, since..).count(&db).await?;
    println!("   set_status(\"{}\", shipped); orders_to_ship(paid, ..).count() -> {to_ship}", order.id);
    Ok(())
}
