use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "events")]
enum Event {
    Click {
        #[serde(rename = "_id")]
        id: ObjectId,
    },
    #[index(keys(order_id), unique, partial_filter = r#"{"kind": "Purchase"}"#)]
    Purchase {
        #[serde(rename = "_id")]
        id: ObjectId,
        order_id: String,
    },
}

fn main() {}
