use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders", transactions)]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: String,
    pub seller_id: String,
    pub created_at: DateTime,
    #[embed(max = 50, reason = "a cart")]
    pub items: Vec<Item>,
}

#[derive(Serialize, Deserialize, Embedded)]
pub struct Item {
    pub seller_id: String,
    pub sku: String,
    pub qty: i64,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sales")]
#[summary(of = Order, group(period(created_at, "fortnight")), refresh = "sync")]
pub struct Sales {
    #[serde(rename = "_id")]
    pub key: String,
    #[summary(count)]
    pub orders: i64,
    #[summary(sum = "items.qty")]
    pub units: i64,
}

fn main() {}
