use docshape::bson::oid::ObjectId;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Card {
    #[serde(rename = "_id")]
    id: ObjectId,
    fingerprint: String,
}

// Only the card stores `fingerprint`: a row on the enum names it.
#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "type")]
#[model(collection = "payment_methods")]
#[access(name = "by_fingerprint", filter(fingerprint))]
enum PaymentMethod {
    #[index(keys(fingerprint))]
    Card(Card),
    Bank {
        #[serde(rename = "_id")]
        id: ObjectId,
        owner: String,
    },
}

fn main() {}
