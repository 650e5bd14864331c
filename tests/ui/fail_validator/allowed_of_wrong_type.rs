use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders")]
struct Order {
    #[validate(allowed = ["pending", 2])]
    status: String,
}

fn main() {}
