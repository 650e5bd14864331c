use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

// Two design rules from two phases of the derive: `mutable_sort` (checked while the
// derive reads the rows) and `old_version_field` (a compile-time check against the
// older shape). Both arrive in the same build.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "questions", version = 2, migrate(v1 = QuestionV1))]
#[index(keys(board, score = -1, _id = -1))]
#[access(name = "top_questions", filter(board), sort(score = -1), paginate)]
#[access(name = "upvote", filter(_id), update(inc(score)))]
struct Question {
    #[serde(rename = "_id")]
    id: String,
    board: String,
    score: i64,
    #[schema_version]
    schema_version: i32,
}

#[derive(Serialize, Deserialize, Embedded)]
struct QuestionV1 {
    #[serde(rename = "_id")]
    id: String,
    board: String,
    votes: i64,
}

impl From<QuestionV1> for Question {
    fn from(v1: QuestionV1) -> Self {
        Question { id: v1.id, board: v1.board, score: v1.votes, schema_version: 2 }
    }
}

fn main() {}
