use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "wide", max_indexes = 2)]
struct Wide {
    #[index]
    a: i32,
    #[index]
    b: i32,
    #[index]
    c: i32,
}

fn main() {}
