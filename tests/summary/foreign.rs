//! Writes made around docshape (another program's inserts, updates and deletes)
//! reach the summaries through the watcher; a transaction's writes reach the sync
//! summary with its commit, and an aborted one's never.

use std::time::Duration;

use docshape::denormalized::{self, Worker};
use docshape::summary::{self, Watcher};

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_inserts_updates_and_deletes_reach_the_summaries_through_the_watcher() {
    let db = setup("summary_foreign").await;
    // Written before any watcher ran: its first start resyncs.
    docshape::relation::insert_one(
        &db,
        &mut order("o0", "c", "2026-08-05T10:00:00Z", vec![item("s1", "a", 1, 10)]),
    )
    .await
    .unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let watching = tokio::spawn({
        let db = (*db).clone();
        async move {
            Watcher::new(&db)
                .name("t")
                .run_until(async {
                    let _ = stop_rx.await;
                })
                .await
        }
    });
    // Its first start (a stream and a resync per summarized source) is over once it
    // saved a position per source: the writes below then reach it through the streams.
    let mut sources: Vec<&str> = summary::summaries().iter().map(|s| s.source).collect();
    sources.sort_unstable();
    sources.dedup();
    let started = std::time::Instant::now() + Duration::from_secs(20);
    let ledger = db.collection::<Document>(summary::LEDGER);
    while ledger.count_documents(doc! { "_id.watch": "t" }).await.unwrap() < sources.len() as u64 {
        assert!(std::time::Instant::now() < started, "the watcher never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The jobs of that resync are applied now: o0's deletion below then reaches the
    // summaries only through the stream (its resync job, applied after the delete,
    // would take it out too, and the state checked below could be reached before the
    // watcher read the last change).
    Worker::new(&db).run_until_empty().await.unwrap();
    let orders = db.collection::<Document>("sm_orders");
    let raw = |id: &str, items: Vec<Document>| doc! { "_id": id, "customer_id": "x", "created_at": at("2026-08-05T10:00:00Z"), "items": items };
    let it = |s: &str, q: i64| doc! { "seller_id": s, "sku": "f", "qty": q, "line_cents": 100_i64 };
    orders.insert_one(raw("f1", vec![it("s1", 2), it("s2", 3)])).await.unwrap();
    orders.insert_one(raw("f2", vec![it("s2", 4)])).await.unwrap();
    orders.update_one(doc! { "_id": "f1" }, doc! { "$set": { "items.0.qty": 7_i64 } }).await.unwrap();
    orders.replace_one(doc! { "_id": "f2" }, raw("f2", vec![it("s3", 1)])).await.unwrap();
    orders.delete_one(doc! { "_id": "o0" }).await.unwrap();
    // The watcher queues; a worker applies. Wait for both, bounded as the copies'
    // watcher tests are (a stream on a loaded 2-core machine: o0's deletion reaches
    // the summaries through the stream only, its last change).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        Worker::new(&db).run_until_empty().await.unwrap();
        let s1 = one(&db, "sm_seller_sales", "s1").await;
        let s2 = one(&db, "sm_seller_sales", "s2").await;
        let s3 = one(&db, "sm_seller_sales_now", "s3").await;
        // Every change's end state: o0 deleted and f1 edited (s1), f2 replaced (s2 and
        // s3). (An application reads the document as it is now, so the state can
        // arrive before the last change is read: the summaries are then right anyway.)
        let get = |d: &Option<Document>, f: &str| d.as_ref().and_then(|d| d.get_i64(f).ok());
        if (get(&s1, "orders"), get(&s1, "units"), get(&s2, "units")) == (Some(1), Some(7), Some(3))
            && s3.is_some()
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the watcher's changes never arrived: {s1:?} {s3:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop_tx.send(()).unwrap();
    let report = watching.await.unwrap().unwrap();
    assert!(report.changes >= 5, "{report:?}");
    assert_eq!(report.resyncs as usize, sources.len(), "the first start resyncs each source: {report:?}");
    let s1 = one(&db, "sm_seller_sales", "s1").await.unwrap();
    assert_eq!(
        (s1.get_i64("orders").unwrap(), s1.get_i64("units").unwrap()),
        (1, 7),
        "o0 deleted, f1 edited"
    );
    assert_eq!(one(&db, "sm_seller_sales", "s2").await.unwrap().get_i64("units").unwrap(), 3, "f2 replaced");
    assert_no_drift(&db).await;
    // Restarted, it resumes from its saved position: no second resync.
    let again =
        Watcher::new(&db).name("t").run_until(tokio::time::sleep(Duration::from_millis(300))).await.unwrap();
    assert_eq!(again.resyncs, 0, "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_summary_is_written_in_the_transaction_and_commits_with_it() {
    let db = setup("summary_transaction").await;
    docshape::relation::insert_one(
        &db,
        &mut order("o1", "c", "2026-08-05T10:00:00Z", vec![item("s1", "a", 1, 10)]),
    )
    .await
    .unwrap();
    let units = |d: Option<Document>| d.and_then(|d| d.get_i64("units").ok());
    let d = &db;
    let attempts = std::sync::atomic::AtomicU32::new(0);
    let done = docshape::transaction(db.client(), |tx| {
        let attempts = &attempts;
        Box::pin(async move {
            attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Order::add_item("o1", item("s1", "b", 5, 50)).session(tx).run(d).await?;
            // The sync summary is written in the transaction, before its commit: the
            // transaction reads it in line already.
            let inside = d
                .collection::<Document>("sm_seller_sales_now")
                .find_one(doc! { "_id": "s1" })
                .session(&mut **tx)
                .await
                .expect("a read in the transaction");
            assert_eq!(units(inside), Some(6));
            Order::add_item("o1", item("s2", "c", 2, 20)).session(tx).run(d).await?;
            Ok::<_, docshape::access::UpdateError>(())
        })
    })
    .await;
    done.unwrap();
    assert_eq!(units(one(&db, "sm_seller_sales_now", "s1").await), Some(6));
    assert_eq!(units(one(&db, "sm_seller_sales_now", "s2").await), Some(2));
    // An aborted transaction leaves the summaries as they were.
    let failed = docshape::transaction(db.client(), |tx| {
        Box::pin(async move {
            Order::add_item("o1", item("s1", "z", 100, 1))
                .session(tx)
                .run(d)
                .await
                .map_err(std::io::Error::other)?;
            Err::<(), _>(std::io::Error::other("the application gives up"))
        })
    })
    .await;
    assert!(failed.is_err());
    assert_eq!(units(one(&db, "sm_seller_sales_now", "s1").await), Some(6));
    Worker::new(&db).run_until_empty().await.unwrap();
    assert_no_drift(&db).await;
    assert_eq!(denormalized::lag(&db).await.unwrap().pending, 0);
}
