use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", version = 2, migrate(one = UserV1))]
struct User {
    full_name: String,
    #[schema_version]
    schema_version: i32,
}

#[derive(Serialize, Deserialize, Embedded)]
struct UserV1 {
    name: String,
}

fn main() {}
