use docshape::bson::oid::ObjectId;
use docshape::refs::Ref;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[serde(rename = "_id")]
    id: String,
    name: String,
}

#[derive(Serialize, Deserialize, Embedded)]
struct Remark {
    by: Ref<User>,
    #[denormalized(from = "User::name", via = "by", refresh = "sync")]
    by_name: String,
}

// `remarks.by` is indexed for chores only.
#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "tasks")]
enum Task {
    Review {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[embed(max = 5)]
        remarks: Vec<Remark>,
    },
    #[index(keys("remarks.by"))]
    Chore {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[embed(max = 5)]
        remarks: Vec<Remark>,
    },
}

fn main() {}
