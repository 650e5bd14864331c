//! Copies in cached documents: whichever docshape writer rewrites a copy (the worker,
//! the watcher's reconcile, `reconcile`, `repair`, a source's versioned save or
//! backfill, `denormalized::update_one` in a transaction), the rewritten document's
//! cached keys are deleted through the installed connection, so a cached row shows the
//! new value right after the refresh rather than after its TTL.

use docshape::bson::{doc, Document};
use docshape::denormalized::{self, Watcher, Worker};
use docshape::keys::StringFamily;
use docshape::redis::aio::MultiplexedConnection;
use docshape::versioning::{self, BackfillOptions, RetryPolicy};
use docshape::{KeyFamily, Model};
use docshape_testkit as testkit;
use mongodb::Database;
use serde::{Deserialize, Serialize};

/// The source of an async copy.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "cached_sellers")]
pub struct Seller {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// A product whose card (a cached row) shows its seller's name, copied.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "cached_products")]
#[index(keys(seller_id))]
#[access(
    name = "product_card",
    filter(_id),
    fields(seller_name),
    view(name = ProductCard, derive(Debug, Clone, PartialEq)),
    cache = ProductCardCache,
    consistency = "eventual ok"
)]
pub struct CachedProduct {
    #[serde(rename = "_id")]
    pub id: String,
    #[reference(Seller)]
    pub seller_id: String,
    #[denormalized(from = "Seller::name", via = "seller_id", refresh = "async", max_stale = "5m")]
    pub seller_name: String,
}

/// The product card, cached for five minutes: longer than any test here waits.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:denormalized_card:{id}", kind = string, value = ProductCard, ttl = "300s")]
pub struct ProductCardCache {
    pub id: String,
}

/// A versioned source of a sync copy: version 1 called the name `title`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "cached_shops", version = 2, migrate(v1 = ShopV1))]
pub struct Shop {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[schema_version]
    pub schema_version: i32,
}

/// Version 1 of [`Shop`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, docshape::Embedded)]
pub struct ShopV1 {
    #[serde(rename = "_id")]
    pub id: String,
    pub title: String,
}

impl From<ShopV1> for Shop {
    fn from(v1: ShopV1) -> Self {
        Shop { id: v1.id, name: v1.title, schema_version: 2 }
    }
}

/// A listing whose page (a cached row) shows its shop's name, copied in the writer's
/// call.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "cached_listings")]
#[index(keys(shop_id))]
#[access(
    name = "listing_page",
    filter(_id),
    fields(shop_name),
    view(name = ListingPage, derive(Debug, Clone, PartialEq)),
    cache = ListingPageCache,
    consistency = "eventual ok"
)]
pub struct Listing {
    #[serde(rename = "_id")]
    pub id: String,
    #[reference(Shop)]
    pub shop_id: String,
    #[denormalized(from = "Shop::name", via = "shop_id", refresh = "sync")]
    pub shop_name: String,
}

/// The listing page, cached for five minutes.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:denormalized_listing:{id}", kind = string, value = ListingPage, ttl = "300s")]
pub struct ListingPageCache {
    pub id: String,
}

const CARDS: &str = "cached_products.seller_name";

/// A database with a seller "s1" named `Ada`, two of its products and one of another
/// seller, every product's card read once (so cached), and the connection installed.
async fn setup(hint: &str) -> (testkit::TestDb, MultiplexedConnection) {
    let db = testkit::database(hint).await.unwrap();
    docshape::sync::<Seller>(&db).await.unwrap();
    docshape::sync::<CachedProduct>(&db).await.unwrap();
    let redis = testkit::redis::database().await.unwrap();
    docshape::keys::invalidate_on_write(&db, redis.clone());
    let sellers = db.collection::<Document>("cached_sellers");
    sellers.insert_one(doc! { "_id": "s1", "name": "Ada" }).await.unwrap();
    sellers.insert_one(doc! { "_id": "s2", "name": "Grace" }).await.unwrap();
    let products = db.collection::<Document>("cached_products");
    for (id, seller, name) in [("p1", "s1", "Ada"), ("p2", "s1", "Ada"), ("p3", "s2", "Grace")] {
        products.insert_one(doc! { "_id": id, "seller_id": seller, "seller_name": name }).await.unwrap();
    }
    let mut redis = redis;
    for id in ["p1", "p2", "p3"] {
        card(&db, &mut redis, id).await;
        assert!(ProductCardCache { id: id.into() }.get(&mut redis).await.unwrap().is_some(), "{id} cached");
    }
    (db, redis)
}

/// The card as the cached row serves it.
async fn card(db: &Database, redis: &mut MultiplexedConnection, id: &str) -> String {
    CachedProduct::product_card(id).one(db, redis).await.unwrap().unwrap().seller_name
}

/// Renames seller `s1` to `Ada Lovelace` outside docshape: no job, no key deleted.
async fn rename_by_hand(db: &Database) {
    db.collection::<Document>("cached_sellers")
        .update_one(doc! { "_id": "s1" }, doc! { "$set": { "name": "Ada Lovelace" } })
        .await
        .unwrap();
}

