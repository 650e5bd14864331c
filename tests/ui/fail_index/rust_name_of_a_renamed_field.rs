use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[serde(rename_all = "camelCase")]
#[index(keys(authorId))]
#[access(name = "by_author", filter(author_id))]
struct Post {
    author_id: String,
}

fn main() {}
