//! A versioned source: the summary reads documents as stored, so a field version 2
//! renamed counts from a document's upgrade on; a versioned save in a transaction
//! applies the summary in it.

use docshape::denormalized::Worker;
use docshape::summary;
use docshape::versioning;

use super::*;

/// Version 2 of a tally: version 1 called `cents` `amount`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sm_tallies", version = 2, migrate(v1 = TallyV1), transactions)]
pub struct Tally {
    #[serde(rename = "_id")]
    pub id: String,
    pub seller_id: String,
    pub cents: i64,
    #[schema_version]
    pub schema_version: i32,
}

/// Version 1, as stored: no version field.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct TallyV1 {
    #[serde(rename = "_id")]
    pub id: String,
    pub seller_id: String,
    pub amount: i64,
}

impl From<TallyV1> for Tally {
    fn from(v1: TallyV1) -> Self {
        Tally { id: v1.id, seller_id: v1.seller_id, cents: v1.amount, schema_version: 2 }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sm_tally_totals")]
#[summary(of = Tally, group(seller_id), refresh = "sync")]
pub struct TallyTotals {
    #[serde(rename = "_id")]
    pub seller_id: String,
    #[summary(count)]
    pub tallies: i64,
    #[summary(sum = "cents")]
    pub cents: i64,
}

async fn totals(db: &Database) -> (i64, i64) {
    let d = one(db, "sm_tally_totals", "a").await.unwrap();
    (d.get_i64("tallies").unwrap(), d.get_i64("cents").unwrap())
}

/// A current tally `t2` (5 cents) and a version 1 one `t1` (`amount: 4`) written
/// before the summary existed, brought in by a resync: it counts, but its `amount` is
/// not `cents` until it is upgraded. Returns the summary's spec.
async fn old_and_current(db: &Database) -> &'static SummarySpec {
    let current = Tally { id: "t2".into(), seller_id: "a".into(), cents: 5, schema_version: 2 };
    versioning::insert_one(db, &current).await.unwrap();
    assert_eq!(totals(db).await, (1, 5));
    db.collection::<Document>("sm_tallies")
        .insert_one(doc! { "_id": "t1", "seller_id": "a", "amount": 4_i64 })
        .await
        .unwrap();
    let spec = summary::summary("sm_tally_totals").unwrap();
    summary::resync(db, spec).await.unwrap();
    Worker::new(db).run_until_empty().await.unwrap();
    assert_eq!(totals(db).await, (2, 5));
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_versioned_source_counts_a_moved_field_from_its_upgrade_and_saves_in_a_transaction() {
    let db = testkit::database("summary_versioned").await.unwrap();
    let spec = old_and_current(&db).await;

    // A versioned save in a transaction writes the version 2 shape, and the summary
    // in the same transaction: read in it before the commit.
    let loaded = versioning::find_one::<Tally>(&db, doc! { "_id": "t1" }).await.unwrap().unwrap();
    let loaded = &tokio::sync::Mutex::new(loaded);
    let d = &db;
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move {
            loaded.lock().await.save_in_session(d, tx).await?;
            let inside = d
                .collection::<Document>("sm_tally_totals")
                .find_one(doc! { "_id": "a" })
                .session(&mut **tx)
                .await
                .expect("a read in the transaction")
                .unwrap();
            assert_eq!(inside.get_i64("cents").unwrap(), 9);
            Ok::<_, versioning::VersionError>(())
        })
    })
    .await
    .unwrap();
    assert_eq!(totals(&db).await, (2, 9));
    assert!(summary::check(&db, spec).await.unwrap().drifted.is_empty());
}

/// `versioning::insert_one_in`: in the caller's transaction, the document and its
/// summary commit together, or neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_versioned_insert_in_a_transaction_commits_with_its_summary() {
    let db = testkit::database("summary_versioned_insert").await.unwrap();
    let tally = |id: &str, cents| Tally { id: id.into(), seller_id: "a".into(), cents, schema_version: 2 };
    let mut session = db.client().start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    versioning::insert_one_in(&db, &tally("t1", 3), &mut session).await.unwrap();
    session.abort_transaction().await.unwrap();
    assert!(one(&db, "sm_tally_totals", "a").await.is_none(), "aborted with the insert");
    session.start_transaction().await.unwrap();
    versioning::insert_one_in(&db, &tally("t1", 3), &mut session).await.unwrap();
    versioning::insert_one_in(&db, &tally("t2", 4), &mut session).await.unwrap();
    assert!(one(&db, "sm_tally_totals", "a").await.is_none(), "not visible before the commit");
    session.commit_transaction().await.unwrap();
    assert_eq!(totals(&db).await, (2, 7));
    // No transaction running: applied right after the insert.
    versioning::insert_one_in(&db, &tally("t3", 1), &mut session).await.unwrap();
    assert_eq!(totals(&db).await, (3, 8));
    let spec = summary::summary("sm_tally_totals").unwrap();
    assert!(summary::check(&db, spec).await.unwrap().drifted.is_empty());
}

