//! The shop's data model: customers, products and orders, with embedded addresses and
//! line items, a tagged payment enum and a historical snapshot of the customer's name on
//! each order (patterns-en's `user_name`: "historical snapshot is correct here").
//!
//! Its Redis key families sit beside the collections, so the catalog is exported with
//! the rest.
//!
//! The access-pattern table is the application's API: each read row is a typed
//! finder returning the row's view (`Order::load_order(id)` -> `LoadOrderView`),
//! each `update(...)` row a typed single-command update, and the product page reads
//! through its Redis cache. The shop example calls nothing else.
//!
//! One crate for the models, so the shop example, the deploy tool `shopctl` and the
//! build script that writes the artifacts (`examples/shop-schema`) share them.

// clippy's `duplicated_attributes` reads equal keys in different `#[access]` rows
// (two `consistency = "eventual ok"`) as duplicates; it is a known false positive for
// derive helper attributes (rust-clippy#13238).
#![allow(clippy::duplicated_attributes)]

use docshape::bson::oid::ObjectId;
use docshape::bson::DateTime;
use docshape::refs::Ref;
use docshape::{Embedded, KeyFamily, Model};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A customer, signed in by email.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "customers", strict)]
#[access(
    name = "customer_by_email",
    operation = "Sign in by email, any case",
    filter(email(case_insensitive)),
    fields(name, tier),
    view(name = SignIn, derive(Debug, Clone)),
    freq = "20 r/s",
    consistency = "strong"
)]
#[access(
    name = "rename_customer",
    operation = "Change a customer's display name",
    filter(_id),
    update(set(name)),
    freq = "1 w/s",
    consistency = "strong (same doc)"
)]
pub struct Customer {
    /// The customer's id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// Display name.
    #[validate(min_length = 1, max_length = 80)]
    pub name: String,
    /// Sign-in email, unique whatever its case.
    #[validate(pattern = r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$")]
    #[index(unique, case_insensitive)]
    pub email: String,
    /// Where orders are shipped.
    #[embed(reason = "always read with the customer, and one per customer")]
    pub address: Address,
    /// Loyalty tier.
    pub tier: Tier,
    /// When the customer signed up.
    pub created_at: DateTime,
}

/// A postal address, embedded in its customer.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
#[embedded(strict)]
pub struct Address {
    /// Street and number.
    pub street: String,
    /// City.
    pub city: String,
    /// Five-digit postcode.
    #[validate(pattern = "^[0-9]{5}$")]
    pub postcode: String,
}

/// A customer's loyalty tier.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Everyone.
    Standard,
    /// Frequent customers.
    Gold,
}

/// A product, keyed by its SKU.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "products", strict)]
#[access(
    name = "product_page",
    operation = "Product page",
    filter(_id),
    fields(name, price_cents),
    view(name = ProductPage, derive(Debug, Clone, PartialEq)),
    cache = ProductCache,
    freq = "800 r/s",
    consistency = "eventual ok"
)]
#[access(
    name = "reprice",
    operation = "Change a price",
    filter(_id),
    update(set(price_cents)),
    freq = "1 w/min",
    consistency = "strong (same doc)"
)]
#[access(
    name = "products_by_tag",
    operation = "Browse a tag, cheapest first",
    filter(tags),
    sort(price_cents = 1),
    fields(_id, name, price_cents),
    view(name = ProductCard, derive(Debug, Clone)),
    freq = "100 r/s",
    consistency = "eventual ok"
)]
#[index(keys(tags, price_cents))]
pub struct Product {
    /// The SKU, stored as `_id`.
    #[serde(rename = "_id")]
    #[validate(pattern = "^[A-Z]-[0-9]+$")]
    pub sku: String,
    /// Product name.
    #[validate(min_length = 2, max_length = 120)]
    pub name: String,
    /// Price in cents.
    #[validate(minimum = 1)]
    pub price_cents: u32,
    /// Browsing tags, at most ten.
    #[validate(max_items = 10, unique_items)]
    pub tags: Vec<String>,
    /// Free-form attributes (colour, size...).
    pub attributes: BTreeMap<String, String>,
}

/// An order with its line items embedded (bounded, read and written together).
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "orders", strict)]
#[index(keys(user_id, created_at = -1))]
#[index(keys(status, created_at))]
#[access(
    name = "load_order",
    operation = "Load order page",
    filter(_id),
    fields(items, status, user_name, total_cents),
    view(name = OrderPage, derive(Debug, Clone)),
    freq = "500 r/s",
    consistency = "read-your-writes"
)]
#[access(
    name = "add_item",
    operation = "Add item to cart",
    filter(_id),
    update(push(items), inc(total_cents)),
    freq = "50 w/s",
    consistency = "strong (same doc)"
)]
#[access(
    name = "set_status",
    operation = "Move an order along",
    filter(_id),
    update(set(status)),
    freq = "5 w/s",
    consistency = "strong (same doc)"
)]
#[access(
    name = "orders_of_customer",
    operation = "A customer's orders, newest first",
    filter(user_id),
    sort(created_at = -1),
    fields(_id, status, total_cents),
    view(name = OrderLine, derive(Debug, Clone)),
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
pub struct Order {
    /// The order number, stored as `_id`.
    #[serde(rename = "_id")]
    pub id: String,
    /// The customer who ordered.
    #[reference(reason = "customers change on their own and have many orders")]
    pub user_id: Ref<Customer>,
    /// When the order was placed.
    pub created_at: DateTime,
    /// Copy of the customer's name at order time: a historical snapshot, never refreshed.
    #[denormalized(
        from = "Customer::name",
        via = "user_id",
        refresh = "never",
        reason = "historical snapshot is correct here"
    )]
    pub user_name: String,
    /// Where the order is.
    pub status: Status,
    /// Line items: one to a hundred.
    #[validate(min_items = 1)]
    #[embed(max = 100, reason = "1:few, read and updated with the order")]
    pub items: Vec<LineItem>,
    /// How it is paid.
    pub payment: Payment,
    /// The total, in cents.
    #[validate(minimum = 0)]
    pub total_cents: i64,
    /// The document's schema version.
    pub schema_version: i32,
}

/// Where an order is.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Placed, not paid yet.
    Pending,
    /// Paid, waiting for the warehouse.
    Paid,
    /// On its way.
    Shipped,
}

/// One line of an order.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
#[embedded(strict)]
pub struct LineItem {
    /// The product.
    pub sku: String,
    /// How many.
    #[validate(minimum = 1, maximum = 999)]
    pub qty: u16,
    /// Unit price at order time, in cents.
    pub unit_price_cents: u32,
}

/// How an order is paid, tagged by `method`.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Payment {
    /// By card; only the last four digits are kept.
    Card {
        /// The card number's last four digits.
        #[validate(pattern = "^[0-9]{4}$")]
        last4: String,
    },
    /// By bank transfer.
    Transfer {
        /// The transfer's reference.
        reference: String,
    },
    /// Paid to the courier.
    CashOnDelivery,
}

/// The product page's cache: one JSON copy of a product page, for five minutes; the
/// `product_page` row reads through it and the `reprice` row deletes it.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:product:{sku}", kind = string, value = ProductPage, ttl = "300s", note = "invalidate on product write")]
pub struct ProductCache {
    /// The product's SKU.
    pub sku: String,
}

/// A signed-in customer's session, kept while it is used.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "customer:{id}:session", kind = hash, ttl = "30d", sliding, note = "auth token data")]
pub struct CustomerSession {
    /// The customer's id, as hex.
    pub id: String,
}
