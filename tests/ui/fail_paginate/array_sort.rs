use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, tags, _id))]
#[access(name = "by_tag", filter(author_id), sort(tags), paginate)]
struct Post {
    author_id: String,
    tags: Vec<String>,
}

fn main() {}
