use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "votes")]
#[access(name = "load_vote", filter(_id), upsert)]
struct Vote {
    #[serde(rename = "_id")]
    id: String,
    value: i32,
}

fn main() {}
