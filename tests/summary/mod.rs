//! Summaries on a real server: documents maintained from another model's writes,
//! sync and async, by elements of an array, over the whole collection and per day;
//! exact under concurrent writers, killed workers and foreign writes; recounted by
//! `reconcile`.

// clippy's `duplicated_attributes` reads the same key in two `#[access]` rows as a
// repeated attribute.
#![allow(clippy::duplicated_attributes)]

use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::summary::{self, SummarySpec};
use docshape::{Embedded, Model};
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::Database;
use serde::{Deserialize, Serialize};

mod appends;
mod basics;
mod cached;
mod concurrent;
mod copies;
mod cost;
mod foreign;
mod guess;
mod hostile;
mod queue;
mod sessions;
mod soft_delete;
mod variant;
mod versioned;

/// The source: an order whose items come from several sellers.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_orders", transactions)]
#[index(keys("items.seller_id"))]
#[access(name = "add_item", filter(_id), update(push(items)))]
#[access(name = "remove_item", filter(_id), update(pull(items)))]
#[access(name = "set_items", filter(_id), update(set(items)))]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: String,
    pub customer_id: String,
    pub created_at: DateTime,
    #[embed(max = 50, reason = "a cart holds a few dozen items at most")]
    pub items: Vec<Item>,
}

/// One item of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Item {
    pub seller_id: String,
    pub sku: String,
    pub qty: i64,
    pub line_cents: i64,
}

/// Totals by seller, kept by a worker within five minutes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sm_seller_sales")]
#[summary(of = Order, group(items.seller_id), refresh = "async", max_stale = "5m")]
#[access(name = "sales_of_seller", filter(_id), consistency = "eventual ok")]
pub struct SellerSales {
    #[serde(rename = "_id")]
    pub seller_id: String,
    #[summary(count)]
    pub orders: i64,
    #[summary(sum = "items.qty")]
    pub units: i64,
    #[summary(sum = "items.line_cents")]
    pub total_cents: i64,
    #[summary(max = "items.line_cents")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub biggest_line: Option<i64>,
    #[summary(min = "created_at")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sale: Option<DateTime>,
}

/// The same totals, kept in the writing call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sm_seller_sales_now")]
#[summary(of = Order, group(items.seller_id), refresh = "sync")]
pub struct SellerSalesNow {
    #[serde(rename = "_id")]
    pub seller_id: String,
    #[summary(count)]
    pub orders: i64,
    #[summary(sum = "items.qty")]
    pub units: i64,
    #[summary(max = "items.line_cents")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub biggest_line: Option<i64>,
}

/// One document over every order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sm_all_orders")]
#[summary(of = Order, group(), refresh = "sync")]
pub struct AllOrders {
    #[serde(rename = "_id")]
    pub id: String,
    #[summary(count)]
    pub orders: i64,
    #[summary(sum = "items.qty")]
    pub units: i64,
}

/// Orders per day of creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sm_daily")]
#[summary(of = Order, group(period(created_at, "day")), refresh = "sync")]
pub struct DailyOrders {
    #[serde(rename = "_id")]
    pub day: DateTime,
    #[summary(count)]
    pub orders: i64,
    #[summary(sum = "items.line_cents")]
    pub total_cents: i64,
}

/// Per customer and seller: a composite key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sm_customer_seller")]
#[summary(of = Order, group(customer_id, items.seller_id), refresh = "async", max_stale = "1m")]
pub struct CustomerSeller {
    #[serde(rename = "_id")]
    pub key: CustomerSellerKey,
    #[summary(count)]
    pub orders: i64,
    #[summary(sum = "items.qty")]
    pub units: i64,
}

/// The composite key: the parts by their path's last segment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct CustomerSellerKey {
    pub customer_id: String,
    pub seller_id: String,
}

pub fn spec(collection: &str) -> &'static SummarySpec {
    summary::summary(collection).unwrap()
}

pub const SUMMARIES: [&str; 5] =
    ["sm_seller_sales", "sm_seller_sales_now", "sm_all_orders", "sm_daily", "sm_customer_seller"];

pub async fn setup(hint: &str) -> testkit::TestDb {
    let db = testkit::database(hint).await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    // With its validator, which refuses a summary document of a foreign shape; the
    // other summaries have none.
    docshape::sync::<SellerSales>(&db).await.unwrap();
    db
}

pub fn item(seller: &str, sku: &str, qty: i64, cents: i64) -> Item {
    Item { seller_id: seller.into(), sku: sku.into(), qty, line_cents: cents }
}

pub fn at(s: &str) -> DateTime {
    DateTime::parse_rfc3339_str(s).unwrap()
}

pub fn order(id: &str, customer: &str, created: &str, items: Vec<Item>) -> Order {
    Order { id: id.into(), customer_id: customer.into(), created_at: at(created), items }
}

pub async fn all(db: &Database, collection: &str) -> Vec<Document> {
    db.collection::<Document>(collection)
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

pub async fn one(db: &Database, collection: &str, id: impl Into<Bson>) -> Option<Document> {
    db.collection::<Document>(collection).find_one(doc! { "_id": id.into() }).await.unwrap()
}

/// Asserts every summary equals a recount of the source (no drift).
pub async fn assert_no_drift(db: &Database) {
    for name in SUMMARIES {
        let report = summary::check(db, spec(name)).await.unwrap();
        assert!(report.drifted.is_empty(), "{name} drifts: {:#?}", report.drifted);
    }
}
