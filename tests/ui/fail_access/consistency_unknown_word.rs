use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders")]
#[access(name = "load_order", filter(_id), consistency = "eventualy consistent")]
#[access(name = "reload_order", filter(_id), consistency = "read-my-writes")]
struct Order {
    #[serde(rename = "_id")]
    id: String,
}

fn main() {}
