use docshape::bson::DateTime;
use docshape::refs::Ref;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

// A bucket's items each hold a `Ref<User>`, and `User._id` has no `max_length`.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
}

#[derive(Serialize, Deserialize, Embedded)]
pub struct Visit {
    pub t: DateTime,
    pub visitor: Ref<User>,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "page_days")]
#[bucket(series = page, period = day, per = "day", max = 500, items = visits, time = t)]
pub struct PageDay {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub page: String,
    pub day: String,
    pub count: i32,
    pub visits: Vec<Visit>,
}

fn main() {}
