use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(colection = "users")]
struct User {
    name: String,
}

fn main() {}
