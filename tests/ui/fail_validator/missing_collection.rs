use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(strict)]
struct User {
    name: String,
}

fn main() {}
