//! The write pipeline's matrix, on a real server: each docshape writer × each effect a
//! model declares that applies to it — stamps (`#[created_at]`, `#[updated_at]`),
//! the revision (`#[revision]`), copies (`#[denormalized]` elsewhere), cached keys
//! (`cache = Family` rows) and bounds — one test per cell, each reading the outcome
//! back from the server or from Redis.
//!
//! Writers: write rows, upsert rows, `relation::insert_one`/`insert_many`, versioned
//! `insert_one`/`save`/`update_one`/`modify`/backfill, `denormalized::update_one`, the
//! copy refresh of the worker, `reconcile` and `repair`, outlier pushes, bucket
//! appends, time-series inserts and write rows in a transaction. (The watcher's copy
//! writes are `reconcile`'s and the worker's: tests/denormalized/cached.rs and
//! watcher.rs cover its own paths.)

// See tests/index/mod.rs: a clippy false positive on repeated helper-attribute keys.
#![allow(clippy::duplicated_attributes)]

use std::time::Duration;

use docshape::access::UpdateError;
use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::denormalized::{self, Worker};
use docshape::keys::StringFamily;
use docshape::redis::aio::MultiplexedConnection;
use docshape::refs::Ref;
use docshape::versioning::{self, BackfillOptions, RetryPolicy};
use docshape::{relation, Embedded, KeyFamily, Model};
use docshape_testkit as testkit;
use mongodb::Database;
use serde::{Deserialize, Serialize};

const ZERO: DateTime = DateTime::from_millis(0);

/// A seller: the source of the products' copied name; stamped, cached, with a plain,
/// a revision-guarded and an upsert row, and a bounded push.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "wm_sellers")]
#[access(name = "rename_seller", filter(_id), update(set(name)))]
#[access(name = "rename_seller_at", filter(_id, rev), update(set(name)))]
#[access(name = "upsert_seller", filter(_id), update(set(name)), upsert(default(badges)))]
#[access(name = "add_badge", filter(_id), update(push(badges)))]
#[access(
    name = "seller_card",
    filter(_id),
    fields(name),
    view(name = SellerCard, derive(Debug, Clone, PartialEq)),
    cache = SellerCardCache,
    consistency = "eventual ok"
)]
pub struct Seller {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[validate(max_items = 2)]
    pub badges: Vec<String>,
    #[created_at]
    pub created_at: DateTime,
    #[updated_at]
    pub updated_at: DateTime,
    #[revision]
    pub rev: i64,
}

/// The seller card, cached for five minutes: longer than any test here waits.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:wm_seller:{id}", kind = string, value = SellerCard, ttl = "300s")]
pub struct SellerCardCache {
    pub id: String,
}

/// A product with its seller's name copied (async), stamped and cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "wm_products")]
#[index(keys(seller_id))]
#[access(
    name = "product_page",
    filter(_id),
    fields(seller_name),
    view(name = ProductPage, derive(Debug, Clone, PartialEq)),
    cache = ProductPageCache,
    consistency = "eventual ok"
)]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub seller_id: Ref<Seller>,
    #[denormalized(from = "Seller::name", via = "seller_id", refresh = "async", max_stale = "5m")]
    pub seller_name: String,
    #[created_at]
    pub created_at: DateTime,
    #[updated_at]
    pub updated_at: DateTime,
    #[revision]
    pub rev: i64,
}

/// The product page, cached for five minutes.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:wm_product:{id}", kind = string, value = ProductPage, ttl = "300s")]
pub struct ProductPageCache {
    pub id: String,
}

/// A versioned shop (version 1 called the name `title`), stamped and cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "wm_shops", version = 2, migrate(v1 = ShopV1))]
#[access(
    name = "shop_card",
    filter(_id),
    fields(name),
    view(name = ShopCard, derive(Debug, Clone, PartialEq)),
    cache = ShopCardCache,
    consistency = "eventual ok"
)]
pub struct Shop {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[schema_version]
    pub schema_version: i32,
    #[created_at]
    pub created_at: DateTime,
    #[updated_at]
    pub updated_at: DateTime,
    #[revision]
    pub rev: i64,
}

