use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[validate(pattern = "^([a-z]+@example\\.com$")]
    email: String,
}

fn main() {}
