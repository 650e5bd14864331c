use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::{Deserialize, Serialize};

// Serde's derives only: docshape cannot see its fields.
#[derive(Serialize, Deserialize)]
struct Card {
    #[serde(rename = "_id")]
    id: ObjectId,
    owner: String,
}

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "type")]
#[model(collection = "payment_methods")]
enum PaymentMethod {
    Card(Card),
    Bank {
        #[serde(rename = "_id")]
        id: ObjectId,
        owner: String,
    },
}

fn main() {}
