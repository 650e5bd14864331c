use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", collection = "people")]
struct User {
    name: String,
}

fn main() {}
