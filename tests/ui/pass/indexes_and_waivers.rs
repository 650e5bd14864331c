#![allow(clippy::duplicated_attributes)]

use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

// The seed's posts; "oldest first" is served by the same index read backwards.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1))]
#[access(name = "posts_by_author", filter(author_id), sort(created_at = -1))]
#[access(name = "oldest_by_author", filter(author_id), sort(created_at = 1))]
#[access(name = "by_author_since", filter(author_id), range(created_at))]
#[access(name = "nightly_export", allow(unserved, reason = "runs once a night on a secondary"))]
struct Post {
    author_id: String,
    created_at: DateTime,
    #[index(unique)]
    slug: String,
    #[index(text)]
    body: String,
    customer: Customer,
}

#[derive(Serialize, Deserialize, Embedded)]
struct Customer {
    address: Address,
}

#[derive(Serialize, Deserialize, Embedded)]
struct Address {
    city: String,
}

// A unique prefix is not redundant (it enforces uniqueness); a plain one can be waived.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "accounts", max_indexes = 4)]
#[index(keys(email), unique)]
#[index(keys(email, created = -1))]
#[index(keys(tenant), allow(redundant_index, reason = "kept while the old reports migrate"))]
#[index(keys(tenant, "customer.address.city"))]
#[access(name = "by_city", filter(tenant, "customer.address.city"))]
struct Account {
    email: String,
    created: DateTime,
    tenant: String,
    customer: Customer,
}

// More indexes than the default budget, waived with a reason.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "wide", allow(index_budget, reason = "reporting collection, written once a day"))]
struct Wide {
    #[index]
    a: i32,
    #[index]
    b: i32,
    #[index]
    c: i32,
    #[index]
    d: i32,
    #[index]
    e: i32,
    #[index]
    f: i32,
    #[index]
    g: i32,
    #[index]
    h: i32,
    #[index]
    i: i32,
    #[index]
    j: i32,
    #[index]
    k: i32,
}

// An `_id` equality is served by `_id_` whatever the row adds: at most one document
// matches, so its other conditions and its sort cost nothing.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "drafts")]
#[access(name = "touch", filter(_id, updated_at), update(set(title)))]
#[access(name = "if_newer", filter(_id, title), sort(updated_at = -1), range(updated_at))]
struct Draft {
    #[serde(rename = "_id")]
    id: String,
    title: String,
    updated_at: DateTime,
}

// Two waivers on one row, each with its own reason: one `allow(...)` per reason, the
// same as `allow(a, b, reason = "...")` when the reason is shared.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "questions")]
#[index(keys(board, score = -1, _id = -1))]
#[access(name = "top_questions", filter(board), sort(score = -1), paginate,
         allow(mutable_sort, reason = "a question whose score moves may be seen twice"),
         allow(scatter_gather, reason = "x"))]
#[access(name = "upvote", filter(_id), update(inc(score)))]
struct Question {
    #[serde(rename = "_id")]
    id: i64,
    board: String,
    score: i64,
}

pub(super) fn main() {
    let served: Vec<Option<&str>> = Draft::ACCESS_PATTERNS.iter().map(|p| p.index).collect();
    assert_eq!(served, [Some("_id_"), Some("_id_")]);
    // The row keeps its method and its paginator.
    let _ = Question::top_questions("rust").page_size(20);
    assert_eq!(
        Question::ACCESS_PATTERNS[0].waivers,
        [("mutable_sort", "a question whose score moves may be seen twice"), ("scatter_gather", "x")]
    );
    let names: Vec<&str> = Post::INDEXES.iter().map(|i| i.name).collect();
    assert_eq!(names, ["author_id_1_created_at_-1", "slug_1", "body_text"]);
    let served: Vec<Option<&str>> = Post::ACCESS_PATTERNS.iter().map(|p| p.index).collect();
    assert_eq!(
        served,
        [
            Some("author_id_1_created_at_-1"),
            Some("author_id_1_created_at_-1"),
            Some("author_id_1_created_at_-1"),
            None
        ]
    );
    assert!(Post::access_table().contains("none (unserved: runs once a night on a secondary)"));
    assert_eq!(Account::INDEXES.len(), 4);
    assert_eq!(Account::ACCESS_PATTERNS[0].index, Some("tenant_1_customer.address.city_1"));
    assert_eq!(Wide::INDEXES.len(), 11);
}
