use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "questions", version = 2, migrate(v1 = QuestionV1))]
struct Question {
    #[serde(rename = "_id")]
    id: i64,
    #[outlier(threshold = 50, overflow = "question_comments", flag = has_extras)]
    comments: Vec<i64>,
    has_extras: bool,
    #[schema_version]
    schema_version: i32,
}

/// v1 kept its comments under another name.
#[derive(Serialize, Deserialize, Embedded)]
struct QuestionV1 {
    #[serde(rename = "_id")]
    id: i64,
    #[embed(max = 50, reason = "the threshold")]
    replies: Vec<i64>,
    has_extras: bool,
}

impl From<QuestionV1> for Question {
    fn from(v1: QuestionV1) -> Self {
        Question { id: v1.id, comments: v1.replies, has_extras: v1.has_extras, schema_version: 2 }
    }
}

fn main() {}
