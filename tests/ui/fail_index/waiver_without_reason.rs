use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "logs")]
#[access(name = "everything", allow(unserved))]
struct Log {
    line: String,
}

fn main() {}