/// The cards of `s1`'s products show the new name at once; `p3`'s key, whose copy
/// was not rewritten, is still there.
async fn assert_fresh(db: &Database, redis: &mut MultiplexedConnection) {
    for id in ["p1", "p2"] {
        assert_eq!(card(db, redis, id).await, "Ada Lovelace", "{id}: the cached card after the refresh");
    }
    assert!(ProductCardCache { id: "p3".into() }.get(redis).await.unwrap().is_some(), "p3 untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_deletes_the_cached_keys_of_the_copies_it_refreshes() {
    let (db, mut redis) = setup("cached_copies_worker").await;
    let done = denormalized::update_one::<Seller>(&db, "s1", doc! { "$set": { "name": "Ada Lovelace" } })
        .await
        .unwrap();
    assert_eq!(done.jobs_enqueued(), 1);
    // Before the worker: the copy is stale, and so is its card.
    assert_eq!(card(&db, &mut redis, "p1").await, "Ada");
    let report = Worker::new(&db).only([CARDS]).batch(1).run_until_empty().await.unwrap();
    assert_eq!(report.documents_updated, 2, "{report:?}");
    assert_fresh(&db, &mut redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchers_reconcile_deletes_the_cached_keys_of_the_copies_it_refreshes() {
    let (db, mut redis) = setup("cached_copies_watcher").await;
    rename_by_hand(&db).await;
    assert_eq!(card(&db, &mut redis, "p1").await, "Ada");
    // A first start reconciles every copy before following the stream; the stop is
    // looked at after it.
    let watcher =
        Watcher::new(&db).name("cached").only([CARDS]).max_await(std::time::Duration::from_millis(50));
    let report = watcher.run_until(async {}).await.unwrap();
    assert_eq!(report.reconciles.len(), 1, "{report:?}");
    assert_eq!(report.reconciles[0].copies[0].documents_updated, 2, "{report:?}");
    assert_fresh(&db, &mut redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_deletes_the_cached_keys_of_the_copies_it_refreshes() {
    let (db, mut redis) = setup("cached_copies_reconcile").await;
    rename_by_hand(&db).await;
    assert_eq!(card(&db, &mut redis, "p1").await, "Ada");
    let spec = denormalized::copies().into_iter().find(|c| c.key() == CARDS).unwrap();
    let report = denormalized::reconcile(&db, spec).await.unwrap();
    assert_eq!(report.documents_updated, 2, "{report:?}");
    assert_fresh(&db, &mut redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_deletes_the_cached_keys_of_the_copies_it_refreshes() {
    let (db, mut redis) = setup("cached_copies_repair").await;
    rename_by_hand(&db).await;
    assert_eq!(card(&db, &mut redis, "p1").await, "Ada");
    let repaired = denormalized::repair::<Seller>(&db, "s1").await.unwrap();
    assert_eq!(repaired[0].documents_updated, 2, "{repaired:?}");
    assert_fresh(&db, &mut redis).await;
}

/// Listings `l1`, `l2` of shop `sh1` and their pages cached; `sh1` stored by `shop`.
async fn listings(hint: &str, shop: Document, copied: &str) -> (testkit::TestDb, MultiplexedConnection) {
    let db = testkit::database(hint).await.unwrap();
    docshape::sync::<Shop>(&db).await.unwrap();
    docshape::sync::<Listing>(&db).await.unwrap();
    let mut redis = testkit::redis::database().await.unwrap();
    docshape::keys::invalidate_on_write(&db, redis.clone());
    db.collection::<Document>("cached_shops").insert_one(shop).await.unwrap();
    for id in ["l1", "l2"] {
        db.collection::<Document>("cached_listings")
            .insert_one(doc! { "_id": id, "shop_id": "sh1", "shop_name": copied })
            .await
            .unwrap();
        assert_eq!(page(&db, &mut redis, id).await, copied);
    }
    (db, redis)
}

async fn page(db: &Database, redis: &mut MultiplexedConnection, id: &str) -> String {
    Listing::listing_page(id).one(db, redis).await.unwrap().unwrap().shop_name
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_versioned_save_deletes_the_cached_keys_of_the_copies_it_refreshes() {
    let (db, mut redis) = listings(
        "cached_copies_save",
        doc! { "_id": "sh1", "name": "Corner", "schema_version": 2 },
        "Corner",
    )
    .await;
    versioning::modify::<Shop>(&db, "sh1", RetryPolicy::default(), |s| s.name = "Corner Shop".into())
        .await
        .unwrap();
    for id in ["l1", "l2"] {
        assert_eq!(page(&db, &mut redis, id).await, "Corner Shop", "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_deletes_the_cached_keys_of_the_copies_its_upgrades_refresh() {
    // A version 1 shop has no `name` yet: its listings' copies are empty until the
    // upgrade writes one.
    let (db, mut redis) =
        listings("cached_copies_backfill", doc! { "_id": "sh1", "title": "Corner" }, "").await;
    let report = versioning::backfill::<Shop>(&db, BackfillOptions::default()).await.unwrap();
    assert_eq!(report.progress.upgraded, 1, "{report:?}");
    for id in ["l1", "l2"] {
        assert_eq!(page(&db, &mut redis, id).await, "Corner", "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_written_in_the_sources_transaction_loses_its_cached_keys_after_the_commit() {
    let (db, mut redis) = listings(
        "cached_copies_transaction",
        doc! { "_id": "sh1", "name": "Corner", "schema_version": 2 },
        "Corner",
    )
    .await;
    let done = denormalized::update_one::<Shop>(&db, "sh1", doc! { "$set": { "name": "Corner Shop" } })
        .await
        .unwrap();
    assert!(done.transaction, "the test server has transactions: {done:?}");
    for id in ["l1", "l2"] {
        assert_eq!(page(&db, &mut redis, id).await, "Corner Shop", "{id}");
    }
}