/// A versioned save outside a transaction runs in one of its own with its sync
/// summary, +2 commands: a summary group that cannot be written (another program stored a total
/// that is not a number) fails the save and leaves the document as it was; repaired,
/// the same save goes through with its summary, in one commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_versioned_save_outside_a_transaction_commits_with_its_summary() {
    let (db, log) = testkit::monitored("summary_versioned_own").await.unwrap();
    let tally = Tally { id: "t1".into(), seller_id: "a".into(), cents: 5, schema_version: 2 };
    versioning::insert_one(&db, &tally).await.unwrap();
    assert_eq!(totals(&db).await, (1, 5));

    let groups = db.collection::<Document>("sm_tally_totals");
    groups.update_one(doc! { "_id": "a" }, doc! { "$set": { "cents": "not a number" } }).await.unwrap();
    let mut loaded = versioning::find_one::<Tally>(&db, doc! { "_id": "t1" }).await.unwrap().unwrap();
    loaded.value.cents = 7;
    let refused = loaded.save(&db).await.unwrap_err();
    // Reported as nothing written: the transaction was aborted with the summary.
    let unwritten = |e: &versioning::VersionError| {
        matches!(e, versioning::VersionError::Refused(c)
            if matches!(**c, docshape::denormalized::CopyError::Copy { source_updated: false, .. }))
    };
    assert!(unwritten(&refused), "{refused:?}");
    let stored =
        db.collection::<Document>("sm_tallies").find_one(doc! { "_id": "t1" }).await.unwrap().unwrap();
    assert_eq!(stored.get_i64("cents").unwrap(), 5, "saved without its summary: {stored}");

    groups.update_one(doc! { "_id": "a" }, doc! { "$set": { "cents": 5_i64 } }).await.unwrap();
    let mut loaded = versioning::find_one::<Tally>(&db, doc! { "_id": "t1" }).await.unwrap().unwrap();
    loaded.value.cents = 7;
    log.clear();
    loaded.save(&db).await.unwrap();
    let names: Vec<String> = log.take().into_iter().map(|(n, _)| n).collect();
    // The save's compare-and-set, then the summary from the document as read and the
    // update sent (the compare-and-set matched: it was that document), the commit.
    assert_eq!(names, ["update", "bulkWrite", "commitTransaction"]);
    assert_eq!(totals(&db).await, (1, 7));
    // The value is what is stored: saved again unchanged, it still matches.
    loaded.save(&db).await.unwrap();

    // `versioning::update_one` and `modify`: the same, each in one transaction.
    log.clear();
    versioning::update_one::<Tally>(&db, "t1", doc! { "$inc": { "cents": 3_i64 } }, Default::default())
        .await
        .unwrap();
    let names: Vec<String> = log.take().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["findAndModify", "bulkWrite", "commitTransaction"]);
    assert_eq!(totals(&db).await, (1, 10));
    versioning::modify::<Tally>(&db, "t1", Default::default(), |t| t.cents += 1).await.unwrap();
    assert_eq!(totals(&db).await, (1, 11));
    groups.update_one(doc! { "_id": "a" }, doc! { "$set": { "cents": "x" } }).await.unwrap();
    let refused =
        versioning::update_one::<Tally>(&db, "t1", doc! { "$inc": { "cents": 1_i64 } }, Default::default());
    let refused = refused.await.unwrap_err();
    assert!(unwritten(&refused), "{refused:?}");
    let refused = versioning::modify::<Tally>(&db, "t1", Default::default(), |t| t.cents += 1);
    let refused = refused.await.unwrap_err();
    assert!(unwritten(&refused), "{refused:?}");
    let stored =
        db.collection::<Document>("sm_tallies").find_one(doc! { "_id": "t1" }).await.unwrap().unwrap();
    assert_eq!(stored.get_i64("cents").unwrap(), 11, "written without its summary: {stored}");
    groups.update_one(doc! { "_id": "a" }, doc! { "$set": { "cents": 11_i64 } }).await.unwrap();
    let spec = summary::summary("sm_tally_totals").unwrap();
    assert!(summary::check(&db, spec).await.unwrap().drifted.is_empty());
}

/// A backfill upgrades each document by a versioned save, which runs with the sync
/// summary in one transaction of its own: an upgrade whose summary cannot be written
/// (another program stored a total that is not a number) is a failure of the run and
/// leaves the document at its old version; repaired, the next run upgrades it, and the
/// summary counts the moved field from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_upgrades_a_document_with_its_summary_or_not_at_all() {
    let db = testkit::database("summary_versioned_backfill").await.unwrap();
    let spec = old_and_current(&db).await;

    let groups = db.collection::<Document>("sm_tally_totals");
    groups.update_one(doc! { "_id": "a" }, doc! { "$set": { "cents": "not a number" } }).await.unwrap();
    let report = versioning::backfill::<Tally>(&db, versioning::BackfillOptions::default()).await.unwrap();
    assert_eq!(report.failures.len(), 1, "{report:?}");
    assert!(
        matches!(&report.failures[0], versioning::VersionError::Refused(c)
            if matches!(**c, docshape::denormalized::CopyError::Copy { source_updated: false, .. })),
        "{report:?}"
    );
    let t1 = one(&db, "sm_tallies", "t1").await.unwrap();
    assert!(
        t1.contains_key("amount") && !t1.contains_key("schema_version"),
        "upgraded without its summary: {t1}"
    );

    groups.update_one(doc! { "_id": "a" }, doc! { "$set": { "cents": 5_i64 } }).await.unwrap();
    let report = versioning::backfill::<Tally>(&db, versioning::BackfillOptions::default()).await.unwrap();
    assert!(report.failures.is_empty(), "{report:?}");
    let t1 = one(&db, "sm_tallies", "t1").await.unwrap();
    assert_eq!((t1.get_i64("cents").ok(), t1.get_i32("schema_version").ok()), (Some(4), Some(2)), "{t1}");
    assert_eq!(totals(&db).await, (2, 9));
    assert!(summary::check(&db, spec).await.unwrap().drifted.is_empty());
}
