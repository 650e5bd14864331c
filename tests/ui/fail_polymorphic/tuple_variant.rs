use docshape::bson::oid::ObjectId;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Card {
    #[serde(rename = "_id")]
    id: ObjectId,
}

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "type")]
#[model(collection = "payment_methods")]
enum PaymentMethod {
    Card(Card, String),
    Bank {
        #[serde(rename = "_id")]
        id: ObjectId,
        owner: String,
    },
}

fn main() {}
