//! The appending writers of a source with a `sync` summary: an outlier push and a
//! bucket append run in a transaction of their own with the summary, so a summary that
//! cannot be written leaves nothing pushed or appended, and a capped period commits
//! what it granted with its summary.

use docshape::bucket::BucketError;
use docshape::denormalized::CopyError;
use docshape::outlier::OutlierError;
use docshape_examples::bucket::Reading;

use super::*;

/// A channel whose members spill into overflow documents past three.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_channels", transactions)]
pub struct Channel {
    #[serde(rename = "_id")]
    #[validate(max_length = 64)]
    pub id: String,
    pub owner_id: String,
    #[outlier(threshold = 3, overflow = "sm_channel_members_extra", flag = has_extra, count = members_count, per_doc = 2)]
    pub members: Vec<i64>,
    pub has_extra: bool,
    pub members_count: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_members_by_owner")]
#[summary(of = Channel, group(owner_id), refresh = "sync")]
pub struct MembersByOwner {
    #[serde(rename = "_id")]
    pub owner_id: String,
    #[summary(count)]
    pub channels: i64,
    #[summary(sum = "members_count")]
    pub members: i64,
}

/// At most five readings per sensor per day, two to a bucket.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_sensor_days", transactions)]
#[bucket(series = sensor_id, period = day, per = "day", max = 2, items = readings, time = t, cap = 5)]
pub struct SensorDay {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub sensor_id: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_readings_by_sensor")]
#[summary(of = SensorDay, group(sensor_id), refresh = "sync")]
pub struct ReadingsBySensor {
    #[serde(rename = "_id")]
    pub sensor_id: String,
    #[summary(count)]
    pub buckets: i64,
    #[summary(sum = "count")]
    pub readings: i64,
}

fn totals(d: &Document, count: &str, sum: &str) -> (i64, i64) {
    (d.get_i64(count).unwrap(), d.get_i64(sum).unwrap())
}

async fn assert_exact(db: &Database, summary: &str) {
    let report = docshape::summary::check(db, spec(summary)).await.unwrap();
    assert!(report.drifted.is_empty(), "{summary} drifts: {:#?}", report.drifted);
}

/// The channels' collections, and channel `c1` of owner `o`, empty.
async fn channel_c1(db: &Database) {
    docshape::sync::<Channel>(db).await.unwrap();
    docshape::outlier::sync::<Channel>(db).await.unwrap();
    let mut c1 = Channel {
        id: "c1".into(),
        owner_id: "o".into(),
        members: vec![],
        has_extra: false,
        members_count: 0,
    };
    docshape::relation::insert_one(db, &mut c1).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outlier_push_commits_with_its_sync_summary_or_pushes_nothing() {
    let (db, log) = testkit::monitored("summary_outlier_push").await.unwrap();
    channel_c1(&db).await;
    let by_owner =
        || async { totals(&one(&db, "sm_members_by_owner", "o").await.unwrap(), "channels", "members") };
    assert_eq!(by_owner().await, (1, 0));

    // Embedded, then spilled into two overflow documents: each push one commit,
    // the last command sent.
    for (items, expected) in [(vec![1, 2], (2, 0)), (vec![3, 4, 5], (0, 3))] {
        log.clear();
        let pushed = Channel::push_members(&db, &"c1".to_owned(), &items).await.unwrap();
        assert_eq!((pushed.embedded, pushed.overflow), expected);
        let names = log.names();
        assert_eq!(names.iter().filter(|n| *n == "commitTransaction").count(), 1, "{names:?}");
        assert_eq!(names.last().map(String::as_str), Some("commitTransaction"), "{names:?}");
    }
    assert_eq!(by_owner().await, (1, 5));
    let loaded = Channel::load_members(&db, &"c1".to_owned()).await.unwrap();
    assert_eq!(loaded, [1, 2, 3, 4, 5]);
    assert_exact(&db, "sm_members_by_owner").await;

    // A summary group another program made unwritable: the push fails and pushes
    // nothing, embedded or overflowing.
    let groups = db.collection::<Document>("sm_members_by_owner");
    groups.update_one(doc! { "_id": "o" }, doc! { "$set": { "members": "not a number" } }).await.unwrap();
    let refused = Channel::push_members(&db, &"c1".to_owned(), &[6, 7, 8]).await.unwrap_err();
    assert!(
        matches!(&refused, OutlierError::Copies(e) if matches!(**e, CopyError::Copy { source_updated: false, .. })),
        "{refused:?}"
    );
    let stored = one(&db, "sm_channels", "c1").await.unwrap();
    assert_eq!(stored.get_i64("members_count").unwrap(), 5, "pushed without its summary: {stored}");
    let spilled: usize =
        all(&db, "sm_channel_members_extra").await.iter().map(|d| d.get_array("items").unwrap().len()).sum();
    assert_eq!(spilled, 3, "overflow items pushed without their summary");

    groups.update_one(doc! { "_id": "o" }, doc! { "$set": { "members": 5_i64 } }).await.unwrap();
    Channel::push_members(&db, &"c1".to_owned(), &[6, 7, 8]).await.unwrap();
    assert_eq!(by_owner().await, (1, 8));
    let loaded = Channel::load_members(&db, &"c1".to_owned()).await.unwrap();
    assert_eq!(loaded, [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_exact(&db, "sm_members_by_owner").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_append_commits_with_its_sync_summary_or_stores_nothing() {
    let (db, log) = testkit::monitored("summary_bucket_append").await.unwrap();
    docshape::sync::<SensorDay>(&db).await.unwrap();
    let reading =
        |minute: i64| Reading { t: DateTime::from_millis(1_785_888_000_000 + minute * 60_000), v: 1.0 };
    let by_sensor =
        || async { totals(&one(&db, "sm_readings_by_sensor", "s1").await.unwrap(), "buckets", "readings") };

    // Three readings of one day: two buckets, one commit, the last command sent.
    log.clear();
    let report = SensorDay::append_many(&db, "s1", &[reading(1), reading(2), reading(3)]).await.unwrap();
    // The cap counter and each bucket read once, before their one update: a bucket
    // this append filled is not read again.
    assert_eq!((report.finds, report.updates, report.created), (3, 3, 2), "{report:?}");
    let names = log.names();
    assert_eq!(names.iter().filter(|n| *n == "commitTransaction").count(), 1, "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("commitTransaction"), "{names:?}");
    assert_eq!(by_sensor().await, (2, 3));

    // Three more: the cap (five a day) grants two, which are stored and commit with
    // their summary; the third is refused and listed as never sent.
    let refused = SensorDay::append_many(&db, "s1", &[reading(4), reading(5), reading(6)]).await.unwrap_err();
    let BucketError::Incomplete(incomplete) = &refused else { panic!("{refused:?}") };
    assert!(matches!(incomplete.cause, BucketError::Capped { cap: 5, .. }), "{refused:?}");
    assert_eq!(incomplete.stored.iter().map(|(_, items)| items.len()).sum::<usize>(), 2, "{refused:?}");
    assert_eq!(incomplete.unsent, [2], "{refused:?}");
    assert_eq!(by_sensor().await, (3, 5));
    assert_exact(&db, "sm_readings_by_sensor").await;

    // A summary group another program made unwritable: the next day's append fails
    // and stores nothing, its cap counter included.
    let groups = db.collection::<Document>("sm_readings_by_sensor");
    groups.update_one(doc! { "_id": "s1" }, doc! { "$set": { "readings": "not a number" } }).await.unwrap();
    let next_day = [reading(24 * 60 + 1), reading(24 * 60 + 2), reading(24 * 60 + 3)];
    let refused = SensorDay::append_many(&db, "s1", &next_day).await.unwrap_err();
    assert!(
        matches!(&refused, BucketError::Derived(e) if matches!(**e, CopyError::Copy { source_updated: false, .. })),
        "{refused:?}"
    );
    let buckets = db.collection::<Document>("sm_sensor_days").count_documents(doc! {}).await.unwrap();
    assert_eq!(buckets, 3, "appended without its summary");
    let counters = all(&db, "sm_sensor_days_caps").await;
    assert_eq!(counters.len(), 1, "the next day's places stay unreserved: {counters:?}");

    groups.update_one(doc! { "_id": "s1" }, doc! { "$set": { "readings": 5_i64 } }).await.unwrap();
    SensorDay::append_many(&db, "s1", &next_day).await.unwrap();
    assert_eq!(by_sensor().await, (5, 8));
    assert_exact(&db, "sm_readings_by_sensor").await;
}

/// Concurrent pushes to one parent and appends to one capped period, each in its own
/// transaction with the summary: they conflict and run again, and afterwards every
/// item is stored once, the cap holds, and the summaries equal a recount.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_pushes_and_appends_stay_whole_and_exact() {
    let db = testkit::database("summary_appends_concurrent").await.unwrap();
    channel_c1(&db).await;
    docshape::sync::<SensorDay>(&db).await.unwrap();

    let mut tasks = Vec::new();
    for w in 0..4_i64 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let mut granted = 0;
            for i in 0..6_i64 {
                let member = w * 100 + i;
                Channel::push_members(&db, &"c1".to_owned(), &[member]).await.unwrap();
                let t = DateTime::from_millis(1_785_888_000_000 + (w * 100 + i) * 1000);
                match SensorDay::append(&db, "s1", &Reading { t, v: 1.0 }).await {
                    Ok(_) => granted += 1,
                    Err(BucketError::Capped { .. }) => {}
                    Err(e) => panic!("{e:?}"),
                }
            }
            granted
        }));
    }
    let mut granted = 0;
    for t in tasks {
        granted += t.await.unwrap();
    }
    let mut members = Channel::load_members(&db, &"c1".to_owned()).await.unwrap();
    members.sort_unstable();
    let expected: Vec<i64> = (0..4).flat_map(|w| (0..6).map(move |i| w * 100 + i)).collect();
    assert_eq!(members, expected);
    assert_eq!(granted, 5, "the cap grants five a day");
    let stored: usize =
        all(&db, "sm_sensor_days").await.iter().map(|d| d.get_array("readings").unwrap().len()).sum();
    assert_eq!(stored, 5);
    assert_eq!(totals(&one(&db, "sm_members_by_owner", "o").await.unwrap(), "channels", "members"), (1, 24));
    assert_eq!(totals(&one(&db, "sm_readings_by_sensor", "s1").await.unwrap(), "buckets", "readings").1, 5);
    assert_exact(&db, "sm_members_by_owner").await;
    assert_exact(&db, "sm_readings_by_sensor").await;
}

/// Overflow documents and buckets another program left with a count that is not a
/// whole number: a push or an append in its transaction reports the document as
/// corrupt and writes nothing; a count that says full (written around the validator)
/// sends the items to the next document. Every round trip of these loops reads or
/// writes a document that moves them on, so each call ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_count_fails_the_transaction_and_a_full_one_moves_on() {
    let db = testkit::database("summary_appends_hostile").await.unwrap();
    channel_c1(&db).await;
    docshape::sync::<SensorDay>(&db).await.unwrap();
    let c1 = "c1".to_owned();
    Channel::push_members(&db, &c1, &[1, 2, 3]).await.unwrap();
    Channel::push_members(&db, &c1, &[4]).await.unwrap();
    let overflow = db.collection::<Document>("sm_channel_members_extra");
    let first = doc! { "_id": { "parent": "c1", "seq": 0_i64 } };
    let set = |count: Bson| doc! { "$set": { "count": count } };
    overflow
        .update_one(first.clone(), set(Bson::String("x".into())))
        .bypass_document_validation(true)
        .await
        .unwrap();
    let refused = Channel::push_members(&db, &c1, &[5]).await.unwrap_err();
    assert!(matches!(refused, OutlierError::Corrupt { .. }), "{refused:?}");
    assert_eq!(one(&db, "sm_channels", "c1").await.unwrap().get_i64("members_count").unwrap(), 4);
    let by_owner = one(&db, "sm_members_by_owner", "o").await.unwrap();
    assert_eq!(totals(&by_owner, "channels", "members"), (1, 4));

