use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    name: String,
    #[serde(skip)]
    #[validate(max_length = 10)]
    cache: String,
}

fn main() {}
