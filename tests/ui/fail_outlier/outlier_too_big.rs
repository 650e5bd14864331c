use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::{Deserialize, Serialize};

// 2 million embedded ObjectIds: 2,000,000 x (1 + up to 7 key bytes + 1 + 12) > 16 MB.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[outlier(threshold = 2000000, overflow = "followers_extra", flag = has_extras, per_doc = 1000)]
    pub followers: Vec<ObjectId>,
    pub has_extras: bool,
}

fn main() {}
