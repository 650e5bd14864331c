//! Keyset pagination on a real server: every document exactly once in sorted order,
//! forward and backward, through inserts and deletes; through changes of sort values,
//! every document whose value stays put exactly once; one `find` per page, never a
//! `skip`; cursors bound to their pattern and, when signed, unforgeable.

// See tests/index/mod.rs: a clippy false positive on repeated helper-attribute keys.
#![allow(clippy::duplicated_attributes)]

mod adversarial;
mod injection;
mod moving;
mod tokens;
mod view;

use docshape::bson;
use std::collections::HashSet;

use docshape::bson::{doc, Document};
use docshape::paginate::{CursorError, CursorKey, PageError};
use docshape::Model;
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "feed")]
#[index(keys(author_id, created_at = -1, _id = -1))]
// Its own equality field: the local server's planner takes the first index whose
// prefix matches the equality fields, ignoring the sort (mongod weighs both).
#[index(keys(board, score, rank = -1, _id = -1))]
#[access(name = "feed_by_author", operation = "A user's feed, newest first", filter(author_id), sort(created_at = -1), paginate)]
#[access(name = "by_score", operation = "Ranked", filter(board), sort(score = 1, rank = -1), paginate)]
pub(crate) struct FeedItem {
    #[serde(rename = "_id")]
    pub(crate) id: i64,
    pub(crate) author_id: String,
    /// Always equal to `author_id`, so both patterns page over the same documents.
    pub(crate) board: String,
    pub(crate) created_at: bson::DateTime,
    pub(crate) score: i32,
    pub(crate) rank: i64,
}

pub(crate) fn item(id: i64, author: &str, t: i64, score: i32, rank: i64) -> FeedItem {
    FeedItem {
        id,
        author_id: author.to_owned(),
        board: author.to_owned(),
        created_at: bson::DateTime::from_millis(t),
        score,
        rank,
    }
}

/// The ids in the order of one sorted query: the truth pages must reproduce.
async fn sorted_ids(db: &mongodb::Database, sort: Document) -> Vec<i64> {
    let docs: Vec<FeedItem> = FeedItem::collection(db)
        .find(doc! { "author_id": "a" })
        .sort(sort)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.into_iter().map(|d| d.id).collect()
}

/// Replaces the collection's contents: author "a"'s rows (many equal sort values: a
/// handful of timestamps, scores and ranks), plus a few of author "b" that no page of
/// "a" may show. Returns "a"'s documents.
async fn reset(db: &mongodb::Database, rows: &[(i64, i32, i64)]) -> Vec<FeedItem> {
    let items = FeedItem::collection(db);
    items.delete_many(doc! {}).await.unwrap();
    let docs: Vec<FeedItem> =
        rows.iter().enumerate().map(|(i, (t, s, r))| item(i as i64, "a", *t * 1000, *s, *r)).collect();
    let others: Vec<FeedItem> = (0..5).map(|i| item(10_000 + i, "b", 0, 0, 0)).collect();
    if !docs.is_empty() {
        items.insert_many(&docs).await.unwrap();
    }
    items.insert_many(&others).await.unwrap();
    docs
}

#[derive(Clone, Copy, Debug)]
enum Pattern {
    Feed,
    Score,
}

impl Pattern {
    fn paginator(self) -> docshape::paginate::Paginator<FeedItem> {
        match self {
            Self::Feed => FeedItem::feed_by_author("a"),
            Self::Score => FeedItem::by_score("a"),
        }
    }
    fn sort(self) -> Document {
        match self {
            Self::Feed => doc! { "created_at": -1, "_id": -1 },
            Self::Score => doc! { "score": 1, "rank": -1, "_id": -1 },
        }
    }
}

