use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
pub struct Reply {
    pub likes: i64,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "threads")]
pub struct Thread {
    #[serde(rename = "_id")]
    #[validate(max_length = 64)]
    pub id: String,
    pub forum: String,
    #[outlier(threshold = 100, overflow = "thread_replies", flag = has_more, count = replies_count, per_doc = 100)]
    pub replies: Vec<Reply>,
    pub has_more: bool,
    pub replies_count: i64,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "likes_by_forum")]
#[summary(of = Thread, group(forum), refresh = "async", max_stale = "5m")]
pub struct LikesByForum {
    #[serde(rename = "_id")]
    pub forum: String,
    #[summary(count)]
    pub threads: i64,
    #[summary(sum = "replies.likes")]
    pub likes: i64,
}

fn main() {}
