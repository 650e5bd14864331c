use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "events")]
#[access(name = "clicks_of_user", variant = Click, filter(user))]
enum Event {
    Click {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
    },
    #[index(keys(user))]
    Purchase {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
    },
}

fn main() {}
