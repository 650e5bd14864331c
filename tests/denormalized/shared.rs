//! Two models that claim one collection holding copies: the worker and the watcher
//! refuse to start (`CopyError::DuplicateCollection`) rather than mix the two models'
//! copies, which they find by collection. In a test binary of its own, since no other
//! program may declare one collection twice (`sync` refuses it too).

use docshape::bson::DateTime;
use docshape::denormalized::{CopyError, Watcher, Worker};
use docshape::refs::Ref;
use docshape::Model;
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

/// A source.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "shared_authors")]
pub struct Author {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

/// A post showing its author's name, in `shared_posts`.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "shared_posts")]
#[index(keys(author_id))]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: i64,
    pub author_id: Ref<Author>,
    #[denormalized(from = "Author::name", via = "author_id", refresh = "async", max_stale = "5m")]
    pub author_name: String,
}

/// Another model claiming `shared_posts`.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "shared_posts")]
pub struct Draft {
    #[serde(rename = "_id")]
    pub id: i64,
    pub at: DateTime,
}

fn refused(e: CopyError) {
    match e {
        CopyError::DuplicateCollection(d) => {
            assert_eq!(d.collection, "shared_posts");
            assert_eq!(d.types.len(), 2, "{:?}", d.types);
        }
        other => panic!("not DuplicateCollection: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_and_the_watcher_refuse_a_collection_two_models_claim() {
    let db = testkit::database("shared_collection").await.unwrap();
    refused(Worker::new(&db).run_until_empty().await.unwrap_err());
    refused(Worker::new(&db).only(["shared_posts.author_name"]).run_until_empty().await.unwrap_err());
    refused(Watcher::new(&db).run_until(async {}).await.unwrap_err());
    assert!(docshape::registry::specs().is_err(), "as sync refuses it");
}
