use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Meta {
    #[serde(skip_serializing_if = "Option::is_none")]
    edited_at: Option<DateTime>,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, "meta.edited_at" = -1, _id = -1))]
#[access(name = "recently_edited", filter(author_id), sort("meta.edited_at" = -1), paginate)]
struct Post {
    author_id: String,
    meta: Meta,
}

fn main() {}
