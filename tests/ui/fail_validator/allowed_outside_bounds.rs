use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "ratings")]
struct Rating {
    #[validate(minimum = 1, maximum = 5, allowed = [1, 3, 5, 10])]
    stars: u8,
}

fn main() {}
