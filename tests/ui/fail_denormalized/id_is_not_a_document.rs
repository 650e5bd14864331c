// A request body where an id is expected: the typed-id APIs refuse it.
use docshape::bson::doc;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[serde(rename = "_id")]
    id: String,
    name: String,
}

async fn attack(db: &docshape::mongodb::Database) {
    let body = doc! { "$ne": null };
    let _ = docshape::denormalized::update_one::<User>(db, &body, doc! { "$set": { "name": "X" } }).await;
    let _ = docshape::denormalized::repair::<User>(db, &body).await;
}

fn main() {}
