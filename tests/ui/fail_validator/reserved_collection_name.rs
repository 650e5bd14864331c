use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "system.users")]
struct User {
    name: String,
}

fn main() {}
