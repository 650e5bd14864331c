//! The one refresh path, through every writer: the versioned writers and the write
//! rows settle a sync copy under concurrent writers of the same source as
//! `update_one` does, and a copy document the server refuses is skipped and named
//! while the others are written, through `update_one`, the write hook and the worker.

use docshape::access::UpdateError;
use docshape::bson::{doc, Bson, Document};
use docshape::denormalized::{self, Atomicity, CopyError, UpdateOptions, Worker};
use docshape::refs::Ref;
use docshape::versioning::{self, RetryPolicy, VersionError};
use docshape::Model;
use docshape_testkit as testkit;
use mongodb::Database;
use serde::{Deserialize, Serialize};

use super::{count, queue};

/// A versioned source with a write row: both writers reach the copies through the
/// write hook.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "bands", version = 1)]
#[access(name = "rename_band", filter(_id), update(set(name)))]
pub struct Band {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[schema_version]
    pub schema_version: i32,
}

/// A sync copy of the band's name.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "gigs")]
#[index(keys(band_id))]
pub struct Gig {
    #[serde(rename = "_id")]
    pub id: i64,
    pub band_id: Ref<Band>,
    #[denormalized(from = "Band::name", via = "band_id", refresh = "sync")]
    pub band_name: String,
}

/// An async copy of the band's name.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "posters")]
#[index(keys(band_id))]
pub struct Poster {
    #[serde(rename = "_id")]
    pub id: i64,
    pub band_id: Ref<Band>,
    #[denormalized(from = "Band::name", via = "band_id", refresh = "async", max_stale = "5m")]
    pub band_name: String,
}

const GIGS: &str = "gigs.band_name";
const POSTERS: &str = "posters.band_name";

async fn setup_bands(hint: &str) -> testkit::TestDb {
    let db = testkit::database(hint).await.unwrap();
    docshape::sync::<Band>(&db).await.unwrap();
    docshape::sync::<Gig>(&db).await.unwrap();
    docshape::sync::<Poster>(&db).await.unwrap();
    db
}

/// A band `id` named `name`, with `copies` gigs and posters (ids `first..`) that copy it.
async fn band_with_copies(db: &Database, id: &str, name: &str, first: i64, copies: i64) {
    db.collection::<Document>("bands")
        .insert_one(doc! { "_id": id, "name": name, "schema_version": 1 })
        .await
        .unwrap();
    for collection in ["gigs", "posters"] {
        db.collection::<Document>(collection)
            .insert_many((first..first + copies).map(|i| doc! { "_id": i, "band_id": id, "band_name": name }))
            .await
            .unwrap();
    }
}

async fn band_name(db: &Database, id: &str) -> String {
    let band = db.collection::<Document>("bands").find_one(doc! { "_id": id }).await.unwrap().unwrap();
    band.get_str("name").unwrap().to_owned()
}

async fn copy_name(db: &Database, collection: &str, id: i64) -> String {
    let d = db.collection::<Document>(collection).find_one(doc! { "_id": id }).await.unwrap().unwrap();
    d.get_str("band_name").unwrap().to_owned()
}

/// Which docshape writer renames the band.
#[derive(Clone, Copy, Debug)]
enum Writer {
    Versioned,
    WriteRow,
}

impl Writer {
    async fn rename(self, db: &Database, id: &str, name: String) {
        match self {
            Writer::Versioned => versioning::update_one::<Band>(
                db,
                id,
                doc! { "$set": { "name": name } },
                RetryPolicy::default(),
            )
            .await
            .map(drop)
            .unwrap(),
            Writer::WriteRow => Band::rename_band(id.to_owned(), name).run(db).await.map(drop).unwrap(),
        }
    }
}

