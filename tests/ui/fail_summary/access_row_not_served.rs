use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders")]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: String,
    pub seller_id: String,
    pub qty: i64,
}

// A summary's rows are served like any model's: by its `_id` (the group key) or an
// index it declares; `units` has neither.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sales")]
#[summary(of = Order, group(seller_id), refresh = "async", max_stale = "5m")]
#[access(name = "best_sellers", filter(units), freq = "1 r/s")]
pub struct Sales {
    #[serde(rename = "_id")]
    pub seller_id: String,
    #[summary(count)]
    pub orders: i64,
    #[summary(sum = "qty")]
    pub units: i64,
}

fn main() {}
