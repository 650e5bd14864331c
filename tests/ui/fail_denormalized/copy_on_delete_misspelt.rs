#[allow(unused_imports)]
use docshape::refs::Ref;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

#[derive(Serialize, Deserialize, Embedded)]
pub struct LineItem {
    pub sku: String,
    pub qty: u32,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id))]
pub struct Post {
    pub author_id: Ref<User>,
    #[denormalized(from = "User::name", via = "author_id", refresh = "async", max_stale = "5m", on_delete = "claer")]
    pub author_name: Option<String>,
}

fn main() {}
