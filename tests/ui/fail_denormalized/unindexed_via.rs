#[allow(unused_imports)]
use docshape::refs::Ref;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

// Renaming a user rewrites every post with `author_id` = the user: that needs an index.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(created_at, author_id))]
pub struct Post {
    pub author_id: Ref<User>,
    #[denormalized(from = "User::name", via = "author_id", refresh = "async", max_stale = "5m")]
    pub author_name: String,
    pub created_at: docshape::bson::DateTime,
}

fn main() {}
