use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
#[serde(rename_all = "camelCase")]
struct User {
    full_name: String,
    #[serde(rename = "fullName")]
    display: String,
}

fn main() {}
