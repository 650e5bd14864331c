use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

// Version 2 has no step: documents stored at 2 could not be read.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", version = 3, migrate(v1 = UserV1))]
struct User {
    full_name: String,
    #[schema_version]
    schema_version: i32,
}

#[derive(Serialize, Deserialize, Embedded)]
struct UserV1 {
    name: String,
}

impl From<UserV1> for User {
    fn from(v: UserV1) -> Self {
        User { full_name: v.name, schema_version: 3 }
    }
}

fn main() {}
