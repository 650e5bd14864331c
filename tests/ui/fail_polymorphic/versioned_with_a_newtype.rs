use docshape::bson::oid::ObjectId;
use docshape::bson::Document;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

fn upgrade_v1(doc: Document) -> Result<Document, String> {
    Ok(doc)
}

#[derive(Serialize, Deserialize, Embedded)]
struct Card {
    #[serde(rename = "_id")]
    id: ObjectId,
    v: i32,
}

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "type")]
#[model(collection = "payment_methods", version = 2, migrate(v1(document = upgrade_v1)))]
enum PaymentMethod {
    Card(Card),
    Bank {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[schema_version]
        v: i32,
    },
}

fn main() {}
