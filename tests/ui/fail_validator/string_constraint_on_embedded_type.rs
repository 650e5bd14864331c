use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Address {
    city: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[validate(max_length = 100)]
    address: Address,
}

fn main() {}
