//! Keyset pages vs `skip` pages at depth 1, 100, 1,000 and 10,000 (20 items a page),
//! over 200,020 documents, on one server in one run. Prints the tables that
//! BENCHMARKS.md records, and the keyset queries' `explain` plans.
//!
//! Two feeds: sorted by `created_at` with `_id` breaking ties (the seed's), whose page
//! filter needs an `$or`; and sorted by `_id` alone, whose page filter is one bound.
//!
//! Run: `cargo run --release -p docshape-examples --example bench_paginate`
//! (`MONGODB_URI` to measure a real mongod; otherwise the local SecantusDB).

#![allow(clippy::duplicated_attributes)]

use std::time::{Duration, Instant};

use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::paginate::{sort_keys, Paginator};
use docshape::Model;
use docshape_examples::fresh_database;
use futures_util::TryStreamExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The seed's feed: newest first, `_id` breaking timestamp ties.
#[derive(Debug, Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1, _id = -1))]
#[access(name = "posts_by_author", filter(author_id), sort(created_at = -1), paginate)]
struct Post {
    #[serde(rename = "_id")]
    id: i64,
    author_id: String,
    created_at: DateTime,
    title: String,
}

/// The same posts in a collection paged by `_id` alone (ids that grow with time, as
/// ObjectIds do).
#[derive(Debug, Serialize, Deserialize, Model)]
#[model(collection = "posts_by_id")]
#[index(keys(author_id, _id = -1))]
#[access(name = "newest_by_id", filter(author_id), sort(_id = -1), paginate)]
struct PostById {
    #[serde(rename = "_id")]
    id: i64,
    author_id: String,
    created_at: DateTime,
    title: String,
}

const PAGE: u32 = 20;
const DEPTHS: [u64; 4] = [1, 100, 1_000, 10_000];
const DOCS: i64 = 200_020;
const RUNS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// `totalKeysExamined + totalDocsExamined` of a find, from `explain`.
async fn examined(db: &mongodb::Database, find: Document) -> Result<String, Box<dyn std::error::Error>> {
    let explain = db.run_command(doc! { "explain": find, "verbosity": "executionStats" }).await?;
    let stats = explain.get_document("executionStats").cloned().unwrap_or_default();
    let n = |k: &str| stats.get(k).and_then(|v| v.as_i64().or(v.as_i32().map(i64::from))).unwrap_or(-1);
    Ok(format!("{} + {}", n("totalKeysExamined"), n("totalDocsExamined")))
}

async fn fill(db: &mongodb::Database, collection: &str) -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let raw = db.collection::<Document>(collection);
    for chunk in (0..DOCS).collect::<Vec<_>>().chunks(5_000) {
        // Ten posts a second, three sharing each timestamp, so `_id` breaks ties.
        let batch: Vec<Document> = chunk
            .iter()
            .map(|i| {
                doc! {
                    "_id": *i, "author_id": "u_42",
                    "created_at": DateTime::from_millis(1_700_000_000_000 + (i / 3) * 100),
                    "title": format!("post {i}"),
                }
            })
            .collect();
        raw.insert_many(batch).await?;
    }
    println!("inserted {DOCS} documents into {collection} in {:.1?}", started.elapsed());
    Ok(())
}

/// One table: each depth, keyset vs skip, interleaved runs.
async fn table<T: Model + DeserializeOwned + Send + Sync + 'static>(
    db: &mongodb::Database,
    paginator: fn() -> Paginator<T>,
) -> Result<(), Box<dyn std::error::Error>> {
    let pattern = &T::ACCESS_PATTERNS[0];
    let keys = sort_keys(pattern);
    let sort: Document = keys.iter().map(|(f, k)| ((*f).to_owned(), k.to_bson())).collect();
    let raw = db.collection::<Document>(T::COLLECTION);
    let token_at = |boundary: &Document| {
        let values: Vec<Bson> =
            keys.iter().map(|(f, _)| boundary.get(*f).cloned().unwrap_or(Bson::Null)).collect();
        paginator().token_at(db.name(), &values).expect("the equality values serialize")
    };
    println!("\n{} (`{}`), {PAGE} a page:\n", T::COLLECTION, pattern.name);
    println!("| depth (page) | items skipped | keyset median | skip median | skip / keyset | keys + docs examined, keyset | keys + docs examined, skip |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut plan_at_1000 = None;
    for depth in DEPTHS {
        let skipped = (depth - 1) * u64::from(PAGE);
        // The cursor a client holds at this depth: the item just before the page.
        let token = if skipped == 0 {
            None
        } else {
            let boundary: Vec<Document> = raw
                .find(doc! { "author_id": "u_42" })
                .sort(sort.clone())
                .skip(skipped - 1)
                .limit(1)
                .await?
                .try_collect()
                .await?;
            Some(token_at(&boundary[0]))
        };
        let keyset_page = || {
            let p = paginator().page_size(PAGE);
            match &token {
                Some(t) => p.after(t),
                None => p,
            }
        };
        let skip_find = doc! {
            "find": T::COLLECTION, "filter": { "author_id": "u_42" }, "sort": sort.clone(),
            "skip": skipped as i64, "limit": i64::from(PAGE),
        };
        let (mut keyset, mut skip) = (Vec::new(), Vec::new());
        // Interleaved, so drift in the machine's load hits both alike.
        for _ in 0..RUNS {
            let t = Instant::now();
            let page = keyset_page().fetch(db).await?;
            keyset.push(t.elapsed());
            assert_eq!(page.items.len(), PAGE as usize);

            let t = Instant::now();
            let docs: Vec<Document> = raw
                .find(doc! { "author_id": "u_42" })
                .sort(sort.clone())
                .skip(skipped)
                .limit(i64::from(PAGE))
                .await?
                .try_collect()
                .await?;
            skip.push(t.elapsed());
            assert_eq!(docs.len(), PAGE as usize);
        }
        let keyset_find = keyset_page().find_command(db.name())?;
        if depth == 1_000 {
            plan_at_1000 = Some(keyset_find.clone());
        }
        let keyset_work = examined(db, keyset_find).await?;
        let skip_work = examined(db, skip_find).await?;
        let (k, s) = (median(keyset), median(skip));
        println!(
            "| {depth} | {skipped} | {:.2} ms | {:.2} ms | {:.2}x | {keyset_work} | {skip_work} |",
            k.as_secs_f64() * 1e3,
            s.as_secs_f64() * 1e3,
            s.as_secs_f64() / k.as_secs_f64()
        );
    }
    if let Some(find) = plan_at_1000 {
        let explain = db.run_command(doc! { "explain": find.clone(), "verbosity": "queryPlanner" }).await?;
        let plan = explain
            .get_document("queryPlanner")
            .and_then(|q| q.get_document("winningPlan"))
            .cloned()
            .unwrap_or_default();
        println!("\nkeyset find at depth 1,000: {find}\nwinning plan: {plan}");
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_bench_paginate").await?;
    docshape::sync::<Post>(&db).await?;
    docshape::sync::<PostById>(&db).await?;
    fill(&db, Post::COLLECTION).await?;
    fill(&db, PostById::COLLECTION).await?;
    table::<Post>(&db, || Post::posts_by_author("u_42")).await?;
    table::<PostById>(&db, || PostById::newest_by_id("u_42")).await?;
    Ok(())
}
