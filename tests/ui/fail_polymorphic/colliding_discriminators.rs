use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::Serialize;

#[derive(Serialize, Model)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[model(collection = "events")]
enum Event {
    Click {
        #[serde(rename = "_id")]
        id: ObjectId,
    },
    #[serde(rename = "click")]
    DoubleClick {
        #[serde(rename = "_id")]
        id: ObjectId,
    },
}

fn main() {}
