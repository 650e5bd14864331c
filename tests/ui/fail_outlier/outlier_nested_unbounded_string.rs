use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

// Two embedded types down, `Edit.note` has no `max_length`: the error names the path
// from the model (`Question.comments[].edit.note`) and the field the attribute goes on.
#[derive(Serialize, Deserialize, Embedded)]
pub struct Edit {
    pub at: i64,
    pub note: String,
}

#[derive(Serialize, Deserialize, Embedded)]
pub struct Comment {
    #[validate(max_length = 500)]
    pub text: String,
    pub edit: Option<Edit>,
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
