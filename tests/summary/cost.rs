//! What a summary costs the source's write path, in commands: the same write row on
//! a source without a summary, with one async summary (one upsert of the queue
//! record), and with one sync summary (its application: in the write's transaction
//! when it runs in one, else in a transaction of its own), counted through the
//! driver's command monitoring.

use docshape::bson::doc;

use super::*;

/// The same order shape, in a collection no summary reads.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_plain_orders")]
#[access(name = "add_item", filter(_id), update(push(items)))]
pub struct PlainOrder {
    #[serde(rename = "_id")]
    pub id: String,
    pub customer_id: String,
    pub created_at: DateTime,
    #[embed(max = 50, reason = "a cart holds a few dozen items at most")]
    pub items: Vec<Item>,
}

/// A source with exactly one async summary.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_carts")]
#[access(name = "add_item", filter(_id), update(push(items)))]
pub struct Cart {
    #[serde(rename = "_id")]
    pub id: String,
    #[embed(max = 50, reason = "a cart holds a few dozen items at most")]
    pub items: Vec<Item>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_cart_units")]
#[summary(of = Cart, group(items.seller_id), refresh = "async", max_stale = "1m")]
pub struct CartUnits {
    #[serde(rename = "_id")]
    pub seller_id: String,
    #[summary(count)]
    pub carts: i64,
    #[summary(sum = "items.qty")]
    pub units: i64,
}

/// A source with exactly one sync summary, written in transactions.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_tx_carts", transactions)]
#[access(name = "add_item", filter(_id), update(push(items)))]
pub struct TxCart {
    #[serde(rename = "_id")]
    pub id: String,
    #[embed(max = 50, reason = "a cart holds a few dozen items at most")]
    pub items: Vec<Item>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_tx_cart_units")]
#[summary(of = TxCart, group(items.seller_id), refresh = "sync")]
pub struct TxCartUnits {
    #[serde(rename = "_id")]
    pub seller_id: String,
    #[summary(count)]
    pub carts: i64,
    #[summary(sum = "items.qty")]
    pub units: i64,
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commands_a_summary_adds_to_a_write() {
    let (db, log) = testkit::monitored("summary_cost").await.unwrap();
    let raw = doc! { "_id": "o1", "customer_id": "c", "created_at": at("2026-08-05T10:00:00Z"), "items": [] };
    db.collection::<Document>("sm_plain_orders").insert_one(raw.clone()).await.unwrap();
    db.collection::<Document>("sm_carts").insert_one(doc! { "_id": "o1", "items": [] }).await.unwrap();
    db.collection::<Document>("sm_orders").insert_one(raw).await.unwrap();

    let names = |log: &testkit::CommandLog| log.take().into_iter().map(|(n, _)| n).collect::<Vec<String>>();
    log.clear();
    PlainOrder::add_item("o1", item("s1", "a", 1, 10)).run(&db).await.unwrap();
    let plain = names(&log);
    assert_eq!(plain, ["update"]);

    // One async summary: one more command, the queue record's upsert.
    Cart::add_item("o1", item("s1", "a", 1, 10)).run(&db).await.unwrap();
    let queued = names(&log);
    assert_eq!(queued, ["update", "update"], "{queued:?}");

    // `Order` has three sync summaries and two async ones: each async one an upsert,
    // each sync one, outside a transaction, a transaction of its own.
    Order::add_item("o1", item("s1", "a", 1, 10)).run(&db).await.unwrap();
    let order = names(&log);
    let commits = order.iter().filter(|n| *n == "commitTransaction").count();
    assert_eq!(commits, 3, "{order:?}");

    // One sync summary, outside a transaction: the source read, the ledger record
    // read and replaced by one findAndModify, one findAndModify per changed group,
    // the commit.
    db.collection::<Document>("sm_tx_carts").insert_one(doc! { "_id": "o1", "items": [] }).await.unwrap();
    log.clear();
    TxCart::add_item("o1", item("s1", "a", 1, 10)).run(&db).await.unwrap();
    let alone = names(&log);
    assert_eq!(alone, ["update", "find", "findAndModify", "findAndModify", "commitTransaction"]);

    // In a transaction: the write returns the document (`findAndModify`), so no read;
    // no commit either, the write's own commits the summary with it.
    let d = &db;
    let in_transaction = |log: &testkit::CommandLog| {
        let all = names(log);
        // `hello` is the transaction's own check that the deployment has transactions.
        all.into_iter().filter(|n| n != "hello").collect::<Vec<String>>()
    };
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move { PlainOrder::add_item("o1", item("s1", "b", 1, 10)).session(tx).run(d).await })
    })
    .await
    .unwrap();
    let plain_tx = in_transaction(&log);
    assert_eq!(plain_tx, ["update", "commitTransaction"]);
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move { TxCart::add_item("o1", item("s1", "b", 1, 10)).session(tx).run(d).await })
    })
    .await
    .unwrap();
    let summary_tx = in_transaction(&log);
    assert_eq!(summary_tx, ["findAndModify", "findAndModify", "findAndModify", "commitTransaction"]);
    let units = one(&db, "sm_tx_cart_units", "s1").await.unwrap();
    assert_eq!(units.get_i64("units").unwrap(), 2);
    println!(
        "write row alone: {} command; one async summary: +{}; one sync summary: +{} outside a transaction, +{} in one",
        plain.len(),
        queued.len() - plain.len(),
        alone.len() - plain.len(),
        summary_tx.len() - plain_tx.len(),
    );
}
