//! A write that tells what its document was before (an insert: nothing; a soft
//! delete: the document its command returned as it was) has its sync summary applied
//! by ONE command in its transaction, on a server with the `bulkWrite` command: the
//! ledger's record and every group in one `bulkWrite`, the record written only if it
//! holds the guessed old contribution. A record that says otherwise (a foreign write
//! the watcher has not queued yet, a record written by hand) is corrected in the same
//! transaction, and the summary stays exact.

use docshape::bson::doc;
use docshape::summary;

use super::cost::{PlainOrder, TxCart};
use super::soft_delete::Ticket;
use super::*;

/// A source with a soft delete and no summary: the baseline.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_plain_tickets", soft_delete = deleted_at, transactions)]
pub struct PlainTicket {
    #[serde(rename = "_id")]
    pub id: String,
    pub team: String,
    pub points: i64,
    #[serde(default)]
    pub deleted_at: Option<DateTime>,
}

fn names(log: &testkit::CommandLog) -> Vec<String> {
    // `hello` is the transaction's own check that the deployment has transactions.
    log.take().into_iter().map(|(n, _)| n).filter(|n| n != "hello").collect()
}

fn cart(id: &str, items: Vec<Item>) -> TxCart {
    TxCart { id: id.into(), items }
}

fn plain(id: &str, items: Vec<Item>) -> PlainOrder {
    PlainOrder { id: id.into(), customer_id: "c".into(), created_at: at("2026-08-05T10:00:00Z"), items }
}

async fn no_drift(db: &Database, name: &str) {
    let report = summary::check(db, spec(name)).await.unwrap();
    assert!(report.drifted.is_empty(), "{name} drifts: {:#?}", report.drifted);
}

