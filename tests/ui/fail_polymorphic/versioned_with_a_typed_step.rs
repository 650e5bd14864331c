use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind")]
enum EventV1 {
    Click {
        #[serde(rename = "_id")]
        id: ObjectId,
    },
}

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "events", version = 2, migrate(v1 = EventV1))]
enum Event {
    Click {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[schema_version]
        v: i32,
    },
    View {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[schema_version]
        v: i32,
    },
}

fn main() {}
