use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id))]
#[index(keys(author_id, created_at = -1))]
struct Post {
    author_id: String,
    created_at: i64,
}

fn main() {}
