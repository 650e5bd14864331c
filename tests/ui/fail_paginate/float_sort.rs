use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "products")]
#[index(keys(category, price, _id))]
#[access(name = "cheapest", filter(category), sort(price), paginate)]
struct Product {
    category: String,
    price: f64,
}

fn main() {}
