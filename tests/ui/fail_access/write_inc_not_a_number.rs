use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "carts")]
#[access(name = "bump", filter(_id), update(inc(owner)))]
struct Cart {
    #[serde(rename = "_id")]
    id: String,
    owner: String,
}

fn main() {}
