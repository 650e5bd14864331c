//! The source's update call: sync copies written in it, snapshots left alone, async
//! copies enqueued, and what a failure leaves with and without a transaction.

use std::sync::Arc;

use docshape::bson::{doc, Bson, Document};
use docshape::denormalized::{self, Atomicity, CopyAction, CopyError, UpdateOptions};
use mongodb::Database;

use super::*;

fn sequential() -> UpdateOptions {
    UpdateOptions::default().atomicity(Atomicity::Sequential)
}

async fn insert_comments(db: &Database, author: &str, name: &str, ids: std::ops::Range<i64>) {
    let docs =
        ids.map(|i| doc! { "_id": i, "author_id": author, "author_name": name, "author_city": "London" });
    db.collection::<Document>("comments").insert_many(docs).await.unwrap();
}

fn action(report: &denormalized::SourceUpdate, key: &str) -> Option<CopyAction> {
    report.copies.iter().find(|c| c.copy.key() == key).map(|c| c.action)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_rewrites_sync_copies_in_the_call_and_only_the_renamed_users() {
    let db = setup("sync_rename").await;
    insert_user(&db, "u1", "Ada").await;
    insert_user(&db, "u2", "Grace").await;
    insert_comments(&db, "u1", "Ada", 0..50).await;
    insert_comments(&db, "u2", "Grace", 50..70).await;

    let done = denormalized::update_one::<User>(&db, "u1", rename("Ada Lovelace")).await.unwrap();
    assert_eq!(done.matched, 1);
    assert!(done.transaction, "the test server has transactions: {done:?}");
    assert_eq!(action(&done, COMMENT_NAMES), Some(CopyAction::Synced { matched: 50, modified: 50 }));
    assert_eq!(action(&done, ORDERS), Some(CopyAction::Kept));
    assert_eq!(action(&done, POSTS), Some(CopyAction::Enqueued));
    assert_eq!(action(&done, COMMENT_CITIES), None, "a rename does not touch the city");
    assert_eq!(done.documents_updated(), 50);
    assert_eq!(done.jobs_enqueued(), 1);
    assert_eq!(count(&db, "comments", doc! { "author_id": "u1", "author_name": "Ada Lovelace" }).await, 50);
    assert_eq!(count(&db, "comments", doc! { "author_id": "u2", "author_name": "Grace" }).await, 20);
    assert_eq!(count(&db, "comments", doc! {}).await, 70);

    // Without a transaction: the same result.
    let done =
        denormalized::update_one_with::<User>(&db, "u1", rename("Ada King"), &sequential()).await.unwrap();
    assert!(!done.transaction);
    assert_eq!(action(&done, COMMENT_NAMES), Some(CopyAction::Synced { matched: 50, modified: 50 }));
    assert_eq!(count(&db, "comments", doc! { "author_id": "u1", "author_name": "Ada King" }).await, 50);
    assert_eq!(count(&db, "comments", doc! { "author_id": "u2", "author_name": "Grace" }).await, 20);
    let jobs = queue(&db).await;
    assert_eq!(jobs.len(), 1, "two renames, one job: {jobs:?}");
    assert_eq!(jobs[0].get_document("_id").unwrap(), &doc! { "copy": POSTS, "id": "u1" });
    assert_eq!(jobs[0].get_i64("seq").unwrap(), 2);

    // An update of no copied field touches no copy and enqueues nothing.
    let done = denormalized::update_one::<User>(&db, "u1", doc! { "$inc": { "visits": 1 } }).await.unwrap();
    assert_eq!((done.matched, done.modified), (1, Some(1)));
    assert!(done.copies.is_empty(), "{done:?}");
    assert_eq!(done.documents_updated() + done.jobs_enqueued(), 0);
    assert_eq!(queue(&db).await[0].get_i64("seq").unwrap(), 2, "the job was not bumped");

    // No such source: nothing matched, no copy touched.
    let done = denormalized::update_one::<User>(&db, "nobody", rename("X")).await.unwrap();
    assert_eq!(done.matched, 0);
    assert!(done.copies.is_empty());
    assert_eq!(queue(&db).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_source_field_is_copied_and_a_removed_one_unsets_the_copy() {
    let db = setup("sync_nested").await;
    insert_user(&db, "u1", "Ada").await;
    insert_comments(&db, "u1", "Ada", 0..10).await;

    let done = denormalized::update_one::<User>(&db, "u1", doc! { "$set": { "profile.city": "Paris" } })
        .await
        .unwrap();
    assert_eq!(action(&done, COMMENT_CITIES), Some(CopyAction::Synced { matched: 10, modified: 10 }));
    assert_eq!(action(&done, COMMENT_NAMES), None);
    assert_eq!(count(&db, "comments", doc! { "author_city": "Paris" }).await, 10);

    // Removing the parent removes the copied field: the copies lose theirs.
    for atomicity in [Atomicity::Auto, Atomicity::Sequential] {
        db.collection::<Document>("comments")
            .update_many(doc! {}, doc! { "$set": { "author_city": "Paris" } })
            .await
            .unwrap();
        let done = denormalized::update_one_with::<User>(
            &db,
            "u1",
            doc! { "$unset": { "profile": "" } },
            &UpdateOptions::default().atomicity(atomicity),
        )
        .await
        .unwrap();
        assert_eq!(action(&done, COMMENT_CITIES), Some(CopyAction::Synced { matched: 10, modified: 10 }));
        assert_eq!(count(&db, "comments", doc! { "author_city": { "$exists": true } }).await, 0);
        assert_eq!(count(&db, "comments", doc! { "author_name": "Ada" }).await, 10);
        db.collection::<Document>("users")
            .update_one(doc! { "_id": "u1" }, doc! { "$set": { "profile": { "city": "Paris" } } })
            .await
            .unwrap();
    }

    // A pipeline may touch anything: every copy follows.
    let done = denormalized::update_one::<User>(&db, "u1", vec![doc! { "$set": { "visits": 5_i64 } }])
        .await
        .unwrap();
    assert_eq!(action(&done, COMMENT_NAMES), Some(CopyAction::Synced { matched: 10, modified: 0 }));
    assert_eq!(action(&done, COMMENT_CITIES), Some(CopyAction::Synced { matched: 10, modified: 10 }));
    assert_eq!(done.jobs_enqueued(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_keeps_the_name_it_was_written_with() {
    let db = setup("never").await;
    insert_user(&db, "u1", "Ada").await;
    let orders = db.collection::<Document>("orders");
    orders
        .insert_many((0..5_i64).map(|i| doc! { "_id": i, "user_id": "u1", "user_name": "Ada" }))
        .await
        .unwrap();

    for atomicity in [Atomicity::Auto, Atomicity::Sequential] {
        let done = denormalized::update_one_with::<User>(
            &db,
            "u1",
            rename("Ada Lovelace"),
            &UpdateOptions::default().atomicity(atomicity),
        )
        .await
        .unwrap();
        assert_eq!(action(&done, ORDERS), Some(CopyAction::Kept));
    }
    assert_eq!(count(&db, "orders", doc! { "user_name": "Ada" }).await, 5);
    // Not even a repair rewrites a snapshot.
    let repaired = denormalized::repair::<User>(&db, "u1").await.unwrap();
    assert!(repaired.iter().all(|r| r.copy.key() != ORDERS), "{repaired:?}");
    assert_eq!(count(&db, "orders", doc! { "user_name": "Ada" }).await, 5);
    // A worker never takes a snapshot's job either.
    let err = denormalized::Worker::new(&db).only([ORDERS]).run_until_empty().await.unwrap_err();
    assert!(matches!(&err, CopyError::UnknownCopy { copy } if copy == ORDERS), "{err}");
}

/// `comments.author_name` limited to 12 characters, so that a long name fails there.
async fn strict_comments(db: &Database, max: i32) {
    let validator = doc! { "$jsonSchema": { "properties": { "author_name": { "bsonType": "string", "maxLength": max } } } };
    db.run_command(doc! { "collMod": "comments", "validator": validator, "validationLevel": "strict" })
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_copy_is_named_and_a_transaction_leaves_nothing_while_sequential_leaves_the_source_updated()
{
    let db = setup("failure").await;
    insert_user(&db, "u1", "Ada").await;
    insert_comments(&db, "u1", "Ada", 0..10).await;
    insert_posts(&db, "u1", "Ada", 0..10).await;
    strict_comments(&db, 12).await;
    let long = "Augusta Ada King, Countess of Lovelace";

    // In a transaction: the copy is named, and nothing at all was written.
    let err = denormalized::update_one::<User>(&db, "u1", rename(long)).await.unwrap_err();
    match &err {
        CopyError::Copy { copy, id, source_updated: false, .. } => {
            assert_eq!((copy.as_str(), id), (COMMENT_NAMES, &Bson::from("u1")))
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains(COMMENT_NAMES), "{err}");
    assert_eq!(user_name(&db, "u1").await, Bson::from("Ada"));
    assert!(queue(&db).await.is_empty());
    let err = denormalized::update_one_with::<User>(
        &db,
        "u1",
        rename(long),
        &UpdateOptions::default().atomicity(Atomicity::Transaction),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CopyError::Copy { source_updated: false, .. }), "{err:?}");

    // Without: the source is updated, and every copy document the server refuses is
    // named with its `_id` (here, all ten comments); nothing else stops: the async
    // copy's job is enqueued all the same.
    let err =
        denormalized::update_one_with::<User>(&db, "u1", rename(long), &sequential()).await.unwrap_err();
    match &err {
        CopyError::Refused { id, documents } => {
            assert_eq!(id, &Bson::from("u1"));
            let mut ids: Vec<i64> = documents.iter().map(|d| d.id.as_i64().unwrap()).collect();
            ids.sort_unstable();
            assert_eq!(ids, (0..10).collect::<Vec<_>>(), "{err}");
            assert!(documents.iter().all(|d| d.copy == COMMENT_NAMES), "{err}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains(COMMENT_NAMES), "{err}");
    assert_eq!(user_name(&db, "u1").await, Bson::from(long));
    assert_eq!(count(&db, "comments", doc! { "author_name": "Ada" }).await, 10);
    let jobs = queue(&db).await;
    assert_eq!(jobs.len(), 1, "the async copy's job is enqueued: {jobs:?}");
    assert_eq!(jobs[0].get_document("_id").unwrap(), &doc! { "copy": POSTS, "id": "u1" });

    // Once the cause is gone, repair brings every refreshed copy in line.
    strict_comments(&db, 100).await;
    let repaired = denormalized::repair::<User>(&db, "u1").await.unwrap();
    let updated: Vec<(String, u64)> = repaired.iter().map(|r| (r.copy.key(), r.documents_updated)).collect();
    assert_eq!(
        updated,
        [(COMMENT_CITIES.to_owned(), 0), (COMMENT_NAMES.to_owned(), 10), (POSTS.to_owned(), 10)]
    );
    assert_eq!(count(&db, "comments", doc! { "author_name": long }).await, 10);
    assert_eq!(count(&db, "posts", doc! { "author_name": long }).await, 10);
    // Idempotent.
    let again = denormalized::repair::<User>(&db, "u1").await.unwrap();
    assert!(again.iter().all(|r| r.documents_updated == 0), "{again:?}");
    let err = denormalized::repair::<User>(&db, "nobody").await.unwrap_err();
    assert!(matches!(err, CopyError::SourceNotFound { collection: "users", .. }), "{err:?}");
}

/// Writers renaming one user at once, with and without transactions: whatever the
/// interleaving, the copies end with the user's final name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_renames_leave_the_sync_copies_at_the_last_name() {
    for atomicity in [Atomicity::Sequential, Atomicity::Auto] {
        let db = Arc::new(setup("concurrent_sync").await);
        insert_user(&db, "u1", "Ada").await;
        insert_comments(&db, "u1", "Ada", 0..30).await;
        let mut tasks = Vec::new();
        for writer in 0..6 {
            let db = db.clone();
            tasks.push(tokio::spawn(async move {
                for round in 0..5 {
                    let name = format!("name {writer}.{round}");
                    denormalized::update_one_with::<User>(
                        &db,
                        "u1",
                        rename(&name),
                        &UpdateOptions::default().atomicity(atomicity),
                    )
                    .await
                    .unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let last = user_name(&db, "u1").await;
        assert_eq!(
            count(&db, "comments", doc! { "author_name": last.clone() }).await,
            30,
            "{atomicity:?}: copies differ from the final name {last}"
        );
        let jobs = queue(&db).await;
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].get_i64("seq").unwrap(), 30, "every rename enqueued once: {jobs:?}");
    }
}

/// The commands a rename sends, counted by driver command monitoring: the new value
/// comes from the source write itself, with no read or `hello` of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_costs_one_write_per_copy_and_no_extra_read() {
    let test_db = setup("round_trips").await;
    insert_user(&test_db, "u1", "Ada").await;
    insert_comments(&test_db, "u1", "Ada", 0..5).await;
    let log = testkit::CommandLog::new();
    let client = testkit::monitored_client(&log).await.unwrap();
    let db = client.database(test_db.name());
    let sent = |atomicity| {
        let db = db.clone();
        let log = log.clone();
        async move {
            log.clear();
            denormalized::update_one_with::<User>(
                &db,
                "u1",
                rename("Ada Lovelace"),
                &UpdateOptions::default().atomicity(atomicity),
            )
            .await
            .unwrap();
            log.take().into_iter().map(|(name, _)| name).collect::<Vec<_>>()
        }
    };
    // The source and the sync copy in the transaction, the async copy's job after it.
    assert_eq!(sent(Atomicity::Auto).await, ["findAndModify", "update", "commitTransaction", "update"]);
    // In order, and one read of the source to settle the sync copy.
    assert_eq!(sent(Atomicity::Sequential).await, ["findAndModify", "update", "update", "find"]);
    // Nothing copied, nothing but the update.
    log.clear();
    denormalized::update_one::<User>(&db, "u1", doc! { "$inc": { "visits": 1 } }).await.unwrap();
    assert_eq!(log.names(), ["update"]);
}
