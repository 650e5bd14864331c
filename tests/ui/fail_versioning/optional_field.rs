use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", version = 1)]
struct User {
    full_name: String,
    #[schema_version]
    schema_version: Option<i32>,
}

fn main() {}
