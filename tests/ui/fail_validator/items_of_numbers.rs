use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[validate(max_items = 5, items(max_length = 30))]
    scores: Vec<i64>,
}

fn main() {}
