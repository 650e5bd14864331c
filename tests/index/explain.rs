//! Every access pattern's query is served by the index docshape chose at compile time.

use docshape::bson;
use docshape::bson::oid::ObjectId;
use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use docshape_testkit as testkit;
use docshape_tests::{Order, Post};
use serde::{Deserialize, Serialize};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_posts_pattern_uses_its_index() {
    assert_eq!(Post::INDEXES.len(), 1);
    assert_eq!(Post::INDEXES[0].name, "author_id_1_created_at_-1");
    assert_eq!(Post::ACCESS_PATTERNS[0].index, Some("author_id_1_created_at_-1"));
    let db = testkit::database("posts_explain").await.unwrap();
    testkit::assert_access_patterns_use_indexes::<Post>(&db).await;
    let outcomes = docshape::access::explain_access_patterns::<Post>(&db).await.unwrap();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].used, vec!["author_id_1_created_at_-1".to_owned()]);
    assert!(!outcomes[0].collection_scan);
}

#[test]
fn the_access_table_is_the_seed_format() {
    let table = Post::access_table();
    let expected = "| # | Operation | Fields needed | Freq | Consistency | Index | Docs/call | Bytes/call | Docs/s | Bytes/s |\n\
                    |---|---|---|---|---|---|---|---|---|---|\n\
                    | 1 | Posts by user, newest first | title, author_name, created_at | 500 r/s | eventual ok | posts: `author_id_1_created_at_-1` \
                    | unbounded | unbounded | unbounded | unbounded |\n\
                    \n\
                    Docs/call and Bytes/call are the most one call reads; Docs/s and Bytes/s are those at \
                    the declared freq (`-`: no freq). Per collection:\n\
                    \n\
                    | Collection | Docs/s | Bytes/s |\n\
                    |---|---|---|\n\
                    | posts | unbounded (row 1) | unbounded (row 1) |\n\
                    \n\
                    Unbounded:\n\
                    \n\
                    - row 1 (`posts_by_author`), documents: neither `_id` nor a unique index bounds its \
                    equality filter (one bounds it when the filter names every key, the index is neither sparse nor \
                    partial, and compares as the query does), and it is not paginated, so nothing bounds how many documents one call reads\n\
                    - row 1, bytes: a document of `posts` has no size bound (`Post.title` is a String with no \
                    `#[validate(max_length = N)]`; add it to `Post.title`); the server's 16 MiB per document is \
                    the only limit\n";
    assert_eq!(table, expected);
}

/// Every kind of index and pattern the rules admit, each explained on the server.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "accounts", shard_key(tenant))]
#[index(keys(tenant, status, created = -1))]
#[index(keys(tenant, "profile.address.city", score = -1), name = "by_city")]
#[index(keys(tenant, email), case_insensitive)]
#[index(keys(tenant, "devices.serial"))]
#[access(name = "recent_by_status", filter(tenant, status), sort(created = -1), freq = "50 r/s", consistency = "eventual ok")]
#[access(name = "oldest_by_status", filter(tenant, status), sort(created = 1))]
#[access(name = "top_in_city", filter(tenant, "profile.address.city"), sort(score = -1))]
#[access(name = "by_email", filter(tenant(case_insensitive), email(case_insensitive)))]
#[access(name = "by_device", filter(tenant, "devices.serial"))]
#[access(name = "by_id", filter(_id), allow(scatter_gather, reason = "admin console, rare"))]
#[access(
    name = "status_since",
    filter(tenant, status),
    range(created),
    operation = "Accounts by status since a date"
)]
struct Account {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    #[index(unique)]
    login: String,
    email: String,
    status: String,
    created: DateTime,
    #[index(expire_after = "30d")]
    last_seen: DateTime,
    score: i64,
    profile: Profile,
    #[embed(max = 10)]
    devices: Vec<Device>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Profile {
    address: Address,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Address {
    city: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Device {
    serial: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_access_pattern_uses_its_index() {
    let db = testkit::database("accounts_explain").await.unwrap();
    testkit::assert_access_patterns_use_indexes::<Account>(&db).await;
    let by_pattern: Vec<(&str, Option<&str>)> =
        Account::ACCESS_PATTERNS.iter().map(|p| (p.name, p.index)).collect();
    assert_eq!(
        by_pattern,
        vec![
            ("recent_by_status", Some("tenant_1_status_1_created_-1")),
            ("oldest_by_status", Some("tenant_1_status_1_created_-1")),
            ("top_in_city", Some("by_city")),
            ("by_email", Some("tenant_1_email_1")),
            ("by_device", Some("tenant_1_devices.serial_1")),
            ("by_id", Some("_id_")),
            ("status_since", Some("tenant_1_status_1_created_-1")),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_index_shows_in_explain() {
    let db = testkit::database("posts_dropped").await.unwrap();
    docshape::sync::<Post>(&db).await.unwrap();
    db.run_command(bson::doc! { "dropIndexes": "posts", "index": "author_id_1_created_at_-1" })
        .await
        .unwrap();
    let outcomes = docshape::access::explain_access_patterns::<Post>(&db).await.unwrap();
    assert!(!outcomes[0].is_served(), "{}", outcomes[0]);
    assert!(outcomes[0].collection_scan);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_without_access_patterns_have_nothing_to_explain() {
    let db = testkit::database("orders_explain").await.unwrap();
    testkit::assert_access_patterns_use_indexes::<Order>(&db).await;
    assert!(Order::ACCESS_PATTERNS.is_empty());
}
