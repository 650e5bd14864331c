use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "counters")]
#[index(keys(user), unique)]
#[access(name = "bump", filter(user), update(inc(count)), upsert)]
enum Counter {
    Daily {
        #[serde(rename = "_id")]
        id: String,
        user: String,
        count: i64,
    },
    Total {
        #[serde(rename = "_id")]
        id: String,
        user: String,
        count: i64,
    },
}

fn main() {}
