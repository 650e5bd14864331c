use docshape::bson::oid::ObjectId;
use docshape::bson::Document;
use docshape::Model;
use serde::{Deserialize, Serialize};

fn upgrade_v1(doc: Document) -> Result<Document, String> {
    Ok(doc)
}

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "events", version = 2, migrate(v1(document = upgrade_v1)))]
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
        version: i32,
    },
}

fn main() {}
