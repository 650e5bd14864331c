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
#[access(name = "set_items", filter(_id), update(set(items)))]
#[access(name = "remove_item", filter(_id), update(pull(items)))]
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

    // `Order` has three sync summaries and two async ones: outside a transaction, the
    // write, its two async jobs (an upsert each, first: see `in_source_session`) and a
    // bulkWrite per sync summary in one transaction of their own. A first write records
    // the order's contribution (it was inserted around docshape), so the one measured
    // starts from a record.
    Order::add_item("o1", item("s1", "w", 1, 10)).run(&db).await.unwrap();
    log.clear();
    Order::add_item("o1", item("s1", "a", 1, 10)).run(&db).await.unwrap();
    let order = names(&log);
    assert_eq!(
        order,
        ["findAndModify", "update", "update", "bulkWrite", "bulkWrite", "bulkWrite", "commitTransaction"]
    );

    // One sync summary, outside a transaction: the write and the summary in one
    // transaction of their own (so that a crash between them cannot leave the
    // summary behind): the write returning the document as it was, one `bulkWrite`,
    // the commit.
    docshape::relation::insert_one(&db, &mut TxCart { id: "o1".into(), items: Vec::new() }).await.unwrap();
    log.clear();
    TxCart::add_item("o1", item("s1", "a", 1, 10)).run(&db).await.unwrap();
    let alone = names(&log);
    assert_eq!(alone, ["findAndModify", "bulkWrite", "commitTransaction"]);

    // In a transaction: the write returns the document as it was (`findAndModify`), from
    // which and the update sent the summary computes the document as written, so no
    // read; the ledger record, every group and a check that the computed document is
    // the one written go in one `bulkWrite`;
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
    // The write's findAndModify, then one bulkWrite.
    assert_eq!(summary_tx, ["findAndModify", "bulkWrite", "commitTransaction"]);
    let units = one(&db, "sm_tx_cart_units", "s1").await.unwrap();
    assert_eq!(units.get_i64("units").unwrap(), 2);

    // Five groups changed by one write: still one bulkWrite for all of them.
    let sellers = ["s1", "s2", "s3", "s4", "s5"];
    let five: Vec<Item> = sellers.iter().map(|s| item(s, "x", 3, 10)).collect();
    log.clear();
    docshape::transaction(db.client(), |tx| {
        let five = five.clone();
        Box::pin(async move { TxCart::set_items("o1", five).session(tx).run(d).await })
    })
    .await
    .unwrap();
    let five_tx = in_transaction(&log);
    assert_eq!(five_tx, ["findAndModify", "bulkWrite", "commitTransaction"]);
    for s in sellers {
        let group = one(&db, "sm_tx_cart_units", s).await.unwrap_or_else(|| panic!("{s} missing"));
        assert_eq!((group.get_i64("carts").unwrap(), group.get_i64("units").unwrap()), (1, 3), "{s}");
    }

    log.clear();
    // Five groups left: their counts decremented, and a guarded delete of each group
    // left empty (no read), in the same bulkWrite.
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move { TxCart::set_items("o1", Vec::new()).session(tx).run(d).await })
    })
    .await
    .unwrap();
    let left_tx = in_transaction(&log);
    assert_eq!(left_tx, ["findAndModify", "bulkWrite", "commitTransaction"]);
    assert!(all(&db, "sm_tx_cart_units").await.is_empty());

    // A group another cart still counts in is decremented, not deleted.
    db.collection::<Document>("sm_tx_carts").insert_one(doc! { "_id": "o2", "items": [] }).await.unwrap();
    TxCart::set_items("o1", vec![item("s1", "a", 1, 10)]).run(&db).await.unwrap();
    TxCart::set_items("o2", vec![item("s1", "b", 4, 10)]).run(&db).await.unwrap();
    log.clear();
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move { TxCart::set_items("o1", Vec::new()).session(tx).run(d).await })
    })
    .await
    .unwrap();
    assert_eq!(in_transaction(&log), ["findAndModify", "bulkWrite", "commitTransaction"]);
    let s1 = one(&db, "sm_tx_cart_units", "s1").await.unwrap();
    assert_eq!((s1.get_i64("carts").unwrap(), s1.get_i64("units").unwrap()), (1, 4));
    let report = docshape::summary::check(&db, spec("sm_tx_cart_units")).await.unwrap();
    assert!(report.drifted.is_empty(), "{:#?}", report.drifted);

    // An insert outside a transaction: the insert, one `bulkWrite` (the ledger record
    // created, every group), the commit of the transaction they share.
    log.clear();
    let mut o3 = TxCart { id: "o3".into(), items: vec![item("s1", "c", 2, 10), item("s2", "c", 1, 10)] };
    docshape::relation::insert_one(&db, &mut o3).await.unwrap();
    let inserted = names(&log);
    assert_eq!(inserted, ["insert", "bulkWrite", "commitTransaction"]);
    let s1 = one(&db, "sm_tx_cart_units", "s1").await.unwrap();
    assert_eq!((s1.get_i64("carts").unwrap(), s1.get_i64("units").unwrap()), (2, 6));
    let report = docshape::summary::check(&db, spec("sm_tx_cart_units")).await.unwrap();
    assert!(report.drifted.is_empty(), "{:#?}", report.drifted);

    println!(
        "write row alone: {} command; one async summary: +{}; one sync summary: +{} outside a transaction, +{} in one (+{} for 5 groups, +{} when groups empty); an insert outside a transaction +{}",
        plain.len(),
        queued.len() - plain.len(),
        alone.len() - plain.len(),
        summary_tx.len() - plain_tx.len(),
        five_tx.len() - plain_tx.len(),
        left_tx.len() - plain_tx.len(),
        inserted.len() - 1,
    );
}

