use docshape::Model;
use serde::{Deserialize, Serialize};
use docshape::bson::DateTime;

// patterns-en's posts, without createIndex({author_id: 1, created_at: -1}).
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[access(name = "posts_by_author", filter(author_id), sort(created_at = -1), freq = "500 r/s")]
struct Post {
    author_id: String,
    title: String,
    created_at: DateTime,
}

fn main() {}
