//! The access-pattern table as the application's query and update API, on a real
//! server: every row's generated method sends one command whose filter, sort and
//! projection are asserted from command monitoring; operator values match nothing;
//! views hold exactly their fields; a bounded push holds its bound under concurrent
//! writers.

// See tests/index/mod.rs: a clippy false positive on repeated helper-attribute keys.
#![allow(clippy::duplicated_attributes)]

mod bounds;
mod cache;
mod finder;
pub(crate) mod literal;
mod upsert;
mod whole;
mod write;

use bson::DateTime;
use docshape::bson;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

/// One line of a cart or order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Line {
    pub sku: String,
    pub qty: i32,
}

/// A customer reference as the orders store it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Buyer {
    pub id: String,
    #[validate(max_length = 80)]
    pub name: String,
}

/// Orders, with a read row per kind of terminal call and a write row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "access_orders")]
#[index(keys(customer_id, created_at = -1))]
#[index(keys(status, created_at))]
#[index(keys("buyer.id", created_at = -1))]
#[access(
    name = "load_order",
    operation = "Load order page",
    filter(_id),
    fields(lines, status, buyer),
    freq = "500 r/s",
    consistency = "strong"
)]
#[access(
    name = "orders_of_customer",
    operation = "A customer's orders, newest first",
    filter(customer_id),
    sort(created_at = -1),
    fields(_id, status, total),
    view(name = OrderRow, derive(Debug, Clone, PartialEq)),
    freq = "50 r/s",
    consistency = "eventual ok"
)]
#[access(name = "orders_of_buyer", filter("buyer.id"), sort(created_at = -1), consistency = "eventual ok")]
#[access(
    name = "orders_since",
    operation = "Orders in a status since a time",
    filter(status),
    range(created_at),
    consistency = "eventual ok"
)]
#[access(
    name = "add_line",
    operation = "Add a line to an order",
    filter(_id),
    update(push(lines), inc(total)),
    freq = "50 w/s",
    consistency = "strong (same doc)"
)]
#[access(name = "set_status", filter(_id), update(set(status)), consistency = "strong (same doc)")]
#[access(
    name = "close_latest",
    operation = "Close a customer's newest order",
    filter(customer_id),
    sort(created_at = -1),
    update(set(status))
)]
#[access(name = "drop_line", filter(_id), update(pull(lines)), consistency = "strong (same doc)")]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: String,
    pub customer_id: String,
    pub buyer: Buyer,
    pub created_at: DateTime,
    #[validate(max_length = 16)]
    pub status: String,
    #[embed(max = 5, reason = "a cart holds a few lines")]
    pub lines: Vec<Line>,
    #[serde(rename = "total")]
    pub total_cents: i64,
}

pub fn order(id: &str, customer: &str, minutes: i64, status: &str) -> Order {
    Order {
        id: id.to_owned(),
        customer_id: customer.to_owned(),
        buyer: Buyer { id: customer.to_owned(), name: format!("{customer} name") },
        created_at: DateTime::from_millis(1_700_000_000_000 + minutes * 60_000),
        status: status.to_owned(),
        lines: vec![Line { sku: "A-1".into(), qty: 1 }],
        total_cents: 100,
    }
}
