//! The write pipeline's matrix, on a real server: each docshape writer × each effect a
//! model declares that applies to it — stamps (`#[created_at]`, `#[updated_at]`),
//! the revision (`#[revision]`), copies (`#[denormalized]` elsewhere), cached keys
//! (`cache = Family` rows) and bounds — one test per cell, each reading the outcome
//! back from the server or from Redis.
//!
//! Writers: write rows, upsert rows, `relation::insert_one`/`insert_many`, versioned
//! `insert_one`/`save`/`update_one`/`modify`/backfill, `denormalized::update_one`, the
//! copy refresh of the worker, `reconcile` and `repair`, outlier pushes, bucket
//! appends, time-series inserts and write rows in a transaction, and the watcher's
//! copy writes (its reconcile on start; tests/denormalized/watcher.rs covers the change
//! stream). Each writer runs once per test in a scenario of its own, which returns the
//! stamps before and after and whether the cached key was left; each test asserts one
//! effect.

// See tests/index/mod.rs: a clippy false positive on repeated helper-attribute keys.
#![allow(clippy::duplicated_attributes)]

use std::time::Duration;

use docshape::access::UpdateError;
use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::denormalized::{self, Watcher, Worker};
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
async fn stamps(db: &Database, collection: &str, id: &str) -> (DateTime, DateTime, i64) {
    let stored =
        db.collection::<Document>(collection).find_one(doc! { "_id": { "$eq": id } }).await.unwrap().unwrap();
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

/// What one writer's scenario left: the stamps of the document it wrote (or of a copy
/// holder it rewrote) before and after, and whether that document's cached key was
/// left in Redis.
#[derive(Debug)]
struct Outcome {
    before: (DateTime, DateTime, i64),
    after: (DateTime, DateTime, i64),
    key_left: bool,
}

impl Outcome {
    /// `updated_at` moved forward (from the server's clock), `created_at` kept.
    fn stamped(&self) {
        assert_eq!(self.after.0, self.before.0, "created_at kept: {self:?}");
        assert!(self.after.1 > self.before.1, "updated_at moved forward: {self:?}");
    }

    /// One more revision.
    fn revised(&self) {
        assert_eq!(self.after.2, self.before.2 + 1, "one more revision: {self:?}");
    }

    /// The written document's cached key is gone.
    fn invalidated(&self) {
        assert!(!self.key_left, "the cached key was deleted: {self:?}");
    }
}

/// A created document's stamps: both times set (not the value's zero).
fn created_stamped(stamps: (DateTime, DateTime, i64), what: &str) {
    assert!(stamps.0 > ZERO && stamps.1 > ZERO, "{what}: stamped on creation: {stamps:?}");
}

/// A created document's revision is 1.
fn created_revised(stamps: (DateTime, DateTime, i64), what: &str) {
    assert_eq!(stamps.2, 1, "{what}: a created document's revision is 1: {stamps:?}");
}

/// The products' copies of `s1`'s name, read from the server.
async fn copies(db: &Database) -> Vec<String> {
    let mut out = Vec::new();
    for id in ["p1", "p2"] {
        out.push(Product::collection(db).find_one(doc! { "_id": id }).await.unwrap().unwrap().seller_name);
    }
    out
}

// ---------------------------------------------------------------------------------
// Write rows.

/// `rename_seller` on `s1`, its card cached before.
async fn write_row(hint: &str) -> (testkit::TestDb, Outcome) {
    let (db, mut redis) = setup(hint).await;
    cache_seller(&db, &mut redis, "s1").await;
    let before = stamps(&db, "wm_sellers", "s1").await;
    tick().await;
    Seller::rename_seller("s1", "Ada L.").uncached().run(&db).await.unwrap();
    let after = stamps(&db, "wm_sellers", "s1").await;
    let key_left = seller_cached(&mut redis, "s1").await;
    (db, Outcome { before, after, key_left })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_row_stamps() {
    write_row("wm_row_stamps").await.1.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_row_revision() {
    write_row("wm_row_revision").await.1.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_row_cache() {
    write_row("wm_row_cache").await.1.invalidated();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_row_copies() {
    let (db, _) = write_row("wm_row_copies").await;
    // The async copy is queued by the row's write, and the worker applies it.
    let report = Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(report.documents_updated, 2, "{report:?}");
    assert_eq!(copies(&db).await, ["Ada L.", "Ada L."]);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_row_revision_guard() {
    let (db, _redis) = setup("wm_row_guard").await;
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

// ---------------------------------------------------------------------------------
// Upsert rows.

/// `upsert_seller` on `s1` (an update), its card cached before.
async fn upsert_row(hint: &str) -> (testkit::TestDb, Outcome) {
    let (db, mut redis) = setup(hint).await;
    cache_seller(&db, &mut redis, "s1").await;
    let before = stamps(&db, "wm_sellers", "s1").await;
    tick().await;
    Seller::upsert_seller("s1", "Ada U.").run(&db).await.unwrap();
    let after = stamps(&db, "wm_sellers", "s1").await;
    let key_left = seller_cached(&mut redis, "s1").await;
    (db, Outcome { before, after, key_left })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upsert_row_stamps() {
    upsert_row("wm_upsert_stamps").await.1.stamped();
    // An upsert that creates the document stamps it on creation.
    let (db, _redis) = setup("wm_upsert_stamps_new").await;
    Seller::upsert_seller("s9", "Grace").run(&db).await.unwrap();
    created_stamped(stamps(&db, "wm_sellers", "s9").await, "an upsert that inserts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upsert_row_revision() {
    upsert_row("wm_upsert_revision").await.1.revised();
    let (db, _redis) = setup("wm_upsert_revision_new").await;
    Seller::upsert_seller("s9", "Grace").run(&db).await.unwrap();
    created_revised(stamps(&db, "wm_sellers", "s9").await, "an upsert that inserts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upsert_row_cache() {
    upsert_row("wm_upsert_cache").await.1.invalidated();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upsert_row_copies() {
    let (db, _) = upsert_row("wm_upsert_copies").await;
    Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(copies(&db).await, ["Ada U.", "Ada U."]);
}

// ---------------------------------------------------------------------------------
// Inserts.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_one_stamps() {
    let (db, _redis) = setup("wm_insert_one_stamps").await;
    created_stamped(stamps(&db, "wm_sellers", "s1").await, "relation::insert_one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_one_revision() {
    let (db, _redis) = setup("wm_insert_one_revision").await;
    created_revised(stamps(&db, "wm_products", "p1").await, "relation::insert_one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_one_copies() {
    let (db, _redis) = setup("wm_insert_one_copies").await;
    assert_eq!(copies(&db).await, ["Ada", "Ada"], "the copies are filled from their source on insert");
}

/// `relation::insert_many` of `p3` and `p4`.
async fn insert_many(hint: &str) -> testkit::TestDb {
    let (db, _redis) = setup(hint).await;
    let mut more = vec![product("p3", "s1"), product("p4", "s1")];
    let ids = relation::insert_many(&db, &mut more).await.unwrap();
    assert_eq!(ids, vec![Bson::String("p3".into()), Bson::String("p4".into())]);
    db
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_many_stamps() {
    let db = insert_many("wm_insert_many_stamps").await;
    for id in ["p3", "p4"] {
        created_stamped(stamps(&db, "wm_products", id).await, "relation::insert_many");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_many_revision() {
    let db = insert_many("wm_insert_many_revision").await;
    for id in ["p3", "p4"] {
        created_revised(stamps(&db, "wm_products", id).await, "relation::insert_many");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_many_copies() {
    let db = insert_many("wm_insert_many_copies").await;
    for id in ["p3", "p4"] {
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
async fn versioned_insert_stamps() {
    let (db, _redis) = setup("wm_versioned_insert_stamps").await;
    shop_v2(&db).await;
    created_stamped(stamps(&db, "wm_shops", "sh1").await, "versioning::insert_one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_insert_revision() {
    let (db, _redis) = setup("wm_versioned_insert_revision").await;
    shop_v2(&db).await;
    created_revised(stamps(&db, "wm_shops", "sh1").await, "versioning::insert_one");
}

/// Which versioned writer changes the shop's name.
#[derive(Clone, Copy)]
enum Versioned {
    Save,
    UpdateOne,
    Modify,
}

/// A current shop `sh1`, its card cached, renamed by `writer`.
async fn versioned(hint: &str, writer: Versioned) -> Outcome {
    let (db, mut redis) = setup(hint).await;
    shop_v2(&db).await;
    cache_shop(&db, &mut redis).await;
    let before = stamps(&db, "wm_shops", "sh1").await;
    tick().await;
    match writer {
        Versioned::Save => {
            let mut loaded = versioning::find_one::<Shop>(&db, doc! { "_id": "sh1" }).await.unwrap().unwrap();
            loaded.value.name = "Corner Shop".into();
            loaded.save(&db).await.unwrap();
        }
        Versioned::UpdateOne => {
            versioning::update_one::<Shop>(
                &db,
                "sh1",
                doc! { "$set": { "name": "U" } },
                RetryPolicy::default(),
            )
            .await
            .unwrap();
        }
        Versioned::Modify => {
            versioning::modify::<Shop>(&db, "sh1", RetryPolicy::default(), |s| s.name = "M".into())
                .await
                .unwrap();
        }
    }
    let after = stamps(&db, "wm_shops", "sh1").await;
    Outcome { before, after, key_left: shop_cached(&mut redis).await }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_save_stamps() {
    versioned("wm_save_stamps", Versioned::Save).await.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_save_revision() {
    versioned("wm_save_revision", Versioned::Save).await.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_save_cache() {
    versioned("wm_save_cache", Versioned::Save).await.invalidated();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_save_revision_guard() {
    let (db, _redis) = setup("wm_save_guard").await;
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
async fn versioned_update_one_stamps() {
    versioned("wm_vupdate_stamps", Versioned::UpdateOne).await.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_update_one_revision() {
    versioned("wm_vupdate_revision", Versioned::UpdateOne).await.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_update_one_cache() {
    versioned("wm_vupdate_cache", Versioned::UpdateOne).await.invalidated();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_modify_stamps() {
    versioned("wm_modify_stamps", Versioned::Modify).await.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_modify_revision() {
    versioned("wm_modify_revision", Versioned::Modify).await.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_modify_cache() {
    versioned("wm_modify_cache", Versioned::Modify).await.invalidated();
}

/// A version-1 shop, stamped by its own writer long ago, its card cached, upgraded by
/// a backfill.
async fn backfill(hint: &str) -> Outcome {
    let (db, mut redis) = setup(hint).await;
    let long_ago = DateTime::from_millis(1_000);
    db.collection::<Document>("wm_shops")
        .insert_one(doc! { "_id": "sh1", "title": "Corner", "created_at": long_ago, "updated_at": long_ago, "rev": 1_i64 })
        .await
        .unwrap();
    cache_shop(&db, &mut redis).await;
    let report = versioning::backfill::<Shop>(&db, BackfillOptions::default()).await.unwrap();
    assert_eq!(report.progress.upgraded, 1, "{report:?}");
    let after = stamps(&db, "wm_shops", "sh1").await;
    Outcome { before: (long_ago, long_ago, 1), after, key_left: shop_cached(&mut redis).await }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_stamps() {
    backfill("wm_backfill_stamps").await.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_revision() {
    backfill("wm_backfill_revision").await.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_cache() {
    backfill("wm_backfill_cache").await.invalidated();
}

// ---------------------------------------------------------------------------------
// `denormalized::update_one`.

/// `denormalized::update_one` renames `s1`, its card cached before.
async fn denormalized_update(hint: &str) -> (testkit::TestDb, Outcome) {
    let (db, mut redis) = setup(hint).await;
    cache_seller(&db, &mut redis, "s1").await;
    let before = stamps(&db, "wm_sellers", "s1").await;
    tick().await;
    let done =
        denormalized::update_one::<Seller>(&db, "s1", doc! { "$set": { "name": "Ada L." } }).await.unwrap();
    assert_eq!(done.jobs_enqueued(), 1, "{done:?}");
    let after = stamps(&db, "wm_sellers", "s1").await;
    let key_left = seller_cached(&mut redis, "s1").await;
    (db, Outcome { before, after, key_left })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denormalized_update_one_stamps() {
    denormalized_update("wm_denorm_stamps").await.1.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denormalized_update_one_revision() {
    denormalized_update("wm_denorm_revision").await.1.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denormalized_update_one_cache() {
    denormalized_update("wm_denorm_cache").await.1.invalidated();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denormalized_update_one_copies() {
    let (db, _) = denormalized_update("wm_denorm_copies").await;
    Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(copies(&db).await, ["Ada L.", "Ada L."]);
}

// ---------------------------------------------------------------------------------
// The copy writers: the worker, the watcher, `reconcile`, `repair`.

/// Which copy writer refreshes the products' copies of `s1`'s name.
#[derive(Clone, Copy)]
enum CopyWriter {
    Worker,
    Watcher,
    Reconcile,
    Repair,
}

const COPY: &str = "wm_products.seller_name";

/// Both product pages cached, `s1` renamed (by a write row for the worker, by hand for
/// the others), then `writer` refreshes the copies. The outcome is `p1`'s; `p2` is
/// checked to match it.
async fn copy_writer(hint: &str, writer: CopyWriter) -> Outcome {
    let (db, mut redis) = setup(hint).await;
    let mut before = Vec::new();
    for id in ["p1", "p2"] {
        assert_eq!(cache_product(&db, &mut redis, id).await, "Ada");
        before.push(stamps(&db, "wm_products", id).await);
    }
    tick().await;
    match writer {
        CopyWriter::Worker => {
            Seller::rename_seller("s1", "Ada L.").uncached().run(&db).await.unwrap();
            // Before the worker: the pages are as they were.
            assert!(product_cached(&mut redis, "p1").await);
            Worker::new(&db).run_until_empty().await.unwrap();
        }
        CopyWriter::Watcher => {
            rename_by_hand(&db, "Ada L.").await;
            // A first start reconciles every copy before following the stream.
            let watcher = Watcher::new(&db).name(hint).only([COPY]).max_await(Duration::from_millis(50));
            let report = watcher.run_until(async {}).await.unwrap();
            assert_eq!(report.reconciles.len(), 1, "{report:?}");
        }
        CopyWriter::Reconcile => {
            rename_by_hand(&db, "Ada L.").await;
            let spec = denormalized::copies().into_iter().find(|c| c.key() == COPY).unwrap();
            let report = denormalized::reconcile(&db, spec).await.unwrap();
            assert_eq!(report.documents_updated, 2, "{report:?}");
        }
        CopyWriter::Repair => {
            rename_by_hand(&db, "Ada L.").await;
            let repaired = denormalized::repair::<Seller>(&db, "s1").await.unwrap();
            assert_eq!(repaired[0].documents_updated, 2, "{repaired:?}");
        }
    }
    assert_eq!(copies(&db).await, ["Ada L.", "Ada L."]);
    let mut outcomes = Vec::new();
    for (i, id) in ["p1", "p2"].into_iter().enumerate() {
        let after = stamps(&db, "wm_products", id).await;
        outcomes.push(Outcome { before: before[i], after, key_left: product_cached(&mut redis, id).await });
    }
    let p2 = outcomes.pop().unwrap();
    let p1 = outcomes.pop().unwrap();
    assert_eq!(
        (p1.after.2 - p1.before.2, p1.key_left),
        (p2.after.2 - p2.before.2, p2.key_left),
        "both copies rewritten alike: {p1:?} {p2:?}"
    );
    // A page read now shows the new name.
    assert_eq!(cache_product(&db, &mut redis, "p1").await, "Ada L.");
    p1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_stamps() {
    copy_writer("wm_worker_stamps", CopyWriter::Worker).await.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_revision() {
    copy_writer("wm_worker_revision", CopyWriter::Worker).await.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_cache() {
    copy_writer("wm_worker_cache", CopyWriter::Worker).await.invalidated();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_stamps() {
    copy_writer("wm_watcher_stamps", CopyWriter::Watcher).await.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_revision() {
    copy_writer("wm_watcher_revision", CopyWriter::Watcher).await.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_cache() {
    copy_writer("wm_watcher_cache", CopyWriter::Watcher).await.invalidated();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_stamps() {
    copy_writer("wm_reconcile_stamps", CopyWriter::Reconcile).await.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_revision() {
    copy_writer("wm_reconcile_revision", CopyWriter::Reconcile).await.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_cache() {
    copy_writer("wm_reconcile_cache", CopyWriter::Reconcile).await.invalidated();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_stamps() {
    copy_writer("wm_repair_stamps", CopyWriter::Repair).await.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_revision() {
    copy_writer("wm_repair_revision", CopyWriter::Repair).await.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_cache() {
    copy_writer("wm_repair_cache", CopyWriter::Repair).await.invalidated();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_refresh_leaves_unchanged_copies_unstamped() {
    let (db, _redis) = setup("wm_copy_unchanged").await;
    let mut other = product("p3", "s1");
    relation::insert_one(&db, &mut other).await.unwrap();
    // p3's copy already holds the new name (written by hand): the refresh leaves it.
    db.collection::<Document>("wm_products")
        .update_one(doc! { "_id": "p3" }, doc! { "$set": { "seller_name": "Ada L." } })
        .await
        .unwrap();
    let before = stamps(&db, "wm_products", "p3").await;
    let p1 = stamps(&db, "wm_products", "p1").await;
    tick().await;
    Seller::rename_seller("s1", "Ada L.").uncached().run(&db).await.unwrap();
    Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(stamps(&db, "wm_products", "p3").await, before, "an unchanged copy is not a modification");
    assert_eq!(stamps(&db, "wm_products", "p1").await.2, p1.2 + 1, "a changed copy is");
}

// ---------------------------------------------------------------------------------
// Outlier pushes.

/// A post pushed `comments` twice: one that stays embedded, then three that overflow;
/// the outcome of the push named by `overflowing`.
async fn outlier_push(hint: &str, overflowing: bool) -> Outcome {
    let (db, mut redis) = setup(hint).await;
    let mut post = Post {
        id: "q1".into(),
        comments: Vec::new(),
        has_more: false,
        comment_count: 0,
        created_at: ZERO,
        updated_at: ZERO,
        rev: 0,
    };
    relation::insert_one(&db, &mut post).await.unwrap();
    let mut outcome = None;
    for (i, comments) in
        [vec!["first".to_owned()], vec!["a".into(), "b".into(), "c".into()]].into_iter().enumerate()
    {
        Post::post_page("q1").one(&db, &mut redis).await.unwrap().unwrap();
        assert!(PostPageCache { id: "q1".into() }.get(&mut redis).await.unwrap().is_some());
        let before = stamps(&db, "wm_posts", "q1").await;
        tick().await;
        Post::push_comments(&db, "q1", &comments).await.unwrap();
        let after = stamps(&db, "wm_posts", "q1").await;
        let key_left = PostPageCache { id: "q1".into() }.get(&mut redis).await.unwrap().is_some();
        if (i == 1) == overflowing {
            outcome = Some(Outcome { before, after, key_left });
        }
    }
    let page = Post::post_page("q1").one(&db, &mut redis).await.unwrap().unwrap();
    assert_eq!(page.comment_count, 4);
    outcome.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outlier_push_stamps() {
    outlier_push("wm_outlier_stamps", false).await.stamped();
    outlier_push("wm_outlier_stamps_over", true).await.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outlier_push_revision() {
    outlier_push("wm_outlier_revision", false).await.revised();
    outlier_push("wm_outlier_revision_over", true).await.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outlier_push_cache() {
    outlier_push("wm_outlier_cache", false).await.invalidated();
    outlier_push("wm_outlier_cache_over", true).await.invalidated();
}

// ---------------------------------------------------------------------------------
// Bucket appends.

fn reading(ms: i64, v: f64) -> Reading {
    Reading { t: DateTime::from_millis(ms), v }
}

/// Two appends to one bucket: the first creates it. Returns the stamps after each.
async fn bucket_append(hint: &str) -> ((DateTime, DateTime, i64), (DateTime, DateTime, i64)) {
    let (db, _redis) = setup(hint).await;
    const T0: i64 = 1_700_006_400_000; // a day's start (UTC)
    SensorDay::append(&db, "s-1", &reading(T0 + 1, 1.0)).await.unwrap();
    let first = db.collection::<Document>("wm_sensor_days").find_one(doc! {}).await.unwrap().unwrap();
    let id = first.get_str("_id").unwrap().to_owned();
    let created = stamps(&db, "wm_sensor_days", &id).await;
    tick().await;
    SensorDay::append(&db, "s-1", &reading(T0 + 2, 2.0)).await.unwrap();
    (created, stamps(&db, "wm_sensor_days", &id).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_append_stamps() {
    let (created, appended) = bucket_append("wm_bucket_stamps").await;
    created_stamped(created, "an append that creates the bucket");
    Outcome { before: created, after: appended, key_left: false }.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_append_revision() {
    let (created, appended) = bucket_append("wm_bucket_revision").await;
    created_revised(created, "an append that creates the bucket");
    Outcome { before: created, after: appended, key_left: false }.revised();
}

// ---------------------------------------------------------------------------------
// Time-series inserts.

async fn timeseries_insert(hint: &str) -> Document {
    let db = testkit::database(hint).await.unwrap();
    docshape::sync::<Tick>(&db).await.unwrap();
    let ticks = [Tick { sensor: "a".into(), t: DateTime::now(), v: 1.0, created_at: ZERO, rev: 0 }];
    docshape::timeseries::insert_many(&db, &ticks).await.unwrap();
    db.collection::<Document>("wm_ticks").find_one(doc! {}).await.unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeseries_insert_many_stamps() {
    let stored = timeseries_insert("wm_timeseries_stamps").await;
    assert!(*stored.get_datetime("created_at").unwrap() > ZERO, "{stored:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeseries_insert_many_revision() {
    let stored = timeseries_insert("wm_timeseries_revision").await;
    assert_eq!(rev(&stored), 1, "{stored:?}");
}

// ---------------------------------------------------------------------------------
// Transactions.

/// A write row renames `s1` in a transaction, its card cached before; with `abort`, a
/// second write in the body fails and the transaction aborts.
async fn transaction(hint: &str, abort: bool) -> Outcome {
    let (db, mut redis) = setup(hint).await;
    cache_seller(&db, &mut redis, "s1").await;
    let before = stamps(&db, "wm_sellers", "s1").await;
    tick().await;
    let client = db.client().clone();
    let dbr: &Database = &db;
    let done = docshape::transaction(&client, |tx| {
        Box::pin(async move {
            Seller::rename_seller("s1", "Ada T.").uncached().session(tx).run(dbr).await?;
            if abort {
                // Refused: the transaction aborts, and the rename with it.
                Seller::rename_seller("nobody", "x").uncached().session(tx).run(dbr).await?;
            }
            Ok::<_, UpdateError>(())
        })
    })
    .await;
    assert_eq!(done.is_err(), abort, "{done:?}");
    let after = stamps(&db, "wm_sellers", "s1").await;
    Outcome { before, after, key_left: seller_cached(&mut redis, "s1").await }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_stamps() {
    transaction("wm_tx_stamps", false).await.stamped();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_revision() {
    transaction("wm_tx_revision", false).await.revised();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_cache() {
    // The key is deleted after the commit.
    transaction("wm_tx_cache", false).await.invalidated();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_aborted_leaves_stamps_and_keys() {
    let outcome = transaction("wm_tx_abort", true).await;
    assert_eq!(outcome.after, outcome.before, "nothing of the aborted write: {outcome:?}");
    assert!(outcome.key_left, "no key deleted for an aborted write");
}
