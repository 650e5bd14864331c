use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

use docshape::bson::Document;

// v1's step yields a UserV2 value; v2's step wants a document.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", version = 3, migrate(v1 = UserV1, v2(document = upgrade_v2)))]
struct User {
    full_name: String,
    #[schema_version]
    schema_version: i32,
}

#[derive(Serialize, Deserialize, Embedded)]
struct UserV1 {
    name: String,
}

fn upgrade_v2(d: Document) -> Result<Document, String> {
    Ok(d)
}

fn main() {}
