use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

// A row no index serves, and code that calls every row's method: the missing index is
// the only error.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[access(name = "posts_by_author", filter(author_id), sort(created_at = -1), paginate)]
#[access(name = "load_post", filter(_id), fields(title))]
#[access(name = "rename_post", filter(_id), update(set(title)))]
struct Post {
    #[serde(rename = "_id")]
    id: String,
    author_id: String,
    title: String,
    created_at: DateTime,
}

fn main() {
    let _ = Post::posts_by_author("u_42").page_size(20);
    let view: Option<LoadPostView> = None;
    let _ = view.map(|v| v.title);
    let _ = Post::load_post("p1");
    let _ = Post::rename_post("p1", "New title");
}
