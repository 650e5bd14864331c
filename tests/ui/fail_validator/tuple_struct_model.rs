use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "pairs")]
struct Pair(String, i32);

fn main() {}
