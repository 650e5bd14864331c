use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
#[index(keys(email), unique, partial_filter = "{status: 'active'}")]
struct User {
    email: String,
    status: String,
}

fn main() {}
