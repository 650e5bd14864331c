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

// The reference is the chore's: a review's document does not hold it.
#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "tasks")]
enum Task {
    Review {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[denormalized(from = "User::name", via = "owner", refresh = "never")]
        owner_name: String,
    },
    Chore {
        #[serde(rename = "_id")]
        id: ObjectId,
        owner: Ref<User>,
    },
}

fn main() {}
