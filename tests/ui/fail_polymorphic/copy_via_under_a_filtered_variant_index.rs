use docshape::bson::oid::ObjectId;
use docshape::refs::Ref;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[serde(rename = "_id")]
    id: String,
    name: String,
}

// The review's index on `owner` holds the open reviews only: a refresh of a closed
// one's copy would not use it.
#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "tasks")]
enum Task {
    #[index(keys(owner), partial_filter = r#"{"open": {"$eq": true}}"#)]
    Review {
        #[serde(rename = "_id")]
        id: ObjectId,
        open: bool,
        owner: Ref<User>,
        #[denormalized(from = "User::name", via = "owner", refresh = "async", max_stale = "1m")]
        owner_name: String,
    },
    Chore {
        #[serde(rename = "_id")]
        id: ObjectId,
    },
}

fn main() {}
