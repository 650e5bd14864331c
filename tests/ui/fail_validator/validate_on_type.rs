use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
#[validate(max_length = 3)]
struct User {
    name: String,
}

fn main() {}
