//! Whether a write's session runs a transaction is read from the session's state: a
//! sync summary joins the caller's own transaction (and is aborted with it), and a
//! write in a session that runs none (never started, committed, aborted) is applied
//! after it, as outside any session.

use docshape::bson::doc;
use docshape::denormalized::{self, Worker};

use super::*;

async fn units_of(db: &Database, seller: &str) -> Option<i64> {
    one(db, "sm_seller_sales_now", seller).await.map(|d| d.get_i64("units").unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_summary_follows_the_state_of_the_callers_session() {
    let db = setup("summary_sessions").await;
    docshape::relation::insert_one(
        &db,
        &mut order("o1", "c", "2026-08-05T10:00:00Z", vec![item("s1", "a", 1, 10)]),
    )
    .await
    .unwrap();
    let mut session = db.client().start_session().await.unwrap();

    // No transaction started: applied after the write, as outside a session.
    Order::add_item("o1", item("s1", "b", 2, 10)).session(&mut session).run(&db).await.unwrap();
    assert_eq!(units_of(&db, "s1").await, Some(3));

    // The caller's own transaction: the summary is written in it, so an abort takes
    // it back with the source's write, for the sync summary and the async queue alike.
    let pending = denormalized::lag(&db).await.unwrap().pending;
    session.start_transaction().await.unwrap();
    Order::add_item("o1", item("s2", "c", 5, 10)).session(&mut session).run(&db).await.unwrap();
    session.abort_transaction().await.unwrap();
    assert_eq!(units_of(&db, "s2").await, None, "aborted with the write");
    let o1 = Order::collection(&db).find_one(doc! { "_id": "o1" }).await.unwrap().unwrap();
    assert_eq!(o1.items.len(), 2);
    assert_eq!(denormalized::lag(&db).await.unwrap().pending, pending, "the queued jobs aborted too");

    // The same session, its transaction aborted: a write outside one again.
    Order::add_item("o1", item("s2", "c", 5, 10)).session(&mut session).run(&db).await.unwrap();
    assert_eq!(units_of(&db, "s2").await, Some(5));

    // Committed: in line after the commit, not before (the commit makes it visible).
    session.start_transaction().await.unwrap();
    Order::add_item("o1", item("s2", "d", 7, 10)).session(&mut session).run(&db).await.unwrap();
    assert_eq!(units_of(&db, "s2").await, Some(5), "not visible before the commit");
    // A finder of an `eventual ok` row (which reads from secondaries outside a
    // transaction) joins the caller's transaction too: inside it, the transaction's
    // primary read applies, and it reads the summary as the transaction wrote it.
    let now = SellerSalesNow::collection(&db)
        .find_one(doc! { "_id": "s2" })
        .session(&mut session)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(now.units, 12);
    let queued = SellerSales::sales_of_seller("s2").session(&mut session).one(&db).await.unwrap();
    assert_eq!(queued, None, "the async summary waits for its worker");
    session.commit_transaction().await.unwrap();
    assert_eq!(units_of(&db, "s2").await, Some(12));

    // After a commit, the session runs no transaction: applied after the write.
    Order::add_item("o1", item("s1", "e", 1, 10)).session(&mut session).run(&db).await.unwrap();
    assert_eq!(units_of(&db, "s1").await, Some(4));

    Worker::new(&db).run_until_empty().await.unwrap();
    assert_no_drift(&db).await;
}

/// Reading the session's state sends nothing: a write row in the caller's session sends
/// the commands of the same write outside a session when no transaction runs (its own
/// transaction, in that session), and those of the same write in a docshape
/// transaction when the caller's own runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_the_sessions_state_costs_no_command() {
    let (db, log) = testkit::monitored("summary_sessions_cost").await.unwrap();
    let raw = doc! { "_id": "o1", "customer_id": "c", "created_at": at("2026-08-05T10:00:00Z"), "items": [] };
    db.collection::<Document>("sm_orders").insert_one(raw).await.unwrap();
    let names = || log.take().into_iter().map(|(n, _)| n).collect::<Vec<String>>();
    // A first write records the order's contribution in the ledger (it was inserted
    // around docshape): the writes compared below all start from a record.
    Order::add_item("o1", item("s1", "w", 1, 10)).run(&db).await.unwrap();

    log.clear();
    Order::add_item("o1", item("s1", "a", 1, 10)).run(&db).await.unwrap();
    let alone = names();
    // Outside a transaction: the write, its async jobs and its sync summaries in one
    // transaction of their own; in the caller's session that runs none, the same.
    assert_eq!(
        alone,
        ["findAndModify", "update", "update", "bulkWrite", "bulkWrite", "bulkWrite", "commitTransaction"]
    );
    let mut session = db.client().start_session().await.unwrap();
    Order::add_item("o1", item("s1", "b", 1, 10)).session(&mut session).run(&db).await.unwrap();
    assert_eq!(names(), alone, "no transaction runs: as outside a session");

    let d = &db;
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move { Order::add_item("o1", item("s1", "c", 1, 10)).session(tx).run(d).await })
    })
    .await
    .unwrap();
    // `hello` is the docshape transaction's own check that the deployment has them.
    let in_docshape: Vec<String> = names().into_iter().filter(|n| n != "hello").collect();
    session.start_transaction().await.unwrap();
    Order::add_item("o1", item("s1", "d", 1, 10)).session(&mut session).run(&db).await.unwrap();
    session.commit_transaction().await.unwrap();
    assert_eq!(names(), in_docshape, "the caller's transaction: as in a docshape one");
    assert!(!in_docshape.iter().any(|n| n == "abortTransaction"), "{in_docshape:?}");
    assert_eq!(one(&db, "sm_seller_sales_now", "s1").await.unwrap().get_i64("units").unwrap(), 5);
}
