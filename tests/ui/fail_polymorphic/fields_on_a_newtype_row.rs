use docshape::bson::oid::ObjectId;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Card {
    #[serde(rename = "_id")]
    id: ObjectId,
    owner: String,
    last4: String,
}

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "type")]
#[model(collection = "payment_methods")]
#[index(keys(owner))]
#[access(name = "cards_of", variant = Card, filter(owner), fields(last4))]
enum PaymentMethod {
    Card(Card),
    Bank {
        #[serde(rename = "_id")]
        id: ObjectId,
        owner: String,
    },
}

fn main() {}
