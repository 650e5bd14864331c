//! Summaries over one variant of a polymorphic source: only the variant's documents
//! count, with writers of every variant at once; a document whose tag another
//! program rewrites leaves one summary and enters the other; `reconcile` recounts
//! with the variant's filter.

use std::time::Duration;

use docshape::denormalized::Worker;
use docshape::summary::{self, Watcher};

use super::*;

/// The source: two variants that both store `user`, and a click that may carry a
/// purchase's field names (a foreign program's), which no purchase summary reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[model(collection = "sm_events", transactions)]
#[access(name = "refund", variant = Purchase, filter(_id), update(inc(refunded_cents)))]
pub enum Event {
    Click {
        #[serde(rename = "_id")]
        id: String,
        user: String,
        target: String,
    },
    Purchase {
        #[serde(rename = "_id")]
        id: String,
        user: String,
        seller_id: String,
        amount_cents: i64,
        refunded_cents: i64,
    },
}

/// Purchases per seller, kept in the writing call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sm_purchases_by_seller")]
#[summary(of = Event, variant = Purchase, group(seller_id), refresh = "sync")]
pub struct PurchasesBySeller {
    #[serde(rename = "_id")]
    pub seller_id: String,
    #[summary(count)]
    pub purchases: i64,
    #[summary(sum = "amount_cents")]
    pub amount_cents: i64,
    #[summary(sum = "refunded_cents")]
    pub refunded_cents: i64,
}

/// Clicks per user, kept by a worker: a purchase's `user` never counts here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sm_clicks_by_user")]
#[summary(of = Event, variant = Click, group(user), refresh = "async", max_stale = "1m")]
pub struct ClicksByUser {
    #[serde(rename = "_id")]
    pub user: String,
    #[summary(count)]
    pub clicks: i64,
}

const VARIANT_SUMMARIES: [&str; 2] = ["sm_purchases_by_seller", "sm_clicks_by_user"];

fn click(id: &str, user: &str) -> Event {
    Event::Click { id: id.into(), user: user.into(), target: "buy-button".into() }
}

fn purchase(id: &str, user: &str, seller: &str, cents: i64) -> Event {
    Event::Purchase {
        id: id.into(),
        user: user.into(),
        seller_id: seller.into(),
        amount_cents: cents,
        refunded_cents: 0,
    }
}

async fn no_drift(db: &Database) {
    for name in VARIANT_SUMMARIES {
        let report = summary::check(db, spec(name)).await.unwrap();
        assert!(report.drifted.is_empty(), "{name} drifts: {:#?}", report.drifted);
    }
}

