//! The refresh of copies between tenant models, and a soft delete as a delete for
//! copies, on a real server.
//!
//! A document of tenant A that references a source of tenant B can only be written
//! around docshape (its writers refuse it, `RefError::CrossTenant`); when B's source
//! changes, neither the source's writers (sync copies) nor the worker (async copies,
//! behind the watcher) copy B's value into it: they write B's own documents, leave A's
//! as it was, and report it as `CopyError::CrossTenant`. A soft delete of a source
//! applies each copy's `on_delete`, and a restore copies the value again, through
//! `delete_by_id` / `restore_by_id` and through the watcher after another program's
//! write.

use std::time::{Duration, Instant};

use docshape::access::UpdateError;
use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::denormalized::{CopyError, Watcher, Worker};
use docshape::refs::Ref;
use docshape::Model;
use docshape_testkit as testkit;
use mongodb::Database;
use serde::{Deserialize, Serialize};

/// An account of an organisation, soft-deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "tenant_accounts", tenant = org_id, soft_delete = deleted_at)]
#[index(keys(org_id, _id))]
#[access(name = "account", filter(org_id, _id))]
#[access(name = "rename_account", filter(org_id, _id), update(set(name)))]
pub struct Account {
    #[serde(rename = "_id")]
    pub id: i64,
    pub org_id: String,
    pub name: String,
    pub deleted_at: Option<DateTime>,
}

/// A contract showing its account's name: once written at once by the account's
/// writers, once by the worker; both cleared when the account is deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "tenant_contracts", tenant = org_id)]
#[index(keys(org_id, _id))]
#[index(
    keys(account_id),
    allow(cross_tenant, reason = "the copies' refresh finds a source's contracts by reference")
)]
#[access(name = "contract", filter(org_id, _id))]
pub struct Contract {
    #[serde(rename = "_id")]
    pub id: i64,
    pub org_id: String,
    pub account_id: Ref<Account>,
    #[denormalized(from = "Account::name", via = "account_id", refresh = "sync", on_delete = "clear")]
    pub account_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[denormalized(
        from = "Account::name",
        via = "account_id",
        refresh = "async",
        max_stale = "5m",
        on_delete = "clear"
    )]
    pub queued_name: Option<String>,
}

const SYNCED: &str = "tenant_contracts.account_name";
const QUEUED: &str = "tenant_contracts.queued_name";
const A: &str = "org-a";
const B: &str = "org-b";

async fn setup(hint: &str) -> testkit::TestDb {
    let db = testkit::database(hint).await.unwrap();
    docshape::sync::<Account>(&db).await.unwrap();
    docshape::sync::<Contract>(&db).await.unwrap();
    let account =
        |id, org: &str, name: &str| Account { id, org_id: org.into(), name: name.into(), deleted_at: None };
    Account::collection(&db).insert_many([account(1, A, "acme"), account(2, B, "bolt")]).await.unwrap();
    let contract = |id, org: &str, account, name: &str| Contract {
        id,
        org_id: org.into(),
        account_id: Ref::new(account),
        account_name: Some(name.into()),
        queued_name: Some(name.into()),
    };
    Contract::collection(&db)
        .insert_many([contract(10, A, 1, "acme"), contract(20, B, 2, "bolt")])
        .await
        .unwrap();
    // Another program's write: a contract of A referencing B's account.
    db.collection::<Document>("tenant_contracts")
        .insert_one(doc! { "_id": 11_i64, "org_id": A, "account_id": 2_i64, "account_name": "mine", "queued_name": "mine" })
        .await
        .unwrap();
    db
}

async fn contract(db: &Database, id: i64) -> Document {
    db.collection::<Document>("tenant_contracts").find_one(doc! { "_id": id }).await.unwrap().unwrap()
}

fn names(d: &Document) -> (Option<&Bson>, Option<&Bson>) {
    (d.get("account_name"), d.get("queued_name"))
}

