use docshape::Model;
use serde::{Deserialize, Serialize};

// Documents without the field are version 1, and nothing upgrades version 1.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", version = 2)]
struct User {
    full_name: String,
    #[schema_version]
    schema_version: i32,
}

fn main() {}
