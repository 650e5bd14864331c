use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id))]
#[access(name = "posts by author", filter(author_id))]
struct Post {
    author_id: String,
}

fn main() {}
