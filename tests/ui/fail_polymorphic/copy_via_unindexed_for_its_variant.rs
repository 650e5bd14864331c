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

// `owner` is indexed for chores only: that partial index holds no review, so
// refreshing a review's `owner_name` would scan the collection.
#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "tasks")]
enum Task {
    Review {
        #[serde(rename = "_id")]
        id: ObjectId,
        owner: Ref<User>,
        #[denormalized(from = "User::name", via = "owner", refresh = "sync")]
        owner_name: String,
    },
    #[index(keys(owner))]
    Chore {
        #[serde(rename = "_id")]
        id: ObjectId,
        owner: Ref<User>,
    },
}

fn main() {}