/// Eight writers rename one band at once, five times each, in several rounds; after
/// each round every sync copy holds the band's last name. The write hook settles: it
/// reads the source again after writing the copies and writes again what moved. (A
/// hook that read the source once could write an older name after a newer one.)
async fn concurrent_writers_settle(hint: &str, writer: Writer) {
    const ROUNDS: usize = 3;
    const WRITERS: usize = 8;
    const RENAMES: usize = 2;
    // Enough copies that writing them takes several of the server's turns (the
    // batched writes of a hook without settling take two passes), so that writers
    // interleave between reading the source and writing the copies.
    const GIG_COUNT: i64 = 1200;
    let db = setup_bands(hint).await;
    band_with_copies(&db, "b1", "start", 0, GIG_COUNT).await;
    for round in 0..ROUNDS {
        let mut tasks = Vec::new();
        for w in 0..WRITERS {
            let db = db.clone();
            tasks.push(tokio::spawn(async move {
                for n in 0..RENAMES {
                    writer.rename(&db, "b1", format!("round {round} writer {w} rename {n}")).await;
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let last = band_name(&db, "b1").await;
        let fresh = count(&db, "gigs", doc! { "band_id": "b1", "band_name": &last }).await;
        assert_eq!(fresh, GIG_COUNT as u64, "{writer:?}, round {round}: the copies do not all hold {last:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_versioned_writers_leave_the_copy_equal_to_the_source() {
    concurrent_writers_settle("refresh_settle_versioned", Writer::Versioned).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_write_rows_leave_the_copy_equal_to_the_source() {
    concurrent_writers_settle("refresh_settle_row", Writer::WriteRow).await;
}

/// A validator that refuses a copy document marked `blocked` unless it holds `old`,
/// so that a rename makes that one document, and only it, invalid.
async fn block_one(db: &Database, collection: &str, id: i64) {
    db.collection::<Document>(collection)
        .update_one(doc! { "_id": id }, doc! { "$set": { "blocked": true } })
        .await
        .unwrap();
    db.run_command(doc! {
        "collMod": collection,
        "validator": { "$or": [ { "blocked": { "$exists": false } }, { "band_name": "old" } ] },
        "validationLevel": "strict",
    })
    .await
    .unwrap();
}

/// The refused documents an error names, as `(copy, _id)`, each checked to carry the
/// server's reason.
fn refused(error: &CopyError, band: &str) -> Vec<(String, Bson)> {
    let CopyError::Refused { id, documents } = error else { panic!("not a refusal: {error:?}") };
    assert_eq!(id, &Bson::from(band), "{error}");
    for d in documents {
        assert!(d.reason.contains("121") || d.reason.contains("validation"), "{d:?}");
    }
    documents.iter().map(|d| (d.copy.clone(), d.id.clone())).collect()
}

/// `update_one` without a transaction: the refused gig is named with its `_id`, every
/// other gig is written, and the async copy's job is still enqueued. (In a
/// transaction a refusal still writes nothing: that is the transaction's point.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_copy_document_does_not_stop_update_one() {
    let db = setup_bands("refresh_refused_update").await;
    band_with_copies(&db, "b1", "old", 0, 6).await;
    block_one(&db, "gigs", 3).await;
    let sequential = UpdateOptions::default().atomicity(Atomicity::Sequential);
    let err =
        denormalized::update_one_with::<Band>(&db, "b1", doc! { "$set": { "name": "new" } }, &sequential)
            .await
            .unwrap_err();
    assert_eq!(refused(&err, "b1"), [(GIGS.to_owned(), Bson::Int64(3))]);
    assert!(err.to_string().contains(GIGS), "{err}");
    assert_eq!(band_name(&db, "b1").await, "new");
    for i in [0, 1, 2, 4, 5] {
        assert_eq!(copy_name(&db, "gigs", i).await, "new", "gig {i}");
    }
    assert_eq!(copy_name(&db, "gigs", 3).await, "old");
    let jobs = queue(&db).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].get_document("_id").unwrap().get_str("copy").unwrap(), POSTERS);

    // In a transaction: nothing is written.
    let err =
        denormalized::update_one::<Band>(&db, "b1", doc! { "$set": { "name": "newer" } }).await.unwrap_err();
    assert!(matches!(err, CopyError::Copy { source_updated: false, .. }), "{err:?}");
    assert_eq!(band_name(&db, "b1").await, "new");
}

/// The write hook, behind a versioned writer and a write row: the source is written,
/// the refused gig is named, the others follow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_copy_document_does_not_stop_the_write_hook() {
    let db = setup_bands("refresh_refused_hook").await;
    band_with_copies(&db, "b1", "old", 0, 6).await;
    block_one(&db, "gigs", 2).await;

    let err =
        versioning::update_one::<Band>(&db, "b1", doc! { "$set": { "name": "v" } }, RetryPolicy::default())
            .await
            .unwrap_err();
    let VersionError::Copies(err) = err else { panic!("{err:?}") };
    assert_eq!(refused(&err, "b1"), [(GIGS.to_owned(), Bson::Int64(2))]);
    assert_eq!(band_name(&db, "b1").await, "v");
    for i in [0, 1, 3, 4, 5] {
        assert_eq!(copy_name(&db, "gigs", i).await, "v", "gig {i}");
    }
    assert_eq!(copy_name(&db, "gigs", 2).await, "old");

    let err = Band::rename_band("b1".to_owned(), "row".to_owned()).run(&db).await.unwrap_err();
    let UpdateError::AfterWrite(err) = err else { panic!("{err:?}") };
    assert_eq!(refused(&err, "b1"), [(GIGS.to_owned(), Bson::Int64(2))]);
    assert_eq!(band_name(&db, "b1").await, "row");
    assert_eq!(count(&db, "gigs", doc! { "band_name": "row" }).await, 5);
    assert_eq!(copy_name(&db, "gigs", 2).await, "old");
}

/// The worker: the other posters are written, the job fails naming the refused
/// poster, and is recorded on the job with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_copy_document_fails_its_job_after_the_others_are_written() {
    let db = setup_bands("refresh_refused_worker").await;
    band_with_copies(&db, "b1", "old", 0, 6).await;
    block_one(&db, "posters", 4).await;
    versioning::update_one::<Band>(&db, "b1", doc! { "$set": { "name": "w" } }, RetryPolicy::default())
        .await
        .unwrap();
    // Batches of two: the refusal falls in the middle batch.
    let report = Worker::new(&db).only([POSTERS]).batch(2).run_until_empty().await.unwrap();
    assert_eq!((report.jobs, report.failures.len()), (0, 1), "{report:?}");
    assert_eq!(report.documents_updated, 5, "{report:?}");
    let failure = &report.failures[0];
    assert_eq!((failure.copy.as_str(), &failure.id), (POSTERS, &Bson::from("b1")));
    assert_eq!(refused(&failure.error, "b1"), [(POSTERS.to_owned(), Bson::Int64(4))]);
    for i in [0, 1, 2, 3, 5] {
        assert_eq!(copy_name(&db, "posters", i).await, "w", "poster {i}");
    }
    assert_eq!(copy_name(&db, "posters", 4).await, "old");
    let left = queue(&db).await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].get_i64("failures").unwrap(), 1);
    let recorded = left[0].get_str("last_error").unwrap();
    assert!(recorded.contains(POSTERS) && recorded.contains(" 4:"), "{recorded}");
}