/// Walks every page forward, then back from the last page; both must equal the
/// sorted query.
async fn walk(db: &mongodb::Database, pattern: Pattern, size: u32) -> Result<(), TestCaseError> {
    let truth = sorted_ids(db, pattern.sort()).await;
    let mut pages: Vec<Vec<i64>> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut last_prev;
    loop {
        let mut p = pattern.paginator().page_size(size);
        if let Some(c) = &cursor {
            p = p.after(c);
        }
        let page = p.fetch(db).await.unwrap();
        prop_assert!(page.items.len() <= size as usize);
        prop_assert!(pages.len() <= truth.len() + 1, "the forward walk does not end: {:?}", pages);
        pages.push(page.items.iter().map(|i| i.id).collect());
        last_prev = page.prev.clone();
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let forward: Vec<i64> = pages.concat();
    prop_assert_eq!(&forward, &truth);
    // Backward from the last page.
    let mut backward: Vec<Vec<i64>> = vec![pages.last().cloned().unwrap_or_default()];
    let mut prev = last_prev;
    while let Some(c) = prev {
        prop_assert!(backward.len() <= truth.len() + 1, "the backward walk does not end: {:?}", backward);
        let page = pattern.paginator().page_size(size).before(&c).fetch(db).await.unwrap();
        backward.push(page.items.iter().map(|i| i.id).collect());
        prev = page.prev;
    }
    backward.reverse();
    prop_assert_eq!(backward.concat(), truth);
    Ok(())
}

#[test]
fn forward_and_backward_walks_return_each_document_once_in_order() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let db = rt.block_on(testkit::database("paginate_walk")).unwrap();
    rt.block_on(async { docshape::sync::<FeedItem>(&db).await.unwrap() });
    let dataset = (
        proptest::collection::vec((0..6_i64, 0..4_i32, 0..3_i64), 0..120),
        1..12_u32,
        prop_oneof![Just(Pattern::Feed), Just(Pattern::Score)],
    );
    let mut runner = docshape_test_seed::runner("paginate::walks", 24);
    runner
        .run(&dataset, |(rows, size, pattern)| {
            rt.block_on(async {
                reset(&db, &rows).await;
                walk(&db, pattern, size).await
            })
        })
        .unwrap();
}

