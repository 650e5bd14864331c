use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "carts")]
#[access(name = "add_item", filter(_id), fields(items), update(push(items)))]
struct Cart {
    #[serde(rename = "_id")]
    id: String,
    items: Vec<String>,
}

fn main() {}
