//! Documents other programs wrote: field names with dots or a leading `$` in an
//! old-version document, and version fields that are null or not integers.

use docshape::bson::{doc, Bson, Document};
use docshape::versioning::{self, BackfillOptions, Progress, RetryPolicy, VersionCounts};
use docshape_testkit as testkit;

use crate::{user_v1, User};

fn with_odd_names(id: i64) -> Document {
    let mut d = user_v1(id);
    // Legal field names since MongoDB 5; a filter or `$set` would read them as a path
    // and an operator.
    d.insert("meta.k", "v");
    d.insert("$d", 2_i32);
    d.insert("a.b.c", doc! { "x.y": 1_i32 });
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dotted_and_dollar_field_names_are_compared_as_names() {
    let db = testkit::database("versioning-dotted").await.unwrap();
    let users = db.collection::<Document>("users");
    users.insert_many((1..=3).map(with_odd_names)).await.unwrap();

    let done = versioning::update_one::<User>(
        &db,
        &1_i64,
        doc! { "$inc": { "visits": 1_i64 } },
        RetryPolicy::default(),
    )
    .await
    .expect("an old document with dotted names upgrades and updates");
    assert!(done.upgraded);
    assert_eq!(done.attempts, 1);
    let stored = users.find_one(doc! { "_id": 1_i64 }).await.unwrap().unwrap();
    assert_eq!(stored.get("full_name"), Some(&Bson::String("User 1".into())));
    assert_eq!(stored.get("visits"), Some(&Bson::Int64(1)));

    // The compare still protects: a change to a dotted field between read and write
    // is a conflict, not an overwrite.
    let mut loaded = versioning::find_one::<User>(&db, doc! { "_id": 2_i64 }).await.unwrap().unwrap();
    // Another program rewrites it (a replacement may not hold a `$` name: delete and
    // insert).
    let mut changed = with_odd_names(2);
    changed.insert("meta.k", "changed");
    users.delete_one(doc! { "_id": 2_i64 }).await.unwrap();
    users.insert_one(changed).await.unwrap();
    loaded.value.visits = 5;
    assert!(matches!(loaded.save(&db).await, Err(versioning::VersionError::Conflict { .. })));

    let report = versioning::backfill::<User>(&db, BackfillOptions::default().progress(Progress::Silent))
        .await
        .unwrap();
    assert_eq!(
        (report.progress.upgraded, report.progress.raced, report.progress.failed),
        (2, 0, 0),
        "{report:?}"
    );
    assert_eq!(report.counts.by_version.get(&2), Some(&3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_counts_agree_with_reads() {
    let db = testkit::database("versioning-counts").await.unwrap();
    let users = db.collection::<Document>("users");
    let mut docs = vec![user_v1(1), user_v1(2)];
    for (id, version) in [
        (3, Bson::Null),
        (4, Bson::String("2".into())),
        (5, Bson::Double(2.5)),
        (6, Bson::Double(1.0e16)),
        (7, Bson::Int32(2)),
        (8, Bson::Double(2.0)),
        (9, Bson::Boolean(true)),
    ] {
        let mut d = user_v1(id);
        d.insert("full_name", "x");
        d.remove("name");
        d.insert("schema_version", version);
        docs.push(d);
    }
    users.insert_many(docs.clone()).await.unwrap();
    let counts = versioning::version_counts::<User>(&db).await.unwrap();
    // What the reads say, document by document.
    let mut expected = VersionCounts::default();
    for d in docs {
        match versioning::stored_version::<User>(&d) {
            Ok(v) => *expected.by_version.entry(v).or_default() += 1,
            Err(_) => expected.unreadable += 1,
        }
    }
    assert_eq!(expected.unreadable, 5);
    assert_eq!(counts, expected);
    assert_eq!(counts.to_string(), "{1: 2, 2: 2, unreadable: 5}");
}

/// The compare of compare-and-set is exact: another writer that changes a value into an
/// array holding it (`"User 1"` into `["User 1", "x"]`), an array into one holding it as
/// an element (`["a", "b"]` into `[["a", "b"], "c"]`), or `null` into `[null, 1]`, has
/// changed the document, and a save made from the older read writes nothing
/// (`Conflict`). (A query's `$eq` matches an array by its elements, so each of these
/// passed the compare and the save overwrote the other writer's value.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_changed_into_an_array_holding_it_is_a_conflict() {
    let db = testkit::database("versioning_exact_compare").await.unwrap();
    docshape::sync::<User>(&db).await.unwrap();
    let users = db.collection::<Document>("users");
    let changes = [
        (
            doc! { "_id": 1_i64, "name": "User 1", "visits": 0_i64, "log": [] },
            doc! { "name": ["User 1", "x"] },
        ),
        (
            doc! { "_id": 2_i64, "name": "User 2", "visits": 0_i64, "log": ["a", "b"] },
            doc! { "log": [["a", "b"], "c"] },
        ),
        (
            doc! { "_id": 3_i64, "name": "User 3", "visits": 0_i64, "log": [], "extra": null },
            doc! { "extra": [null, 1] },
        ),
        (
            doc! { "_id": 4_i64, "name": "User 4", "visits": 0_i64, "log": [], "meta": { "k": 1 } },
            doc! { "meta": [{ "k": 1 }] },
        ),
    ];
    for (original, concurrent) in changes {
        let id = original.get_i64("_id").unwrap();
        users.insert_one(original).bypass_document_validation(true).await.unwrap();
        let mut loaded = versioning::find_one::<User>(&db, doc! { "_id": id }).await.unwrap().unwrap();
        // Another writer, between the read and the save.
        users
            .update_one(doc! { "_id": id }, doc! { "$set": concurrent.clone() })
            .bypass_document_validation(true)
            .await
            .unwrap();
        loaded.value.visits += 1;
        let saved = loaded.save(&db).await;
        assert!(matches!(saved, Err(versioning::VersionError::Conflict { .. })), "{concurrent}: {saved:?}");
        let stored = users.find_one(doc! { "_id": id }).await.unwrap().unwrap();
        for (key, value) in &concurrent {
            assert_eq!(stored.get(key), Some(value), "the other writer's {key} survives");
        }
    }
}