#[test]
fn inserts_and_deletes_between_pages_never_duplicate_or_lose_a_stable_document() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let db = rt.block_on(testkit::database("paginate_churn")).unwrap();
    rt.block_on(async { docshape::sync::<FeedItem>(&db).await.unwrap() });
    let case = (
        proptest::collection::vec((0..5_i64, 0..3_i32, 0..3_i64), 1..80),
        1..8_u32,
        proptest::collection::vec(
            (any::<bool>(), 0..5_i64, 0..3_i32, 0..3_i64, any::<prop::sample::Index>()),
            0..40,
        ),
        prop_oneof![Just(Pattern::Feed), Just(Pattern::Score)],
    );
    let mut runner = docshape_test_seed::runner("paginate::churn", 24);
    runner
        .run(&case, |(rows, size, churn, pattern)| {
            rt.block_on(async {
                let items = FeedItem::collection(&db);
                let docs = reset(&db, &rows).await;
                let mut stable: HashSet<i64> = docs.iter().map(|d| d.id).collect();
                let mut next_id = 1_000;
                let mut churn = churn.into_iter();
                let mut seen: Vec<i64> = Vec::new();
                let mut cursor: Option<String> = None;
                loop {
                    let mut p = pattern.paginator().page_size(size);
                    if let Some(c) = &cursor {
                        p = p.after(c);
                    }
                    let page = p.fetch(&db).await.unwrap();
                    seen.extend(page.items.iter().map(|i| i.id));
                    prop_assert!(seen.len() <= 2 * (docs.len() + 40), "the walk does not end: {:?}", seen);
                    // Between requests: insert a new document or delete an old one.
                    if let Some((insert, t, s, r, pick)) = churn.next() {
                        if insert {
                            items.insert_one(item(next_id, "a", t * 1000, s, r)).await.unwrap();
                            next_id += 1;
                        } else if !docs.is_empty() {
                            let victim = docs[pick.index(docs.len())].id;
                            items.delete_one(doc! { "_id": victim }).await.unwrap();
                            stable.remove(&victim);
                        }
                    }
                    match page.next {
                        Some(next) => cursor = Some(next),
                        None => break,
                    }
                }
                let unique: HashSet<i64> = seen.iter().copied().collect();
                prop_assert_eq!(unique.len(), seen.len(), "a document appeared twice: {:?}", seen);
                for id in &stable {
                    prop_assert!(unique.contains(id), "stable document {} was missed: {:?}", id, seen);
                }
                // The stable documents came in sorted order.
                let truth: Vec<i64> = sorted_ids(&db, pattern.sort())
                    .await
                    .into_iter()
                    .filter(|id| stable.contains(id))
                    .collect();
                let got: Vec<i64> = seen.into_iter().filter(|id| stable.contains(id)).collect();
                prop_assert_eq!(got, truth);
                Ok(())
            })
        })
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_find_per_page_and_never_a_skip() {
    let log = testkit::CommandLog::new();
    let client = testkit::monitored_client(&log).await.unwrap();
    let db = client.database(&format!("ds_{}_paginate_count", std::process::id()));
    db.drop().await.unwrap();
    docshape::sync::<FeedItem>(&db).await.unwrap();
    let docs: Vec<FeedItem> = (0..95).map(|i| item(i, "a", (i % 7) * 1000, 0, 0)).collect();
    FeedItem::collection(&db).insert_many(&docs).await.unwrap();
    log.clear();

    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let mut p = FeedItem::feed_by_author("a").page_size(10);
        if let Some(c) = &cursor {
            p = p.after(c);
        }
        let page = p.fetch(&db).await.unwrap();
        pages += 1;
        assert!(pages <= 20, "the walk does not end");
        match page.next {
            Some(n) => cursor = Some(n),
            None => break,
        }
    }
    assert_eq!(pages, 10);
    let finds: Vec<Document> = log.named("find");
    assert_eq!(finds.len(), pages, "one find per page");
    assert!(finds.iter().all(|f| !f.contains_key("skip")), "a find used skip");
    db.drop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_are_bound_to_their_pattern_and_signatures_checked() {
    let db = testkit::database("paginate_tokens").await.unwrap();
    docshape::sync::<FeedItem>(&db).await.unwrap();
    let docs: Vec<FeedItem> = (0..30).map(|i| item(i, "a", i * 1000, (i % 3) as i32, i)).collect();
    FeedItem::collection(&db).insert_many(&docs).await.unwrap();

    let page = FeedItem::feed_by_author("a").page_size(5).fetch(&db).await.unwrap();
    let next = page.next.unwrap();
    let err = FeedItem::by_score("a").after(&next).fetch(&db).await.unwrap_err();
    assert!(matches!(err, PageError::Cursor(CursorError::WrongPattern)), "{err}");

    let key = CursorKey::new(b"a secret of thirty-two bytes!!!!".to_vec()).unwrap();
    let signed = FeedItem::feed_by_author("a").page_size(5).signed_with(&key).fetch(&db).await.unwrap();
    let next = signed.next.unwrap();
    let second =
        FeedItem::feed_by_author("a").page_size(5).signed_with(&key).after(&next).fetch(&db).await.unwrap();
    assert_eq!(second.items.first().map(|i| i.id), Some(24));
    // An unsigned token is refused where signatures are required, and vice versa.
    let unsigned = FeedItem::feed_by_author("a").page_size(5).fetch(&db).await.unwrap().next.unwrap();
    let err = FeedItem::feed_by_author("a").signed_with(&key).after(&unsigned).fetch(&db).await.unwrap_err();
    assert!(matches!(err, PageError::Cursor(CursorError::Unsigned)), "{err}");
    let err = FeedItem::feed_by_author("a").after(&next).fetch(&db).await.unwrap_err();
    assert!(matches!(err, PageError::Cursor(CursorError::UnexpectedSignature)), "{err}");
    // A client's edit of a signed token is caught.
    let mut forged = next.clone().into_bytes();
    let mid = forged.len() / 2;
    forged[mid] = if forged[mid] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    let err = FeedItem::feed_by_author("a").signed_with(&key).after(&forged).fetch(&db).await.unwrap_err();
    assert!(matches!(err, PageError::Cursor(_)), "{err}");
    // Garbage is an error value, not a panic.
    for junk in ["", "!!!", "AAAA", &"x".repeat(10_000)] {
        assert!(FeedItem::feed_by_author("a").after(junk).fetch(&db).await.is_err());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_paginated_patterns_use_their_indexes() {
    let db = testkit::database("paginate_explain").await.unwrap();
    testkit::assert_access_patterns_use_indexes::<FeedItem>(&db).await;
    assert_eq!(FeedItem::ACCESS_PATTERNS[0].index, Some("author_id_1_created_at_-1__id_-1"));
    assert_eq!(FeedItem::ACCESS_PATTERNS[0].sort.last(), Some(&("_id", docshape::index::IndexKey::Desc)));
}
