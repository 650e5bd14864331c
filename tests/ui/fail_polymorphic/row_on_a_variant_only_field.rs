use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "events")]
#[access(name = "by_order", filter(order_id))]
enum Event {
    Click {
        #[serde(rename = "_id")]
        id: ObjectId,
        target: String,
    },
    #[index(keys(order_id))]
    Purchase {
        #[serde(rename = "_id")]
        id: ObjectId,
        order_id: String,
    },
}

fn main() {}