async fn group(db: &Database, collection: &str, key: &str, count: &str, sum: &str) -> Option<(i64, i64)> {
    one(db, collection, key).await.map(|d| (d.get_i64(count).unwrap(), d.get_i64(sum).unwrap()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_and_a_soft_delete_cost_one_command_each() {
    let (db, log) = testkit::monitored("summary_guess_cost").await.unwrap();
    let d = &db;
    let five: Vec<Item> = ["s1", "s2", "s3", "s4", "s5"].iter().map(|s| item(s, "x", 2, 10)).collect();

    // The same insert, without and with one sync summary (five groups).
    log.clear();
    let items = five.clone();
    docshape::transaction(db.client(), |tx| {
        let items = items.clone();
        Box::pin(async move { docshape::relation::insert_one_in(d, &mut plain("o1", items), tx).await })
    })
    .await
    .unwrap();
    let alone = names(&log);
    assert_eq!(alone, ["insert", "commitTransaction"]);
    docshape::transaction(db.client(), |tx| {
        let items = five.clone();
        Box::pin(async move { docshape::relation::insert_one_in(d, &mut cart("o1", items), tx).await })
    })
    .await
    .unwrap();
    let insert = names(&log);
    assert_eq!(insert, ["insert", "bulkWrite", "commitTransaction"]);
    for s in ["s1", "s2", "s3", "s4", "s5"] {
        assert_eq!(group(&db, "sm_tx_cart_units", s, "carts", "units").await, Some((1, 2)), "{s}");
    }
    no_drift(&db, "sm_tx_cart_units").await;

    // The same soft delete, without and with one sync summary: the command returns
    // the ticket as it was, the team loses it, and the emptied group goes, all in the
    // one bulkWrite.
    log.clear();
    db.collection::<Document>("sm_plain_tickets")
        .insert_one(doc! { "_id": "t1", "team": "a", "points": 3, "deleted_at": null })
        .await
        .unwrap();
    docshape::relation::insert_one(
        &db,
        &mut Ticket { id: "t1".into(), team: "a".into(), points: 3, deleted_at: None },
    )
    .await
    .unwrap();
    assert_eq!(group(&db, "sm_team_points", "a", "tickets", "points").await, Some((1, 3)));
    log.clear();
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move { PlainTicket::delete_by_id("t1").run_in(d, tx).await })
    })
    .await
    .unwrap();
    let deleted_alone = names(&log);
    assert_eq!(deleted_alone, ["findAndModify", "commitTransaction"]);
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move { Ticket::delete_by_id("t1").run_in(d, tx).await })
    })
    .await
    .unwrap();
    let deleted = names(&log);
    assert_eq!(deleted, ["findAndModify", "bulkWrite", "commitTransaction"]);
    assert_eq!(group(&db, "sm_team_points", "a", "tickets", "points").await, None);
    no_drift(&db, "sm_team_points").await;
    println!(
        "insert: {} commands alone, +{} with one sync summary of 5 groups; soft delete: {} alone, +{}",
        alone.len(),
        insert.len() - alone.len(),
        deleted_alone.len(),
        deleted.len() - deleted_alone.len(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_record_that_contradicts_the_guess_is_corrected_in_the_transaction() {
    let (db, log) = testkit::monitored("summary_guess_wrong").await.unwrap();
    let d = &db;
    // A cart "o9" that a foreign program deleted, which the summary still counts (its
    // ledger record and its groups), and an "s1" group another cart counts in.
    docshape::relation::insert_one(&db, &mut cart("o2", vec![item("s1", "a", 4, 10)])).await.unwrap();
    docshape::relation::insert_one(
        &db,
        &mut cart("o9", vec![item("s1", "b", 5, 10), item("s9", "c", 7, 10)]),
    )
    .await
    .unwrap();
    db.collection::<Document>("sm_tx_carts").delete_one(doc! { "_id": "o9" }).await.unwrap();
    assert_eq!(group(&db, "sm_tx_cart_units", "s1", "carts", "units").await, Some((2, 9)));
    assert_eq!(group(&db, "sm_tx_cart_units", "s9", "carts", "units").await, Some((1, 7)));

    // "o9" inserted again: the insert guesses no record, the ledger holds one.
    log.clear();
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move {
            docshape::relation::insert_one_in(d, &mut cart("o9", vec![item("s2", "d", 1, 10)]), tx).await
        })
    })
    .await
    .unwrap();
    let corrected = names(&log);
    println!("an insert whose guess the ledger contradicts: {corrected:?}");
    assert_eq!(corrected[..2], ["insert", "bulkWrite"], "{corrected:?}");
    assert!(corrected.len() > 3, "the correction costs commands of its own: {corrected:?}");
    assert_eq!(group(&db, "sm_tx_cart_units", "s1", "carts", "units").await, Some((1, 4)));
    assert_eq!(group(&db, "sm_tx_cart_units", "s9", "carts", "units").await, None);
    assert_eq!(group(&db, "sm_tx_cart_units", "s2", "carts", "units").await, Some((1, 1)));
    no_drift(&db, "sm_tx_cart_units").await;

    // A ledger record written by hand that names a group the document never had, with
    // a group document to match: the soft delete's guess (the returned ticket) differs.
    docshape::relation::insert_one(
        &db,
        &mut Ticket { id: "t1".into(), team: "a".into(), points: 3, deleted_at: None },
    )
    .await
    .unwrap();
    docshape::relation::insert_one(
        &db,
        &mut Ticket { id: "t2".into(), team: "b".into(), points: 2, deleted_at: None },
    )
    .await
    .unwrap();
    let ledger = db.collection::<Document>(summary::LEDGER);
    ledger
        .update_one(
            doc! { "_id": { "s": "sm_team_points", "id": "t1" } },
            doc! { "$set": { "g": [{ "k": "b", "v": [null, 40_i64] }] } },
        )
        .await
        .unwrap();
    db.collection::<Document>("sm_team_points")
        .update_one(doc! { "_id": "b" }, doc! { "$inc": { "tickets": 1_i64, "points": 40_i64 } })
        .await
        .unwrap();
    db.collection::<Document>("sm_team_points").delete_one(doc! { "_id": "a" }).await.unwrap();
    log.clear();
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move { Ticket::delete_by_id("t1").run_in(d, tx).await })
    })
    .await
    .unwrap();
    let corrected = names(&log);
    println!("a soft delete whose guess the ledger contradicts: {corrected:?}");
    assert_eq!(corrected[..2], ["findAndModify", "bulkWrite"], "{corrected:?}");
    // What the ledger said "t1" added is taken out of "b"; the guessed "a" is not
    // left behind.
    assert_eq!(group(&db, "sm_team_points", "b", "tickets", "points").await, Some((1, 2)));
    assert_eq!(group(&db, "sm_team_points", "a", "tickets", "points").await, None);
    no_drift(&db, "sm_team_points").await;
    let record =
        ledger.find_one(doc! { "_id": { "s": "sm_team_points", "id": "t1" } }).await.unwrap().unwrap();
    assert_eq!(record.get_array("g").unwrap().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_row_is_one_command_and_a_wrong_ledger_record_is_corrected() {
    let (db, log) = testkit::monitored("summary_guess_row").await.unwrap();
    let d = &db;
    docshape::relation::insert_one(&db, &mut cart("o1", vec![item("s1", "a", 1, 10)])).await.unwrap();
    docshape::relation::insert_one(&db, &mut cart("o2", vec![item("s1", "b", 4, 10)])).await.unwrap();

    // The row's command returns the cart as it was; the push is computed from it and
    // checked in the same bulkWrite.
    log.clear();
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move { TxCart::add_item("o1", item("s2", "c", 2, 10)).session(tx).run(d).await })
    })
    .await
    .unwrap();
    assert_eq!(names(&log), ["findAndModify", "bulkWrite", "commitTransaction"]);
    assert_eq!(group(&db, "sm_tx_cart_units", "s2", "carts", "units").await, Some((1, 2)));
    no_drift(&db, "sm_tx_cart_units").await;

    // A ledger record written by hand (o1 counted in "s7" with 9 units, and the group
    // to match): the row's guess (its returned document) differs, the same transaction
    // corrects it.
    db.collection::<Document>(summary::LEDGER)
        .update_one(
            doc! { "_id": { "s": "sm_tx_cart_units", "id": "o1" } },
            doc! { "$set": { "g": [{ "k": "s7", "v": [null, 9_i64] }] } },
        )
        .await
        .unwrap();
    db.collection::<Document>("sm_tx_cart_units")
        .insert_one(doc! { "_id": "s7", "carts": 1_i64, "units": 9_i64 })
        .await
        .unwrap();
    log.clear();
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move { TxCart::add_item("o1", item("s1", "d", 5, 10)).session(tx).run(d).await })
    })
    .await
    .unwrap();
    let corrected = names(&log);
    println!("a write row whose guess the ledger contradicts: {corrected:?}");
    assert_eq!(corrected[..2], ["findAndModify", "bulkWrite"], "{corrected:?}");
    assert!(corrected.len() > 3, "{corrected:?}");
    assert_eq!(group(&db, "sm_tx_cart_units", "s7", "carts", "units").await, None);
    assert_eq!(group(&db, "sm_tx_cart_units", "s1", "carts", "units").await, Some((2, 10)));
    no_drift(&db, "sm_tx_cart_units").await;

    // An update whose effect is not computed here (a pull whose item equals a stored
    // one in value, not in type: the server's equality decides) reads the cart as
    // written: one command more, still exact.
    db.collection::<Document>("sm_tx_carts")
        .update_one(doc! { "_id": "o2" }, doc! { "$set": { "items.0.qty": 4_i32 } })
        .await
        .unwrap();
    log.clear();
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move { TxCart::remove_item("o2", item("s1", "b", 4, 10)).session(tx).run(d).await })
    })
    .await
    .unwrap();
    let read = names(&log);
    println!("a write row whose effect is read: {read:?}");
    assert_eq!(read[..3], ["findAndModify", "find", "bulkWrite"], "{read:?}");
    assert_eq!(group(&db, "sm_tx_cart_units", "s1", "carts", "units").await, Some((1, 6)));
    no_drift(&db, "sm_tx_cart_units").await;
}
