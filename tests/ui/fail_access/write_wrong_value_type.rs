use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "carts")]
#[access(name = "set_total", filter(_id), update(set(total)))]
struct Cart {
    #[serde(rename = "_id")]
    id: String,
    total: i64,
}

fn main() {
    // The parameter is typed by the field: a string is not an `i64`.
    let _ = Cart::set_total("c1", "12");
}
