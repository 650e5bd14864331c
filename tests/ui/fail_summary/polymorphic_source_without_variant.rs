use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[model(collection = "events", transactions)]
pub enum Event {
    Click {
        #[serde(rename = "_id")]
        id: String,
        user: String,
        target: String,
    },
    Purchase {
        #[serde(rename = "_id")]
        id: String,
        user: String,
        seller_id: String,
        amount_cents: i64,
    },
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sales")]
#[summary(of = Event, group(seller_id), refresh = "sync")]
pub struct Sales {
    #[serde(rename = "_id")]
    pub key: String,
    #[summary(count)]
    pub events: i64,
    #[summary(sum = "amount_cents")]
    pub total: i64,
}

fn main() {}
