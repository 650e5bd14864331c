use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
pub struct LogLine {
    pub t: DateTime,
    #[validate(max_length = 2000)]
    pub message: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "logs")]
#[bucket(series = host, period = day, per = "day", max = 5000, items = lines, time = t)]
pub struct LogDay {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub host: String,
    pub day: String,
    pub count: i32,
    pub lines: Vec<LogLine>,
}

fn main() {}
