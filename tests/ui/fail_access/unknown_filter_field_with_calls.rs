use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

// A misspelt filter field on a paginated row, and code that calls every row's method
// and names a view: the field is the only error.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1, _id = -1))]
#[access(name = "posts_by_author", filter(autor_id), sort(created_at = -1), paginate)]
#[access(name = "post_titles", filter(author_id), sort(created_at = -1), fields(title))]
#[access(name = "load_post", filter(_id))]
#[access(name = "rename_post", filter(_id), update(set(title)))]
struct Post {
    #[serde(rename = "_id")]
    id: String,
    author_id: String,
    title: String,
    created_at: DateTime,
}

fn title(view: &PostTitlesView) -> &str {
    &view.title
}

fn main() {
    let _ = Post::posts_by_author("u_42").page_size(20);
    let _ = Post::post_titles("u_42");
    let _ = Post::load_post("p1");
    let _ = Post::rename_post("p1", "New title");
}
