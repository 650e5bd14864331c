//! Schema versioning, the patterns-en way: v1 stored `name`, v2 stores `full_name`.
//!
//! 1. Old documents stay as they are; every reader sees v2 (`readUser` in the seed).
//! 2. The next write of an old document persists the v2 shape, with a compare-and-set
//!    so a concurrent writer's change is never lost.
//! 3. The validator admits both versions until the backfill is done.
//! 4. The backfill upgrades the rest in batches (a progress bar on a terminal), and the
//!    counts say when the v1 reader can be retired ("once v1 read-rate ≈ 0").
//!
//! Run: `cargo run -p docshape-examples --example versioning`.

use docshape::bson::{doc, Document};
use docshape::versioning::{self, BackfillOptions, RetryPolicy};
use docshape::{Embedded, Model};
use docshape_examples::{fresh_database, why};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, Model)]
#[model(collection = "users", version = 2, migrate(v1 = UserV1))]
struct User {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
    logins: i64,
    #[schema_version]
    schema_version: i32,
}

/// The v1 shape, as the old code wrote it: no version field.
#[derive(Serialize, Deserialize, Embedded)]
struct UserV1 {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    logins: i64,
}

impl From<UserV1> for User {
    fn from(v1: UserV1) -> Self {
        User { id: v1.id, full_name: v1.name, logins: v1.logins, schema_version: 2 }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_versioning").await?;
    println!("{}", docshape::sync::<User>(&db).await?);
    let users = db.collection::<Document>("users");
    let old: Vec<Document> =
        (1..=2_000_i64).map(|id| doc! { "_id": id, "name": format!("User {id}"), "logins": 0_i64 }).collect();
    users.insert_many(old).await?;
    println!("== stored 2,000 v1 documents: {}", versioning::version_counts::<User>(&db).await?);

    println!("== 1. readers see v2");
    let first = versioning::find_one::<User>(&db, doc! { "_id": 1_i64 }).await?.ok_or("no user 1")?;
    println!("   stored at v{}, read as {:?}", first.stored_version, first.value);

    println!("== 2. the next write persists v2");
    let outcome =
        versioning::update_one::<User>(&db, &1_i64, doc! { "$inc": { "logins": 1 } }, RetryPolicy::default())
            .await?;
    println!("   update_one: {outcome:?}");
    println!("   stored now: {}", users.find_one(doc! { "_id": 1_i64 }).await?.ok_or("gone")?);

    println!("== 3. the validator admits v1 and v2 shapes, nothing else");
    users.insert_one(doc! { "_id": 5_000_i64, "name": "Old writer", "logins": 0_i64 }).await?;
    println!("   admitted a v1 document from code not yet upgraded");
    match users
        .insert_one(doc! { "_id": 5_001_i64, "name": "Wrong", "logins": 0_i64, "schema_version": 2 })
        .await
    {
        Ok(_) => return Err("a v1 shape claiming v2 was admitted".into()),
        Err(e) => println!("   rejected a v1 shape claiming v2: {}", why(&e)),
    }

    println!("== 4. backfill the rest");
    let report = versioning::backfill::<User>(&db, BackfillOptions::default().batch_size(250)).await?;
    println!(
        "   upgraded {}, raced {}, failed {}; counts now {}",
        report.progress.upgraded, report.progress.raced, report.progress.failed, report.counts
    );
    println!("   reads by stored version in this process: {:?}", versioning::reads::<User>());
    if report.counts.older_than(2) > 0 {
        return Err(format!("old documents remain: {}", report.counts).into());
    }
    println!("== done: every document is v2; the v1 step can go once no old writer remains");
    Ok(())
}
