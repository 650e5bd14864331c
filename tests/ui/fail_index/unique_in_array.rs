use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct LineItem {
    sku: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders")]
#[index(keys("items.sku"), unique)]
struct Order {
    items: Vec<LineItem>,
}

fn main() {}
