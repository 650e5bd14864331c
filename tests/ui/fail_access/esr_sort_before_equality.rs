use docshape::Model;
use serde::{Deserialize, Serialize};
use docshape::bson::DateTime;

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(created_at = -1, author_id))]
#[access(name = "posts_by_author", filter(author_id), sort(created_at = -1))]
struct Post {
    author_id: String,
    created_at: DateTime,
}

fn main() {}