/// Outside a transaction, the write and its sync summary commit together or not at
/// all: a summary group another program made unwritable (a count that is not a
/// number, which `$inc` refuses) fails the write, and leaves the source as it was,
/// instead of writing the source and leaving the summary behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_a_transaction_the_write_and_its_sync_summary_commit_together() {
    let db = testkit::database("summary_own_transaction").await.unwrap();
    let mut cart = TxCart { id: "c1".into(), items: vec![item("s1", "a", 1, 10)] };
    docshape::relation::insert_one(&db, &mut cart).await.unwrap();
    let s1 = one(&db, "sm_tx_cart_units", "s1").await.unwrap();
    assert_eq!((s1.get_i64("carts").unwrap(), s1.get_i64("units").unwrap()), (1, 1));

    let groups = db.collection::<Document>("sm_tx_cart_units");
    groups.update_one(doc! { "_id": "s1" }, doc! { "$set": { "units": "not a number" } }).await.unwrap();
    let refused = TxCart::add_item("c1", item("s1", "b", 2, 10)).run(&db).await.unwrap_err();
    // Reported as nothing written: the transaction was aborted with the summary.
    assert!(
        matches!(&refused, docshape::access::UpdateError::Refused(e)
            if matches!(**e, docshape::denormalized::CopyError::Copy { source_updated: false, .. })),
        "{refused:?}"
    );
    let stored =
        db.collection::<Document>("sm_tx_carts").find_one(doc! { "_id": "c1" }).await.unwrap().unwrap();
    assert_eq!(
        stored.get_array("items").unwrap().len(),
        1,
        "the write was applied without its summary: {stored}"
    );
    // An insert the same: not inserted, and said so.
    let mut c2 = TxCart { id: "c2".into(), items: vec![item("s1", "a", 1, 10)] };
    let refused = docshape::relation::insert_one(&db, &mut c2).await.unwrap_err();
    assert!(refused.to_string().contains("was not inserted"), "{refused}");
    let c2 = db.collection::<Document>("sm_tx_carts").find_one(doc! { "_id": "c2" }).await.unwrap();
    assert!(c2.is_none(), "inserted without its summary: {c2:?}");

    // Repaired, the same write goes through, with its summary.
    groups.update_one(doc! { "_id": "s1" }, doc! { "$set": { "units": 1_i64 } }).await.unwrap();
    TxCart::add_item("c1", item("s1", "b", 2, 10)).run(&db).await.unwrap();
    let s1 = one(&db, "sm_tx_cart_units", "s1").await.unwrap();
    assert_eq!((s1.get_i64("carts").unwrap(), s1.get_i64("units").unwrap()), (1, 3));
    let report = docshape::summary::check(&db, spec("sm_tx_cart_units")).await.unwrap();
    assert!(report.drifted.is_empty(), "{:#?}", report.drifted);
}

/// `denormalized::update_one` of a source with a sync summary writes in a transaction
/// even when the update touches no copy, and applies the summary in it: a summary that
/// cannot be written fails the write and leaves the source as it was; written, the
/// summary commits with the source in the one commit, the last command sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_writers_update_commits_with_its_sync_summary() {
    let (db, log) = testkit::monitored("summary_copy_writer").await.unwrap();
    let mut cart = TxCart { id: "c1".into(), items: vec![item("s1", "a", 1, 10)] };
    docshape::relation::insert_one(&db, &mut cart).await.unwrap();
    let push = |sku: &str| {
        let item = docshape::bson_compat::to_bson(&item("s1", sku, 2, 10)).unwrap();
        doc! { "$push": { "items": item } }
    };

    let groups = db.collection::<Document>("sm_tx_cart_units");
    groups.update_one(doc! { "_id": "s1" }, doc! { "$set": { "units": "not a number" } }).await.unwrap();
    let refused = docshape::denormalized::update_one::<TxCart>(&db, "c1", push("b")).await.unwrap_err();
    assert!(
        matches!(&refused, docshape::denormalized::CopyError::Copy { source_updated: false, .. }),
        "{refused:?}"
    );
    let stored =
        db.collection::<Document>("sm_tx_carts").find_one(doc! { "_id": "c1" }).await.unwrap().unwrap();
    assert_eq!(stored.get_array("items").unwrap().len(), 1, "written without its summary: {stored}");

    groups.update_one(doc! { "_id": "s1" }, doc! { "$set": { "units": 1_i64 } }).await.unwrap();
    log.clear();
    let done = docshape::denormalized::update_one::<TxCart>(&db, "c1", push("b")).await.unwrap();
    assert!(done.transaction, "{done:?}");
    let names: Vec<String> = log.take().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names.iter().filter(|n| *n == "commitTransaction").count(), 1, "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("commitTransaction"), "{names:?}");
    assert!(!names.iter().any(|n| n == "abortTransaction"), "{names:?}");
    let s1 = one(&db, "sm_tx_cart_units", "s1").await.unwrap();
    assert_eq!((s1.get_i64("carts").unwrap(), s1.get_i64("units").unwrap()), (1, 3));
    let report = docshape::summary::check(&db, spec("sm_tx_cart_units")).await.unwrap();
    assert!(report.drifted.is_empty(), "{:#?}", report.drifted);
}
