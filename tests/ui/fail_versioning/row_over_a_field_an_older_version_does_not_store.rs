use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

// Version 1 called the score `votes`: `top` would not see a question still at version 1.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "questions", version = 2, migrate(v1 = QuestionV1))]
#[index(keys(score = -1))]
#[access(name = "top", sort(score = -1))]
struct Question {
    #[serde(rename = "_id")]
    id: String,
    score: i64,
    #[schema_version]
    schema_version: i32,
}

#[derive(Serialize, Deserialize, Embedded)]
struct QuestionV1 {
    #[serde(rename = "_id")]
    id: String,
    votes: i64,
}

impl From<QuestionV1> for Question {
    fn from(v1: QuestionV1) -> Self {
        Question { id: v1.id, score: v1.votes, schema_version: 2 }
    }
}

fn main() {}
