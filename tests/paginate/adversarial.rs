//! Documents written around the validator (another program, a shell, a restore): a
//! sort value of another type or missing, fields of the wrong type, oversized arrays.
//! A page returns the right items or a typed error, never panics and sends one
//! command. A walk returns every document whose sort values it can place exactly once,
//! or fails on one it cannot decode; the documents it cannot place are left out of
//! every page and listed by `Paginator::unplaced`, never silently lost.

use std::collections::{HashMap, HashSet};

use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::paginate::PageError;
use docshape::Model;
use docshape_testkit as testkit;
use proptest::prelude::Rng;
use proptest::test_runner::TestRng;

use super::{FeedItem, Pattern};

/// Seven documents of one feed, one with a string `created_at` and one without it.
/// Neither can be placed by a keyset walk over dates. The walk returns the five
/// others, each once and in order, for every page size, and ends; the two are listed
/// by `unplaced`, which is how a walk's left-out documents are found. (They used to be
/// skipped silently, then to fail every walk of the feed at their page.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_walk_over_a_sort_value_of_another_type_or_missing_returns_the_others_and_reports_them() {
    let db = testkit::database("paginate_mixed_sort").await.unwrap();
    let raw = db.collection::<Document>(FeedItem::COLLECTION);
    let mut docs: Vec<Document> = (0..5_i64)
        .map(|i| doc! { "_id": i, "author_id": "a", "board": "a", "created_at": DateTime::from_millis(i * 1000), "score": 0, "rank": i })
        .collect();
    docs.push(doc! { "_id": 5_i64, "author_id": "a", "board": "a", "created_at": "2026-01-01", "score": 0, "rank": 5_i64 });
    docs.push(doc! { "_id": 6_i64, "author_id": "a", "board": "a", "score": 0, "rank": 6_i64 });
    raw.insert_many(&docs).await.unwrap();
    for size in 1..=8 {
        let (seen, end) = walk(&db, Pattern::Feed, size, 20).await;
        end.unwrap_or_else(|e| panic!("page size {size}: {e}"));
        assert_eq!(seen, vec![4, 3, 2, 1, 0], "page size {size}: the placeable documents, newest first");
    }
    let unplaced = Pattern::Feed.paginator().unplaced(&db, 10).await.unwrap();
    let mut found: Vec<(Bson, &str)> =
        unplaced.iter().map(|u| (u.id.as_deref().cloned().unwrap_or(Bson::Null), u.found)).collect();
    found.sort_by_key(|(id, _)| id.as_i64());
    assert_eq!(found, vec![(Bson::Int64(5), "string"), (Bson::Int64(6), "missing")]);
    assert!(unplaced.iter().all(|u| u.field == "created_at" && u.expected == Some("date")), "{unplaced:?}");
    // Its limit bounds what it returns.
    assert_eq!(Pattern::Feed.paginator().unplaced(&db, 1).await.unwrap().len(), 1);
}

/// Walks forward; returns the ids seen and how the walk ended. At most `bound` pages.
async fn walk(
    db: &mongodb::Database,
    pattern: Pattern,
    size: u32,
    bound: usize,
) -> (Vec<i64>, Result<(), PageError>) {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..bound {
        let mut p = pattern.paginator().page_size(size);
        if let Some(c) = &cursor {
            p = p.after(c);
        }
        match p.fetch(db).await {
            Ok(page) => {
                seen.extend(page.items.iter().map(|i| i.id));
                match page.next {
                    Some(n) => cursor = Some(n),
                    None => return (seen, Ok(())),
                }
            }
            Err(e) => return (seen, Err(e)),
        }
    }
    panic!("the walk did not end in {bound} pages: {seen:?}");
}

/// A number in `range`, from the seeded generator.
fn pick<T: TryFrom<u64> + Into<i128> + Copy>(rng: &mut TestRng, range: std::ops::Range<T>) -> T {
    let (lo, hi) = (range.start.into(), range.end.into());
    let n = lo + (rng.next_u64() as i128).rem_euclid(hi - lo);
    T::try_from(n as u64).ok().unwrap_or(range.start)
}

