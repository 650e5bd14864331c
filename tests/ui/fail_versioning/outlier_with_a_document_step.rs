use docshape::bson::Document;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "questions", version = 2, migrate(v1(document = upgrade_v1)))]
struct Question {
    #[serde(rename = "_id")]
    id: i64,
    #[outlier(threshold = 50, overflow = "question_comments", flag = has_extras)]
    comments: Vec<i64>,
    has_extras: bool,
    #[schema_version]
    schema_version: i32,
}

fn upgrade_v1(d: Document) -> Result<Document, String> {
    Ok(d)
}

fn main() {}
