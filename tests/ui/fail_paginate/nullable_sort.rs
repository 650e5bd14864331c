use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, published_at = -1, _id = -1))]
#[access(name = "published", filter(author_id), sort(published_at = -1), paginate)]
struct Post {
    author_id: String,
    published_at: Option<DateTime>,
}

fn main() {}
