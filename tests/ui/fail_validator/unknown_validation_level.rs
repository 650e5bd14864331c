use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", validation_level = "strictest")]
struct User {
    name: String,
}

fn main() {}
