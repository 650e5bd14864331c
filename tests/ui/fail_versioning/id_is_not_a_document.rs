// A request body where an id is expected: `update_one` and `modify` refuse it.
use docshape::bson::doc;
use docshape::versioning::{self, RetryPolicy};
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users", version = 2, migrate(v1 = UserV1))]
struct User {
    #[serde(rename = "_id")]
    id: String,
    full_name: String,
    #[schema_version]
    schema_version: i32,
}

#[derive(Serialize, Deserialize, Embedded)]
struct UserV1 {
    #[serde(rename = "_id")]
    id: String,
    name: String,
}

impl From<UserV1> for User {
    fn from(v1: UserV1) -> Self {
        User { id: v1.id, full_name: v1.name, schema_version: 2 }
    }
}

async fn attack(db: &docshape::mongodb::Database) {
    let body = doc! { "$gt": "v1" };
    let _ = versioning::update_one::<User>(db, &body, doc! { "$set": { "full_name": "X" } }, RetryPolicy::default()).await;
    let _ = versioning::modify::<User>(db, &body, RetryPolicy::default(), |u| u.full_name.clear()).await;
}

fn main() {}
