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

#[derive(Serialize, Deserialize, Embedded)]
pub struct Comment<T> {
    pub author_id: Ref<User>,
    #[denormalized(from = "User::name", via = "author_id", refresh = "sync")]
    pub author_name: String,
    pub body: T,
}

fn main() {}
