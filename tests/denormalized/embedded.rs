//! Copies inside embedded types: a reply's author name in an array of replies (async,
//! refreshed by the worker and the watcher), and a byline's name in a sub-document
//! (sync). Only the elements that reference the renamed source are written, with
//! array filters: the other authors' replies, and every other field, stay as they are.

use docshape::bson::{doc, Bson, Document};
use docshape::denormalized::{self, Watcher, Worker};
use docshape::refs::Ref;
use docshape::{relation, Embedded, Model};
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::Database;
use serde::{Deserialize, Serialize};

use super::watcher::{plain_client, until, Running};
use super::*;

/// The source.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "members")]
pub struct Member {
    #[serde(rename = "_id")]
    #[validate(max_length = 64)]
    pub id: String,
    pub name: String,
    pub visits: i64,
}

/// A reply, embedded in its thread, showing its author's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Reply {
    pub author_id: Ref<Member>,
    #[denormalized(
        from = "Member::name",
        via = "author_id",
        refresh = "async",
        max_stale = "5m",
        reason = "a thread shows its replies' authors without a lookup"
    )]
    #[validate(max_length = 80)]
    pub author_name: String,
    #[validate(max_length = 200)]
    pub text: String,
}

/// Who opened the thread: a sub-document with a sync copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Byline {
    pub member_id: Ref<Member>,
    #[denormalized(from = "Member::name", via = "member_id", refresh = "sync")]
    pub member_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "threads")]
#[index(keys("replies.author_id"))]
#[index(keys("byline.member_id"))]
pub struct Thread {
    #[serde(rename = "_id")]
    pub id: i64,
    pub byline: Byline,
    #[embed(max = 50, reason = "a thread shows its replies, and few threads have many")]
    pub replies: Vec<Reply>,
}

/// A board keeps two replies embedded, the rest in `board_replies`: the copies in
/// both are refreshed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "boards")]
#[index(keys("replies.author_id"))]
pub struct Board {
    #[serde(rename = "_id")]
    pub id: i64,
    #[outlier(threshold = 2, overflow = "board_replies", flag = more, per_doc = 2)]
    pub replies: Vec<Reply>,
    pub more: bool,
}

/// A topic of a forum, with its replies: copies two arrays deep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Topic {
    pub title: String,
    #[embed(max = 20, reason = "a topic shows its replies")]
    pub replies: Vec<Reply>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "forums")]
#[index(keys("topics.replies.author_id"))]
pub struct Forum {
    #[serde(rename = "_id")]
    pub id: i64,
    #[embed(max = 20, reason = "a forum shows its topics")]
    pub topics: Vec<Topic>,
}

/// A member mentioned in a digest, whose name follows in the rename's own call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Mention {
    pub member_id: Ref<Member>,
    #[denormalized(from = "Member::name", via = "member_id", refresh = "sync")]
    pub member_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "digests")]
#[index(keys("mentions.member_id"))]
pub struct Digest {
    #[serde(rename = "_id")]
    pub id: i64,
    #[embed(max = 10, reason = "a digest names a few members")]
    pub mentions: Vec<Mention>,
}

const REPLIES: &str = "threads.replies.author_name";
const MENTIONS: &str = "digests.mentions.member_name";
const FORUM_REPLIES: &str = "forums.topics.replies.author_name";
const BOARD_REPLIES: &str = "boards.replies.author_name";
const OVERFLOW_REPLIES: &str = "board_replies.items.author_name";
const BYLINES: &str = "threads.byline.member_name";

async fn setup(hint: &str) -> testkit::TestDb {
    let db = testkit::database(hint).await.unwrap();
    docshape::sync::<Member>(&db).await.unwrap();
    docshape::sync::<Thread>(&db).await.unwrap();
    for (id, name) in [("ann", "Ann"), ("bob", "Bob")] {
        db.collection::<Document>("members")
            .insert_one(doc! { "_id": id, "name": name, "visits": 0_i64 })
            .await
            .unwrap();
    }
    db
}

fn reply(author: &str, text: &str) -> Reply {
    // The copy is filled from the source when the thread is inserted.
    Reply { author_id: Ref::new(author.to_owned()), author_name: String::new(), text: text.to_owned() }
}

