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
pub struct Comment {
    pub author_id: Ref<User>,
    #[denormalized(from = "User::name", via = "author_id", refresh = "async", max_stale = "5m")]
    pub author_name: String,
    pub text: String,
}

// Renaming a user rewrites every answer with a comment whose `author_id` is the user:
// that needs an index on `comments.author_id`, not on another path under `comments`.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "answers")]
#[index(keys("comments.text"))]
pub struct Answer {
    #[serde(rename = "_id")]
    pub id: i64,
    #[embed(max = 20, reason = "an answer shows its comments")]
    pub comments: Vec<Comment>,
}

fn main() {}
