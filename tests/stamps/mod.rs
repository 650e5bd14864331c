//! Timestamps and revisions declared once on the model (`#[created_at]`,
//! `#[updated_at]`, `#[revision]`), on a real server: every docshape writer (a write
//! row, an upsert row, `relation::insert_one`, a versioned save and update, a copy's
//! refresh by the worker) moves `updated_at` forward and the revision up by one, read
//! back from the stored document; a write row guarded by the revision is a conditional
//! write, whose loser gets `UpdateError::Conflict`, and under eight concurrent writers
//! exactly one write wins per revision.

// See tests/index/mod.rs: a clippy false positive on repeated helper-attribute keys.
#![allow(clippy::duplicated_attributes)]

use std::sync::Arc;
use std::time::Duration;

use docshape::access::{UpdateError, Upserted};
use docshape::bson::{doc, DateTime, Document};
use docshape::denormalized::{self, Worker};
use docshape::refs::Ref;
use docshape::{relation, versioning, Model};
use docshape_testkit as testkit;
use mongodb::Database;
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

/// A note with both times and a revision; a plain write row, a conditional one (its
/// filter holds the revision) and an upsert row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "stamps_notes")]
#[access(name = "edit_note", filter(_id), update(set(body)))]
#[access(name = "add_if_at", filter(_id, rev), update(inc(counter)))]
#[access(name = "touch_note", filter(_id), update(set(body)), upsert(default(counter)))]
pub struct Note {
    #[serde(rename = "_id")]
    pub id: String,
    pub body: String,
    pub counter: i64,
    #[created_at]
    pub created_at: DateTime,
    #[updated_at]
    pub updated_at: DateTime,
    #[revision]
    pub rev: i64,
}

fn note(id: &str) -> Note {
    let zero = DateTime::from_millis(0);
    Note { id: id.to_owned(), body: "first".into(), counter: 0, created_at: zero, updated_at: zero, rev: 0 }
}

/// The stored stamps: `(created_at, updated_at, rev)`.
async fn stamps(db: &Database, collection: &str, id: &str) -> (DateTime, DateTime, i64) {
    let stored = db.collection::<Document>(collection).find_one(doc! { "_id": id }).await.unwrap().unwrap();
    let rev = match stored.get("rev") {
        Some(docshape::bson::Bson::Int32(v)) => i64::from(*v),
        Some(docshape::bson::Bson::Int64(v)) => *v,
        other => panic!("rev is {other:?}"),
    };
    (*stored.get_datetime("created_at").unwrap(), *stored.get_datetime("updated_at").unwrap(), rev)
}

