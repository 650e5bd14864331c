use docshape::bson::oid::ObjectId;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Line {
    sku: String,
}

// `Basket`'s bound on `lines` is its own: `Order`'s array of the same name has none.
#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "carts")]
enum Cart {
    Basket {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[embed(max = 3)]
        lines: Vec<Line>,
    },
    Order {
        #[serde(rename = "_id")]
        id: ObjectId,
        lines: Vec<Line>,
    },
}

fn main() {}
