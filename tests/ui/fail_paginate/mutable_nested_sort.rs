use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, "stats.score" = -1, _id = -1))]
#[access(name = "top_posts", filter(author_id), sort("stats.score" = -1), paginate)]
#[access(name = "recount", filter(_id), update(set(stats)))]
#[access(name = "upvote", filter(_id), update(inc("stats.score")))]
struct Post {
    #[serde(rename = "_id")]
    id: i64,
    author_id: String,
    stats: Stats,
}

#[derive(Serialize, Deserialize, Embedded)]
struct Stats {
    score: i64,
    views: i64,
}

fn main() {}
