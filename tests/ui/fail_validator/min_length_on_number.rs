use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[validate(min_length = 1)]
    age: Option<i32>,
}

fn main() {}
