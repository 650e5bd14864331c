//! An id never becomes a query operator: the source's update, `repair` and the worker
//! compare it with `$eq`. A model whose `_id` is `Bson` admits an operator document
//! as an id value (a `String` id refuses one at compile time: tests/ui), and it still
//! matches only a document whose `_id` is that very document.

use docshape::bson;
use docshape::bson::{doc, Bson, Document};
use docshape::denormalized::{self, CopyError, Worker, QUEUE};
use docshape::refs::Ref;
use docshape::Model;
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

use super::{count, rename};

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "open_users")]
pub struct OpenUser {
    #[serde(rename = "_id")]
    pub id: Bson,
    pub name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "open_notes")]
#[index(keys(author))]
pub struct OpenNote {
    #[serde(rename = "_id")]
    pub id: i64,
    pub author: Ref<OpenUser>,
    #[denormalized(from = "OpenUser::name", via = "author", refresh = "sync")]
    pub author_name: String,
    #[denormalized(
        from = "OpenUser::name",
        via = "author",
        refresh = "async",
        max_stale = "5m",
        reason = "notes list their author's name"
    )]
    pub author_name_later: String,
}

fn operators() -> Vec<Document> {
    vec![
        doc! { "$ne": null },
        doc! { "$gt": "" },
        doc! { "$regex": "." },
        doc! { "$exists": true },
        doc! { "$in": ["u1", "u2"] },
    ]
}

async fn seeded(hint: &str) -> testkit::TestDb {
    let db = testkit::database(hint).await.unwrap();
    let users = db.collection::<Document>("open_users");
    users
        .insert_many([doc! { "_id": "u1", "name": "Ada" }, doc! { "_id": "u2", "name": "Grace" }])
        .await
        .unwrap();
    let notes = (0..6_i64).map(|i| {
        let (author, name) = if i % 2 == 0 { ("u1", "Ada") } else { ("u2", "Grace") };
        doc! { "_id": i, "author": author, "author_name": name, "author_name_later": name }
    });
    db.collection::<Document>("open_notes").insert_many(notes).await.unwrap();
    db
}

async fn untouched(db: &mongodb::Database) {
    assert_eq!(count(db, "open_users", doc! { "name": { "$in": ["Ada", "Grace"] } }).await, 2);
    let honest = doc! { "$or": [
        { "author": "u1", "author_name": "Ada", "author_name_later": "Ada" },
        { "author": "u2", "author_name": "Grace", "author_name_later": "Grace" },
    ] };
    assert_eq!(count(db, "open_notes", honest).await, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_ids_touch_no_document_in_update_repair_or_the_worker() {
    let db = seeded("copies_injection").await;
    for op in operators() {
        let id = Bson::Document(op.clone());
        let done = denormalized::update_one::<OpenUser>(&db, &id, rename("X")).await.unwrap();
        assert_eq!(done.matched, 0, "{op}");
        assert_eq!(done.documents_updated(), 0, "{op}");
        assert!(count(&db, QUEUE, doc! {}).await == 0, "{op}: a job was queued");
        let err = denormalized::repair::<OpenUser>(&db, &id).await.unwrap_err();
        assert!(matches!(err, CopyError::SourceNotFound { .. }), "{op}: {err}");
        untouched(&db).await;
    }
    // A job holding an operator as its id (another program's, or an older release's)
    // is run literally: no source has that `_id`, so no copy changes.
    for (seq, op) in operators().into_iter().enumerate() {
        let job = doc! {
            "_id": { "copy": "open_notes.author_name_later", "id": op },
            "seq": seq as i64,
            "due": bson::DateTime::from_millis(0),
            "lease_until": bson::DateTime::from_millis(0),
        };
        db.collection::<Document>(QUEUE).insert_one(job).await.unwrap();
    }
    let report = Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(report.documents_updated, 0, "{report:?}");
    untouched(&db).await;
    // And the honest id still works.
    let done =
        denormalized::update_one::<OpenUser>(&db, &Bson::from("u1"), rename("Ada King")).await.unwrap();
    assert_eq!(done.matched, 1);
    assert_eq!(count(&db, "open_notes", doc! { "author_name": "Ada King" }).await, 3);
    assert_eq!(count(&db, "open_notes", doc! { "author_name": "Grace" }).await, 3);
}
