use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "logs")]
#[index(unique)]
struct Log {
    line: String,
}

fn main() {}
