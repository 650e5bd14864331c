use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[validate(min_items = 1)]
    tags: String,
}

fn main() {}