/// One random document of author `a` or `b`, and whether it was left uncorrupted.
fn random_document(rng: &mut TestRng, id: i64, corrupt_rate: u32) -> (Document, bool) {
    let author = if pick(rng, 0..4) == 0 { "b" } else { "a" };
    let mut d = doc! {
        "_id": id,
        "author_id": author,
        "board": author,
        "created_at": DateTime::from_millis(pick(rng, 0..50) * 1000),
        "score": pick(rng, 0..4_i32),
        "rank": pick(rng, 0..4_i64),
    };
    // Harmless variations: another numeric type for a number, unknown fields, an
    // oversized array the model does not read.
    if pick(rng, 0..5) == 0 {
        d.insert("rank", Bson::Int32(pick(rng, 0..4)));
    }
    if pick(rng, 0..10) == 0 {
        d.insert("junk", (0..pick(rng, 1000..5000)).map(Bson::Int32).collect::<Vec<_>>());
    }
    if pick(rng, 0..100) >= corrupt_rate {
        return (d, true);
    }
    let field = ["_id", "author_id", "board", "created_at", "score", "rank"][pick(rng, 0..6_u32) as usize];
    let bad = match pick(rng, 0..8) {
        0 => None,
        1 => Some(Bson::Null),
        2 => Some(Bson::String("2026-01-01".into())),
        3 => Some(Bson::Boolean(true)),
        4 => Some(Bson::Document(doc! { "$gt": "" })),
        5 => Some(Bson::Array(
            (0..pick(rng, 1..3000)).map(|i| Bson::DateTime(DateTime::from_millis(i))).collect(),
        )),
        6 => Some(Bson::Double(1.5)),
        _ => Some(Bson::Int64(i64::MAX)),
    };
    match (field, bad) {
        // `_id` stays unique: another type of the same id.
        ("_id", Some(Bson::Double(_))) => {
            d.insert("_id", id as f64 + 0.5);
        }
        ("_id", _) => {
            d.insert("_id", format!("s{id}"));
        }
        (field, None) => {
            d.remove(field);
        }
        (field, Some(v)) => {
            d.insert(field, v);
        }
    }
    (d, false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_documents_written_around_the_validator_give_right_items_or_typed_errors() {
    let mut rng = docshape_test_seed::rng("paginate::adversarial");
    let seed = rng.seed();
    let (db, log) = testkit::monitored("paginate_adversarial").await.unwrap();
    // No validator on this collection: it stands for every way a document gets past
    // one (another program, `validationLevel: moderate`, a restore, a bypass).
    let raw = db.collection::<Document>(FeedItem::COLLECTION);
    // No corruption, a little, a lot: 1,200 documents per run each time.
    for corrupt_rate in [0, 2, 30] {
        raw.delete_many(doc! {}).await.unwrap();
        let mut stored: HashMap<i64, (Document, bool)> = HashMap::new();
        let mut batch = Vec::new();
        for id in 0..1200 {
            let (d, valid) = random_document(&mut rng, id, corrupt_rate);
            stored.insert(id, (d.clone(), valid));
            batch.push(d);
        }
        raw.insert_many(batch).await.unwrap();
        let all: Vec<Document> = {
            use futures_util::TryStreamExt;
            raw.find(doc! {}).await.unwrap().try_collect().await.unwrap()
        };
        assert_eq!(all.len(), 1200, "the server stored every document (seed {seed})");
        // a's documents, as each pattern's equality filter selects them.
        let of_a = |field: &str| -> Vec<&Document> {
            all.iter().filter(|d| d.get(field) == Some(&Bson::String("a".into()))).collect()
        };
        for (pattern, field) in [(Pattern::Feed, "author_id"), (Pattern::Score, "board")] {
            let selected = of_a(field);
            // The documents a walk can place: every sort value present and of the type
            // the model stores there. The others are for `unplaced` to list.
            let keys: &[SortKey] = match pattern {
                Pattern::Feed => &[("created_at", is_date), ("_id", is_number)],
                Pattern::Score => &[("score", is_number), ("rank", is_number), ("_id", is_number)],
            };
            let placeable = |d: &Document| keys.iter().all(|(k, ok)| d.get(*k).is_some_and(ok));
            let id_of = |d: &Document| d.get("_id").cloned().unwrap_or(Bson::Null);
            let (walkable, left_out): (Vec<&Document>, Vec<&Document>) =
                selected.iter().copied().partition(|d| placeable(d));
            // Clean when every placeable document is one the model reads.
            let clean = walkable
                .iter()
                .all(|d| docshape::bson_compat::from_document::<FeedItem>((*d).clone()).is_ok());
            let size = pick(&mut rng, 5..40_u32);
            let bound = selected.len() / size as usize + 3;
            // Page by page, counting commands.
            let mut seen: Vec<i64> = Vec::new();
            let mut cursor: Option<String> = None;
            let mut end = None;
            for _ in 0..bound {
                let mut p = pattern.paginator().page_size(size);
                if let Some(c) = &cursor {
                    p = p.after(c);
                }
                log.clear();
                let before = log.count();
                let outcome = p.fetch(&db).await;
                let sent = log.count() - before;
                assert_eq!(sent, 1, "a page sent {sent} commands: {:?} (seed {seed})", log.names());
                match outcome {
                    Ok(page) => {
                        assert!(page.items.len() <= size as usize);
                        for item in &page.items {
                            // The right data: what is stored, decoded.
                            let (d, _) = &stored.get(&item.id).expect("an id the test wrote");
                            let expected: FeedItem = docshape::bson_compat::from_document(d.clone()).unwrap();
                            assert_eq!(item, &expected, "seed {seed}");
                        }
                        seen.extend(page.items.iter().map(|i| i.id));
                        match page.next {
                            Some(n) => cursor = Some(n),
                            None => {
                                end = Some(Ok(()));
                                break;
                            }
                        }
                    }
                    Err(e) => {
                        // Typed, and it says something.
                        assert!(!e.to_string().is_empty());
                        end = Some(Err(e));
                        break;
                    }
                }
            }
            let end = end.unwrap_or_else(|| panic!("{pattern:?}: the walk did not end (seed {seed})"));
            let unique: HashSet<i64> = seen.iter().copied().collect();
            assert_eq!(unique.len(), seen.len(), "{pattern:?}: a document came twice (seed {seed})");
            let truth: HashSet<i64> = walkable.iter().filter_map(|d| d.get_i64("_id").ok()).collect();
            match end {
                Ok(()) => {
                    assert!(
                        clean,
                        "{pattern:?}: the walk ended without reporting a corrupt document (seed {seed})"
                    );
                    assert_eq!(unique, truth, "{pattern:?}: not every placeable document came (seed {seed})");
                }
                // A sort value that is an array matches a comparison through any of its
                // elements, so such a document comes back on every page it has an
                // element for. A page of nothing else has no position to continue from:
                // only when more of them than a page holds share one feed.
                Err(PageError::NoPosition { unplaced }) => {
                    let arrays = left_out
                        .iter()
                        .filter(|d| {
                            keys.iter().any(|(k, _)| d.get(*k).is_some_and(|v| matches!(v, Bson::Array(_))))
                        })
                        .count();
                    assert!(
                        arrays > size as usize,
                        "{pattern:?}: no position with {arrays} arrays (seed {seed})"
                    );
                    assert!(unplaced.iter().all(|u| u.found == "array"), "{unplaced:?} (seed {seed})");
                    assert!(
                        unique.is_subset(&truth),
                        "{pattern:?}: an item no page may return (seed {seed})"
                    );
                }
                Err(e) => {
                    assert!(!clean, "{pattern:?}: an error on clean data: {e} (seed {seed})");
                    assert!(matches!(e, PageError::Decode(_)), "{pattern:?}: {e} (seed {seed})");
                    assert!(
                        unique.is_subset(&truth),
                        "{pattern:?}: an item no page may return (seed {seed})"
                    );
                }
            }
            // Every document the walk cannot place is listed, and nothing else.
            let unplaced = pattern.paginator().unplaced(&db, 5_000).await.unwrap();
            let listed: HashSet<String> =
                unplaced.iter().map(|u| u.id.as_deref().cloned().unwrap_or(Bson::Null).to_string()).collect();
            let expected: HashSet<String> = left_out.iter().map(|d| id_of(d).to_string()).collect();
            assert_eq!(listed, expected, "{pattern:?}: unplaced (seed {seed})");
        }
    }
}

/// A sort key, and whether a stored value is of the type the walk compares there.
type SortKey = (&'static str, fn(&Bson) -> bool);

fn is_date(v: &Bson) -> bool {
    matches!(v, Bson::DateTime(_))
}

fn is_number(v: &Bson) -> bool {
    matches!(v, Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_))
}
