//! A cached summary row: the summary's application goes through the write pipeline's
//! hooks for the summary's collection, so its cached keys are deleted when a group is
//! written, outside a transaction at once and in one after its commit.

use docshape::keys::StringFamily;
use docshape::redis::aio::MultiplexedConnection;
use docshape::KeyFamily;

use super::*;

/// A sale: one seller, an amount.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_sales", transactions)]
#[access(name = "reprice", filter(_id), update(set(cents)))]
pub struct Sale {
    #[serde(rename = "_id")]
    pub id: String,
    pub seller_id: String,
    pub cents: i64,
}

/// Totals per seller, read through a cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sm_cached_totals")]
#[summary(of = Sale, group(seller_id), refresh = "sync")]
#[access(name = "totals", filter(_id), cache = TotalsCache, consistency = "eventual ok")]
pub struct SellerTotals {
    #[serde(rename = "_id")]
    pub seller_id: String,
    #[summary(count)]
    pub sales: i64,
    #[summary(sum = "cents")]
    pub cents: i64,
}

/// The totals, cached for five minutes: longer than the test waits.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:summary_totals:{id}", kind = string, value = SellerTotals, ttl = "300s")]
pub struct TotalsCache {
    pub id: String,
}

async fn cents(db: &Database, redis: &mut MultiplexedConnection, seller: &str) -> i64 {
    SellerTotals::totals(seller).one(db, redis).await.unwrap().unwrap().cents
}

async fn cached(redis: &mut MultiplexedConnection, seller: &str) -> bool {
    TotalsCache { id: seller.into() }.get(redis).await.unwrap().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_summary_row_is_invalidated_when_its_group_is_written() {
    let db = testkit::database("summary_cached").await.unwrap();
    let mut redis = testkit::redis::database().await.unwrap();
    docshape::keys::invalidate_on_write(&db, redis.clone());
    let sale = |id: &str, cents| Sale { id: id.into(), seller_id: "a".into(), cents };
    docshape::relation::insert_one(&db, &mut sale("x1", 10)).await.unwrap();
    assert_eq!(cents(&db, &mut redis, "a").await, 10);
    assert!(cached(&mut redis, "a").await);

    // Outside a transaction: the application, then the key's delete.
    docshape::relation::insert_one(&db, &mut sale("x2", 5)).await.unwrap();
    assert!(!cached(&mut redis, "a").await, "the group was written: its cached key is gone");
    assert_eq!(cents(&db, &mut redis, "a").await, 15);

    // In a transaction: the application in it, the key deleted after the commit.
    let d = &db;
    let probe = &redis.clone();
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move {
            Sale::reprice("x2", 7_i64).session(tx).run(d).await?;
            assert!(cached(&mut probe.clone(), "a").await, "not deleted before the commit");
            Ok::<_, docshape::access::UpdateError>(())
        })
    })
    .await
    .unwrap();
    assert!(!cached(&mut redis, "a").await, "deleted once committed");
    assert_eq!(cents(&db, &mut redis, "a").await, 17);
}
