use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", version = 2, migrate(v1 = UserV1))]
struct User {
    full_name: String,
}

#[derive(Serialize, Deserialize, Embedded)]
struct UserV1 {
    name: String,
}

fn main() {}