/// Version 1 of [`Shop`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct ShopV1 {
    #[serde(rename = "_id")]
    pub id: String,
    pub title: String,
    pub created_at: DateTime,
    pub updated_at: DateTime,
    pub rev: i64,
}

impl From<ShopV1> for Shop {
    fn from(v1: ShopV1) -> Self {
        Shop {
            id: v1.id,
            name: v1.title,
            schema_version: 2,
            created_at: v1.created_at,
            updated_at: v1.updated_at,
            rev: v1.rev,
        }
    }
}

/// The shop card, cached for five minutes.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:wm_shop:{id}", kind = string, value = ShopCard, ttl = "300s")]
pub struct ShopCardCache {
    pub id: String,
}

/// A post whose comments are an outlier array; stamped and cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "wm_posts")]
#[access(
    name = "post_page",
    filter(_id),
    fields(comment_count),
    view(name = PostPage, derive(Debug, Clone, PartialEq)),
    cache = PostPageCache,
    consistency = "eventual ok"
)]
pub struct Post {
    #[serde(rename = "_id")]
    #[validate(max_length = 64)]
    pub id: String,
    #[validate(items(max_length = 200))]
    #[outlier(threshold = 2, overflow = "wm_post_comments", flag = has_more, count = comment_count, per_doc = 10)]
    pub comments: Vec<String>,
    pub has_more: bool,
    pub comment_count: i64,
    #[created_at]
    pub created_at: DateTime,
    #[updated_at]
    pub updated_at: DateTime,
    #[revision]
    pub rev: i64,
}

/// The post page, cached for five minutes.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:wm_post:{id}", kind = string, value = PostPage, ttl = "300s")]
pub struct PostPageCache {
    pub id: String,
}

/// One reading of a bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Reading {
    pub t: DateTime,
    pub v: f64,
}

/// A day of readings per sensor, stamped.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "wm_sensor_days")]
#[bucket(series = sensor, period = day, per = "day", max = 2, items = readings, time = t)]
pub struct SensorDay {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub sensor: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
    #[created_at]
    pub created_at: DateTime,
    #[updated_at]
    pub updated_at: DateTime,
    #[revision]
    pub rev: i64,
}

/// A time-series reading with its insertion time and revision.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "wm_ticks", timeseries(time = t, meta = sensor, granularity = "seconds"))]
pub struct Tick {
    pub sensor: String,
    pub t: DateTime,
    pub v: f64,
    #[created_at]
    pub created_at: DateTime,
    #[revision]
    pub rev: i32,
}

// ---------------------------------------------------------------------------------
// Helpers.

/// The stored `(created_at, updated_at, rev)` of a document.
async fn stamps(db: &Database, collection: &str, id: impl Into<Bson>) -> (DateTime, DateTime, i64) {
    let stored =
        db.collection::<Document>(collection).find_one(doc! { "_id": id.into() }).await.unwrap().unwrap();
    (*stored.get_datetime("created_at").unwrap(), *stored.get_datetime("updated_at").unwrap(), rev(&stored))
}

fn rev(stored: &Document) -> i64 {
    match stored.get("rev") {
        Some(Bson::Int32(v)) => i64::from(*v),
        Some(Bson::Int64(v)) => *v,
        other => panic!("rev is {other:?} in {stored:?}"),
    }
}

