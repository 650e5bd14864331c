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
        target: String,
    },
    View {
        page: String,
    },
}

fn main() {}
