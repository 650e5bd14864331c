use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

// Version 1 stored the tags as one comma-separated string: `hot_by_tag` would not
// find a question still at version 1.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "questions", version = 2, migrate(v1 = QuestionV1))]
#[index(keys(tags, score = -1))]
#[access(name = "hot_by_tag", filter(tags), sort(score = -1))]
struct Question {
    #[serde(rename = "_id")]
    id: String,
    tags: Vec<String>,
    score: i64,
    #[schema_version]
    schema_version: i32,
}

#[derive(Serialize, Deserialize, Embedded)]
struct QuestionV1 {
    #[serde(rename = "_id")]
    id: String,
    tags: String,
    score: i64,
}

impl From<QuestionV1> for Question {
    fn from(v1: QuestionV1) -> Self {
        let tags = v1.tags.split(',').map(str::to_owned).collect();
        Question { id: v1.id, tags, score: v1.score, schema_version: 2 }
    }
}

fn main() {}
