//! Write rows: one command each (an `update` by `_id`, else a `findAndModify`); a bounded push never passes its bound, even
//! with concurrent writers, and every refused push is reported.

use bson::doc;
use docshape::access::UpdateError;
use docshape::bson;
use docshape::Model;
use docshape_testkit as testkit;

use super::{order, Line, Order};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_row_is_one_command_with_its_typed_update() {
    let (db, log) = testkit::monitored("access_write_one").await.unwrap();
    docshape::sync::<Order>(&db).await.unwrap();
    Order::collection(&db).insert_one(order("o1", "c1", 1, "paid")).await.unwrap();
    log.clear();
    let done = Order::add_line("o1", Line { sku: "B-2".into(), qty: 3 }, 250_i64).run(&db).await.unwrap();
    assert_eq!(done.id, bson::Bson::from("o1"));
    let commands = log.take();
    let names: Vec<&str> = commands.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["update"]);
    let sent = commands[0].1.get_array("updates").unwrap()[0].as_document().unwrap().clone();
    // The bound rides in the filter: element 4 (the fifth) must not exist yet.
    assert_eq!(
        sent.get_document("q").unwrap(),
        &doc! { "_id": { "$eq": "o1" }, "lines.4": { "$exists": false } }
    );
    assert_eq!(
        sent.get_document("u").unwrap(),
        &doc! { "$push": { "lines": { "$each": [{ "sku": "B-2", "qty": 3 }] } }, "$inc": { "total": 250_i64 } }
    );
    assert!(!sent.get_bool("multi").unwrap_or(false), "one document");
    let stored = Order::collection(&db).find_one(doc! { "_id": "o1" }).await.unwrap().unwrap();
    assert_eq!((stored.lines.len(), stored.total_cents), (2, 350));

    Order::set_status("o1", "shipped").run(&db).await.unwrap();
    Order::drop_line("o1", Line { sku: "A-1".into(), qty: 1 }).run(&db).await.unwrap();
    let stored = Order::collection(&db).find_one(doc! { "_id": "o1" }).await.unwrap().unwrap();
    assert_eq!(stored.status, "shipped");
    assert_eq!(stored.lines, vec![Line { sku: "B-2".into(), qty: 3 }]);

    // A row naming its document by another field: one findAndModify, in the row's sort
    // order, which says which document it wrote.
    Order::collection(&db).insert_one(order("o2", "c1", 2, "paid")).await.unwrap();
    log.clear();
    let closed = Order::close_latest("c1", "closed").run(&db).await.unwrap();
    assert_eq!(closed.id, bson::Bson::from("o2"), "the newest of c1's orders");
    let commands = log.take();
    assert_eq!(commands.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["findAndModify"]);
    let sent = &commands[0].1;
    assert_eq!(sent.get_document("query").unwrap(), &doc! { "customer_id": { "$eq": "c1" } });
    assert_eq!(sent.get_document("sort").unwrap(), &doc! { "created_at": -1 });
    assert_eq!(sent.get_document("fields").unwrap(), &doc! { "_id": 1 });

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

/// A versioned model's write row writes the current shape only.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, Model)]
#[model(collection = "access_versioned", version = 2, migrate(v1 = ListV1))]
#[access(name = "add_entry", filter(_id), update(push(entries)))]
#[access(name = "list_title", filter(_id), fields(title))]
pub struct List {
    #[serde(rename = "_id")]
    pub id: String,
    pub title: String,
    #[embed(max = 3, reason = "a short list")]
    pub entries: Vec<String>,
    #[schema_version]
    pub schema_version: i32,
}

/// Version 1 called the title `name`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, docshape::Embedded)]
pub struct ListV1 {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[validate(max_items = 3)]
    pub entries: Vec<String>,
}

impl From<ListV1> for List {
    fn from(v1: ListV1) -> Self {
        List { id: v1.id, title: v1.name, entries: v1.entries, schema_version: 2 }
    }
}

