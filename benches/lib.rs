//! Models shared by the benchmarks: the patterns-en user, stored at v1 (`name`) and at
//! v2 (`full_name`), so that decoding either measures only docshape's upgrade path; a
//! paginated feed (sorted by date, and by `_id` alone) with a projected finder, a cart
//! with a bounded write row, a stamped note with a revision-guarded write row, a day
//! bucket, and two Redis key families.

use docshape::bson::{doc, oid::ObjectId, DateTime, Document};
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

/// A cart whose lines are bounded: the write row pushes under the bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "carts")]
#[access(name = "add_line", operation = "Add item to cart", filter(_id), update(push(lines), inc(total)))]
pub struct Cart {
    /// Its id.
    #[serde(rename = "_id")]
    pub id: String,
    /// The lines, at most 100.
    #[embed(max = 100, reason = "a cart holds few lines, read and written with it")]
    pub lines: Vec<CartLine>,
    /// The total, in cents.
    pub total: i64,
}

/// One line of a [`Cart`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct CartLine {
    /// The product.
    #[validate(max_length = 32)]
    pub sku: String,
    /// How many.
    pub qty: i32,
}

/// The current (v2) user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "users", version = 2, migrate(v1 = UserV1))]
pub struct User {
    /// Its id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// v2's name field.
    pub full_name: String,
    /// Sign-in email.
    pub email: String,
    /// Signed up.
    pub created_at: DateTime,
    /// Interests.
    pub tags: Vec<String>,
    /// The schema version.
    #[schema_version]
    pub schema_version: i32,
}

/// The v1 shape: `name` instead of `full_name`, no version field.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct UserV1 {
    /// Its id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// v1's name field.
    pub name: String,
    /// Sign-in email.
    pub email: String,
    /// Signed up.
    pub created_at: DateTime,
    /// Interests.
    pub tags: Vec<String>,
}

impl From<UserV1> for User {
    fn from(v1: UserV1) -> Self {
        User {
            id: v1.id,
            full_name: v1.name,
            email: v1.email,
            created_at: v1.created_at,
            tags: v1.tags,
            schema_version: 2,
        }
    }
}

/// The same user as stored at v1 and at v2.
pub fn stored_user() -> (Document, Document) {
    let id = ObjectId::new();
    let at = DateTime::from_millis(1_786_000_000_000);
    let tags = vec!["rust", "mongodb", "modelling"];
    let v1 = doc! { "_id": id, "name": "Ada Lovelace", "email": "ada@example.com", "created_at": at, "tags": &tags };
    let v2 = doc! {
        "_id": id, "full_name": "Ada Lovelace", "email": "ada@example.com", "created_at": at, "tags": &tags,
        "schema_version": 2,
    };
    (v1, v2)
}

/// patterns-en's feed: posts by author, newest first, `_id` breaking ties. A page
/// after a cursor filters with the seed's `$or`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1, _id = -1))]
#[access(name = "posts_by_author", filter(author_id), sort(created_at = -1), paginate)]
#[access(name = "recent_titles", filter(author_id), sort(created_at = -1), fields(title, created_at))]
pub struct Post {
    /// Its id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// Who wrote it.
    #[validate(max_length = 64)]
    pub author_id: String,
    /// The title.
    #[validate(min_length = 1, max_length = 200)]
    pub title: String,
    /// Published.
    pub created_at: DateTime,
}

/// The same posts sorted by `_id` alone: a page after a cursor is one `$lt` bound, no
/// `$or`, which the local server serves from the index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "posts_by_id")]
#[index(keys(author_id, _id = -1))]
#[access(name = "newest_by_author", filter(author_id), sort(_id = -1), paginate)]
pub struct PostById {
    /// Its id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// Who wrote it.
    #[validate(max_length = 64)]
    pub author_id: String,
    /// The title.
    #[validate(min_length = 1, max_length = 200)]
    pub title: String,
    /// Published.
    pub created_at: DateTime,
}

pub use docshape_examples::bucket::{Reading, SensorDay};

/// A note every docshape write stamps (`updated_at` from the server's clock, the
/// revision up by one), and whose write row is conditional: its filter holds the
/// revision the caller read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "stamped_notes")]
#[access(name = "edit_if_at", filter(_id, rev), update(set(body)))]
pub struct StampedNote {
    /// Its id.
    #[serde(rename = "_id")]
    pub id: String,
    /// The text.
    #[validate(max_length = 200)]
    pub body: String,
    /// Created, by the inserting writer's clock.
    #[created_at]
    pub created_at: DateTime,
    /// Last written, by the server's clock.
    #[updated_at]
    pub updated_at: DateTime,
    /// The writes that made it, its creation included.
    #[revision]
    pub rev: i64,
}

/// patterns-en's rate-limit window: two placeholders, one of them an address.
#[derive(Debug, Clone, PartialEq, docshape::KeyFamily)]
#[key(pattern = "rate:{ip}:{minute}", kind = counter, ttl = "120s", note = "rate limiting window")]
pub struct RateWindow {
    /// The client.
    pub ip: std::net::IpAddr,
    /// The minute, as `yyyymmddhhmm`.
    pub minute: u64,
}

/// patterns-en's session hash: one string placeholder.
#[derive(Debug, Clone, PartialEq, docshape::KeyFamily)]
#[key(pattern = "user:{id}:session", kind = hash, ttl = "30d", sliding, note = "auth token data")]
pub struct UserSession {
    /// The user.
    pub id: String,
}
