use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[validate(minimum = 10, maximum = 1)]
    age: i32,
}

fn main() {}
