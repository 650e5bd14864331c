//! A summary that groups by a denormalized copy of its source: a copy refresh
//! rewrites the source's documents (the source's own update in its transaction, the
//! worker for an async copy), and the summary follows it, as it follows every other
//! docshape write of its source.

use docshape::denormalized::Worker;
use docshape::refs::Ref;

use super::*;

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_writers")]
pub struct Writer {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// An article with its writer's name copied in sync, and the same name copied by the
/// worker.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_articles", transactions)]
#[index(keys(writer_id))]
pub struct Article {
    #[serde(rename = "_id")]
    pub id: String,
    pub writer_id: Ref<Writer>,
    #[denormalized(from = "Writer::name", via = "writer_id", refresh = "sync")]
    pub writer_name: String,
    #[denormalized(from = "Writer::name", via = "writer_id", refresh = "async", max_stale = "1m")]
    pub byline: String,
    pub words: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_words_by_name")]
#[summary(of = Article, group(writer_name), refresh = "sync")]
pub struct WordsByName {
    #[serde(rename = "_id")]
    pub writer_name: String,
    #[summary(count)]
    pub articles: i64,
    #[summary(sum = "words")]
    pub words: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_words_by_byline")]
#[summary(of = Article, group(byline), refresh = "async", max_stale = "1m")]
pub struct WordsByByline {
    #[serde(rename = "_id")]
    pub byline: String,
    #[summary(count)]
    pub articles: i64,
    #[summary(sum = "words")]
    pub words: i64,
}

async fn groups(db: &Database, collection: &str) -> Vec<(String, i64, i64)> {
    all(db, collection)
        .await
        .iter()
        .map(|d| {
            (
                d.get_str("_id").unwrap().to_owned(),
                d.get_i64("articles").unwrap(),
                d.get_i64("words").unwrap(),
            )
        })
        .collect()
}

async fn assert_exact(db: &Database) {
    for name in ["sm_words_by_name", "sm_words_by_byline"] {
        let report = summary::check(db, spec(name)).await.unwrap();
        assert!(report.drifted.is_empty(), "{name} drifts: {:#?}", report.drifted);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_grouped_by_a_copy_follows_the_copys_refresh() {
    let db = testkit::database("summary_copies").await.unwrap();
    docshape::relation::insert_one(&db, &mut Writer { id: "w1".into(), name: "Ada".into() }).await.unwrap();
    for (id, words) in [("a1", 100), ("a2", 50)] {
        let mut article = Article {
            id: id.into(),
            writer_id: Ref::new("w1".to_owned()),
            writer_name: String::new(),
            byline: String::new(),
            words,
        };
        docshape::relation::insert_one(&db, &mut article).await.unwrap();
    }
    Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(groups(&db, "sm_words_by_name").await, [("Ada".to_owned(), 2, 150)]);
    assert_eq!(groups(&db, "sm_words_by_byline").await, [("Ada".to_owned(), 2, 150)]);

    // The writer is renamed: the sync copy is rewritten in the rename's transaction,
    // the async one by the worker; each summary moves both articles to the new name.
    docshape::denormalized::update_one::<Writer>(&db, "w1", doc! { "$set": { "name": "Bea" } })
        .await
        .unwrap();
    assert_eq!(groups(&db, "sm_words_by_name").await, [("Bea".to_owned(), 2, 150)]);
    Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(groups(&db, "sm_words_by_byline").await, [("Bea".to_owned(), 2, 150)]);
    assert_exact(&db).await;
}