/// Long enough for the clock to move past the last stamp (milliseconds).
async fn tick() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// A database with the models synced, the Redis connection installed for the
/// pipeline's cache step, seller `s1` ("Ada") and its products `p1`, `p2`.
async fn setup(hint: &str) -> (testkit::TestDb, MultiplexedConnection) {
    let db = testkit::database(hint).await.unwrap();
    for sync in [
        docshape::sync::<Seller>(&db).await,
        docshape::sync::<Product>(&db).await,
        docshape::sync::<Shop>(&db).await,
        docshape::sync::<Post>(&db).await,
        docshape::sync::<SensorDay>(&db).await,
    ] {
        sync.unwrap();
    }
    let redis = testkit::redis::database().await.unwrap();
    docshape::keys::invalidate_on_write(&db, redis.clone());
    let mut seller = seller("s1", "Ada");
    relation::insert_one(&db, &mut seller).await.unwrap();
    for id in ["p1", "p2"] {
        let mut product = product(id, "s1");
        relation::insert_one(&db, &mut product).await.unwrap();
    }
    (db, redis)
}

fn seller(id: &str, name: &str) -> Seller {
    Seller {
        id: id.into(),
        name: name.into(),
        badges: Vec::new(),
        created_at: ZERO,
        updated_at: ZERO,
        rev: 0,
    }
}

fn product(id: &str, seller: &str) -> Product {
    Product {
        id: id.into(),
        seller_id: Ref::new(seller.to_owned()),
        seller_name: String::new(),
        created_at: ZERO,
        updated_at: ZERO,
        rev: 0,
    }
}

/// Reads seller `id`'s card through its cache (filling it), and checks it is cached.
async fn cache_seller(db: &Database, redis: &mut MultiplexedConnection, id: &str) -> String {
    let card = Seller::seller_card(id).one(db, redis).await.unwrap().unwrap();
    assert!(SellerCardCache { id: id.into() }.get(redis).await.unwrap().is_some(), "{id} cached");
    card.name
}

/// Whether seller `id`'s card is still cached.
async fn seller_cached(redis: &mut MultiplexedConnection, id: &str) -> bool {
    SellerCardCache { id: id.into() }.get(redis).await.unwrap().is_some()
}

async fn cache_product(db: &Database, redis: &mut MultiplexedConnection, id: &str) -> String {
    let page = Product::product_page(id).one(db, redis).await.unwrap().unwrap();
    assert!(ProductPageCache { id: id.into() }.get(redis).await.unwrap().is_some(), "{id} cached");
    page.seller_name
}

async fn product_cached(redis: &mut MultiplexedConnection, id: &str) -> bool {
    ProductPageCache { id: id.into() }.get(redis).await.unwrap().is_some()
}

/// Renames seller `s1` outside docshape: no job, no key deleted, no stamp.
async fn rename_by_hand(db: &Database, name: &str) {
    db.collection::<Document>("wm_sellers")
        .update_one(doc! { "_id": "s1" }, doc! { "$set": { "name": name } })
        .await
        .unwrap();
}

/// Asserts `after` is a modification of `before`: the same `created_at`, a later
/// `updated_at`, the next revision.
fn modified(before: (DateTime, DateTime, i64), after: (DateTime, DateTime, i64), what: &str) {
    assert_eq!(after.0, before.0, "{what}: created_at kept");
    assert!(after.1 > before.1, "{what}: updated_at moved forward: {} -> {}", before.1, after.1);
    assert_eq!(after.2, before.2 + 1, "{what}: one more revision");
}

/// Asserts a created document's stamps: both times set (not the value's zero), revision 1.
fn created(stamps: (DateTime, DateTime, i64), what: &str) {
    assert!(stamps.0 > ZERO && stamps.1 > ZERO, "{what}: stamped on creation: {stamps:?}");
    assert_eq!(stamps.2, 1, "{what}: a created document's revision is 1");
}

