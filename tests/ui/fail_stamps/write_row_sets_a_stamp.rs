use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "notes")]
#[access(name = "edit", filter(_id), update(set(body, updated_at)))]
struct Note {
    #[serde(rename = "_id")]
    id: String,
    body: String,
    #[updated_at]
    updated_at: DateTime,
}

fn main() {}
