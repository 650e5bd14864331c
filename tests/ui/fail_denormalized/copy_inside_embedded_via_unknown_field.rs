#[allow(unused_imports)]
use docshape::refs::Ref;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

// The reference sits beside the copy, in the same embedded type.
#[derive(Serialize, Deserialize, Embedded)]
pub struct Comment {
    pub author: Ref<User>,
    #[denormalized(from = "User::name", via = "author_id", refresh = "sync")]
    pub author_name: String,
}

fn main() {}
