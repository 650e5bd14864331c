use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[serde(rename = "name.first")]
    first: String,
}

fn main() {}
