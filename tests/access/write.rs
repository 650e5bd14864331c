//! Write rows: one `findAndModify` each; a bounded push never passes its bound, even
//! with concurrent writers, and every refused push is reported.

use bson::doc;
use docshape::access::UpdateError;
use docshape::{testkit, Model};

use crate::{order, Line, Order};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_row_is_one_find_and_modify_with_its_typed_update() {
    let (db, log) = testkit::monitored("access_write_one").await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    Order::collection(&db).insert_one(order("o1", "c1", 1, "paid")).await.unwrap();
    log.clear();
    let done = Order::add_line("o1", Line { sku: "B-2".into(), qty: 3 }, 250_i64).run(&db).await.unwrap();
    assert_eq!(done.id, bson::Bson::from("o1"));
    let commands = log.take();
    let names: Vec<&str> = commands.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["findAndModify"]);
    let sent = &commands[0].1;
    // The bound rides in the filter: element 4 (the fifth) must not exist yet.
    assert_eq!(
        sent.get_document("query").unwrap(),
        &doc! { "_id": { "$eq": "o1" }, "lines.4": { "$exists": false } }
    );
    assert_eq!(
        sent.get_document("update").unwrap(),
        &doc! { "$inc": { "total": 250_i64 }, "$push": { "lines": { "sku": "B-2", "qty": 3 } } }
    );
    let stored = Order::collection(&db).find_one(doc! { "_id": "o1" }).await.unwrap().unwrap();
    assert_eq!((stored.lines.len(), stored.total_cents), (2, 350));

    Order::set_status("o1", "shipped").run(&db).await.unwrap();
    Order::drop_line("o1", Line { sku: "A-1".into(), qty: 1 }).run(&db).await.unwrap();
    let stored = Order::collection(&db).find_one(doc! { "_id": "o1" }).await.unwrap().unwrap();
    assert_eq!(stored.status, "shipped");
    assert_eq!(stored.lines, vec![Line { sku: "B-2".into(), qty: 3 }]);

    match Order::set_status("missing", "paid").run(&db).await {
        Err(UpdateError::NotFound { pattern: "set_status", .. }) => {}
        other => panic!("expected NotFound, got {other:?}"),
    }
    // An operator in a typed parameter is a string value; in the id it matches nothing.
    match Order::set_status(doc! { "$ne": null }.to_string(), "x").run(&db).await {
        Err(UpdateError::NotFound { .. }) => {}
        other => panic!("expected NotFound, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_concurrent_writers_never_pass_the_bound() {
    let db = testkit::database("access_write_bound").await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    let mut start = order("cart", "c1", 1, "open");
    start.lines.clear();
    Order::collection(&db).insert_one(&start).await.unwrap();
    let mut tasks = Vec::new();
    for writer in 0..8 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let (mut pushed, mut full) = (0, 0);
            for n in 0..4 {
                let line = Line { sku: format!("W{writer}-{n}"), qty: 1 };
                match Order::add_line("cart", line, 1_i64).run(&db).await {
                    Ok(_) => pushed += 1,
                    Err(UpdateError::Full { field: "lines", max: 5, .. }) => full += 1,
                    Err(e) => panic!("writer {writer}: {e}"),
                }
            }
            (pushed, full)
        }));
    }
    let (mut pushed, mut full) = (0, 0);
    for t in tasks {
        let (p, f) = t.await.unwrap();
        pushed += p;
        full += f;
    }
    // 32 attempts: exactly five landed, every other one was reported full.
    assert_eq!((pushed, full), (5, 27));
    let stored = Order::collection(&db).find_one(doc! { "_id": "cart" }).await.unwrap().unwrap();
    assert_eq!(stored.lines.len(), 5);
    assert_eq!(stored.total_cents, 100 + 5);
}