// ---------------------------------------------------------------------------------
// Write rows.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_row_stamps() {
    let (db, _redis) = setup("wm_row_stamps").await;
    let before = stamps(&db, "wm_sellers", "s1").await;
    tick().await;
    Seller::rename_seller("s1", "Ada L.").uncached().run(&db).await.unwrap();
    modified(before, stamps(&db, "wm_sellers", "s1").await, "write row");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_row_revision() {
    let (db, _redis) = setup("wm_row_revision").await;
    let (_, _, at) = stamps(&db, "wm_sellers", "s1").await;
    Seller::rename_seller_at("s1", at, "Ada L.").uncached().run(&db).await.unwrap();
    // The same revision again: the document moved on, so the write is a conflict
    // naming the current revision, and nothing is written.
    let stale = Seller::rename_seller_at("s1", at, "Grace").uncached().run(&db).await;
    assert!(matches!(stale, Err(UpdateError::Conflict { current: Some(c), .. }) if c == at + 1), "{stale:?}");
    let name = Seller::collection(&db).find_one(doc! { "_id": "s1" }).await.unwrap().unwrap().name;
    assert_eq!(name, "Ada L.");
    // A missing document is not a conflict.
    let missing = Seller::rename_seller_at("nobody", at, "x").uncached().run(&db).await;
    assert!(matches!(missing, Err(UpdateError::NotFound { .. })), "{missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_row_copies() {
    let (db, _redis) = setup("wm_row_copies").await;
    Seller::rename_seller("s1", "Ada L.").uncached().run(&db).await.unwrap();
    // The async copy is queued by the row's write, and the worker applies it.
    let report = Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(report.documents_updated, 2, "{report:?}");
    for id in ["p1", "p2"] {
        let p = Product::collection(&db).find_one(doc! { "_id": id }).await.unwrap().unwrap();
        assert_eq!(p.seller_name, "Ada L.", "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_row_cache() {
    let (db, mut redis) = setup("wm_row_cache").await;
    assert_eq!(cache_seller(&db, &mut redis, "s1").await, "Ada");
    Seller::rename_seller("s1", "Ada L.").uncached().run(&db).await.unwrap();
    assert!(!seller_cached(&mut redis, "s1").await, "the write row deleted the key");
    assert_eq!(cache_seller(&db, &mut redis, "s1").await, "Ada L.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_row_bound() {
    let (db, _redis) = setup("wm_row_bound").await;
    for badge in ["a", "b"] {
        Seller::add_badge("s1", badge).uncached().run(&db).await.unwrap();
    }
    let before = stamps(&db, "wm_sellers", "s1").await;
    let full = Seller::add_badge("s1", "c").uncached().run(&db).await;
    assert!(matches!(full, Err(UpdateError::Full { .. })), "{full:?}");
    // A refused write stamps nothing.
    assert_eq!(stamps(&db, "wm_sellers", "s1").await, before);
}

// ---------------------------------------------------------------------------------
// Upsert rows.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upsert_row_stamps() {
    let (db, _redis) = setup("wm_upsert_stamps").await;
    Seller::upsert_seller("s9", "Grace").run(&db).await.unwrap();
    let first = stamps(&db, "wm_sellers", "s9").await;
    created(first, "upsert that inserts");
    tick().await;
    Seller::upsert_seller("s9", "Grace H.").run(&db).await.unwrap();
    modified(first, stamps(&db, "wm_sellers", "s9").await, "upsert that updates");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upsert_row_cache() {
    let (db, mut redis) = setup("wm_upsert_cache").await;
    cache_seller(&db, &mut redis, "s1").await;
    Seller::upsert_seller("s1", "Ada U.").run(&db).await.unwrap();
    assert!(!seller_cached(&mut redis, "s1").await, "the upsert row deleted the key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upsert_row_copies() {
    let (db, _redis) = setup("wm_upsert_copies").await;
    Seller::upsert_seller("s1", "Ada U.").run(&db).await.unwrap();
    Worker::new(&db).run_until_empty().await.unwrap();
    let p = Product::collection(&db).find_one(doc! { "_id": "p1" }).await.unwrap().unwrap();
    assert_eq!(p.seller_name, "Ada U.");
}

// ---------------------------------------------------------------------------------
// Inserts.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_one_stamps_and_revision() {
    let (db, _redis) = setup("wm_insert_one").await;
    created(stamps(&db, "wm_sellers", "s1").await, "relation::insert_one");
    created(stamps(&db, "wm_products", "p1").await, "relation::insert_one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_one_copies() {
    let (db, _redis) = setup("wm_insert_one_copies").await;
    let p = Product::collection(&db).find_one(doc! { "_id": "p1" }).await.unwrap().unwrap();
    assert_eq!(p.seller_name, "Ada", "the copy is filled from its source on insert");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_many_stamps_revision_and_copies() {
    let (db, _redis) = setup("wm_insert_many").await;
    let mut more = vec![product("p3", "s1"), product("p4", "s1")];
    let ids = relation::insert_many(&db, &mut more).await.unwrap();
    assert_eq!(ids, vec![Bson::String("p3".into()), Bson::String("p4".into())]);
    for id in ["p3", "p4"] {
        created(stamps(&db, "wm_products", id).await, "relation::insert_many");
        let p = Product::collection(&db).find_one(doc! { "_id": id }).await.unwrap().unwrap();
        assert_eq!(p.seller_name, "Ada", "{id}: its copy filled");
    }
    // A reference to a missing source inserts nothing.
    let mut orphan = vec![product("p5", "nobody")];
    assert!(relation::insert_many(&db, &mut orphan).await.is_err());
    assert!(Product::collection(&db).find_one(doc! { "_id": "p5" }).await.unwrap().is_none());
}

// ---------------------------------------------------------------------------------
// Versioned writers.

async fn shop_v2(db: &Database) {
    let shop = Shop {
        id: "sh1".into(),
        name: "Corner".into(),
        schema_version: 2,
        created_at: ZERO,
        updated_at: ZERO,
        rev: 0,
    };
    versioning::insert_one(db, &shop).await.unwrap();
}

async fn cache_shop(db: &Database, redis: &mut MultiplexedConnection) {
    Shop::shop_card("sh1").one(db, redis).await.unwrap().unwrap();
    assert!(ShopCardCache { id: "sh1".into() }.get(redis).await.unwrap().is_some());
}

async fn shop_cached(redis: &mut MultiplexedConnection) -> bool {
    ShopCardCache { id: "sh1".into() }.get(redis).await.unwrap().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_insert_stamps_and_revision() {
    let (db, _redis) = setup("wm_versioned_insert").await;
    shop_v2(&db).await;
    created(stamps(&db, "wm_shops", "sh1").await, "versioning::insert_one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_save_stamps_revision_and_cache() {
    let (db, mut redis) = setup("wm_versioned_save").await;
    shop_v2(&db).await;
    cache_shop(&db, &mut redis).await;
    let before = stamps(&db, "wm_shops", "sh1").await;
    tick().await;
    let mut loaded = versioning::find_one::<Shop>(&db, doc! { "_id": "sh1" }).await.unwrap().unwrap();
    loaded.value.name = "Corner Shop".into();
    loaded.save(&db).await.unwrap();
    modified(before, stamps(&db, "wm_shops", "sh1").await, "versioned save");
    assert!(!shop_cached(&mut redis).await, "the save deleted the key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_save_revision_conflict() {
    let (db, _redis) = setup("wm_versioned_conflict").await;
    shop_v2(&db).await;
    let mut first = versioning::find_one::<Shop>(&db, doc! { "_id": "sh1" }).await.unwrap().unwrap();
    let mut second = versioning::find_one::<Shop>(&db, doc! { "_id": "sh1" }).await.unwrap().unwrap();
    first.value.name = "First".into();
    first.save(&db).await.unwrap();
    second.value.name = "Second".into();
    let lost = second.save(&db).await;
    assert!(matches!(lost, Err(versioning::VersionError::Conflict { .. })), "{lost:?}");
    let stored = versioning::find_one::<Shop>(&db, doc! { "_id": "sh1" }).await.unwrap().unwrap();
    assert_eq!((stored.value.name.as_str(), stored.value.rev), ("First", 2), "no lost update");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_update_one_stamps_revision_and_cache() {
    let (db, mut redis) = setup("wm_versioned_update").await;
    shop_v2(&db).await;
    cache_shop(&db, &mut redis).await;
    let before = stamps(&db, "wm_shops", "sh1").await;
    tick().await;
    versioning::update_one::<Shop>(&db, "sh1", doc! { "$set": { "name": "U" } }, RetryPolicy::default())
        .await
        .unwrap();
    modified(before, stamps(&db, "wm_shops", "sh1").await, "versioning::update_one");
    assert!(!shop_cached(&mut redis).await, "update_one deleted the key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_modify_stamps_revision_and_cache() {
    let (db, mut redis) = setup("wm_versioned_modify").await;
    shop_v2(&db).await;
    cache_shop(&db, &mut redis).await;
    let before = stamps(&db, "wm_shops", "sh1").await;
    tick().await;
    versioning::modify::<Shop>(&db, "sh1", RetryPolicy::default(), |s| s.name = "M".into()).await.unwrap();
    modified(before, stamps(&db, "wm_shops", "sh1").await, "versioning::modify");
    assert!(!shop_cached(&mut redis).await, "modify deleted the key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_stamps_revision_and_cache() {
    let (db, mut redis) = setup("wm_backfill").await;
    // A version-1 document, stamped by its own writer long ago.
    let long_ago = DateTime::from_millis(1_000);
    db.collection::<Document>("wm_shops")
        .insert_one(doc! { "_id": "sh1", "title": "Corner", "created_at": long_ago, "updated_at": long_ago, "rev": 1_i64 })
        .await
        .unwrap();
    cache_shop(&db, &mut redis).await;
    let report = versioning::backfill::<Shop>(&db, BackfillOptions::default()).await.unwrap();
    assert_eq!(report.progress.upgraded, 1, "{report:?}");
    modified((long_ago, long_ago, 1), stamps(&db, "wm_shops", "sh1").await, "backfill's upgrade");
    assert!(!shop_cached(&mut redis).await, "the upgrade deleted the key");
}

// ---------------------------------------------------------------------------------
// `denormalized::update_one` and the copy writers.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denormalized_update_one_stamps_revision_and_cache() {
    let (db, mut redis) = setup("wm_denorm_update").await;
    cache_seller(&db, &mut redis, "s1").await;
    let before = stamps(&db, "wm_sellers", "s1").await;
    tick().await;
    let done =
        denormalized::update_one::<Seller>(&db, "s1", doc! { "$set": { "name": "Ada L." } }).await.unwrap();
    assert_eq!(done.jobs_enqueued(), 1, "{done:?}");
    modified(before, stamps(&db, "wm_sellers", "s1").await, "denormalized::update_one");
    assert!(!seller_cached(&mut redis, "s1").await, "the source's key deleted");
}

/// The copy holders' stamps and keys after a copy writer rewrote `p1` and `p2`.
async fn copies_rewritten(
    db: &Database,
    redis: &mut MultiplexedConnection,
    before: &[(DateTime, DateTime, i64)],
    writer: &str,
) {
    for (i, id) in ["p1", "p2"].into_iter().enumerate() {
        modified(before[i], stamps(db, "wm_products", id).await, &format!("{writer} on {id}"));
        assert!(!product_cached(redis, id).await, "{writer} deleted {id}'s key");
        assert_eq!(cache_product(db, redis, id).await, "Ada L.", "{writer}: {id}'s page shows the new name");
    }
}

/// Caches both product pages and returns their stamps.
async fn before_copies(db: &Database, redis: &mut MultiplexedConnection) -> Vec<(DateTime, DateTime, i64)> {
    let mut out = Vec::new();
    for id in ["p1", "p2"] {
        assert_eq!(cache_product(db, redis, id).await, "Ada");
        out.push(stamps(db, "wm_products", id).await);
    }
    tick().await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_stamps_revision_and_cache() {
    let (db, mut redis) = setup("wm_worker").await;
    let before = before_copies(&db, &mut redis).await;
    Seller::rename_seller("s1", "Ada L.").uncached().run(&db).await.unwrap();
    // Before the worker: the copies and their pages are as they were.
    assert!(product_cached(&mut redis, "p1").await);
    Worker::new(&db).run_until_empty().await.unwrap();
    copies_rewritten(&db, &mut redis, &before, "the worker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_stamps_revision_and_cache() {
    let (db, mut redis) = setup("wm_reconcile").await;
    let before = before_copies(&db, &mut redis).await;
    rename_by_hand(&db, "Ada L.").await;
    let spec = denormalized::copies().into_iter().find(|c| c.key() == "wm_products.seller_name").unwrap();
    let report = denormalized::reconcile(&db, spec).await.unwrap();
    assert_eq!(report.documents_updated, 2, "{report:?}");
    copies_rewritten(&db, &mut redis, &before, "reconcile").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_stamps_revision_and_cache() {
    let (db, mut redis) = setup("wm_repair").await;
    let before = before_copies(&db, &mut redis).await;
    rename_by_hand(&db, "Ada L.").await;
    let repaired = denormalized::repair::<Seller>(&db, "s1").await.unwrap();
    assert_eq!(repaired[0].documents_updated, 2, "{repaired:?}");
    copies_rewritten(&db, &mut redis, &before, "repair").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_refresh_leaves_unchanged_copies_unstamped() {
    let (db, mut redis) = setup("wm_copy_unchanged").await;
    let mut other = product("p3", "s1");
    relation::insert_one(&db, &mut other).await.unwrap();
    // p3's copy already holds the new name (written by hand): the refresh leaves it.
    db.collection::<Document>("wm_products")
        .update_one(doc! { "_id": "p3" }, doc! { "$set": { "seller_name": "Ada L." } })
        .await
        .unwrap();
    let before = stamps(&db, "wm_products", "p3").await;
    let before_pages = before_copies(&db, &mut redis).await;
    Seller::rename_seller("s1", "Ada L.").uncached().run(&db).await.unwrap();
    Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(stamps(&db, "wm_products", "p3").await, before, "an unchanged copy is not a modification");
    copies_rewritten(&db, &mut redis, &before_pages, "the worker").await;
}

// ---------------------------------------------------------------------------------
// Outlier pushes.

async fn post(db: &Database) {
    let mut post = Post {
        id: "q1".into(),
        comments: Vec::new(),
        has_more: false,
        comment_count: 0,
        created_at: ZERO,
        updated_at: ZERO,
        rev: 0,
    };
    relation::insert_one(db, &mut post).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outlier_push_stamps_revision_and_cache() {
    let (db, mut redis) = setup("wm_outlier").await;
    post(&db).await;
    let mut before = stamps(&db, "wm_posts", "q1").await;
    // Embedded (one comment fits), then into the overflow (three do not): each push
    // is one modification of the post.
    for comments in [vec!["first".to_owned()], vec!["a".into(), "b".into(), "c".into()]] {
        Post::post_page("q1").one(&db, &mut redis).await.unwrap().unwrap();
        assert!(PostPageCache { id: "q1".into() }.get(&mut redis).await.unwrap().is_some());
        tick().await;
        Post::push_comments(&db, "q1", &comments).await.unwrap();
        let after = stamps(&db, "wm_posts", "q1").await;
        modified(before, after, "outlier push");
        assert!(
            PostPageCache { id: "q1".into() }.get(&mut redis).await.unwrap().is_none(),
            "the push deleted the post's key"
        );
        before = after;
    }
    let page = Post::post_page("q1").one(&db, &mut redis).await.unwrap().unwrap();
    assert_eq!(page.comment_count, 4);
}

// ---------------------------------------------------------------------------------
// Bucket appends.

fn reading(ms: i64, v: f64) -> Reading {
    Reading { t: DateTime::from_millis(ms), v }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_append_stamps_and_revision() {
    let (db, _redis) = setup("wm_bucket").await;
    const T0: i64 = 1_700_006_400_000; // a day's start (UTC)
    SensorDay::append(&db, "s-1", &reading(T0 + 1, 1.0)).await.unwrap();
    let buckets = db.collection::<Document>("wm_sensor_days");
    let first = buckets.find_one(doc! {}).await.unwrap().unwrap();
    let id = first.get("_id").unwrap().clone();
    let created_stamps = stamps(&db, "wm_sensor_days", id.clone()).await;
    created(created_stamps, "an append that creates the bucket");
    tick().await;
    SensorDay::append(&db, "s-1", &reading(T0 + 2, 2.0)).await.unwrap();
    modified(created_stamps, stamps(&db, "wm_sensor_days", id).await, "an append to the bucket");
}

// ---------------------------------------------------------------------------------
// Time-series inserts.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeseries_insert_many_stamps_and_revision() {
    let db = testkit::database("wm_timeseries").await.unwrap();
    docshape::sync::<Tick>(&db).await.unwrap();
    let ticks = [Tick { sensor: "a".into(), t: DateTime::now(), v: 1.0, created_at: ZERO, rev: 0 }];
    docshape::timeseries::insert_many(&db, &ticks).await.unwrap();
    let stored = db.collection::<Document>("wm_ticks").find_one(doc! {}).await.unwrap().unwrap();
    assert!(*stored.get_datetime("created_at").unwrap() > ZERO, "{stored:?}");
    assert_eq!(rev(&stored), 1, "{stored:?}");
}

// ---------------------------------------------------------------------------------
// Transactions.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_stamps_and_cache_after_the_commit() {
    let (db, mut redis) = setup("wm_transaction").await;
    cache_seller(&db, &mut redis, "s1").await;
    let before = stamps(&db, "wm_sellers", "s1").await;
    tick().await;
    let client = db.client().clone();
    let dbr: &Database = &db;
    docshape::transaction(&client, |tx| {
        Box::pin(async move {
            Seller::rename_seller("s1", "Ada T.").uncached().session(tx).run(dbr).await?;
            Ok::<_, UpdateError>(())
        })
    })
    .await
    .unwrap();
    modified(before, stamps(&db, "wm_sellers", "s1").await, "a write row in a transaction");
    assert!(!seller_cached(&mut redis, "s1").await, "the key deleted after the commit");
    assert_eq!(cache_seller(&db, &mut redis, "s1").await, "Ada T.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_aborted_writes_leave_stamps_and_keys() {
    let (db, mut redis) = setup("wm_transaction_abort").await;
    cache_seller(&db, &mut redis, "s1").await;
    let before = stamps(&db, "wm_sellers", "s1").await;
    let client = db.client().clone();
    let dbr: &Database = &db;
    let failed = docshape::transaction(&client, |tx| {
        Box::pin(async move {
            Seller::rename_seller("s1", "Ada T.").uncached().session(tx).run(dbr).await?;
            // Refused: the transaction aborts, and the rename with it.
            Seller::rename_seller("nobody", "x").uncached().session(tx).run(dbr).await?;
            Ok::<_, UpdateError>(())
        })
    })
    .await;
    assert!(failed.is_err());
    assert_eq!(stamps(&db, "wm_sellers", "s1").await, before, "nothing of the aborted write");
    assert!(seller_cached(&mut redis, "s1").await, "no key deleted for an aborted write");
}
