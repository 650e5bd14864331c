use docshape::Model;
use serde::{Deserialize, Serialize};

// Strings as items: their bound is `items(max_length = N)` on the array, which the
// error names (a `max_length` on the array itself does not compile).
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
struct Post {
    #[serde(rename = "_id")]
    #[validate(max_length = 64)]
    id: String,
    #[outlier(threshold = 100, overflow = "post_comments", flag = has_more)]
    comments: Vec<String>,
    has_more: bool,
}

fn main() {}
