use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[validate(min_length = 5, max_length = 2)]
    name: String,
}

fn main() {}
