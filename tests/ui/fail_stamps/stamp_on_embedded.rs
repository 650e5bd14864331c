use docshape::bson::DateTime;
use docshape::Embedded;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Line {
    sku: String,
    #[created_at]
    added_at: DateTime,
}

fn main() {}
