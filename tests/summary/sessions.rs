//! Whether a write's session runs a transaction is read from the session's state: a
//! sync summary joins the caller's own transaction (and is aborted with it), and a
//! write in a session that runs none (never started, committed, aborted) is applied
//! after it, as outside any session.

use docshape::bson::doc;
use docshape::summary::Worker;

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
    let pending = summary::lag(&db).await.unwrap().pending;
    session.start_transaction().await.unwrap();
    Order::add_item("o1", item("s2", "c", 5, 10)).session(&mut session).run(&db).await.unwrap();
    session.abort_transaction().await.unwrap();
    assert_eq!(units_of(&db, "s2").await, None, "aborted with the write");
    let o1 = Order::collection(&db).find_one(doc! { "_id": "o1" }).await.unwrap().unwrap();
    assert_eq!(o1.items.len(), 2);
    assert_eq!(summary::lag(&db).await.unwrap().pending, pending, "the queue records aborted too");

    // The same session, its transaction aborted: a write outside one again.
    Order::add_item("o1", item("s2", "c", 5, 10)).session(&mut session).run(&db).await.unwrap();
    assert_eq!(units_of(&db, "s2").await, Some(5));

    // Committed: in line after the commit, not before (the commit makes it visible).
    session.start_transaction().await.unwrap();
    Order::add_item("o1", item("s2", "d", 7, 10)).session(&mut session).run(&db).await.unwrap();
    assert_eq!(units_of(&db, "s2").await, Some(5), "not visible before the commit");
    session.commit_transaction().await.unwrap();
    assert_eq!(units_of(&db, "s2").await, Some(12));

    // After a commit, the session runs no transaction: applied after the write.
    Order::add_item("o1", item("s1", "e", 1, 10)).session(&mut session).run(&db).await.unwrap();
    assert_eq!(units_of(&db, "s1").await, Some(4));

    Worker::new(&db).run_until_empty().await.unwrap();
    assert_no_drift(&db).await;
}
