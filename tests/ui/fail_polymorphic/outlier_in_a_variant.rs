use docshape::bson::oid::ObjectId;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "posts")]
enum Post {
    Article {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[outlier(inline = 50, overflow = "post_comments")]
        comments: Vec<String>,
    },
    Link {
        #[serde(rename = "_id")]
        id: ObjectId,
        url: String,
    },
}

fn main() {}
