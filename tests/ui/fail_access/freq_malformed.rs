use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders")]
#[access(name = "load_order", filter(_id), freq = "500")]
#[access(name = "add_item", filter(_id), freq = "50 u/s")]
#[access(name = "sales_list", filter(_id), freq = "5 r/week")]
#[access(name = "nightly", filter(_id), freq = "often")]
struct Order {
    #[serde(rename = "_id")]
    id: String,
}

fn main() {}