/// `(count, sum)` of a group, `None` when it has no document.
async fn group(db: &Database, collection: &str, key: &str, sum: &str) -> Option<(i64, i64)> {
    let d = one(db, collection, key).await?;
    let count = d.get_i64(if collection == "sm_clicks_by_user" { "clicks" } else { "purchases" }).unwrap();
    Some((count, if sum.is_empty() { 0 } else { d.get_i64(sum).unwrap() }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_of_every_variant_reach_only_their_variants_summary() {
    let db = testkit::database("summary_variant").await.unwrap();
    assert_eq!(spec("sm_purchases_by_seller").variant.map(|v| (v.tag, v.value)), Some(("kind", "purchase")));
    assert_eq!(spec("sm_clicks_by_user").variant.map(|v| v.value), Some("click"));
    // Four writers at once, each writing clicks and purchases of the same users and
    // sellers, and refunding its purchases (a write row on the variant).
    let mut writers = Vec::new();
    for w in 0..4 {
        let db = (*db).clone();
        writers.push(tokio::spawn(async move {
            for i in 0..6 {
                let user = format!("u{}", i % 3);
                let mut c = click(&format!("c{w}-{i}"), &user);
                docshape::relation::insert_one(&db, &mut c).await.unwrap();
                let mut p = purchase(&format!("p{w}-{i}"), &user, &format!("s{}", i % 2), 100 * (i + 1));
                docshape::relation::insert_one(&db, &mut p).await.unwrap();
                if i % 3 == 0 {
                    Event::refund(format!("p{w}-{i}"), 10).run(&db).await.unwrap();
                }
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    // A click's `_id` given to the purchases' write row matches nothing.
    assert!(Event::refund("c0-0", 5).run(&db).await.is_err());
    // Sync: in line already. s0 has i = 0, 2, 4 of each writer: 100 + 300 + 500 each,
    // refunded 10 (i = 0); s1 has i = 1, 3, 5, refunded 10 (i = 3).
    assert_eq!(group(&db, "sm_purchases_by_seller", "s0", "amount_cents").await, Some((12, 3_600)));
    assert_eq!(group(&db, "sm_purchases_by_seller", "s1", "refunded_cents").await, Some((12, 40)));
    assert!(one(&db, "sm_purchases_by_seller", Bson::Null).await.is_none(), "a click is no group of it");
    // Async: nothing until a worker runs; then each user's clicks, not its purchases.
    assert!(one(&db, "sm_clicks_by_user", "u0").await.is_none());
    Worker::new(&db).run_until_empty().await.unwrap();
    for u in ["u0", "u1", "u2"] {
        assert_eq!(group(&db, "sm_clicks_by_user", u, "").await, Some((8, 0)), "{u}");
    }
    no_drift(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_tag_change_moves_a_document_between_the_variants_summaries() {
    let db = testkit::database("summary_variant_foreign").await.unwrap();
    for mut e in [click("c1", "ann"), click("c2", "ann"), purchase("p1", "ann", "s1", 700)] {
        docshape::relation::insert_one(&db, &mut e).await.unwrap();
    }
    Worker::new(&db).run_until_empty().await.unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let watching = tokio::spawn({
        let db = (*db).clone();
        async move { Watcher::new(&db).name("v").run_until(async { stop_rx.await.unwrap_or(()) }).await }
    });
    let mut sources: Vec<&str> = summary::summaries().iter().map(|s| s.source).collect();
    sources.sort_unstable();
    sources.dedup();
    let ledger = db.collection::<Document>(summary::LEDGER);
    let started = std::time::Instant::now() + Duration::from_secs(20);
    while ledger.count_documents(doc! { "_id.watch": "v" }).await.unwrap() < sources.len() as u64 {
        assert!(std::time::Instant::now() < started, "the watcher never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Another program rewrites tags: the purchase becomes a click (its purchase fields
    // stay, read by no one), a click becomes a purchase of s2, and it inserts a click
    // that stores a purchase's field names.
    let events = db.collection::<Document>("sm_events");
    events
        .update_one(doc! { "_id": "p1" }, doc! { "$set": { "kind": "click", "target": "x" } })
        .await
        .unwrap();
    events
        .update_one(
            doc! { "_id": "c2" },
            doc! { "$set": { "kind": "purchase", "seller_id": "s2", "amount_cents": 250_i64, "refunded_cents": 0_i64 } },
        )
        .await
        .unwrap();
    events
        .insert_one(doc! { "_id": "c3", "kind": "click", "user": "bob", "target": "y", "seller_id": "s1", "amount_cents": 999_i64 })
        .await
        .unwrap();
    // The watcher queues; a worker applies. Bounded as the other watcher tests are
    // (`summary::foreign`'s, the copies'): a stream on a loaded 2-core machine. The
    // insert of c3 is the stream's last change.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        Worker::new(&db).run_until_empty().await.unwrap();
        let s1 = one(&db, "sm_purchases_by_seller", "s1").await;
        let s2 = group(&db, "sm_purchases_by_seller", "s2", "amount_cents").await;
        let ann = group(&db, "sm_clicks_by_user", "ann", "").await;
        let bob = group(&db, "sm_clicks_by_user", "bob", "").await;
        if s1.is_none() && s2 == Some((1, 250)) && ann == Some((2, 0)) && bob == Some((1, 0)) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the tag changes never arrived: {s1:?} {s2:?} {ann:?} {bob:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop_tx.send(()).unwrap();
    watching.await.unwrap().unwrap();
    // ann: c1, and p1 now a click; c2 left. s1 lost its only purchase, and c3's
    // `seller_id` is a click's field: the group is gone.
    no_drift(&db).await;
    // Back again while no watcher runs: the click p1 replaced by a purchase through
    // the driver reaches both summaries by a resync.
    events.replace_one(doc! { "_id": "p1" }, doc! { "kind": "purchase", "user": "ann", "seller_id": "s1", "amount_cents": 700_i64, "refunded_cents": 0_i64 }).await.unwrap();
    summary::resync(&db, spec("sm_purchases_by_seller")).await.unwrap();
    summary::resync(&db, spec("sm_clicks_by_user")).await.unwrap();
    Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(group(&db, "sm_purchases_by_seller", "s1", "amount_cents").await, Some((1, 700)));
    assert_eq!(group(&db, "sm_clicks_by_user", "ann", "").await, Some((1, 0)));
    no_drift(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_recounts_the_variant_only() {
    let db = testkit::database("summary_variant_reconcile").await.unwrap();
    for mut e in [
        purchase("p1", "ann", "s1", 100),
        purchase("p2", "bob", "s1", 200),
        purchase("p3", "bob", "s2", 300),
        click("c1", "ann"),
    ] {
        docshape::relation::insert_one(&db, &mut e).await.unwrap();
    }
    // A click that stores a purchase's fields, written around docshape: the recount
    // reads the variant's documents only, so it never counts.
    let events = db.collection::<Document>("sm_events");
    events
        .insert_one(doc! { "_id": "c9", "kind": "click", "user": "eve", "target": "t", "seller_id": "s1", "amount_cents": 5_000_i64 })
        .await
        .unwrap();
    let sales = db.collection::<Document>("sm_purchases_by_seller");
    // Corrupted by hand: a group's totals, a group of no purchase, a group deleted.
    sales
        .update_one(doc! { "_id": "s1" }, doc! { "$set": { "purchases": 9_i64, "amount_cents": 1_i64 } })
        .await
        .unwrap();
    sales
        .insert_one(
            doc! { "_id": "ghost", "purchases": 1_i64, "amount_cents": 1_i64, "refunded_cents": 0_i64 },
        )
        .await
        .unwrap();
    sales.delete_one(doc! { "_id": "s2" }).await.unwrap();
    let sales_spec = spec("sm_purchases_by_seller");
    let found = summary::check(&db, sales_spec).await.unwrap();
    let mut keys: Vec<String> =
        found.drifted.iter().map(|d| d.key.as_str().unwrap_or("?").to_owned()).collect();
    keys.sort();
    assert_eq!(keys, ["ghost", "s1", "s2"], "{:#?}", found.drifted);
    assert_eq!(found.documents, 3, "the recount reads the purchases only");
    let s1 = found.drifted.iter().find(|d| d.key.as_str() == Some("s1")).unwrap();
    let recounted = s1.recounted.as_ref().unwrap();
    assert_eq!(
        (recounted.get_i64("purchases").unwrap(), recounted.get_i64("amount_cents").unwrap()),
        (2, 300)
    );
    let repaired = summary::reconcile(&db, sales_spec).await.unwrap();
    assert!(repaired.repaired);
    assert_eq!(repaired.drifted.len(), 3);
    assert_eq!(group(&db, "sm_purchases_by_seller", "s1", "amount_cents").await, Some((2, 300)));
    assert_eq!(group(&db, "sm_purchases_by_seller", "s2", "amount_cents").await, Some((1, 300)));
    assert!(one(&db, "sm_purchases_by_seller", "ghost").await.is_none());
    // The foreign click reaches the clicks' summary once queued (no watcher runs here).
    summary::resync(&db, spec("sm_clicks_by_user")).await.unwrap();
    Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(group(&db, "sm_clicks_by_user", "eve", "").await, Some((1, 0)));
    no_drift(&db).await;
    // Maintenance goes on from the repaired groups: a refund and a new purchase.
    Event::refund("p1", 40).run(&db).await.unwrap();
    docshape::relation::insert_one(&db, &mut purchase("p4", "eve", "s1", 1_000)).await.unwrap();
    assert_eq!(group(&db, "sm_purchases_by_seller", "s1", "refunded_cents").await, Some((3, 40)));
    // In a transaction, the sync summary reads the purchase as its write row returned
    // it (the whole document, tag included) and commits with it.
    let d = &db;
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move {
            Event::refund("p2", 60).session(tx).run(d).await?;
            Ok::<_, docshape::access::UpdateError>(())
        })
    })
    .await
    .unwrap();
    assert_eq!(group(&db, "sm_purchases_by_seller", "s1", "refunded_cents").await, Some((3, 100)));
    no_drift(&db).await;
}