/// Threads 1 (ann twice, then bob), 2 (ann), 3 (bob), inserted by docshape, which
/// fills every copy from its source.
async fn threads(db: &Database) {
    let all = [
        (1, "bob", vec![reply("ann", "first"), reply("bob", "second"), reply("ann", "third")]),
        (2, "ann", vec![reply("ann", "alone")]),
        (3, "bob", vec![reply("bob", "other")]),
    ];
    for (id, by, replies) in all {
        let mut thread = Thread {
            id,
            byline: Byline { member_id: Ref::new(by.to_owned()), member_name: String::new() },
            replies,
        };
        relation::insert_one(db, &mut thread).await.unwrap();
    }
}

/// A thread as the tests compare it: its `_id`, its byline's name, and per reply the
/// author, the copied name and the text.
type Shown = Vec<(i64, String, Vec<(String, String, String)>)>;

/// Each thread's (author, copied name, text) per reply, and its byline's name.
async fn stored(db: &Database) -> Shown {
    let all: Vec<Document> = db
        .collection::<Document>("threads")
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    all.iter()
        .map(|t| {
            let replies = t
                .get_array("replies")
                .unwrap()
                .iter()
                .map(|r| {
                    let r = r.as_document().unwrap();
                    let s = |k: &str| r.get_str(k).unwrap_or("<none>").to_owned();
                    (s("author_id"), s("author_name"), s("text"))
                })
                .collect();
            let byline = t.get_document("byline").unwrap().get_str("member_name").unwrap().to_owned();
            (t.get_i64("_id").unwrap(), byline, replies)
        })
        .collect()
}

fn expected(ann: &str) -> Shown {
    let r = |a: &str, n: &str, t: &str| (a.to_owned(), n.to_owned(), t.to_owned());
    vec![
        (1, "Bob".into(), vec![r("ann", ann, "first"), r("bob", "Bob", "second"), r("ann", ann, "third")]),
        (2, ann.into(), vec![r("ann", ann, "alone")]),
        (3, "Bob".into(), vec![r("bob", "Bob", "other")]),
    ]
}

#[test]
fn the_registry_holds_copies_inside_embedded_types_under_their_paths() {
    let copies = denormalized::dependents("members");
    let keys: Vec<String> = copies.iter().map(|c| c.key()).collect();
    assert_eq!(keys, [OVERFLOW_REPLIES, BOARD_REPLIES, MENTIONS, FORUM_REPLIES, BYLINES, REPLIES]);
    let replies = copies.iter().find(|c| c.key() == REPLIES).unwrap();
    assert_eq!((replies.via, replies.arrays), ("replies.author_id", &["replies"][..]));
    let byline = copies.iter().find(|c| c.key() == BYLINES).unwrap();
    assert_eq!((byline.via, byline.arrays), ("byline.member_id", &[][..]));
    // The design-decision table lists them under the field's path.
    let table = relation::design_decisions_with_nested(&[("threads", Thread::RELATIONS, Thread::NESTED)]);
    assert!(table.contains("replies.author_name"), "{table}");
    assert!(table.contains("a thread shows its replies' authors without a lookup"), "{table}");
}

/// Insert fills each element's copy; a rename writes the sync byline at once and the
/// async replies through the worker: both of ann's replies in thread 1 and hers in
/// thread 2, and nothing of bob's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_reaches_every_reply_of_its_author_through_the_worker() {
    let db = setup("embedded_worker").await;
    threads(&db).await;
    assert_eq!(stored(&db).await, expected("Ann"));

    let report = denormalized::update_one::<Member>(&db, "ann", rename("Ann Lee")).await.unwrap();
    assert_eq!(report.matched, 1);
    let now = stored(&db).await;
    assert_eq!(now[1].1, "Ann Lee", "the sync byline is written in the rename's call");
    assert_eq!(now[0].2[0].1, "Ann", "the async replies wait for the worker");

    let done = Worker::new(&db).only([REPLIES]).run_until_empty().await.unwrap();
    assert_eq!(done.jobs, 1);
    assert_eq!(stored(&db).await, expected("Ann Lee"));
    // Nothing is left stale: a second run finds nothing to do.
    let reconciled = denormalized::reconcile(
        &db,
        denormalized::copies().into_iter().find(|c| c.key() == REPLIES).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!((reconciled.documents_seen, reconciled.documents_updated), (3, 0));
}

