//! A read row that names a key family reads through it: a hit sends no MongoDB
//! command, a miss sends the indexed query and fills the key with the family's TTL,
//! and the model's write rows delete the key.

use bson::doc;
use docshape::bson;
use docshape::keys::StringFamily;
use docshape::{testkit, KeyFamily, Model};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "access_products")]
#[access(
    name = "product_page",
    operation = "Product page",
    filter(_id),
    fields(name, price_cents),
    view(name = ProductPage, derive(Debug, Clone, PartialEq)),
    cache = ProductPageCache,
    freq = "800 r/s",
    consistency = "eventual ok"
)]
#[access(name = "reprice", filter(_id), update(set(price_cents)))]
pub struct Product {
    #[serde(rename = "_id")]
    pub sku: String,
    #[validate(max_length = 120)]
    pub name: String,
    pub price_cents: i64,
    pub description: String,
}

/// The product page, cached for five minutes.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:product:{sku}", kind = string, value = ProductPage, ttl = "300s", note = "invalidate on product write")]
pub struct ProductPageCache {
    pub sku: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_hits_misses_and_is_invalidated_by_a_write() {
    let (db, log) = testkit::monitored("access_cache").await.unwrap();
    let mut redis = testkit::redis::database().await.unwrap();
    docshape::sync::<Product>(&db).await.unwrap();
    let product =
        Product { sku: "A-1".into(), name: "Cup".into(), price_cents: 1250, description: "A cup.".into() };
    Product::collection(&db).insert_one(&product).await.unwrap();
    log.clear();

    // A miss: the indexed query, then the key is filled, with the family's TTL.
    let page = Product::product_page("A-1").one(&db, &mut redis).await.unwrap().unwrap();
    assert_eq!(page, ProductPage { name: "Cup".into(), price_cents: 1250 });
    assert_eq!(log.take().iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(), ["find"]);
    let key = ProductPageCache { sku: "A-1".into() };
    assert_eq!(key.get(&mut redis).await.unwrap(), Some(page.clone()));
    let ttl: i64 = docshape::redis::cmd("TTL").arg(key.key()).query_async(&mut redis).await.unwrap();
    assert!((290..=300).contains(&ttl), "ttl {ttl}");

    // A hit: no MongoDB command at all, even after the document changed by hand
    // (a raw write bypasses the cache: the TTL bounds it).
    Product::collection(&db)
        .update_one(doc! { "_id": "A-1" }, doc! { "$set": { "name": "Mug" } })
        .await
        .unwrap();
    log.clear();
    let cached = Product::product_page("A-1").one(&db, &mut redis).await.unwrap().unwrap();
    assert_eq!(cached.name, "Cup");
    assert_eq!(log.count(), 0, "a hit asks MongoDB nothing");

    // A write row deletes the key; the next read fills it from the new document.
    Product::reprice("A-1", 990_i64).run(&db, &mut redis).await.unwrap();
    assert_eq!(key.get(&mut redis).await.unwrap(), None);
    let fresh = Product::product_page("A-1").one(&db, &mut redis).await.unwrap().unwrap();
    assert_eq!(fresh, ProductPage { name: "Mug".into(), price_cents: 990 });

    // A missing document is not cached.
    assert!(Product::product_page("nope").one(&db, &mut redis).await.unwrap().is_none());
    assert_eq!(ProductPageCache { sku: "nope".into() }.get(&mut redis).await.unwrap(), None);
}
