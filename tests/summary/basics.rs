//! What each kind of group holds after the docshape writers: inserts, write rows,
//! removals, and the min/max rescan when the extreme is withdrawn.

use docshape::bson::{doc, Bson};
use docshape::denormalized::{self, Worker};
use docshape::summary;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docshape_writes_reach_every_kind_of_group() {
    let db = setup("summary_basics").await;
    let o1 =
        order("o1", "c1", "2026-08-05T10:00:00Z", vec![item("s1", "a", 2, 500), item("s2", "b", 1, 300)]);
    let o2 =
        order("o2", "c2", "2026-08-05T23:00:00Z", vec![item("s1", "c", 3, 900), item("s1", "d", 1, 100)]);
    let o3 = order("o3", "c1", "2026-08-06T01:00:00Z", vec![]);
    docshape::relation::insert_one(&db, &mut o1.clone()).await.unwrap();
    docshape::relation::insert_many(&db, &mut [o2.clone(), o3.clone()]).await.unwrap();

    // Sync: in line as soon as the writer returns, by elements of the array.
    let s1 = SellerSalesNow::sales(&db, "s1").await;
    assert_eq!(
        s1,
        Some(SellerSalesNow { seller_id: "s1".into(), orders: 2, units: 6, biggest_line: Some(900) })
    );
    let all = one(&db, "sm_all_orders", "all").await.unwrap();
    assert_eq!((all.get_i64("orders").unwrap(), all.get_i64("units").unwrap()), (3, 7));
    let day = one(&db, "sm_daily", at("2026-08-05T00:00:00Z")).await.unwrap();
    assert_eq!((day.get_i64("orders").unwrap(), day.get_i64("total_cents").unwrap()), (2, 1800));
    let next_day = one(&db, "sm_daily", at("2026-08-06T00:00:00Z")).await.unwrap();
    assert_eq!(next_day.get_i64("orders").unwrap(), 1, "an order without items still counts in its day");

    // Async: nothing until a worker runs.
    assert!(one(&db, "sm_seller_sales", "s1").await.is_none());
    // One job per order and async summary, in the refresh queue the copies use.
    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!(lag.by_summary.get("sm_seller_sales").map(|l| l.pending), Some(3), "{lag:?}");
    assert_eq!(lag.pending, 6, "{lag:?}");
    assert!(lag.by_copy.is_empty(), "{lag:?}");
    let run = Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(run.jobs, 6, "3 orders for each of 2 async summaries: {run:?}");
    assert_eq!(denormalized::lag(&db).await.unwrap().pending, 0);
    let s1: SellerSales = SellerSales::sales_of_seller("s1").one(&db).await.unwrap().unwrap();
    assert_eq!((s1.orders, s1.units, s1.total_cents, s1.biggest_line), (2, 6, 1500, Some(900)));
    assert_eq!(s1.first_sale, Some(at("2026-08-05T10:00:00Z")));
    assert_eq!(s1.avg_units(), Some(3.0));
    assert_eq!(s1.avg_total_cents(), Some(750.0));
    let key = doc! { "customer_id": "c2", "seller_id": "s1" };
    let cs = one(&db, "sm_customer_seller", key).await.unwrap();
    assert_eq!((cs.get_i64("orders").unwrap(), cs.get_i64("units").unwrap()), (1, 4));

    // Write rows: add, remove; the extreme withdrawn is recomputed from the ledger.
    Order::add_item("o3", item("s2", "e", 5, 50)).run(&db).await.unwrap();
    Order::remove_item("o2", item("s1", "c", 3, 900)).run(&db).await.unwrap();
    let s1 = SellerSalesNow::sales(&db, "s1").await.unwrap();
    assert_eq!(
        (s1.orders, s1.units, s1.biggest_line),
        (2, 3, Some(500)),
        "the 900 line left: the max is rescanned"
    );
    let s2 = SellerSalesNow::sales(&db, "s2").await.unwrap();
    assert_eq!((s2.orders, s2.units), (2, 6));
    // An order whose last item of a seller leaves drops out of that seller's count;
    // a group whose count reaches 0 is removed.
    Order::set_items("o1", vec![item("s3", "f", 1, 10)]).run(&db).await.unwrap();
    Order::set_items("o3", Vec::<Item>::new()).run(&db).await.unwrap();
    assert!(SellerSalesNow::sales(&db, "s2").await.is_none(), "s2 has no order left");
    Worker::new(&db).run_until_empty().await.unwrap();
    assert!(one(&db, "sm_seller_sales", "s2").await.is_none());
    let s1: SellerSales = SellerSales::sales_of_seller("s1").one(&db).await.unwrap().unwrap();
    assert_eq!(
        (s1.orders, s1.units, s1.biggest_line, s1.first_sale),
        (1, 1, Some(100), Some(at("2026-08-05T23:00:00Z")))
    );
    assert_no_drift(&db).await;
    // Applying again changes nothing: the delta is taken against the ledger.
    let again = summary::resync(&db, spec("sm_seller_sales")).await.unwrap();
    assert!(again >= 3);
    let run = Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(run.groups_written, 0, "{run:?}");
    assert_no_drift(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_repairs_a_summary_corrupted_by_hand_and_reports_it() {
    let db = setup("summary_reconcile").await;
    let o1 =
        order("o1", "c1", "2026-08-05T10:00:00Z", vec![item("s1", "a", 2, 500), item("s2", "b", 1, 300)]);
    docshape::relation::insert_one(&db, &mut o1.clone()).await.unwrap();
    Worker::new(&db).run_until_empty().await.unwrap();
    let sales = db.collection::<docshape::bson::Document>("sm_seller_sales");
    sales.update_one(doc! { "_id": "s1" }, doc! { "$set": { "units": 99_i64 } }).await.unwrap();
    sales.delete_one(doc! { "_id": "s2" }).await.unwrap();
    sales
        .insert_one(doc! { "_id": "ghost", "orders": 1_i64, "units": 1_i64, "total_cents": 1_i64 })
        .await
        .unwrap();

    let found = summary::check(&db, spec("sm_seller_sales")).await.unwrap();
    let mut keys: Vec<Bson> = found.drifted.iter().map(|d| d.key.clone()).collect();
    keys.sort_by_key(|k| k.to_string());
    assert_eq!(keys, [Bson::from("ghost"), Bson::from("s1"), Bson::from("s2")]);
    assert!(!found.repaired);
    let s1 = found.drifted.iter().find(|d| d.key == Bson::from("s1")).unwrap();
    assert_eq!(s1.stored.as_ref().unwrap().get_i64("units").unwrap(), 99);
    assert_eq!(s1.recounted.as_ref().unwrap().get_i64("units").unwrap(), 2);

    let fixed = summary::reconcile(&db, spec("sm_seller_sales")).await.unwrap();
    assert_eq!(fixed.drifted.len(), 3);
    assert!(fixed.repaired);
    assert_no_drift(&db).await;
    // Later writes apply on top of the repaired documents.
    Order::add_item("o1", item("s1", "z", 4, 40)).run(&db).await.unwrap();
    Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(one(&db, "sm_seller_sales", "s1").await.unwrap().get_i64("units").unwrap(), 6);
    assert_no_drift(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_group_value_is_a_key_never_an_operator() {
    let db = setup("summary_hostile").await;
    // Stored around docshape, past the validator: a seller id shaped like an operator,
    // and a quantity that is not a number.
    db.collection::<docshape::bson::Document>("sm_orders")
        .insert_one(doc! {
            "_id": "h1", "customer_id": "c", "created_at": at("2026-08-05T10:00:00Z"),
            "items": [ { "seller_id": { "$gt": "" }, "sku": "x", "qty": 1_i64, "line_cents": 1_i64 },
                       { "seller_id": "s1", "sku": "y", "qty": "two", "line_cents": 5_i64 } ],
        })
        .bypass_document_validation(true)
        .await
        .unwrap();
    summary::resync(&db, spec("sm_seller_sales")).await.unwrap();
    summary::resync(&db, spec("sm_seller_sales_now")).await.unwrap();
    let run = Worker::new(&db).run_until_empty().await.unwrap();
    // The validated summary refuses a non-string `_id`: reported, left pending,
    // nothing of that order applied (one transaction per source document).
    assert_eq!(run.failures.len(), 1, "{run:?}");
    assert_eq!(run.failures[0].copy, "summary:sm_seller_sales", "{run:?}");
    assert!(run.failures[0].error.to_string().contains("validation"), "{run:?}");
    assert!(all(&db, "sm_seller_sales").await.is_empty());
    let lag = denormalized::lag(&db).await.unwrap();
    let pending = lag.by_summary.get("sm_seller_sales").unwrap();
    assert_eq!((pending.pending, pending.failing), (1, 1), "{lag:?}");
    assert!(pending.last_error.as_deref().is_some_and(|e| e.contains("validation")), "{lag:?}");
    // The unvalidated one holds the hostile value as a key, never as a filter.
    let stored = all(&db, "sm_seller_sales_now").await;
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert!(stored.iter().any(|d| d.get("_id") == Some(&Bson::Document(doc! { "$gt": "" }))));
    let s1 = stored.iter().find(|d| d.get("_id") == Some(&Bson::from("s1"))).unwrap();
    assert_eq!(s1.get_i64("units").unwrap(), 0, "a value that is not a number adds nothing");
    let report = summary::check(&db, spec("sm_seller_sales_now")).await.unwrap();
    assert!(report.drifted.is_empty(), "{report:?}");
}

impl SellerSalesNow {
    async fn sales(db: &Database, seller: &str) -> Option<SellerSalesNow> {
        SellerSalesNow::collection(db).find_one(doc! { "_id": seller }).await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_run_creates_the_ledger_indexes() {
    let db = setup("summary_ledger_indexes").await;
    docshape::relation::insert_one(
        &db,
        &mut order("o1", "c", "2026-08-05T10:00:00Z", vec![item("s1", "a", 1, 10)]),
    )
    .await
    .unwrap();
    Worker::new(&db).run_until_empty().await.unwrap();
    let keys: Vec<Document> = db
        .collection::<Document>(summary::LEDGER)
        .list_indexes()
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.keys)
        .collect();
    assert!(keys.contains(&doc! { "_id.s": 1, "g.k": 1 }), "{keys:?}");
    // The ledger queues nothing: its jobs are the refresh queue's, claimed by `due`.
    assert!(!keys.contains(&doc! { "pending": 1, "due": 1 }), "{keys:?}");
    let queue: Vec<Document> = db
        .collection::<Document>(denormalized::QUEUE)
        .list_indexes()
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.keys)
        .collect();
    assert!(queue.contains(&doc! { "due": 1 }), "{queue:?}");
    // Idempotent: a second run (or a deploy step) creates nothing new.
    summary::create_indexes(&db).await.unwrap();
}

/// `relation::insert_many` on a source with sync summaries runs in a transaction
/// started for it: a document the insert refuses (a duplicate `_id`, after a new one)
/// leaves none of them inserted, no summary changed and no job queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_many_that_fails_inserts_none() {
    let db = setup("summary_insert_many_none").await;
    let o1 = order("o1", "c1", "2026-08-05T10:00:00Z", vec![item("s1", "a", 2, 500)]);
    docshape::relation::insert_one(&db, &mut o1.clone()).await.unwrap();
    Worker::new(&db).run_until_empty().await.unwrap();
    let before = (all(&db, "sm_all_orders").await, all(&db, "sm_seller_sales_now").await);
    let o2 = order("o2", "c2", "2026-08-05T11:00:00Z", vec![item("s2", "b", 1, 300)]);
    let failed = docshape::relation::insert_many(&db, &mut [o2, o1]).await;
    assert!(failed.is_err(), "the duplicate `_id` is refused");
    assert_eq!(
        Order::collection(&db).count_documents(doc! {}).await.unwrap(),
        1,
        "o2 was not inserted either"
    );
    assert_eq!((all(&db, "sm_all_orders").await, all(&db, "sm_seller_sales_now").await), before);
    assert_eq!(denormalized::lag(&db).await.unwrap().pending, 0);
    assert_no_drift(&db).await;
}
