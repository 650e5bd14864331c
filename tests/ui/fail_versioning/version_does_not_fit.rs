use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", version = 300)]
struct User {
    full_name: String,
    #[schema_version(missing = 300)]
    schema_version: u8,
}

fn main() {}
