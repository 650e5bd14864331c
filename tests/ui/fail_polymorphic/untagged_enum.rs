use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[serde(untagged)]
#[model(collection = "events")]
enum Event {
    Click {
        #[serde(rename = "_id")]
        id: ObjectId,
        target: String,
    },
    View {
        #[serde(rename = "_id")]
        id: ObjectId,
        page: String,
    },
}

fn main() {}
