//! The seed's access-pattern table on a real server, from the generated API only:
//!
//! | # | Operation | Fields needed | Freq | Consistency |
//! |---|---|---|---|---|
//! | 1 | Load order page | order, items, shipping status | 500 r/s | read-your-writes |
//! | 2 | Add item to cart | cart items | 50 w/s | strong (same doc) |
//! | 3 | Seller sales list | order ids, totals by seller | 5 r/s | eventual ok |
//!
//! Rows 1 and 2 are the order's access table. Row 3 is two lookups: the seller's
//! order ids, a paginated row over `items.seller_id`, and the seller's totals, one
//! `_id` lookup of a summary (`#[summary(of = Order, group(items.seller_id), ...)]`)
//! that docshape keeps from every write of an order: the writers queue the order, a
//! worker applies its delta within `max_stale`.
//!
//! Run: `cargo run -p docshape-examples --example marketplace`.

// clippy's `duplicated_attributes` reads the same key in two `#[access]` rows as a
// repeated attribute.
#![allow(clippy::duplicated_attributes)]

use docshape::bson::DateTime;
use docshape::denormalized::{self, Worker};
use docshape::summary;
use docshape::{relation, Embedded, Model};
use docshape_examples::fresh_database;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "orders")]
#[index(keys("items.seller_id", _id))]
#[access(
    name = "order_page",
    operation = "Load order page",
    filter(_id),
    freq = "500 r/s",
    consistency = "read-your-writes"
)]
#[access(
    name = "add_item",
    operation = "Add item to cart",
    filter(_id),
    update(push(items)),
    freq = "50 w/s",
    consistency = "strong (same doc)"
)]
#[access(
    name = "orders_of_seller",
    operation = "Seller sales list: order ids",
    filter("items.seller_id"),
    sort(_id = 1),
    fields(_id),
    freq = "5 r/s",
    consistency = "eventual ok",
    paginate
)]
struct Order {
    #[serde(rename = "_id")]
    id: String,
    user_id: String,
    status: String,
    created_at: DateTime,
    #[embed(max = 50, reason = "1:few, read and updated together")]
    items: Vec<Item>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Item {
    sku: String,
    seller_id: String,
    qty: i64,
    line_cents: i64,
}

/// Seller sales list: totals by seller, kept from the orders' writes.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "seller_sales")]
#[summary(of = Order, group(items.seller_id), refresh = "async", max_stale = "5m")]
#[access(
    name = "sales_of_seller",
    operation = "Seller sales list: totals",
    filter(_id),
    freq = "5 r/s",
    consistency = "eventual ok"
)]
struct SellerSales {
    #[serde(rename = "_id")]
    seller_id: String,
    /// Orders with at least one item of the seller.
    #[summary(count)]
    orders: i64,
    #[summary(sum = "items.qty")]
    units: i64,
    #[summary(sum = "items.line_cents")]
    total_cents: i64,
    #[summary(max = "created_at")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_sale: Option<DateTime>,
}

fn item(sku: &str, seller: &str, qty: i64, unit_cents: i64) -> Item {
    Item { sku: sku.into(), seller_id: seller.into(), qty, line_cents: qty * unit_cents }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_marketplace").await?;
    docshape::sync::<Order>(&db).await?;
    docshape::sync::<SellerSales>(&db).await?;

    // Orders placed through docshape: each insert queues the order for its summary.
    let start = 1_785_000_000_000;
    for n in 0..12 {
        let seller = ["acme", "globex", "initech"][n % 3];
        let mut order = Order {
            id: format!("ord_{n:02}"),
            user_id: "u_42".into(),
            status: "paid".into(),
            created_at: DateTime::from_millis(start + n as i64 * 60_000),
            items: vec![item("A-1", seller, 2, 1250), item("B-7", "acme", 1, 500)],
        };
        relation::insert_one(&db, &mut order).await?;
    }

    // Row 2: add an item to a cart (one update by `_id`; the summary is queued).
    Order::add_item("ord_01", item("C-3", "initech", 3, 990)).run(&db).await?;
    // Row 1: the order page, read back.
    let page = Order::order_page("ord_01").one(&db).await?.expect("the order exists");
    println!("order page: {} ({}), {} items", page.id, page.status, page.items.len());

    // The summary's jobs wait in the refresh queue the async copies use; its one worker
    // and lag report serve both.
    let lag = denormalized::lag(&db).await?;
    let sales = lag.by_summary.get("seller_sales").map_or(0, |l| l.pending);
    println!("refresh queue: {} orders pending for seller_sales, {} overdue", sales, lag.overdue);
    let run = Worker::new(&db).run_until_empty().await?;
    println!("worker: {} orders applied, {} seller documents written", run.jobs, run.groups_written);

    // Row 3: the seller's order ids, a page at a time, and the seller's totals.
    for seller in ["acme", "initech"] {
        let first = Order::orders_of_seller(seller).page_size(4).fetch(&db).await?;
        let ids: Vec<&str> = first.items.iter().map(|o| o.id.as_str()).collect();
        println!("{seller}: orders {ids:?}{}", if first.next.is_some() { " ..." } else { "" });
        let totals = SellerSales::sales_of_seller(seller).one(&db).await?.expect("the seller sold");
        println!(
            "{seller}: {} orders, {} units, {:.2} total, {:.2} per order, last sale {:?}",
            totals.orders,
            totals.units,
            totals.total_cents as f64 / 100.0,
            totals.avg_total_cents().unwrap_or(0.0) / 100.0,
            totals.last_sale.map(|d| d.try_to_rfc3339_string().unwrap_or_default()),
        );
    }
    // The totals agree with a recount of the orders.
    for spec in summary::summaries() {
        let report = summary::check(&db, spec).await?;
        println!("check {}: {} groups, {} drifting", spec.collection, report.groups, report.drifted.len());
        assert!(report.drifted.is_empty());
    }
    Ok(())
}
