#![allow(clippy::duplicated_attributes)]

use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1, _id = -1))]
#[index(keys(author_id, "stats.score" = -1, _id = -1))]
#[index(keys(category, price, _id))]
#[access(name = "posts_by_author", filter(author_id), sort(created_at = -1), paginate)]
#[access(name = "top_posts", filter(author_id), sort("stats.score" = -1), paginate)]
#[access(
    name = "cheapest",
    filter(category),
    sort(price),
    paginate,
    allow(float_sort, reason = "prices are whole cents stored as doubles by a legacy writer")
)]
#[access(name = "everything", paginate)]
pub struct Post {
    author_id: String,
    created_at: DateTime,
    stats: Stats,
    category: String,
    price: f64,
}

/// A ranking on a key that a write row changes, waived with its reason.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "questions")]
#[index(keys(board, score = -1, _id = -1))]
#[access(
    name = "top_questions",
    filter(board),
    sort(score = -1),
    paginate,
    allow(mutable_sort, reason = "a question voted up during a walk may be missed or shown twice")
)]
#[access(name = "upvote", filter(_id), update(inc(score)))]
pub struct Question {
    #[serde(rename = "_id")]
    id: i64,
    board: String,
    score: i64,
}

#[derive(Serialize, Deserialize, Embedded)]
pub struct Stats {
    pub score: i64,
}

pub(super) fn main() {
    // Paginators are typed by the filter fields: `&str` converts into the `String` field.
    let p = Post::posts_by_author("u_42").page_size(20);
    let find = p.find_command("shop").unwrap();
    assert_eq!(find.get_document("sort").unwrap(), &docshape::bson::doc! { "created_at": -1, "_id": -1 });
    // The equality, and each sort key bounded to the type the model stores there (the
    // model declares no `_id`, so the server's ObjectId is not assumed).
    assert_eq!(
        find.get_document("filter").unwrap(),
        &docshape::bson::doc! { "author_id": { "$eq": "u_42" }, "created_at": { "$type": "date" } }
    );
    assert_eq!(find.get_i64("limit").unwrap(), 21);
    let _ = Post::top_posts(String::from("u_42"));
    let _ = Post::cheapest("kitchen");
    let everything = Post::everything().find_command("shop").unwrap();
    assert_eq!(everything.get_document("sort").unwrap(), &docshape::bson::doc! { "_id": 1 });
    assert_eq!(<Post as Model>::ACCESS_PATTERNS[3].index, Some("_id_"));
    // The waiver compiles and its reason is kept with the pattern, for the table.
    let _ = Question::top_questions("rust").page_size(10);
    let _ = Question::upvote(7, 1);
    assert_eq!(
        <Question as Model>::ACCESS_PATTERNS[0].waivers,
        &[("mutable_sort", "a question voted up during a walk may be missed or shown twice")]
    );
}
