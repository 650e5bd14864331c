use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    full_name: String,
    #[schema_version]
    schema_version: i32,
}

fn main() {}
