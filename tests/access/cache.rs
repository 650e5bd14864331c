//! A read row that names a key family reads through it: a hit sends no MongoDB
//! command, a miss sends the indexed query and fills the key with the family's TTL,
//! and the model's write rows delete the key.

use bson::doc;
use docshape::bson;
use docshape::keys::StringFamily;
use docshape::{KeyFamily, Model};
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "access_products")]
#[access(
    name = "product_page",
    operation = "Product page",
    filter(_id),
    fields(name, price_cents),
    view(name = ProductPage, derive(Debug, Clone, PartialEq)),
    cache = ProductPageCache,
    freq = "800 r/s",
    consistency = "eventual ok"
)]
#[access(name = "reprice", filter(_id), update(set(price_cents)))]
pub struct Product {
    #[serde(rename = "_id")]
    pub sku: String,
    #[validate(max_length = 120)]
    pub name: String,
    pub price_cents: i64,
    pub description: String,
}

/// The product page, cached for five minutes.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:product:{sku}", kind = string, value = ProductPage, ttl = "300s", note = "invalidate on product write")]
pub struct ProductPageCache {
    pub sku: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_hits_misses_and_is_invalidated_by_a_write() {
    let (db, log) = testkit::monitored("access_cache").await.unwrap();
    let mut redis = testkit::redis::database().await.unwrap();
    docshape::sync::<Product>(&db).await.unwrap();
    let product =
        Product { sku: "A-1".into(), name: "Cup".into(), price_cents: 1250, description: "A cup.".into() };
    Product::collection(&db).insert_one(&product).await.unwrap();
    log.clear();

    // A miss: the indexed query, then the key is filled, with the family's TTL.
    let page = Product::product_page("A-1").one(&db, &mut redis).await.unwrap().unwrap();
    assert_eq!(page, ProductPage { name: "Cup".into(), price_cents: 1250 });
    assert_eq!(log.take().iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(), ["find"]);
    let key = ProductPageCache { sku: "A-1".into() };
    assert_eq!(key.get(&mut redis).await.unwrap(), Some(page.clone()));
    let ttl: i64 = docshape::redis::cmd("TTL").arg(key.key()).query_async(&mut redis).await.unwrap();
    assert!((290..=300).contains(&ttl), "ttl {ttl}");

    // A hit: no MongoDB command at all, even after the document changed by hand
    // (a raw write bypasses the cache: the TTL bounds it).
    Product::collection(&db)
        .update_one(doc! { "_id": "A-1" }, doc! { "$set": { "name": "Mug" } })
        .await
        .unwrap();
    log.clear();
    let cached = Product::product_page("A-1").one(&db, &mut redis).await.unwrap().unwrap();
    assert_eq!(cached.name, "Cup");
    assert_eq!(log.count(), 0, "a hit asks MongoDB nothing");

    // A write row deletes the key; the next read fills it from the new document.
    Product::reprice("A-1", 990_i64).run(&db, &mut redis).await.unwrap();
    assert_eq!(key.get(&mut redis).await.unwrap(), None);
    let fresh = Product::product_page("A-1").one(&db, &mut redis).await.unwrap().unwrap();
    assert_eq!(fresh, ProductPage { name: "Mug".into(), price_cents: 990 });

    // A missing document is not cached.
    assert!(Product::product_page("nope").one(&db, &mut redis).await.unwrap().is_none());
    assert_eq!(ProductPageCache { sku: "nope".into() }.get(&mut redis).await.unwrap(), None);
}

/// A versioned model cached by its page: its versioned writers have no connection
/// parameter, so they delete the key through the one installed for the database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "access_cached_articles", version = 2, migrate(v1 = ArticleV1))]
#[access(name = "article_page", filter(_id), fields(title), cache = ArticleCache, consistency = "eventual ok")]
#[access(name = "retitle", filter(_id), update(set(title)))]
pub struct Article {
    #[serde(rename = "_id")]
    pub id: String,
    pub title: String,
    pub words: i64,
    #[schema_version]
    pub schema_version: i32,
}

/// Version 1 called the title `headline`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, docshape::Embedded)]
pub struct ArticleV1 {
    #[serde(rename = "_id")]
    pub id: String,
    pub headline: String,
    pub words: i64,
}

impl From<ArticleV1> for Article {
    fn from(v1: ArticleV1) -> Self {
        Article { id: v1.id, title: v1.headline, words: v1.words, schema_version: 2 }
    }
}

/// The article page, cached for a minute.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:article:{id}", kind = string, value = ArticlePageView, ttl = "60s")]
pub struct ArticleCache {
    pub id: String,
}

/// Reads the page once, so that its key is filled, and checks that it is.
async fn fill(
    db: &docshape::mongodb::Database,
    redis: &mut docshape::redis::aio::MultiplexedConnection,
    id: &str,
) {
    Article::article_page(id).one(db, redis).await.unwrap().unwrap();
    assert!(ArticleCache { id: id.into() }.get(redis).await.unwrap().is_some(), "{id} is cached");
}

async fn cached(redis: &mut docshape::redis::aio::MultiplexedConnection, id: &str) -> Option<String> {
    ArticleCache { id: id.into() }.get(redis).await.unwrap().map(|v| v.title)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_docshape_writer_deletes_cached_keys_through_the_installed_connection() {
    use docshape::versioning::{self, RetryPolicy};
    let db = testkit::database("access_cache_writers").await.unwrap();
    let mut redis = testkit::redis::database().await.unwrap();
    docshape::sync::<Article>(&db).await.unwrap();
    let raw = db.collection::<bson::Document>(Article::COLLECTION);
    for id in ["a", "b", "c", "d", "e"] {
        raw.insert_one(doc! { "_id": id, "title": "first", "words": 10_i64, "schema_version": 2 })
            .await
            .unwrap();
    }
    raw.insert_one(doc! { "_id": "old", "headline": "first", "words": 10_i64 }).await.unwrap();

    // Nothing installed: the versioned writer refuses, and writes nothing (see
    // `without_an_installed_connection_every_writer_refuses_and_writes_nothing`).
    fill(&db, &mut redis, "a").await;
    let refused = versioning::update_one::<Article>(
        &db,
        "a",
        doc! { "$set": { "title": "second" } },
        RetryPolicy::default(),
    )
    .await;
    assert!(matches!(refused, Err(versioning::VersionError::Refused(_))), "{refused:?}");
    assert_eq!(cached(&mut redis, "a").await.as_deref(), Some("first"));
    assert_eq!(Article::article_page("a").uncached().one(&db).await.unwrap().unwrap().title, "first");

    docshape::keys::invalidate_on_write(&db, redis.clone());

    // The versioned update, modify, and the save of a loaded document.
    fill(&db, &mut redis, "b").await;
    versioning::update_one::<Article>(
        &db,
        "b",
        doc! { "$set": { "title": "second" } },
        RetryPolicy::default(),
    )
    .await
    .unwrap();
    assert_eq!(cached(&mut redis, "b").await, None, "versioning::update_one deleted the key");
    fill(&db, &mut redis, "c").await;
    versioning::modify::<Article>(&db, "c", RetryPolicy::default(), |a| a.words += 1).await.unwrap();
    assert_eq!(cached(&mut redis, "c").await, None, "versioning::modify deleted the key");
    fill(&db, &mut redis, "old").await;
    let mut loaded = versioning::find_one::<Article>(&db, doc! { "_id": "old" }).await.unwrap().unwrap();
    loaded.value.title = "upgraded".into();
    loaded.save(&db).await.unwrap();
    assert_eq!(cached(&mut redis, "old").await, None, "save deleted the key");
    assert_eq!(Article::article_page("old").one(&db, &mut redis).await.unwrap().unwrap().title, "upgraded");

    // The copies' writer, which keeps copies in line itself and caches through the hook.
    fill(&db, &mut redis, "d").await;
    docshape::denormalized::update_one::<Article>(&db, "d", doc! { "$set": { "title": "second" } })
        .await
        .unwrap();
    assert_eq!(cached(&mut redis, "d").await, None, "denormalized::update_one deleted the key");

    // A write row without a connection of its own.
    fill(&db, &mut redis, "e").await;
    Article::retitle("e", "second").uncached().run(&db).await.unwrap();
    assert_eq!(
        cached(&mut redis, "e").await,
        None,
        "the write row deleted the key through the installed one"
    );
    assert_eq!(Article::article_page("e").one(&db, &mut redis).await.unwrap().unwrap().title, "second");

    // Removed again: the writers refuse again, and the key and document stay.
    assert!(docshape::keys::stop_invalidating(&db));
    assert!(!docshape::keys::stop_invalidating(&db));
    fill(&db, &mut redis, "b").await;
    let refused = versioning::update_one::<Article>(
        &db,
        "b",
        doc! { "$set": { "title": "third" } },
        RetryPolicy::default(),
    )
    .await;
    assert!(matches!(refused, Err(versioning::VersionError::Refused(_))), "{refused:?}");
    assert_eq!(cached(&mut redis, "b").await.as_deref(), Some("second"));
}

/// Staleness is a product decision, never an accident: with no connection installed
/// to delete a cached model's keys, each of docshape's writers refuses before writing
/// (a typed error naming the family), so the cache cannot silently keep a value the
/// database no longer holds. A write row given a connection of its own still writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_installed_connection_every_writer_refuses_and_writes_nothing() {
    use docshape::denormalized::CopyError;
    use docshape::versioning::{self, BackfillOptions, RetryPolicy, VersionError};
    let db = testkit::database("access_cache_refused").await.unwrap();
    let mut redis = testkit::redis::database().await.unwrap();
    docshape::sync::<Article>(&db).await.unwrap();
    let raw = db.collection::<bson::Document>(Article::COLLECTION);
    raw.insert_one(doc! { "_id": "a", "title": "first", "words": 10_i64, "schema_version": 2 })
        .await
        .unwrap();
    raw.insert_one(doc! { "_id": "old", "headline": "first", "words": 10_i64 }).await.unwrap();
    fill(&db, &mut redis, "a").await;
    let names_the_family = |e: &CopyError| {
        matches!(e, CopyError::CacheNotInvalidated { collection, family }
            if *collection == Article::COLLECTION && family.ends_with("ArticleCache"))
    };
    let refused = |r: Result<(), VersionError>, writer: &str| match r {
        Err(VersionError::Refused(e)) if names_the_family(&e) => {}
        other => panic!("{writer}: {other:?}"),
    };

    let set = || doc! { "$set": { "title": "second" } };
    refused(
        versioning::update_one::<Article>(&db, "a", set(), RetryPolicy::default()).await.map(drop),
        "update_one",
    );
    refused(
        versioning::modify::<Article>(&db, "a", RetryPolicy::default(), |a| a.title = "second".into())
            .await
            .map(drop),
        "modify",
    );
    let mut loaded = versioning::find_one::<Article>(&db, doc! { "_id": "old" }).await.unwrap().unwrap();
    loaded.value.title = "upgraded".into();
    refused(loaded.save(&db).await, "save");
    refused(versioning::backfill::<Article>(&db, BackfillOptions::default()).await.map(drop), "backfill");
    match docshape::denormalized::update_one::<Article>(&db, "a", set()).await {
        Err(e) if names_the_family(&e) => {}
        other => panic!("denormalized::update_one: {other:?}"),
    }
    match Article::retitle("a", "second").uncached().run(&db).await {
        Err(docshape::access::UpdateError::Refused(e)) if names_the_family(&e) => {}
        other => panic!("a write row without a connection: {other:?}"),
    }
    let text = docshape::denormalized::update_one::<Article>(&db, "a", set()).await.unwrap_err().to_string();
    assert!(
        text.contains("invalidate_on_write") && text.contains("staleness = \"ttl\""),
        "says the fixes: {text}"
    );

    // Nothing was written: the documents, and so the cached value, still agree.
    let a = raw.find_one(doc! { "_id": "a" }).await.unwrap().unwrap();
    assert_eq!(a.get_str("title").unwrap(), "first");
    let old = raw.find_one(doc! { "_id": "old" }).await.unwrap().unwrap();
    assert_eq!(old.get_str("headline").unwrap(), "first", "not upgraded: {old}");
    assert_eq!(cached(&mut redis, "a").await.as_deref(), Some("first"));

    // A write row given a connection deletes the key itself.
    Article::retitle("a", "second").run(&db, &mut redis).await.unwrap();
    assert_eq!(cached(&mut redis, "a").await, None);
    assert_eq!(Article::article_page("a").one(&db, &mut redis).await.unwrap().unwrap().title, "second");
}

/// A note page whose family accepts values stale for up to its TTL after a write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "access_cached_notes")]
#[access(name = "note_page", filter(_id), fields(text), cache = NoteCache, consistency = "eventual ok")]
#[access(name = "rewrite", filter(_id), update(set(text)))]
pub struct Note {
    #[serde(rename = "_id")]
    pub id: String,
    pub text: String,
}

/// Cached for a minute; a minute of staleness after a write is accepted.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:note:{id}", kind = string, value = NotePageView, ttl = "60s", staleness = "ttl")]
pub struct NoteCache {
    pub id: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_family_that_accepts_ttl_staleness_lets_writers_leave_its_keys() {
    let db = testkit::database("access_cache_ttl_staleness").await.unwrap();
    let mut redis = testkit::redis::database().await.unwrap();
    docshape::sync::<Note>(&db).await.unwrap();
    Note::collection(&db).insert_one(Note { id: "n".into(), text: "first".into() }).await.unwrap();
    assert_eq!(Note::note_page("n").one(&db, &mut redis).await.unwrap().unwrap().text, "first");

    Note::rewrite("n", "second").uncached().run(&db).await.unwrap();
    docshape::denormalized::update_one::<Note>(&db, "n", doc! { "$set": { "text": "third" } }).await.unwrap();
    let stored = Note::collection(&db).find_one(doc! { "_id": "n" }).await.unwrap().unwrap();
    assert_eq!(stored.text, "third", "both writers wrote");
    let key = NoteCache { id: "n".into() };
    assert_eq!(key.get(&mut redis).await.unwrap().map(|v| v.text).as_deref(), Some("first"), "the key stays");
    let ttl: i64 = docshape::redis::cmd("TTL").arg(key.key()).query_async(&mut redis).await.unwrap();
    assert!((1..=60).contains(&ttl), "and expires within the TTL: {ttl}");

    let catalog = docshape::keys::catalog_markdown(&[&NoteCache::SPEC, &ArticleCache::SPEC]);
    let row = |pattern: &str| catalog.lines().find(|l| l.contains(pattern)).unwrap().to_owned();
    assert!(row("cache:note:").contains("stale up to the TTL"), "{catalog}");
    assert!(!row("cache:article:").contains("stale"), "{catalog}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_delete_after_a_write_is_a_typed_error() {
    use docshape::versioning::{self, RetryPolicy};
    let db = testkit::database("access_cache_failed_delete").await.unwrap();
    docshape::sync::<Article>(&db).await.unwrap();
    Article::collection(&db)
        .insert_one(Article { id: "x".into(), title: "first".into(), words: 1, schema_version: 2 })
        .await
        .unwrap();
    // A connection to a server that then goes away: the write lands, the DEL fails.
    let server = testkit::redis::RedisServer::start_local().unwrap();
    let conn = server.database().await.unwrap();
    docshape::keys::invalidate_on_write(&db, conn);
    drop(server);
    let err = versioning::update_one::<Article>(
        &db,
        "x",
        doc! { "$set": { "title": "second" } },
        RetryPolicy::default(),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("cached keys") && text.contains("written"), "{text}");
    let stored = Article::collection(&db).find_one(doc! { "_id": "x" }).await.unwrap().unwrap();
    assert_eq!(stored.title, "second", "the document was written before the delete failed");
    docshape::keys::stop_invalidating(&db);
}

/// Ids that share a text under another type (`"007"` and `"7"` are both 7 as numbers)
/// are two documents, two keys: a write to one deletes its key only. (A family over
/// another type than the `_id`, where they would share a key, does not compile:
/// `tests/ui/fail_access/cache_family_of_another_id_type.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_with_the_same_number_have_their_own_keys() {
    let db = testkit::database("access_cache_ids").await.unwrap();
    let mut redis = testkit::redis::database().await.unwrap();
    docshape::sync::<Product>(&db).await.unwrap();
    let skus = ["7", "07", "007", "+7"];
    for (i, sku) in skus.iter().enumerate() {
        let product = Product {
            sku: (*sku).into(),
            name: format!("Product {sku}"),
            price_cents: i as i64,
            description: String::new(),
        };
        Product::collection(&db).insert_one(&product).await.unwrap();
    }
    for (i, sku) in skus.iter().enumerate() {
        let page = Product::product_page(*sku).one(&db, &mut redis).await.unwrap().unwrap();
        assert_eq!(page, ProductPage { name: format!("Product {sku}"), price_cents: i as i64 });
    }
    let keys: std::collections::HashSet<String> =
        skus.iter().map(|s| ProductPageCache { sku: (*s).into() }.key()).collect();
    assert_eq!(keys.len(), skus.len(), "{keys:?}");

    // A write to "007" deletes "007"'s key and leaves the others cached.
    Product::reprice("007", 1_i64).run(&db, &mut redis).await.unwrap();
    for (i, sku) in skus.iter().enumerate() {
        let cached = ProductPageCache { sku: (*sku).into() }.get(&mut redis).await.unwrap();
        if *sku == "007" {
            assert_eq!(cached, None);
        } else {
            assert_eq!(cached, Some(ProductPage { name: format!("Product {sku}"), price_cents: i as i64 }));
        }
    }
    // Each read returns its own document.
    for sku in skus {
        let page = Product::product_page(sku).one(&db, &mut redis).await.unwrap().unwrap();
        assert_eq!(page.name, format!("Product {sku}"));
    }
}
