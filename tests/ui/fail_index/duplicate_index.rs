use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1))]
#[index(keys(author_id, created_at = -1), name = "by_author")]
struct Post {
    author_id: String,
    created_at: i64,
}

fn main() {}
