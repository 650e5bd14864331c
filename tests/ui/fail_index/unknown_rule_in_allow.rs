use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "logs")]
#[access(name = "everything", allow(unservd, reason = "nightly export reads it all"))]
struct Log {
    line: String,
}

fn main() {}
