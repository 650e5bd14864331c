use docshape::Model;
use serde::{Deserialize, Serialize};

// The validator admits v1 documents by UserV1's schema: UserV1 must derive Embedded.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", version = 2, migrate(v1 = UserV1))]
struct User {
    full_name: String,
    #[schema_version]
    schema_version: i32,
}

#[derive(Serialize, Deserialize)]
struct UserV1 {
    name: String,
}

impl From<UserV1> for User {
    fn from(v: UserV1) -> Self {
        User { full_name: v.name, schema_version: 2 }
    }
}

fn main() {}
