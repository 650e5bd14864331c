use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "notes")]
#[access(name = "touch_if_at", filter(_id, rev), update(set(body)), upsert)]
struct Note {
    #[serde(rename = "_id")]
    id: String,
    body: String,
    #[revision]
    rev: i64,
}

fn main() {}
