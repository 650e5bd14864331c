//! Group keys and stored values that look like operators, field paths or documents
//! reach the summaries as values through every docshape writer, sync and async: each
//! group is the one whose `_id` equals the key, no filter or update reads a key as an
//! operator, and every summary equals a recount.

use docshape::bson::{doc, Bson};
use docshape::denormalized::Worker;

use super::*;

/// Seller ids a caller may hand over: text shaped as an operator document, `$`-prefixed
/// names (an operator's, a field reference's), dotted paths, and a plain one.
const SELLERS: [&str; 6] = [r#"{"$gt": ""}"#, "$gt", "$where", "$items.seller_id", "a.b.c", "s1"];

/// The summary documents of `collection`, by `_id`.
async fn by_key(db: &Database, collection: &str) -> Vec<(Bson, Document)> {
    let mut docs: Vec<(Bson, Document)> =
        all(db, collection).await.into_iter().map(|d| (d.get("_id").cloned().unwrap(), d)).collect();
    docs.sort_by_key(|(k, _)| k.to_string());
    docs
}

fn units(docs: &[(Bson, Document)], key: &Bson) -> i64 {
    let (_, d) = docs.iter().find(|(k, _)| k == key).unwrap_or_else(|| panic!("no group {key}: {docs:?}"));
    d.get_i64("units").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_group_keys_are_values_on_the_sync_and_async_paths() {
    let db = setup("summary_hostile_keys").await;
    // Inserts: one order per seller, each with `i + 1` units, and one order holding
    // every seller.
    for (i, seller) in SELLERS.iter().enumerate() {
        let id = format!("o{i}");
        let qty = i as i64 + 1;
        docshape::relation::insert_one(
            &db,
            &mut order(&id, seller, "2026-08-05T10:00:00Z", vec![item(seller, "a", qty, 10)]),
        )
        .await
        .unwrap();
    }
    let every: Vec<Item> = SELLERS.iter().map(|s| item(s, "b", 100, 1)).collect();
    docshape::relation::insert_one(&db, &mut order("all", "c", "2026-08-05T11:00:00Z", every)).await.unwrap();
    // Write rows: outside a transaction, in a docshape transaction, in the caller's
    // own session transaction.
    Order::add_item("o0", item(SELLERS[1], "c", 1000, 1)).run(&db).await.unwrap();
    let d = &db;
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move {
            Order::remove_item("all", item(SELLERS[2], "b", 100, 1)).session(tx).run(d).await?;
            Order::add_item("o3", item(SELLERS[0], "d", 10_000, 1)).session(tx).run(d).await
        })
    })
    .await
    .unwrap();
    let mut session = db.client().start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    Order::add_item("o4", item(SELLERS[4], "e", 7, 1)).session(&mut session).run(&db).await.unwrap();
    session.commit_transaction().await.unwrap();
    Worker::new(&db).run_until_empty().await.unwrap();

    // Every seller's units: its own order, the order of every seller (less the
    // removed line), the added lines.
    let expected = |i: usize| -> i64 {
        let mut n = i as i64 + 1 + 100;
        n += match i {
            0 => 10_000,
            1 => 1000,
            2 => -100,
            4 => 7,
            _ => 0,
        };
        n
    };
    for collection in ["sm_seller_sales_now", "sm_seller_sales"] {
        let docs = by_key(&db, collection).await;
        assert_eq!(docs.len(), SELLERS.len(), "{collection}: one group per seller, no other: {docs:?}");
        for (i, seller) in SELLERS.iter().enumerate() {
            assert_eq!(units(&docs, &Bson::from(*seller)), expected(i), "{collection}, seller {seller:?}");
        }
        // No group holds a field the key would name as a path (`a.b.c`, `$items…`).
        for (_, d) in &docs {
            assert!(d.keys().all(|k| !k.contains('.') && !k.starts_with('$')), "{collection}: {d:?}");
        }
    }
    // The composite key (a document) holds both hostile parts as values.
    let cs = by_key(&db, "sm_customer_seller").await;
    let key = Bson::Document(doc! { "customer_id": SELLERS[3], "seller_id": SELLERS[3] });
    assert_eq!(units(&cs, &key), 4, "{cs:?}");
    // The ledger records each key as it is.
    let record = db
        .collection::<Document>(summary::LEDGER)
        .find_one(doc! { "_id": { "$eq": { "s": "sm_seller_sales_now", "id": "o0" } } })
        .await
        .unwrap()
        .unwrap();
    let groups = record.get_array("g").unwrap();
    assert_eq!(groups.len(), 2, "{record:?}");
    assert_eq!(groups[0].as_document().unwrap().get("k"), Some(&Bson::from(SELLERS[0])), "{record:?}");
    assert_no_drift(&db).await;

    // Removing every line of a hostile seller deletes its group, and only its own.
    Order::set_items("o0", Vec::<Item>::new()).run(&db).await.unwrap();
    Order::remove_item("all", item(SELLERS[0], "b", 100, 1)).run(&db).await.unwrap();
    Order::remove_item("o3", item(SELLERS[0], "d", 10_000, 1)).run(&db).await.unwrap();
    Worker::new(&db).run_until_empty().await.unwrap();
    for collection in ["sm_seller_sales_now", "sm_seller_sales"] {
        let docs = by_key(&db, collection).await;
        assert!(docs.iter().all(|(k, _)| k != &Bson::from(SELLERS[0])), "{collection}: {docs:?}");
        assert_eq!(docs.len(), SELLERS.len() - 1, "{collection}: {docs:?}");
        assert_eq!(units(&docs, &Bson::from("s1")), expected(5), "{collection}");
    }
    assert_no_drift(&db).await;
}
