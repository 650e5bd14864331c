use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "questions")]
#[index(keys(board, score = -1, _id = -1))]
#[access(name = "top_questions", filter(board), sort(score = -1), paginate)]
#[access(name = "upvote", filter(_id), update(inc(score)))]
#[access(name = "retitle", filter(_id), update(set(title)))]
struct Question {
    #[serde(rename = "_id")]
    id: i64,
    board: String,
    title: String,
    score: i64,
}

fn main() {}