/// Long enough for the clock to move past the last stamp (milliseconds).
async fn tick() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_and_a_write_row_stamp_the_document() {
    let db = testkit::database("stamps_write_row").await.unwrap();
    docshape::sync::<Note>(&db).await.unwrap();
    let before = DateTime::now();
    relation::insert_one(&db, &mut note("n1")).await.unwrap();
    let (created, updated, rev) = stamps(&db, "stamps_notes", "n1").await;
    assert!(created >= before && created == updated, "{before} {created} {updated}");
    assert_eq!(rev, 1, "an insert is the document's first revision");

    tick().await;
    Note::edit_note("n1", "second").run(&db).await.unwrap();
    let (created2, updated2, rev2) = stamps(&db, "stamps_notes", "n1").await;
    assert_eq!(created2, created, "created_at never moves");
    assert!(updated2 > updated, "updated_at moved forward: {updated} -> {updated2}");
    assert_eq!(rev2, 2);

    // The typed read sees the stamps as stored.
    let stored = Note::collection(&db).find_one(doc! { "_id": "n1" }).await.unwrap().unwrap();
    assert_eq!((stored.body.as_str(), stored.rev, stored.updated_at), ("second", 2, updated2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upsert_row_stamps_on_insert_and_on_update() {
    let db = testkit::database("stamps_upsert").await.unwrap();
    docshape::sync::<Note>(&db).await.unwrap();
    let before = DateTime::now();
    let first = Note::touch_note("u1", "made").run(&db).await.unwrap();
    assert!(matches!(first, Upserted::Inserted { .. }), "{first:?}");
    let (created, updated, rev) = stamps(&db, "stamps_notes", "u1").await;
    assert!(created >= before && updated >= before, "{before} {created} {updated}");
    assert_eq!(rev, 1, "a created document is at revision 1");

    tick().await;
    let second = Note::touch_note("u1", "again").run(&db).await.unwrap();
    assert!(matches!(second, Upserted::Updated { .. }), "{second:?}");
    let (created2, updated2, rev2) = stamps(&db, "stamps_notes", "u1").await;
    assert_eq!(created2, created, "created_at is set on insert only");
    assert!(updated2 > updated, "{updated} -> {updated2}");
    assert_eq!(rev2, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_guarded_write_row_is_a_conditional_write() {
    let db = testkit::database("stamps_conditional").await.unwrap();
    docshape::sync::<Note>(&db).await.unwrap();
    relation::insert_one(&db, &mut note("c1")).await.unwrap();
    Note::add_if_at("c1", 1_i64, 5_i64).run(&db).await.unwrap();
    // The same revision again: the document moved on to 2.
    let stale = Note::add_if_at("c1", 1_i64, 5_i64).run(&db).await.unwrap_err();
    assert!(
        matches!(stale, UpdateError::Conflict { collection: "stamps_notes", current: Some(2) }),
        "{stale:?}"
    );
    let stored = Note::collection(&db).find_one(doc! { "_id": "c1" }).await.unwrap().unwrap();
    assert_eq!((stored.counter, stored.rev), (5, 2), "the losing write wrote nothing");
    // No such document: not a conflict.
    let missing = Note::add_if_at("nobody", 1_i64, 5_i64).run(&db).await.unwrap_err();
    assert!(matches!(missing, UpdateError::NotFound { .. }), "{missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_writers_on_one_revision_guarded_document_win_one_at_a_time() {
    const WRITERS: i64 = 8;
    const EACH: i64 = 5;
    let db = testkit::database("stamps_race").await.unwrap();
    docshape::sync::<Note>(&db).await.unwrap();
    relation::insert_one(&db, &mut note("r1")).await.unwrap();
    // Per accepted write: the revision it was based on, and what it added.
    let accepted = Arc::new(Mutex::new(Vec::<(i64, i64)>::new()));
    let conflicts = Arc::new(Mutex::new(0_u32));
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (db, accepted, conflicts) = (db.clone(), accepted.clone(), conflicts.clone());
        tasks.push(tokio::spawn(async move {
            let mut done = 0;
            while done < EACH {
                let read = Note::collection(&db).find_one(doc! { "_id": "r1" }).await.unwrap().unwrap();
                let by = w + 1;
                match Note::add_if_at("r1", read.rev, by).run(&db).await {
                    Ok(_) => {
                        accepted.lock().await.push((read.rev, by));
                        done += 1;
                    }
                    Err(UpdateError::Conflict { current, .. }) => {
                        assert!(current.is_some_and(|c| c > read.rev), "{current:?} after {}", read.rev);
                        *conflicts.lock().await += 1;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let accepted = accepted.lock().await.clone();
    let stored = Note::collection(&db).find_one(doc! { "_id": "r1" }).await.unwrap().unwrap();
    let n = WRITERS * EACH;
    assert_eq!(accepted.len() as i64, n);
    // Exactly one write won per revision: the revisions they were based on are 1..=n.
    let mut based: Vec<i64> = accepted.iter().map(|(r, _)| *r).collect();
    based.sort_unstable();
    assert_eq!(based, (1..=n).collect::<Vec<_>>());
    assert_eq!(stored.counter, accepted.iter().map(|(_, by)| by).sum::<i64>());
    assert_eq!(stored.rev, 1 + n, "the insert, then one revision per accepted write");
    eprintln!("{} conflicts for {n} accepted writes", conflicts.lock().await);
}

/// A versioned model with stamps (an `i32` revision).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "stamps_versioned", version = 1)]
pub struct Draft {
    #[serde(rename = "_id")]
    pub id: String,
    pub text: String,
    #[schema_version]
    pub v: u8,
    #[created_at]
    pub created_at: DateTime,
    #[updated_at]
    pub updated_at: DateTime,
    #[revision]
    pub rev: i32,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_saves_and_updates_stamp_the_document() {
    let db = testkit::database("stamps_versioned").await.unwrap();
    docshape::sync::<Draft>(&db).await.unwrap();
    let zero = DateTime::from_millis(0);
    let draft = Draft { id: "d1".into(), text: "a".into(), v: 1, created_at: zero, updated_at: zero, rev: 0 };
    versioning::insert_one(&db, &draft).await.unwrap();
    let (created, updated, rev) = stamps(&db, "stamps_versioned", "d1").await;
    assert_eq!(rev, 1);

    tick().await;
    let mut loaded = versioning::find_one::<Draft>(&db, doc! { "_id": "d1" }).await.unwrap().unwrap();
    loaded.value.text = "b".into();
    loaded.save(&db).await.unwrap();
    let (created2, updated2, rev2) = stamps(&db, "stamps_versioned", "d1").await;
    assert_eq!((created2, rev2), (created, 2));
    assert!(updated2 > updated, "{updated} -> {updated2}");
    assert_eq!((loaded.value.rev, loaded.value.updated_at), (2, updated2), "the value holds what was stored");

    // Saved again from the same value: the stamps it learned are the stored ones.
    tick().await;
    loaded.value.text = "c".into();
    loaded.save(&db).await.unwrap();
    let (_, updated3, rev3) = stamps(&db, "stamps_versioned", "d1").await;
    assert!(updated3 > updated2 && rev3 == 3, "{updated3} {rev3}");

    tick().await;
    versioning::update_one::<Draft>(&db, "d1", doc! { "$set": { "text": "d" } }, Default::default())
        .await
        .unwrap();
    let (_, updated4, rev4) = stamps(&db, "stamps_versioned", "d1").await;
    assert!(updated4 > updated3 && rev4 == 4, "{updated4} {rev4}");
    // The revision keeps the BSON type the validator requires for an `i32`.
    let stored = db.collection::<Document>("stamps_versioned").find_one(doc! {}).await.unwrap().unwrap();
    assert!(matches!(stored.get("rev"), Some(docshape::bson::Bson::Int32(4))), "{stored:?}");
}

/// A source whose name is copied into the cards.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "stamps_authors")]
pub struct Author {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// Cards holding an async copy of their author's name, with stamps.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "stamps_cards")]
#[index(keys(author_id))]
pub struct Card {
    #[serde(rename = "_id")]
    pub id: String,
    pub author_id: Ref<Author>,
    #[denormalized(
        from = "Author::name",
        via = "author_id",
        refresh = "async",
        max_stale = "5m",
        reason = "cards show the name"
    )]
    pub author_name: String,
    #[created_at]
    pub created_at: DateTime,
    #[updated_at]
    pub updated_at: DateTime,
    #[revision]
    pub rev: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_refreshed_by_the_worker_counts_as_a_modification() {
    let db = testkit::database("stamps_copies").await.unwrap();
    docshape::sync::<Author>(&db).await.unwrap();
    docshape::sync::<Card>(&db).await.unwrap();
    db.collection::<Document>("stamps_authors")
        .insert_one(doc! { "_id": "a1", "name": "Ada" })
        .await
        .unwrap();
    let zero = DateTime::from_millis(0);
    for id in ["k1", "k2"] {
        let mut card = Card {
            id: id.into(),
            author_id: Ref::new("a1".to_owned()),
            author_name: String::new(),
            created_at: zero,
            updated_at: zero,
            rev: 0,
        };
        relation::insert_one(&db, &mut card).await.unwrap();
    }
    let (created, updated, rev) = stamps(&db, "stamps_cards", "k1").await;
    assert_eq!(rev, 1);

    tick().await;
    let done =
        denormalized::update_one::<Author>(&db, "a1", doc! { "$set": { "name": "Ada L." } }).await.unwrap();
    assert_eq!(done.jobs_enqueued(), 1);
    Worker::new(&db).run_until_empty().await.unwrap();
    for id in ["k1", "k2"] {
        let (created2, updated2, rev2) = stamps(&db, "stamps_cards", id).await;
        assert!(created2 >= created && updated2 > updated, "{id}: {updated} -> {updated2}");
        assert_eq!(rev2, 2, "{id}: the refresh is one more revision");
    }
    let card = Card::collection(&db).find_one(doc! { "_id": "k1" }).await.unwrap().unwrap();
    assert_eq!(card.author_name, "Ada L.");
}
