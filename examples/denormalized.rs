//! Denormalized copies: patterns-en's order and posts on a real server.
//!
//! The order keeps the user's name as a historical snapshot (`refresh = "never"`);
//! posts copy their author's name, refreshed by an async worker within five minutes
//! (`refresh = "async", max_stale = "5m"`). A user with 2,000 posts is renamed: the
//! order keeps the old name, the posts' copies are queued, a worker drains the queue,
//! and the lag is measured against `max_stale`.
//!
//! Then another program (a plain driver client, not docshape) renames the user
//! again: a watcher follows `users` with a change stream, queues the posts' refresh,
//! and a worker running beside it rewrites them.
//!
//! Run: `cargo run -p docshape-examples --example denormalized`.

#![allow(clippy::duplicated_attributes)]

use std::time::Instant;

use docshape::bson::{doc, DateTime};
use docshape::denormalized::{self, Watcher, Worker};
use docshape::refs::Ref;
use docshape::relation;
use docshape::{Embedded, Model};
use docshape_examples::fresh_database;
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[serde(rename = "_id")]
    id: String,
    #[validate(min_length = 1, max_length = 100)]
    name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct LineItem {
    sku: String,
    qty: i32,
    unit_price_cents: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "orders")]
struct Order {
    #[serde(rename = "_id")]
    id: String,
    #[reference(reason = "user updates independently")]
    user_id: Ref<User>,
    #[denormalized(
        from = "User::name",
        via = "user_id",
        refresh = "never",
        reason = "historical snapshot is correct here"
    )]
    user_name: String,
    status: String,
    #[embed(max = 50, reason = "1:few, read and updated together")]
    items: Vec<LineItem>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1))]
#[access(name = "posts_by_user", filter(author_id), sort(created_at = -1), fields(title, User::name))]
struct Post {
    #[serde(rename = "_id")]
    id: String,
    #[reference(reason = "unbounded growth: the post references its author")]
    author_id: Ref<User>,
    #[denormalized(
        from = "User::name",
        via = "author_id",
        refresh = "async",
        max_stale = "5m",
        reason = "name may be stale ≤5 min"
    )]
    author_name: String,
    title: String,
    created_at: DateTime,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_denormalized").await?;
    docshape::sync_all(&db, Default::default()).await?;

    User::collection(&db).insert_one(User { id: "u_42".into(), name: "Alice".into() }).await?;
    let mut order = Order {
        id: "ord_81".into(),
        user_id: Ref::new("u_42".into()),
        user_name: String::new(),
        status: "shipped".into(),
        items: vec![LineItem { sku: "A-1".into(), qty: 2, unit_price_cents: 1250 }],
    };
    relation::insert_one(&db, &mut order).await?;
    println!("\norder {} written with user_name {:?} (copied at write time)", order.id, order.user_name);

    let posts: Vec<Post> = (0..2000)
        .map(|i| Post {
            id: format!("p_{i}"),
            author_id: Ref::new("u_42".into()),
            author_name: "Alice".into(),
            title: format!("post {i}"),
            created_at: DateTime::from_millis(1_785_000_000_000 + i),
        })
        .collect();
    Post::collection(&db).insert_many(&posts).await?;
    println!("2,000 posts by u_42");

    let renamed =
        denormalized::update_one::<User>(&db, "u_42", doc! { "$set": { "name": "Alicia" } }).await?;
    let at = Instant::now();
    println!(
        "renamed u_42: {} job(s) queued; lag now: {}",
        renamed.jobs_enqueued(),
        denormalized::lag(&db).await?.pending
    );
    let report = Worker::new(&db).batch(250).run_until_empty().await?;
    let converged = at.elapsed();
    let stale = Post::collection(&db).count_documents(doc! { "author_name": { "$ne": "Alicia" } }).await?;
    let order =
        Order::collection(&db).find_one(doc! { "_id": "ord_81" }).await?.ok_or("the order is gone")?;
    println!(
        "worker: {} job(s), {} posts rewritten in {:.1?} (max_stale 5m), {stale} stale left; the order still says {:?}",
        report.jobs, report.documents_updated, converged, order.user_name
    );
    if stale != 0 || order.user_name != "Alice" {
        return Err("the copies did not converge as declared".into());
    }

    renamed_by_another_client(&db).await
}

/// A rename made by another program reaches the copies through a watcher and a worker.
async fn renamed_by_another_client(
    db: &docshape::mongodb::Database,
) -> Result<(), Box<dyn std::error::Error>> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let watcher = Watcher::new(db).name("example");
    let watching = tokio::spawn(async move {
        watcher
            .run_until(async {
                let _ = stopped.await;
            })
            .await
    });
    let worker = Worker::new(db).id("example-worker");
    let working = tokio::spawn(async move { worker.run(std::time::Duration::from_millis(50)).await });
    // Its first start reconciles the copies, then saves its position: from there on,
    // no change is missed.
    let positions = db.collection::<docshape::bson::Document>(denormalized::WATCH_POSITIONS);
    while positions.find_one(doc! {}).await?.is_none() {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let other = testkit::server()?.client().await?.database(db.name());
    other
        .collection::<docshape::bson::Document>("users")
        .update_one(doc! { "_id": "u_42" }, doc! { "$set": { "name": "Alice B." } })
        .await?;
    let at = Instant::now();
    println!("\nanother client renamed u_42 to \"Alice B.\" with a plain update_one");
    loop {
        let stale =
            Post::collection(db).count_documents(doc! { "author_name": { "$ne": "Alice B." } }).await?;
        if stale == 0 {
            break;
        }
        if at.elapsed() > std::time::Duration::from_secs(300) {
            return Err(format!("{stale} posts still stale after max_stale").into());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let lag = denormalized::lag(db).await?;
    println!(
        "the watcher queued it and the worker rewrote 2,000 posts in {:.1?}; watcher behind by {:?}, {} job(s) pending",
        at.elapsed(),
        lag.watchers.first().and_then(|w| w.behind),
        lag.pending
    );
    working.abort();
    let _ = stop.send(());
    let report = watching.await??;
    println!("watcher: {} change(s), {} job(s) enqueued", report.changes, report.jobs_enqueued);
    Ok(())
}
