//! `sync` creates indexes, is idempotent, plans exactly what it then does, and never
//! drops an index without the opt-in.

use docshape::bson;
use docshape::bson::{doc, Document};
use docshape::sync::{SyncChange, SyncNote};
use docshape::{Model, SyncOptions};
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "items")]
#[index(keys(owner, created = -1))]
#[index(keys(sku), unique)]
struct ItemV1 {
    owner: String,
    sku: String,
    created: bson::DateTime,
    tag: String,
}

/// The next version: `sku` is no longer unique, `tag` is indexed, the owner index is gone.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "items")]
#[index(keys(sku))]
#[index(keys(tag), name = "by_tag")]
struct ItemV2 {
    owner: String,
    sku: String,
    created: bson::DateTime,
    tag: String,
}

async fn index_names(db: &mongodb::Database) -> Vec<String> {
    let reply = db.run_command(doc! { "listIndexes": "items" }).await.unwrap();
    let batch = reply.get_document("cursor").unwrap().get_array("firstBatch").unwrap();
    let mut names: Vec<String> =
        batch.iter().map(|i| i.as_document().unwrap().get_str("name").unwrap().to_owned()).collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_creates_indexes_and_is_idempotent() {
    let db = testkit::database("items_sync").await.unwrap();
    let first = docshape::sync::<ItemV1>(&db).await.unwrap();
    assert_eq!(
        first.changes,
        vec![
            SyncChange::CreatedCollection,
            SyncChange::CreatedIndex { name: "owner_1_created_-1".into() },
            SyncChange::CreatedIndex { name: "sku_1".into() },
        ]
    );
    assert_eq!(index_names(&db).await, vec!["_id_", "owner_1_created_-1", "sku_1"]);
    let second = docshape::sync::<ItemV1>(&db).await.unwrap();
    assert!(second.is_unchanged() && second.notes.is_empty(), "{second}");
    // The unique index is really unique on the server.
    let items = db.collection::<Document>("items");
    items
        .insert_one(doc! { "owner": "a", "sku": "S1", "created": bson::DateTime::now(), "tag": "t" })
        .await
        .unwrap();
    assert!(items
        .insert_one(doc! { "owner": "b", "sku": "S1", "created": bson::DateTime::now(), "tag": "t" })
        .await
        .is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dry_run_plan_is_what_sync_then_does() {
    let db = testkit::database("items_plan").await.unwrap();
    docshape::sync::<ItemV1>(&db).await.unwrap();

    let plan = docshape::sync::plan::<ItemV2>(&db, SyncOptions::default()).await.unwrap();
    assert_eq!(plan.report.changes, vec![SyncChange::CreatedIndex { name: "by_tag".into() }]);
    assert!(
        matches!(&plan.report.notes[..], [SyncNote::ChangedIndex { name, .. }, SyncNote::ExtraIndex { name: extra, .. }]
        if name == "sku_1" && extra == "owner_1_created_-1"),
        "{:?}",
        plan.report.notes
    );
    // The dry run touched nothing.
    assert_eq!(index_names(&db).await, vec!["_id_", "owner_1_created_-1", "sku_1"]);
    let planned = plan.report.clone();
    let done = plan.apply(&db).await.unwrap();
    assert_eq!(done, planned);
    // Without the opt-ins, the changed and the extra index are left in place.
    assert_eq!(index_names(&db).await, vec!["_id_", "by_tag", "owner_1_created_-1", "sku_1"]);

    let options = SyncOptions::default().drop_extra_indexes(true).rebuild_changed_indexes(true);
    let plan = docshape::sync::plan::<ItemV2>(&db, options).await.unwrap();
    assert_eq!(
        plan.report.changes,
        vec![
            SyncChange::RebuiltIndex { dropped: "sku_1".into(), created: "sku_1".into() },
            SyncChange::DroppedIndex { name: "owner_1_created_-1".into() },
        ]
    );
    let planned = plan.report.clone();
    assert_eq!(plan.apply(&db).await.unwrap(), planned);
    assert_eq!(index_names(&db).await, vec!["_id_", "by_tag", "sku_1"]);
    // sku_1 is no longer unique.
    let items = db.collection::<Document>("items");
    items
        .insert_one(doc! { "owner": "a", "sku": "S2", "created": bson::DateTime::now(), "tag": "t" })
        .await
        .unwrap();
    items
        .insert_one(doc! { "owner": "b", "sku": "S2", "created": bson::DateTime::now(), "tag": "t" })
        .await
        .unwrap();
    assert!(docshape::sync_with::<ItemV2>(&db, options).await.unwrap().is_unchanged());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_made_by_hand_is_never_dropped_without_the_opt_in() {
    let db = testkit::database("items_hand").await.unwrap();
    docshape::sync::<ItemV1>(&db).await.unwrap();
    db.run_command(
        doc! { "createIndexes": "items", "indexes": [{ "key": { "tag": 1 }, "name": "by_hand" }] },
    )
    .await
    .unwrap();
    for _ in 0..2 {
        let report = docshape::sync::<ItemV1>(&db).await.unwrap();
        assert!(report.is_unchanged());
        assert!(
            matches!(&report.notes[..], [SyncNote::ExtraIndex { name, .. }] if name == "by_hand"),
            "{report}"
        );
        assert!(report.to_string().contains("by_hand"));
    }
    assert!(index_names(&db).await.contains(&"by_hand".to_owned()));
}

#[derive(Serialize, Deserialize, Model)]
// A ranged shard key: the local server does not build hashed indexes (mongod does).
#[model(collection = "sessions", shard_key(user))]
#[access(name = "by_user", filter(user))]
struct Session {
    #[index]
    user: String,
    #[index(expire_after = "2h")]
    seen: bson::DateTime,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_index_and_the_shard_key_plan() {
    let db = testkit::database("sessions").await.unwrap();
    let report = docshape::sync::<Session>(&db).await.unwrap();
    // The local server is a replica set, not a sharded cluster: sharding is reported, not done.
    assert!(
        report.notes.iter().any(|n| matches!(n, SyncNote::NotSharded { key } if key == &doc! { "user": 1 })),
        "{report}"
    );
    let reply = db.run_command(doc! { "listIndexes": "sessions" }).await.unwrap();
    let batch = reply.get_document("cursor").unwrap().get_array("firstBatch").unwrap();
    let ttl = batch
        .iter()
        .map(|i| i.as_document().unwrap())
        .find(|i| i.get_str("name").ok() == Some("seen_1"))
        .unwrap();
    assert_eq!(
        ttl.get("expireAfterSeconds").and_then(|v| v.as_i64().or(v.as_i32().map(i64::from))),
        Some(7200)
    );
    let user = batch
        .iter()
        .map(|i| i.as_document().unwrap())
        .find(|i| i.get_str("name").ok() == Some("user_1"))
        .unwrap();
    assert_eq!(user.get_document("key").unwrap(), &doc! { "user": 1 });
    assert!(docshape::sync::<Session>(&db).await.unwrap().is_unchanged());
    testkit::assert_access_patterns_use_indexes::<Session>(&db).await;
}

/// Every index option, to check that what the server reports back reads as unchanged.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "catalog")]
#[index(keys(email), unique, partial_filter = r#"{"active": true}"#, name = "active_email")]
struct Catalog {
    email: String,
    active: bool,
    // Text and hashed indexes are not built by the local server (mongod builds them);
    // their specs are checked in the compile-time pass cases.
    body: String,
    #[index(wildcard)]
    attributes: std::collections::BTreeMap<String, String>,
    #[index(desc)]
    rank: i32,
    #[index(sparse)]
    nickname: Option<String>,
    #[index(unique, case_insensitive, locale = "fr")]
    handle: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_index_option_round_trips() {
    let db = testkit::database("catalog").await.unwrap();
    let first = docshape::sync::<Catalog>(&db).await.unwrap();
    let created: Vec<String> = first
        .changes
        .iter()
        .filter_map(|c| match c {
            SyncChange::CreatedIndex { name } => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(created, ["active_email", "attributes.$**_1", "rank_-1", "nickname_1", "handle_1"]);
    let second = docshape::sync::<Catalog>(&db).await.unwrap();
    assert!(second.is_unchanged() && second.notes.is_empty(), "{second}");

    let reply = db.run_command(doc! { "listIndexes": "catalog" }).await.unwrap();
    let batch = reply.get_document("cursor").unwrap().get_array("firstBatch").unwrap();
    let by_name = |name: &str| {
        batch
            .iter()
            .map(|i| i.as_document().unwrap())
            .find(|i| i.get_str("name").ok() == Some(name))
            .unwrap()
            .clone()
    };
    assert_eq!(
        by_name("active_email").get_document("partialFilterExpression").unwrap(),
        &doc! { "active": true }
    );
    assert_eq!(by_name("handle_1").get_document("collation").unwrap().get_str("locale").unwrap(), "fr");
    assert!(by_name("nickname_1").get_bool("sparse").unwrap());
    // The partial unique index admits duplicates outside its filter, and not inside.
    let catalog = db.collection::<Document>("catalog");
    let entry = |email: &str, active: bool, handle: &str| {
        doc! { "email": email, "active": active, "body": "", "attributes": {}, "rank": 1, "nickname": null, "handle": handle }
    };
    catalog.insert_one(entry("a@x.io", false, "h1")).await.unwrap();
    catalog.insert_one(entry("a@x.io", false, "h2")).await.unwrap();
    catalog.insert_one(entry("a@x.io", true, "h3")).await.unwrap();
    assert!(catalog.insert_one(entry("a@x.io", true, "h4")).await.is_err());
    // The case-insensitive unique index treats "H5" and "h5" as one.
    catalog.insert_one(entry("b@x.io", false, "h5")).await.unwrap();
    assert!(catalog.insert_one(entry("c@x.io", false, "H5")).await.is_err());
}

// ---- index changes without a window -----------------------------------------------------

/// Release 2 of `accounts`: the compound index's key order changed (queries now lead
/// with `plan`), and `email` became unique.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "accounts")]
#[index(keys(plan, tenant))]
#[index(keys(email), unique)]
struct AccountV2 {
    tenant: String,
    plan: String,
    email: String,
}

/// Release 1's indexes, as its sync left them.
async fn release_1_indexes(db: &mongodb::Database) {
    db.run_command(doc! { "createIndexes": "accounts", "indexes": [
        { "key": { "tenant": 1, "plan": 1 }, "name": "tenant_1_plan_1" },
        { "key": { "email": 1 }, "name": "email_1" },
    ] })
    .await
    .unwrap();
}

async fn account_indexes(db: &mongodb::Database) -> Vec<Document> {
    let reply = db.run_command(doc! { "listIndexes": "accounts" }).await.unwrap();
    let batch = reply.get_document("cursor").unwrap().get_array("firstBatch").unwrap();
    batch.iter().map(|i| i.as_document().unwrap().clone()).collect()
}

/// A key-order change with `drop_extra_indexes`: the new index is created before the
/// old one is dropped, so a query on the pair always has an index; plan and report list
/// the changes in the order they are sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_index_is_dropped_only_after_its_successor_exists() {
    let (db, log) = testkit::monitored("accounts_order").await.unwrap();
    release_1_indexes(&db).await;
    let options = SyncOptions::default().drop_extra_indexes(true);
    let plan = docshape::sync::plan::<AccountV2>(&db, options).await.unwrap();
    let index_changes: Vec<&SyncChange> = plan
        .report
        .changes
        .iter()
        .filter(|c| matches!(c, SyncChange::CreatedIndex { .. } | SyncChange::DroppedIndex { .. }))
        .collect();
    assert_eq!(
        index_changes,
        vec![
            &SyncChange::CreatedIndex { name: "plan_1_tenant_1".into() },
            &SyncChange::DroppedIndex { name: "tenant_1_plan_1".into() },
        ],
        "{}",
        plan.report
    );
    log.clear();
    plan.apply(&db).await.unwrap();
    let sent: Vec<String> =
        log.names().into_iter().filter(|n| n == "createIndexes" || n == "dropIndexes").collect();
    assert_eq!(sent, ["createIndexes", "dropIndexes"], "create first, then drop");
    let names: Vec<String> =
        account_indexes(&db).await.iter().map(|i| i.get_str("name").unwrap().to_owned()).collect();
    assert!(names.contains(&"plan_1_tenant_1".to_owned()) && !names.contains(&"tenant_1_plan_1".to_owned()));
}

/// Making `email_1` unique while two accounts share an address: the dry run says so,
/// the rebuild is refused before anything is dropped (a typed error naming the
/// duplicate), and the collection keeps its email index. Without duplicates it rebuilds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unique_rebuild_over_duplicates_keeps_the_old_index() {
    let db = testkit::database("accounts_unique").await.unwrap();
    release_1_indexes(&db).await;
    let accounts = db.collection::<Document>("accounts");
    accounts
        .insert_many([
            doc! { "tenant": "t", "plan": "p", "email": "a@x" },
            doc! { "tenant": "t", "plan": "p", "email": "b@x" },
            doc! { "tenant": "u", "plan": "p", "email": "a@x" },
        ])
        .await
        .unwrap();
    let options = SyncOptions::default().rebuild_changed_indexes(true);
    let plan = docshape::sync::plan::<AccountV2>(&db, options).await.unwrap();
    assert!(
        plan.report.notes.iter().any(|n| matches!(n, SyncNote::UniqueMeetsDuplicates { name, key, count }
            if name == "email_1" && *key == doc! { "email": "a@x" } && *count == 2)),
        "{}",
        plan.report
    );
    let err = docshape::sync_with::<AccountV2>(&db, options).await.unwrap_err();
    assert!(
        matches!(&err, docshape::Error::IndexNotRebuilt { kept, wanted, restored: true, .. }
            if kept == "email_1" && wanted == "email_1"),
        "{err}"
    );
    assert!(err.to_string().contains("a@x"), "{err}");
    let email = account_indexes(&db).await.into_iter().find(|i| i.get_str("name").ok() == Some("email_1"));
    let email = email.expect("the email index is still there");
    assert!(!email.get_bool("unique").unwrap_or(false), "{email}");

    // The duplicate removed, the rebuild goes through.
    accounts.delete_one(doc! { "tenant": "u" }).await.unwrap();
    docshape::sync_with::<AccountV2>(&db, options).await.unwrap();
    let email =
        account_indexes(&db).await.into_iter().find(|i| i.get_str("name").ok() == Some("email_1")).unwrap();
    assert!(email.get_bool("unique").unwrap(), "{email}");
}

/// A rebuild under the same name (`email_1` made unique) drops the old index before it
/// builds the new one, as the name requires: a bridge index (the old keys and one more)
/// is built first and dropped once the new index exists, so at every moment an index
/// with `email` first serves the row. Each command in order, from monitoring, and
/// nothing left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_same_name_rebuild_keeps_a_bridge_index_until_its_successor_exists() {
    let (db, log) = testkit::monitored("accounts_bridge").await.unwrap();
    release_1_indexes(&db).await;
    db.collection::<Document>("accounts")
        .insert_many([
            doc! { "tenant": "t", "plan": "p", "email": "a@x" },
            doc! { "tenant": "u", "plan": "p", "email": "b@x" },
        ])
        .await
        .unwrap();
    let options = SyncOptions::default().rebuild_changed_indexes(true);
    log.clear();
    docshape::sync_with::<AccountV2>(&db, options).await.unwrap();
    let steps: Vec<(String, String)> = log
        .commands()
        .into_iter()
        .filter_map(|(name, command)| match name.as_str() {
            "createIndexes" => {
                let indexes = command.get_array("indexes").unwrap();
                let names: Vec<&str> =
                    indexes.iter().filter_map(|i| i.as_document()?.get_str("name").ok()).collect();
                Some((name.clone(), names.join(",")))
            }
            "dropIndexes" => Some((name.clone(), command.get_str("index").unwrap_or_default().to_owned())),
            _ => None,
        })
        .filter(|(_, index)| index.contains("email"))
        .collect();
    let step = |n: &str, i: &str| (n.to_owned(), i.to_owned());
    assert_eq!(
        steps,
        [
            step("createIndexes", "email_1__bridge"),
            step("dropIndexes", "email_1"),
            step("createIndexes", "email_1"),
            step("dropIndexes", "email_1__bridge"),
        ],
        "the bridge is built before the drop and dropped after the build"
    );
    let indexes = account_indexes(&db).await;
    let names: Vec<&str> = indexes.iter().filter_map(|i| i.get_str("name").ok()).collect();
    assert!(!names.iter().any(|n| n.contains("bridge")), "{names:?}");
    let email = indexes.iter().find(|i| i.get_str("name").ok() == Some("email_1")).unwrap();
    assert!(email.get_bool("unique").unwrap(), "{email}");
}
