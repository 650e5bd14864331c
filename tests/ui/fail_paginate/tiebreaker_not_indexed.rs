use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

// The seed's index serves the sort, but not the `_id` that breaks its ties.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1))]
#[access(name = "posts_by_author", filter(author_id), sort(created_at = -1), paginate)]
struct Post {
    author_id: String,
    created_at: DateTime,
}

fn main() {}
