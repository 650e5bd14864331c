use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "ratings")]
struct Rating {
    #[validate(minimum = 300)]
    stars: u8,
}

fn main() {}
