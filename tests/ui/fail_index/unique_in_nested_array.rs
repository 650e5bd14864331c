use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Cart {
    #[embed(max = 50)]
    items: Vec<LineItem>,
}

#[derive(Serialize, Deserialize, Embedded)]
struct LineItem {
    sku: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
#[index(keys("cart.items.sku"), unique)]
struct User {
    cart: Cart,
}

fn main() {}
