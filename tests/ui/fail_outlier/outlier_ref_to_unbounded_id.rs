use docshape::refs::Ref;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

// The comments are bounded but their author is a `Ref<User>`, as large as `User._id`,
// a `String` with no `max_length`: the error leads from the outlier to `User._id`.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
}

#[derive(Serialize, Deserialize, Embedded)]
pub struct Comment {
    #[validate(max_length = 500)]
    pub text: String,
    pub author: Ref<User>,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "questions")]
pub struct Question {
    #[serde(rename = "_id")]
    pub id: i64,
    #[outlier(threshold = 50, overflow = "question_comments", flag = has_more_comments)]
    pub comments: Vec<Comment>,
    pub has_more_comments: bool,
}

fn main() {}
