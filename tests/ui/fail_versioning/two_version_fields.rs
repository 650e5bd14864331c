use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", version = 1)]
struct User {
    #[schema_version]
    schema_version: i32,
    #[schema_version]
    v: i32,
}

fn main() {}
