use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "notes")]
struct Note {
    #[serde(rename = "_id")]
    id: String,
    #[updated_at]
    updated_at: DateTime,
    #[updated_at]
    modified_at: DateTime,
}

fn main() {}
