use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "events")]
#[access(name = "count_order", variant = Purchase, filter(order_id), update(inc(items)), upsert)]
enum Event {
    Click {
        #[serde(rename = "_id")]
        id: ObjectId,
        target: String,
    },
    #[index(keys(order_id), unique)]
    Purchase {
        #[serde(rename = "_id")]
        id: ObjectId,
        order_id: String,
        items: i64,
        currency: String,
    },
}

fn main() {}