/// Another program renames both members; the watcher enqueues, a worker drains, and
/// every reply converges on its author's last name. Reconcile repairs a reply that
/// another program set wrong, and leaves a reply whose reference names no one source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renames_by_another_program_reach_the_replies_through_the_watcher() {
    let db = setup("embedded_watcher").await;
    threads(&db).await;
    let plain = plain_client(&db).await;

    let watcher = Running::start(Watcher::new(&db).name("threads").only([REPLIES, BYLINES]));
    until("the watcher's position", Duration::from_secs(60), || async {
        super::watcher::position(&db, "threads", "members").await.is_some()
    })
    .await;
    let worker = Worker::new(&db).only([REPLIES, BYLINES]);
    let worker = tokio::spawn(async move { worker.run(Duration::from_millis(20)).await });
    for round in 0..3 {
        for (id, name) in [("ann", "Ann"), ("bob", "Bob")] {
            plain
                .collection::<Document>("members")
                .update_one(doc! { "_id": id }, doc! { "$set": { "name": format!("{name} {round}") } })
                .await
                .unwrap();
        }
    }
    until("every reply renamed", Duration::from_secs(120), || async {
        let now = stored(&db).await;
        now[0].2.iter().all(|(a, n, _)| n == &format!("{} 2", if a == "ann" { "Ann" } else { "Bob" }))
            && now[2].2[0].1 == "Bob 2"
            && now[1].1 == "Ann 2"
    })
    .await;
    watcher.stop().await;
    worker.abort();

    // Another program writes a wrong name into one reply, and a reply whose reference
    // is operator-shaped (it names no one member).
    let threads = plain.collection::<Document>("threads");
    threads
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "replies.1.author_name": "Mallory" } })
        .await
        .unwrap();
    let hostile = doc! { "author_id": { "$ne": "x" }, "author_name": "Eve", "text": "hostile" };
    plain
        .run_command(doc! {
            "update": "threads",
            "updates": [{ "q": { "_id": 3 }, "u": { "$push": { "replies": hostile } } }],
            // Another program, past the validator.
            "bypassDocumentValidation": true,
        })
        .await
        .unwrap();
    let spec = denormalized::copies().into_iter().find(|c| c.key() == REPLIES).unwrap();
    let report = denormalized::reconcile(&db, spec).await.unwrap();
    assert_eq!(report.documents_updated, 1, "{report:?}");
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    assert_eq!(report.skipped[0].id, Bson::Int64(3));
    let now = stored(&db).await;
    assert_eq!(now[0].2[1], ("bob".into(), "Bob 2".into(), "second".into()));
    assert_eq!(now[2].2[1].1, "Eve", "a reference that names no one source is left alone");
}

/// An outlier array of replies: a rename reaches the replies kept embedded and those in
/// overflow documents, whose collection is indexed by the copy's `via`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_reaches_replies_in_overflow_documents() {
    let db = setup("embedded_outlier").await;
    docshape::sync::<Board>(&db).await.unwrap();
    docshape::outlier::sync::<Board>(&db).await.unwrap();
    let indexes = db.collection::<Document>("board_replies").list_index_names().await.unwrap();
    assert!(indexes.contains(&"items.author_id_1".to_owned()), "{indexes:?}");
    let board = Board { id: 1, replies: vec![], more: false };
    db.collection::<Board>("boards").insert_one(&board).await.unwrap();
    for i in 0..7 {
        let (author, name) = if i % 2 == 0 { ("ann", "Ann") } else { ("bob", "Bob") };
        let r = Reply {
            author_id: Ref::new(author.to_owned()),
            author_name: name.to_owned(),
            text: format!("r{i}"),
        };
        Board::push_replies(&db, &1, &[r]).await.unwrap();
    }
    denormalized::update_one::<Member>(&db, "ann", rename("Ann Lee")).await.unwrap();
    let done = Worker::new(&db).only([BOARD_REPLIES, OVERFLOW_REPLIES]).run_until_empty().await.unwrap();
    assert_eq!(done.jobs, 2, "{done:?}");
    let all = Board::load_replies(&db, &1).await.unwrap();
    let shown: Vec<(String, &str)> = all.iter().map(|r| (r.text.clone(), r.author_name.as_str())).collect();
    let want: Vec<(String, &str)> =
        (0..7).map(|i| (format!("r{i}"), if i % 2 == 0 { "Ann Lee" } else { "Bob" })).collect();
    assert_eq!(shown, want);
    assert!(
        count(&db, "board_replies", doc! {}).await >= 2,
        "the replies past two are in overflow documents"
    );
}

