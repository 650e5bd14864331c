use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

// A misspelt key and a rate that is no string, on rows whose methods are called: each
// is one error, and the calls raise none.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders")]
#[index(keys(customer_id, placed_at = -1, _id = -1))]
#[access(name = "load_order", filter(_id), consistancy = "strong")]
#[access(name = "orders_of_customer", filter(customer_id), sort(placed_at = -1), paginate, freq = 500)]
struct Order {
    #[serde(rename = "_id")]
    id: String,
    customer_id: String,
    placed_at: DateTime,
}

fn main() {
    let _ = Order::load_order("o1");
    let _ = Order::orders_of_customer("c1").page_size(20);
}
