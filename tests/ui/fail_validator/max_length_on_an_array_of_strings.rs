use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "questions")]
struct Question {
    #[validate(max_items = 5, max_length = 30)]
    tags: Vec<String>,
}

fn main() {}
