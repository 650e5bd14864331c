use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "carts")]
#[access(name = "close_cart_of", filter(owner), update(set(open)))]
struct Cart {
    #[serde(rename = "_id")]
    id: String,
    owner: String,
    open: bool,
}

fn main() {}
