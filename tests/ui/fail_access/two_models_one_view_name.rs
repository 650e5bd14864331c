use docshape::Model;
use serde::{Deserialize, Serialize};

// Two models of one module with a `fields(...)` row of the same name: both views are
// named `SummaryView` after the row. One error, under both rows' names (the fix: name
// one of them with `view(name = ...)`); the finders and their calls raise none.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
#[index(keys(email))]
#[access(name = "summary", filter(email), fields(name))]
struct User {
    #[serde(rename = "_id")]
    id: i64,
    email: String,
    name: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "teams")]
#[index(keys(slug))]
#[access(name = "summary", filter(slug), fields(name))]
struct Team {
    #[serde(rename = "_id")]
    id: i64,
    slug: String,
    name: String,
}

fn main() {
    let _ = User::summary("ada@example.com");
    let _ = Team::summary("core");
}
