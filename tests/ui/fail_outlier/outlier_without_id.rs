use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    pub name: String,
    #[outlier(threshold = 1000, overflow = "followers_extra", flag = has_extras)]
    pub followers: Vec<ObjectId>,
    pub has_extras: bool,
}

fn main() {}