async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// B's account renamed by B's write row: B's contract takes the name at once and from
/// the worker; A's contract that references it keeps its own, and both the write and
/// the job report it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_never_copies_into_another_tenant() {
    let db = setup("tenant_refresh_cross").await;
    let err = Account::rename_account(B, 2_i64, "bolt 2").run(&db).await.unwrap_err();
    match err {
        UpdateError::AfterWrite(e) => match *e {
            CopyError::CrossTenant { copy, id, holders } => {
                assert_eq!((copy.as_str(), id, holders), (SYNCED, Bson::Int64(2), vec![Bson::Int64(11)]));
            }
            other => panic!("not CrossTenant: {other}"),
        },
        other => panic!("not AfterWrite: {other}"),
    }
    assert_eq!(contract(&db, 20).await.get_str("account_name").unwrap(), "bolt 2", "B's own contract");
    assert_eq!(contract(&db, 11).await.get_str("account_name").unwrap(), "mine", "A's contract kept");

    let report = Worker::new(&db).only([QUEUED]).run_until_empty().await.unwrap();
    assert_eq!(contract(&db, 20).await.get_str("queued_name").unwrap(), "bolt 2");
    assert_eq!(contract(&db, 11).await.get_str("queued_name").unwrap(), "mine");
    let failure = report.failures.iter().find(|f| f.copy == QUEUED).expect("the job failed");
    assert!(
        matches!(&failure.error, CopyError::CrossTenant { holders, .. } if holders == &[Bson::Int64(11)]),
        "{}",
        failure.error
    );
    assert!(failure.error.to_string().contains("another tenant"), "{}", failure.error);

    // Another program renames B's account: the watcher's jobs leave A's contract too.
    let watcher =
        Watcher::new(&db).name("tenants").only([SYNCED, QUEUED]).max_await(Duration::from_millis(50));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let watching = tokio::spawn(async move {
        watcher
            .run_until(async {
                let _ = stopped.await;
            })
            .await
    });
    let worker =
        Worker::new(&db).id("tenants-worker").only([SYNCED, QUEUED]).lease(Duration::from_millis(300));
    let working = tokio::spawn({
        let worker = worker.clone();
        async move { worker.run(Duration::from_millis(20)).await }
    });
    // The watcher is open once it stored a position: poll a write until it is seen.
    let accounts = db.collection::<Document>("tenant_accounts");
    let mut n = 0;
    until("B's contract renamed through the watcher", || {
        n += 1;
        let accounts = accounts.clone();
        let db = db.clone();
        async move {
            let name = format!("bolt {}", n + 2);
            accounts.update_one(doc! { "_id": 2_i64 }, doc! { "$set": { "name": &name } }).await.unwrap();
            tokio::time::sleep(Duration::from_millis(200)).await;
            let c = contract(&db, 20).await;
            c.get_str("account_name").ok().is_some_and(|v| v.starts_with("bolt ") && v != "bolt 2")
                && c.get_str("queued_name").ok().is_some_and(|v| v != "bolt 2")
        }
    })
    .await;
    working.abort();
    let _ = stop.send(());
    watching.await.unwrap().unwrap();
    assert_eq!(names(&contract(&db, 11).await), (Some(&Bson::from("mine")), Some(&Bson::from("mine"))));
}

/// A soft delete of an account clears its contracts' copies (`on_delete = "clear"`),
/// a restore copies the name again: through `delete_by_id` / `restore_by_id` (the sync
/// copy at once, the async one by the worker), and through the watcher when another
/// program sets the deletion date.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soft_delete_is_a_delete_for_copies() {
    let db = setup("tenant_refresh_soft").await;
    assert!(Account::delete_by_id(A, 1_i64).run(&db).await.unwrap());
    assert_eq!(contract(&db, 10).await.get("account_name"), Some(&Bson::Null), "cleared at once");
    Worker::new(&db).only([QUEUED]).run_until_empty().await.unwrap();
    assert_eq!(names(&contract(&db, 10).await), (Some(&Bson::Null), None), "cleared by the worker");
    assert!(Account::restore_by_id(A, 1_i64).run(&db).await.unwrap());
    assert_eq!(contract(&db, 10).await.get_str("account_name").unwrap(), "acme", "copied again");
    Worker::new(&db).only([QUEUED]).run_until_empty().await.unwrap();
    assert_eq!(contract(&db, 10).await.get_str("queued_name").unwrap(), "acme");
    // B's contracts are untouched by A's deletes.
    assert_eq!(contract(&db, 20).await.get_str("account_name").unwrap(), "bolt");

    // Another program soft-deletes, then restores, the account: the watcher's jobs
    // follow each.
    let watcher = Watcher::new(&db).name("soft").only([SYNCED, QUEUED]).max_await(Duration::from_millis(50));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let watching = tokio::spawn(async move {
        watcher
            .run_until(async {
                let _ = stopped.await;
            })
            .await
    });
    let worker = Worker::new(&db).id("soft-worker").only([SYNCED, QUEUED]).lease(Duration::from_millis(300));
    let working = tokio::spawn({
        let worker = worker.clone();
        async move { worker.run(Duration::from_millis(20)).await }
    });
    let accounts = db.collection::<Document>("tenant_accounts");
    until("the copies cleared through the watcher", || {
        let (accounts, db) = (accounts.clone(), db.clone());
        async move {
            // Until the watcher is open, the deletion date is set again and again.
            accounts
                .update_one(doc! { "_id": 1_i64 }, doc! { "$set": { "deleted_at": DateTime::now() } })
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(200)).await;
            names(&contract(&db, 10).await) == (Some(&Bson::Null), None)
        }
    })
    .await;
    accounts.update_one(doc! { "_id": 1_i64 }, doc! { "$set": { "deleted_at": Bson::Null } }).await.unwrap();
    until("the copies back through the watcher", || {
        let db = db.clone();
        async move { names(&contract(&db, 10).await) == (Some(&Bson::from("acme")), Some(&Bson::from("acme"))) }
    })
    .await;
    working.abort();
    let _ = stop.send(());
    watching.await.unwrap().unwrap();
}
