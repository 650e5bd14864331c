//! Denormalized copies on a real server: sync copies written in the source's update
//! call (in a transaction, and without one), snapshots left alone, and async copies
//! drained by workers that are aborted, restarted and run side by side, converging on
//! the source's last value within `max_stale`.
//!
//! The copies are declared with `#[denormalized(...)]`, so the derive registers them
//! and the source's update API finds them.

use std::time::Duration;

use docshape::bson::{doc, Bson, Document};
use docshape::denormalized::{self, QUEUE};
use docshape::refs::Ref;
use docshape::{Embedded, Model};
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::Database;
use serde::{Deserialize, Serialize};

mod adversarial;
mod cached;
mod claims;
mod embedded;
mod hardening;
mod injection;
mod refresh;
mod stuck;
mod sync;
mod watcher;
mod watcher_delete;
mod worker;

/// How stale `posts.author_name` may be.
const MAX_STALE: Duration = Duration::from_secs(300);

/// The source.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    pub visits: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct Profile {
    pub city: String,
}

/// Async copy of the author's name: a feed tolerates five minutes of staleness.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id))]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: i64,
    pub author_id: Ref<User>,
    #[denormalized(
        from = "User::name",
        via = "author_id",
        refresh = "async",
        max_stale = "5m",
        reason = "the feed shows author names without a lookup"
    )]
    pub author_name: String,
    pub title: String,
}

/// Sync copies of the author's name and city (a copy through an optional
/// sub-document is optional itself).
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "comments")]
#[index(keys(author_id))]
pub struct Comment {
    #[serde(rename = "_id")]
    pub id: i64,
    pub author_id: Ref<User>,
    #[denormalized(from = "User::name", via = "author_id", refresh = "sync")]
    pub author_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[denormalized(from = "User::profile.city", via = "author_id", refresh = "sync")]
    pub author_city: Option<String>,
}

/// A snapshot: the name at the time of the order.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "orders")]
#[index(keys(user_id))]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: i64,
    pub user_id: Ref<User>,
    #[denormalized(
        from = "User::name",
        via = "user_id",
        refresh = "never",
        reason = "the name at the time of the order"
    )]
    pub user_name: String,
}

pub const POSTS: &str = "posts.author_name";
pub const COMMENT_NAMES: &str = "comments.author_name";
pub const COMMENT_CITIES: &str = "comments.author_city";
pub const ORDERS: &str = "orders.user_name";

/// A database with every model's collection and indexes.
pub async fn setup(hint: &str) -> testkit::TestDb {
    let db = testkit::database(hint).await.unwrap();
    docshape::sync::<User>(&db).await.unwrap();
    docshape::sync::<Post>(&db).await.unwrap();
    docshape::sync::<Comment>(&db).await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    db
}

pub async fn insert_user(db: &Database, id: &str, name: &str) {
    db.collection::<Document>("users")
        .insert_one(doc! { "_id": id, "name": name, "profile": { "city": "London" }, "visits": 0_i64 })
        .await
        .unwrap();
}

/// Posts `ids` by `author`, inserted 1,000 at a time.
pub async fn insert_posts(db: &Database, author: &str, name: &str, ids: std::ops::Range<i64>) {
    let posts = db.collection::<Document>("posts");
    let all: Vec<i64> = ids.collect();
    for chunk in all.chunks(1000) {
        let docs = chunk.iter().map(
            |i| doc! { "_id": *i, "author_id": author, "author_name": name, "title": format!("post {i}") },
        );
        posts.insert_many(docs).await.unwrap();
    }
}

pub async fn count(db: &Database, collection: &str, filter: Document) -> u64 {
    db.collection::<Document>(collection).count_documents(filter).await.unwrap()
}

pub async fn queue(db: &Database) -> Vec<Document> {
    db.collection::<Document>(QUEUE).find(doc! {}).await.unwrap().try_collect().await.unwrap()
}

pub async fn user_name(db: &Database, id: &str) -> Bson {
    let user = db.collection::<Document>("users").find_one(doc! { "_id": id }).await.unwrap().unwrap();
    user.get("name").cloned().unwrap_or(Bson::Null)
}

pub fn rename(name: &str) -> Document {
    doc! { "$set": { "name": name } }
}

#[test]
fn the_registry_knows_every_copy_of_users() {
    let keys: Vec<String> = denormalized::dependents("users").iter().map(|c| c.key()).collect();
    assert_eq!(keys, [COMMENT_CITIES, COMMENT_NAMES, ORDERS, POSTS]);
}