/// The seed's lazy migration through a write row: an older document is upgraded in
/// place (its v1 `name` becomes `title`, the version is stamped) and then written, in
/// the same call; a current one takes one command. (Before: every write row on a v1
/// document failed with `OldVersion` until a backfill ran.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_row_upgrades_an_older_version_then_writes() {
    let (db, log) = testkit::monitored("access_write_versioned").await.unwrap();
    docshape::sync::<List>(&db).await.unwrap();
    let raw = db.collection::<bson::Document>(List::COLLECTION);
    raw.insert_one(doc! { "_id": "old", "name": "v1 list", "entries": [] }).await.unwrap();
    raw.insert_one(doc! { "_id": "new", "title": "v2 list", "entries": [], "schema_version": 2 })
        .await
        .unwrap();
    // A view of a versioned model reads the whole document and upgrades it first.
    assert_eq!(List::list_title("old").one(&db).await.unwrap().unwrap().title, "v1 list");
    assert_eq!(List::list_title("new").one(&db).await.unwrap().unwrap().title, "v2 list");
    List::add_entry("old", "x").run(&db).await.unwrap();
    let old = raw.find_one(doc! { "_id": "old" }).await.unwrap().unwrap();
    assert_eq!(
        old,
        doc! { "_id": "old", "entries": ["x"], "title": "v1 list", "schema_version": 2 },
        "upgraded, stamped and written"
    );
    log.clear();
    List::add_entry("new", "x").run(&db).await.unwrap();
    assert_eq!(log.names(), ["update"], "a current document takes one command");
    let new = raw.find_one(doc! { "_id": "new" }).await.unwrap().unwrap();
    assert_eq!(new.get_array("entries").unwrap().len(), 1);
    // A missing document is still not found.
    assert!(matches!(List::add_entry("absent", "x").run(&db).await, Err(UpdateError::NotFound { .. })));
    // A document a newer release wrote (after a rollback) is left alone, and the error
    // says so, not "upgrade it". (Around this release's validator: the newer release's
    // admits it.)
    raw.insert_one(doc! { "_id": "v3", "title": "from v3", "entries": [], "schema_version": 3 })
        .bypass_document_validation(true)
        .await
        .unwrap();
    match List::add_entry("v3", "x").run(&db).await {
        Err(e @ UpdateError::NewerVersion { current: 2, .. }) => {
            assert!(e.to_string().contains("newer release"), "{e}")
        }
        other => panic!("expected NewerVersion, got {other:?}"),
    }
    let v3 = raw.find_one(doc! { "_id": "v3" }).await.unwrap().unwrap();
    assert_eq!(v3.get_array("entries").unwrap().len(), 0, "untouched");
}

/// Eight writers push into one v1 list bounded at three while the first ones upgrade
/// it: each upgrade is a compare-and-set on the document as read, so none overwrites a
/// push that landed first; exactly three pushes land, the five others are told the
/// list is full, and the stored list holds exactly the three that landed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_write_rows_on_an_older_version_lose_no_write() {
    let db = testkit::database("access_write_versioned_race").await.unwrap();
    docshape::sync::<List>(&db).await.unwrap();
    let raw = db.collection::<bson::Document>(List::COLLECTION);
    for round in 0..5 {
        let id = format!("race{round}");
        raw.insert_one(doc! { "_id": &id, "name": "v1 list", "entries": [] }).await.unwrap();
        let tasks: Vec<_> = (0..8)
            .map(|w| {
                let (db, id) = (db.clone(), id.clone());
                tokio::spawn(async move {
                    (format!("w{w}"), List::add_entry(id.as_str(), format!("w{w}")).run(&db).await)
                })
            })
            .collect();
        let mut landed = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                (w, Ok(_)) => landed.push(w),
                (_, Err(UpdateError::Full { max: 3, .. })) => {}
                (w, Err(e)) => panic!("round {round}, {w}: {e}"),
            }
        }
        let stored = List::collection(&db).find_one(doc! { "_id": &id }).await.unwrap().unwrap();
        let mut entries = stored.entries.clone();
        entries.sort();
        landed.sort();
        assert_eq!(entries, landed, "round {round}: the stored entries are the pushes that landed");
        assert_eq!(landed.len(), 3, "round {round}");
        assert_eq!((stored.title.as_str(), stored.schema_version), ("v1 list", 2), "round {round}");
    }
}

/// Inside a transaction, a write row on an older document upgrades it in the
/// transaction's session: the upgrade and the write commit together, and an aborted
/// transaction leaves the document as the old release wrote it. (Before: the upgrade
/// ran outside the session, the transaction's snapshot never saw it, and the row failed
/// with `OldVersion` after every attempt.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_row_in_a_transaction_upgrades_in_its_session() {
    let db = testkit::database("access_write_versioned_tx").await.unwrap();
    docshape::sync::<List>(&db).await.unwrap();
    let raw = db.collection::<bson::Document>(List::COLLECTION);
    raw.insert_one(doc! { "_id": "old", "name": "v1 list", "entries": [] }).await.unwrap();
    let client = db.client().clone();
    let db = &*db;

    // Aborted after the write: neither the upgrade nor the push is left.
    let aborted = docshape::transaction(&client, |tx| {
        Box::pin(async move {
            List::add_entry("old", "x").session(tx).run(db).await?;
            Err::<(), _>(UpdateError::NotFound { collection: List::COLLECTION, pattern: "abort on purpose" })
        })
    })
    .await;
    assert!(
        matches!(aborted, Err(docshape::TransactionError::Aborted(UpdateError::NotFound { .. }))),
        "{aborted:?}"
    );
    let stored = raw.find_one(doc! { "_id": "old" }).await.unwrap().unwrap();
    assert_eq!(
        stored,
        doc! { "_id": "old", "name": "v1 list", "entries": [] },
        "the abort undid the upgrade"
    );

    docshape::transaction(&client, |tx| {
        Box::pin(async move {
            List::add_entry("old", "y").session(tx).run(db).await?;
            Ok::<_, UpdateError>(())
        })
    })
    .await
    .unwrap();
    let stored = List::collection(db).find_one(doc! { "_id": "old" }).await.unwrap().unwrap();
    assert_eq!(
        (stored.title.as_str(), stored.entries, stored.schema_version),
        ("v1 list", vec!["y".to_owned()], 2)
    );
}
