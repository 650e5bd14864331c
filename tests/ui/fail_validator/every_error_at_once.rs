use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[validate(min_length = 9, max_length = 3)]
    name: String,
    #[validate(pattern = "[unclosed")]
    email: String,
    #[validate(minimum = 5, maximum = 1)]
    age: i32,
}

fn main() {}
