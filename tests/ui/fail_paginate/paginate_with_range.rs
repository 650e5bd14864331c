use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1, _id = -1))]
#[access(name = "since", filter(author_id), sort(created_at = -1), range(created_at), paginate)]
struct Post {
    author_id: String,
    created_at: DateTime,
}

fn main() {}
