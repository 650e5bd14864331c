//! Keyset pages vs `skip` pages at depth 1, 100, 1,000 and 10,000 (20 items a page),
//! over 200,020 documents, on one server in one run. Prints the table that
//! BENCHMARKS.md records, and the keyset query's `explain` index bounds.
//!
//! Run: `cargo run --release -p docshape-examples --example bench_paginate`
//! (`MONGODB_URI` to measure a real mongod; otherwise the local SecantusDB).

#![allow(clippy::duplicated_attributes)]

use std::time::{Duration, Instant};

use bson::{doc, Bson, DateTime, Document};
use docshape::paginate::encode_token;
use docshape::Model;
use docshape_examples::fresh_database;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};

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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_bench_paginate").await?;
    docshape::sync::<Post>(&db).await?;
    let posts = Post::collection(&db);
    let started = Instant::now();
    // Ten posts a second, some sharing a timestamp, so `_id` breaks ties.
    for chunk in (0..DOCS).collect::<Vec<_>>().chunks(5_000) {
        let batch: Vec<Post> = chunk
            .iter()
            .map(|i| Post {
                id: *i,
                author_id: "u_42".into(),
                created_at: DateTime::from_millis(1_700_000_000_000 + (i / 3) * 100),
                title: format!("post {i}"),
            })
            .collect();
        posts.insert_many(&batch).await?;
    }
    println!("inserted {DOCS} documents in {:.1?}", started.elapsed());

    let pattern = &Post::ACCESS_PATTERNS[0];
    let raw = db.collection::<Document>("posts");
    println!("| depth (page) | items skipped | keyset median | skip median | skip / keyset | keys + docs examined, keyset | keys + docs examined, skip |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for depth in DEPTHS {
        let skipped = (depth - 1) * u64::from(PAGE);
        // The cursor a client holds at this depth: the item just before the page.
        let token = if skipped == 0 {
            None
        } else {
            let boundary = raw
                .find(doc! { "author_id": "u_42" })
                .sort(doc! { "created_at": -1, "_id": -1 })
                .skip(skipped - 1)
                .limit(1)
                .await?
                .try_collect::<Vec<Document>>()
                .await?;
            let b = &boundary[0];
            let values = vec![b.get("created_at").cloned().unwrap_or(Bson::Null), b.get("_id").cloned().unwrap_or(Bson::Null)];
            Some(encode_token(Post::COLLECTION, pattern, &values, None))
        };
        let mut keyset = Vec::new();
        let mut skip = Vec::new();
        let mut first_ids = (None, None);
        // Interleaved, so drift in the machine's load hits both alike.
        for _ in 0..RUNS {
            let t = Instant::now();
            let mut p = Post::posts_by_author("u_42").page_size(PAGE);
            if let Some(token) = &token {
                p = p.after(token);
            }
            let page = p.fetch(&db).await?;
            keyset.push(t.elapsed());
            first_ids.0 = page.items.first().map(|p| p.id);

            let t = Instant::now();
            let page: Vec<Post> = posts
                .find(doc! { "author_id": "u_42" })
                .sort(doc! { "created_at": -1, "_id": -1 })
                .skip(skipped)
                .limit(i64::from(PAGE))
                .await?
                .try_collect()
                .await?;
            skip.push(t.elapsed());
            first_ids.1 = page.first().map(|p| p.id);
        }
        assert_eq!(first_ids.0, first_ids.1, "both methods must return the same page");
        // The work each does, as the server counts it: independent of its speed.
        let mut keyset_find = Post::posts_by_author("u_42").page_size(PAGE);
        if let Some(token) = &token {
            keyset_find = keyset_find.after(token);
        }
        let keyset_work = examined(&db, keyset_find.find_command()?).await?;
        let skip_find = doc! {
            "find": "posts", "filter": { "author_id": "u_42" }, "sort": { "created_at": -1, "_id": -1 },
            "skip": skipped as i64, "limit": i64::from(PAGE),
        };
        let skip_work = examined(&db, skip_find).await?;
        let (k, s) = (median(keyset), median(skip));
        println!(
            "| {depth} | {skipped} | {:.2} ms | {:.2} ms | {:.2}x | {keyset_work} | {skip_work} |",
            k.as_secs_f64() * 1e3,
            s.as_secs_f64() * 1e3,
            s.as_secs_f64() / k.as_secs_f64()
        );
    }

    // The keyset query at depth 1,000, as the server plans it.
    let boundary = raw.find(doc! { "author_id": "u_42" }).sort(doc! { "created_at": -1, "_id": -1 }).skip(19_999).limit(1).await?.try_collect::<Vec<Document>>().await?;
    let b = &boundary[0];
    let values = vec![b.get("created_at").cloned().unwrap_or(Bson::Null), b.get("_id").cloned().unwrap_or(Bson::Null)];
    let token = encode_token(Post::COLLECTION, pattern, &values, None);
    let find = Post::posts_by_author("u_42").page_size(PAGE).after(&token).find_command()?;
    let explain = db.run_command(doc! { "explain": find.clone(), "verbosity": "executionStats" }).await?;
    println!("\nkeyset find at depth 1,000: {find}");
    let plan = explain.get_document("queryPlanner").and_then(|q| q.get_document("winningPlan")).cloned().unwrap_or_default();
    println!("winning plan: {plan}");
    if let Ok(stats) = explain.get_document("executionStats") {
        println!(
            "executionStats: nReturned {:?}, totalKeysExamined {:?}, totalDocsExamined {:?}",
            stats.get("nReturned"),
            stats.get("totalKeysExamined"),
            stats.get("totalDocsExamined")
        );
    }
    Ok(())
}
