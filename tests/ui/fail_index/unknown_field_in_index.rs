use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(autor_id))]
struct Post {
    author_id: String,
}

fn main() {}