    // Full by its count, though it holds one item: the next push opens document 1.
    overflow.update_one(first, set(Bson::Int32(2))).bypass_document_validation(true).await.unwrap();
    Channel::push_members(&db, &c1, &[5]).await.unwrap();
    assert_eq!(Channel::load_members(&db, &c1).await.unwrap(), [1, 2, 3, 4, 5]);
    assert_eq!(overflow.count_documents(doc! {}).await.unwrap(), 2);
    assert_exact(&db, "sm_members_by_owner").await;

    // A bucket the same: corrupt, nothing stored and every item listed as unsent.
    let reading =
        |minute: i64| Reading { t: DateTime::from_millis(1_785_888_000_000 + minute * 60_000), v: 1.0 };
    SensorDay::append(&db, "s1", &reading(1)).await.unwrap();
    let buckets = db.collection::<Document>("sm_sensor_days");
    buckets
        .update_one(doc! {}, doc! { "$set": { "count": "x" } })
        .bypass_document_validation(true)
        .await
        .unwrap();
    let refused = SensorDay::append_many(&db, "s1", &[reading(2), reading(3)]).await.unwrap_err();
    let BucketError::Incomplete(incomplete) = &refused else { panic!("{refused:?}") };
    assert!(matches!(incomplete.cause, BucketError::CorruptBucket { .. }), "{refused:?}");
    assert!(incomplete.stored.is_empty() && incomplete.in_doubt.is_none(), "{refused:?}");
    assert_eq!(incomplete.unsent, [0, 1]);
    let stored: Vec<Document> = all(&db, "sm_sensor_days").await;
    assert_eq!(stored[0].get_array("readings").unwrap().len(), 1, "{stored:?}");
    let by_sensor = one(&db, "sm_readings_by_sensor", "s1").await.unwrap();
    assert_eq!(by_sensor.get_i64("buckets").unwrap(), 1);
}