/// `push_<field>` fills the copies inside the pushed items from their sources, as
/// `relation::insert_one` fills a document's: embedded and in overflow documents alike,
/// whatever the caller put in the copy. An item referencing no document pushes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_fills_the_copies_inside_its_items() {
    let db = setup("embedded_outlier_push").await;
    docshape::sync::<Board>(&db).await.unwrap();
    docshape::outlier::sync::<Board>(&db).await.unwrap();
    db.collection::<Board>("boards")
        .insert_one(&Board { id: 1, replies: vec![], more: false })
        .await
        .unwrap();
    for i in 0..5 {
        let author = if i % 2 == 0 { "ann" } else { "bob" };
        // The caller's value of the copy is not what is stored.
        let r =
            Reply { author_id: Ref::new(author.to_owned()), author_name: "?".into(), text: format!("r{i}") };
        Board::push_replies(&db, &1, &[r]).await.unwrap();
    }
    let all = Board::load_replies(&db, &1).await.unwrap();
    let shown: Vec<(&str, &str)> = all.iter().map(|r| (r.text.as_str(), r.author_name.as_str())).collect();
    assert_eq!(shown, [("r0", "Ann"), ("r1", "Bob"), ("r2", "Ann"), ("r3", "Bob"), ("r4", "Ann")]);
    assert!(
        count(&db, "board_replies", doc! {}).await >= 1,
        "the replies past two are in overflow documents"
    );

    let ghost =
        Reply { author_id: Ref::new("nobody".to_owned()), author_name: "?".into(), text: "r5".into() };
    let e = Board::push_replies(&db, &1, &[ghost]).await.unwrap_err();
    assert!(
        matches!(e, docshape::outlier::OutlierError::SourceNotFound { collection: "members", .. }),
        "{e:?}"
    );
    assert_eq!(Board::load_replies(&db, &1).await.unwrap().len(), 5, "nothing was pushed");
}

/// Two arrays deep: only the replies of the renamed author are written, in every
/// topic, and a topic with no replies is no obstacle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_reaches_replies_two_arrays_deep() {
    let db = setup("embedded_two_deep").await;
    docshape::sync::<Forum>(&db).await.unwrap();
    let topic = |title: &str, authors: &[&str]| Topic {
        title: title.to_owned(),
        replies: authors.iter().enumerate().map(|(i, a)| reply(a, &format!("{title}{i}"))).collect(),
    };
    let mut forum = Forum {
        id: 1,
        topics: vec![topic("a", &["ann", "bob"]), topic("b", &[]), topic("c", &["bob", "ann", "ann"])],
    };
    relation::insert_one(&db, &mut forum).await.unwrap();
    let names = |f: &Forum| -> Vec<Vec<String>> {
        f.topics.iter().map(|t| t.replies.iter().map(|r| r.author_name.clone()).collect()).collect()
    };
    assert_eq!(names(&forum), [vec!["Ann", "Bob"], vec![], vec!["Bob", "Ann", "Ann"]]);
    denormalized::update_one::<Member>(&db, "ann", rename("Ann Lee")).await.unwrap();
    Worker::new(&db).only([FORUM_REPLIES]).run_until_empty().await.unwrap();
    let stored = db.collection::<Forum>("forums").find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(names(&stored), [vec!["Ann Lee", "Bob"], vec![], vec!["Bob", "Ann Lee", "Ann Lee"]]);
    assert_eq!(stored.topics[2].replies[1].text, "c1", "every other field is left alone");
}

/// A sync copy inside an array is written in the rename's own call (in one
/// transaction where the deployment has them, in sequence otherwise), with the same
/// array filters: only the renamed member's mentions change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_copy_inside_an_array_follows_in_the_renames_call() {
    use docshape::denormalized::{Atomicity, UpdateOptions};
    let db = setup("embedded_sync").await;
    docshape::sync::<Digest>(&db).await.unwrap();
    let mention = |m: &str| Mention { member_id: Ref::new(m.to_owned()), member_name: String::new() };
    let mut digest = Digest { id: 1, mentions: vec![mention("ann"), mention("bob"), mention("ann")] };
    relation::insert_one(&db, &mut digest).await.unwrap();
    let names = |d: &Digest| d.mentions.iter().map(|m| m.member_name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&digest), ["Ann", "Bob", "Ann"]);
    for (round, atomicity) in [Atomicity::Auto, Atomicity::Sequential].into_iter().enumerate() {
        let options = UpdateOptions::default().atomicity(atomicity);
        let name = format!("Ann {round}");
        let done =
            denormalized::update_one_with::<Member>(&db, "ann", rename(&name), &options).await.unwrap();
        // The test server has transactions: `Auto` takes one, `Sequential` does not.
        assert_eq!(done.transaction, round == 0, "{done:?}");
        let stored = db.collection::<Digest>("digests").find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
        assert_eq!(names(&stored), [name.as_str(), "Bob", name.as_str()], "{atomicity:?}");
    }
}
