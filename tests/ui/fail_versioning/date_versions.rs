use docshape::Model;
use serde::{Deserialize, Serialize};

// Date-like version numbers: the missing versions are reported as one range.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", version = 20240101)]
struct User {
    full_name: String,
    #[schema_version]
    schema_version: i64,
}

fn main() {}
