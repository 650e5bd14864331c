use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "votes")]
#[index(keys(item_id, user_id), unique)]
#[access(name = "vote", filter(item_id, user_id), update(set(value)), upsert)]
struct Vote {
    #[serde(rename = "_id")]
    id: String,
    item_id: String,
    user_id: String,
    value: i32,
}

fn main() {}
