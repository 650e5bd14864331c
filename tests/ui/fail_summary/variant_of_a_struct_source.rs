use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders", transactions)]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: String,
    pub seller_id: String,
    pub total_cents: i64,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sales")]
#[summary(of = Order, variant = Purchase, group(seller_id), refresh = "sync")]
pub struct Sales {
    #[serde(rename = "_id")]
    pub key: String,
    #[summary(count)]
    pub orders: i64,
    #[summary(sum = "total_cents")]
    pub total: i64,
}

fn main() {}
