// A request body as a `Bson` value where an id is expected: the typed-id APIs refuse
// it. (One copy of this case per BSON feature: rustc names `Bson` by its short name
// when one bson crate is compiled and by its path when both are, as under `bson-3`.)
use docshape::bson::{doc, Bson};
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
    let body = Bson::Document(doc! { "$ne": null });
    let _ = docshape::denormalized::update_one::<User>(db, &body, doc! { "$set": { "name": "X" } }).await;
    let _ = docshape::denormalized::repair::<User>(db, &body).await;
}

fn main() {}
