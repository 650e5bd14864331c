use docshape::bson::oid::ObjectId;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Card {
    #[serde(rename = "_id")]
    id: ObjectId,
    fingerprint: String,
    uses: i64,
}

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "type")]
#[model(collection = "payment_methods")]
#[access(name = "count_use", variant = Card, filter(fingerprint), update(inc(uses)), upsert)]
enum PaymentMethod {
    #[index(keys(fingerprint), unique)]
    Card(Card),
    Bank {
        #[serde(rename = "_id")]
        id: ObjectId,
        owner: String,
    },
}

fn main() {}
