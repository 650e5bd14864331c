use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "notes")]
struct Note {
    #[serde(rename = "_id")]
    id: String,
    #[revision]
    rev: f64,
}

fn main() {}
