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
//! 6. `check` finds an index dropped by hand; `sync` puts it back, and a second
//!    `sync` changes nothing.
//! 7. Each relation is a stated decision (embed, reference or copy, with its bound,
//!    refresh policy and reason): the table is printed; the customer is renamed
//!    through the source's update API, and the order keeps its snapshot.
//!
//! Run: `cargo run -p docshape-examples --example shop` (no server needed: the testkit
//! starts a local one; set `MONGODB_URI` to use a real mongod).

use docshape::bson;
use docshape::bson::oid::ObjectId;
use docshape::bson::{doc, DateTime, Document};
use docshape::refs::Ref;
use docshape::Model;
use docshape_examples::{fresh_database, why};
use shop_models::{Address, Customer, LineItem, Order, Payment, Product, Status, Tier};
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

    println!("== 6. check finds drift; sync repairs it and is then idempotent");
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

    println!("== 7. embed, reference or copy: each relation's decision, and a rename");
    let relations: Vec<_> = docshape::registry::models()
        .iter()
        .filter(|m| !m.relations.is_empty())
        .map(|m| (m.collection, m.relations))
        .collect();
    print!("{}", docshape::relation::design_decisions(&relations));
    let renamed =
        docshape::copies::update_one::<Customer>(&db, &alice.id, doc! { "$set": { "name": "Alice Martin" } })
            .await?;
    let stored =
        Order::collection(&db).find_one(doc! { "_id": "ord_81" }).await?.ok_or("order ord_81 is gone")?;
    if stored.user_name != alice.name {
        return Err(format!("the snapshot changed: {:?}", stored.user_name).into());
    }
    println!(
        "   renamed the customer ({} copies rewritten, {} queued); order {} still says {:?}: a snapshot",
        renamed.documents_updated(),
        renamed.jobs_enqueued(),
        stored.id,
        stored.user_name
    );
    let customer = stored.user_id.load(&db).await?.ok_or("the order's customer is gone")?;
    println!("   the order's reference loads its customer, now {:?}", customer.name);

    let read_back: Vec<Order> = {
        use futures_util::TryStreamExt;
        Order::collection(&db).find(doc! {}).await?.try_collect().await?
    };
    println!("== done: {} orders stored, every one of them valid", read_back.len());
    Ok(())
}
