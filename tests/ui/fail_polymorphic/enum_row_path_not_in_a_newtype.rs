use docshape::bson::oid::ObjectId;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Card {
    #[serde(rename = "_id")]
    id: ObjectId,
    fingerprint: String,
}

// `owner` is common to the struct variants, and a row on the enum reads every
// variant: the card, which wraps a type without `owner`, too.
#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "type")]
#[model(collection = "payment_methods")]
#[index(keys(owner))]
#[access(name = "methods_of", filter(owner))]
enum PaymentMethod {
    Card(Card),
    Bank {
        #[serde(rename = "_id")]
        id: ObjectId,
        owner: String,
    },
    Paypal {
        #[serde(rename = "_id")]
        id: ObjectId,
        owner: String,
    },
}

fn main() {}
