use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[serde(rename = "_id")]
    id: String,
}

// `Team`'s bound on `members` is its own: `Club`'s array of the same name has none.
#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "groups")]
enum Group {
    Team {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[reference(User, max = 11)]
        members: Vec<String>,
    },
    Club {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[reference(User)]
        members: Vec<String>,
    },
}

fn main() {}
