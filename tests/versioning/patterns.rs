//! Versioned models that hold outlier arrays or are buckets: the pattern's writers
//! append to documents of every version, their reads see every item, the upgrade keeps
//! the pattern's own fields as stored, and a bucket the appends create is written at
//! the current version.

use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::versioning::{self, RetryPolicy};
use docshape::{Embedded, Model};
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

// ---- a community Q&A site: v1 `tags` was one comma-separated string, v2 an array ---

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Comment {
    #[validate(max_length = 200)]
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "qa_questions", version = 2, migrate(v1 = QuestionV1))]
pub struct Question {
    #[serde(rename = "_id")]
    pub id: i64,
    #[validate(max_length = 200)]
    pub title: String,
    #[embed(max = 10, reason = "a handful of tags")]
    pub tags: Vec<String>,
    #[outlier(threshold = 3, overflow = "qa_question_comments", flag = has_extras, count = comment_count)]
    pub comments: Vec<Comment>,
    pub has_extras: bool,
    pub comment_count: i64,
    #[schema_version]
    pub schema_version: i32,
}

/// v1 as stored, without the version field: the same comments, flag and count.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct QuestionV1 {
    #[serde(rename = "_id")]
    pub id: i64,
    #[validate(max_length = 200)]
    pub title: String,
    #[validate(max_length = 200)]
    pub tags: String,
    #[embed(max = 3, reason = "the outlier's threshold")]
    pub comments: Vec<Comment>,
    pub has_extras: bool,
    pub comment_count: i64,
}

impl From<QuestionV1> for Question {
    /// Recounts from the embedded comments and clears the flag: the kind of upgrade
    /// that would hide overflow items, and that the upgrade must not be allowed to do.
    fn from(v1: QuestionV1) -> Self {
        Question {
            id: v1.id,
            title: v1.title,
            tags: v1.tags.split(',').map(str::to_owned).collect(),
            comment_count: v1.comments.len() as i64,
            comments: v1.comments,
            has_extras: false,
            schema_version: 2,
        }
    }
}

fn comment(n: usize) -> Comment {
    Comment { text: format!("comment {n}") }
}

fn comments(range: std::ops::Range<usize>) -> Vec<Bson> {
    range.map(|n| Bson::Document(doc! { "text": format!("comment {n}") })).collect()
}

/// What the release before the upgrade wrote: a v1 question whose comments overflowed
/// (three embedded, two in an overflow document), and one with room left.
async fn v1_questions(db: &mongodb::Database) {
    db.collection::<Document>("qa_questions")
        .insert_many([
            doc! { "_id": 1_i64, "title": "Why lifetimes?", "tags": "rust,lifetimes",
            "comments": comments(0..3), "has_extras": true, "comment_count": 5_i64 },
            doc! { "_id": 2_i64, "title": "Quiet one", "tags": "misc",
            "comments": comments(0..1), "has_extras": false, "comment_count": 1_i64 },
        ])
        .await
        .unwrap();
    db.collection::<Document>("qa_question_comments")
        .insert_one(doc! { "_id": { "parent": 1_i64, "seq": 0_i64 }, "parent": 1_i64, "count": 2,
        "items": comments(3..5) })
        .await
        .unwrap();
}

async fn stored(db: &mongodb::Database, id: i64) -> Document {
    db.collection::<Document>("qa_questions").find_one(doc! { "_id": id }).await.unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_question_with_overflowing_comments_is_read_appended_to_and_upgraded_whole() {
    let db = testkit::database("versioned_outlier").await.unwrap();
    docshape::sync::<Question>(&db).await.unwrap();
    docshape::outlier::sync::<Question>(&db).await.unwrap();
    v1_questions(&db).await;

    // Read before any upgrade: the embedded comments, then the overflow ones.
    let all = Question::load_comments(&db, &1).await.unwrap();
    assert_eq!(all, (0..5).map(comment).collect::<Vec<_>>());

    // Appended to while still v1: the embedded array is full, so the item overflows.
    let pushed = Question::push_comments(&db, &1, &[comment(5)]).await.unwrap();
    assert_eq!((pushed.embedded, pushed.overflow), (0, 1));
    let raw = stored(&db, 1).await;
    assert!(raw.get("schema_version").is_none(), "an append does not touch the version: {raw}");
    assert_eq!(raw.get_i64("comment_count").unwrap(), 6);

    // A v1 question with room: the item is embedded, and the document is still a
    // valid v1 document (the validator admits it) that reads as v2.
    Question::push_comments(&db, &2, &[comment(1)]).await.unwrap();
    let quiet = versioning::find_one::<Question>(&db, doc! { "_id": 2_i64 }).await.unwrap().unwrap();
    assert_eq!(quiet.stored_version, 1);
    assert_eq!(quiet.value.comments, (0..2).map(comment).collect::<Vec<_>>());
    assert_eq!(quiet.value.comment_count, 2, "the stored count, not the step's recount");

    // Read as v2: the step cleared the flag and recounted the embedded comments, but
    // the outlier's fields are kept as stored.
    let q = versioning::find_one::<Question>(&db, doc! { "_id": 1_i64 }).await.unwrap().unwrap();
    assert_eq!(q.stored_version, 1);
    assert_eq!(q.value.tags, ["rust", "lifetimes"]);
    assert!(q.value.has_extras, "the flag survives the upgrade");
    assert_eq!(q.value.comment_count, 6);
    assert_eq!(q.value.comments, (0..3).map(comment).collect::<Vec<_>>());

    // The next write persists v2, and the outlier's bookkeeping with it.
    versioning::update_one::<Question>(
        &db,
        &1,
        doc! { "$set": { "title": "Why lifetimes, really?" } },
        RetryPolicy::default(),
    )
    .await
    .unwrap();
    let raw = stored(&db, 1).await;
    assert_eq!(raw.get_i32("schema_version").unwrap(), 2);
    assert!(raw.get_bool("has_extras").unwrap());
    assert_eq!(raw.get_i64("comment_count").unwrap(), 6);
    assert_eq!(raw.get_array("tags").unwrap().len(), 2);
    assert_eq!(raw.get_array("comments").unwrap(), &comments(0..3));

    // And after it: appends go on past the full overflow document (3 items), nothing
    // is lost.
    let pushed = Question::push_comments(&db, &1, &[comment(6)]).await.unwrap();
    assert_eq!(pushed.overflow, 1);
    let all = Question::load_comments(&db, &1).await.unwrap();
    assert_eq!(all, (0..7).map(comment).collect::<Vec<_>>());
    let counts: Vec<i32> = {
        use futures_util::TryStreamExt;
        let pages: Vec<Document> = db
            .collection::<Document>("qa_question_comments")
            .find(doc! {})
            .sort(doc! { "_id.seq": 1 })
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        pages.iter().map(|p| p.get_i32("count").unwrap()).collect()
    };
    assert_eq!(counts, [3, 1]);
    assert_eq!(stored(&db, 1).await.get_i64("comment_count").unwrap(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_racing_the_upgrade_lose_no_comment() {
    let db = Arc::new(testkit::database("versioned_outlier_race").await.unwrap());
    docshape::sync::<Question>(&db).await.unwrap();
    docshape::outlier::sync::<Question>(&db).await.unwrap();
    v1_questions(&db).await;
    let mut tasks = Vec::new();
    for n in 5..25 {
        let db = db.clone();
        tasks.push(tokio::spawn(
            async move { Question::push_comments(&db, &2, &[comment(n)]).await.map(|_| ()) },
        ));
    }
    for n in 0..5 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            versioning::update_one::<Question>(
                &db,
                &2,
                doc! { "$set": { "title": format!("edit {n}") } },
                RetryPolicy::default().max_attempts(50),
            )
            .await
            .map(|_| ())
            .map_err(|e| panic!("{e}"))
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let all = Question::load_comments(&db, &2).await.unwrap();
    let mut texts: Vec<String> = all.into_iter().map(|c| c.text).collect();
    texts.sort();
    let mut want: Vec<String> = std::iter::once(0).chain(5..25).map(|n| format!("comment {n}")).collect();
    want.sort();
    assert_eq!(texts, want, "every comment, embedded or overflowed, once");
    let raw = stored(&db, 2).await;
    assert_eq!(raw.get_i32("schema_version").unwrap(), 2);
    assert_eq!(raw.get_i64("comment_count").unwrap(), 21);
    assert!(raw.get_bool("has_extras").unwrap());
}

// ---- a versioned bucket: v2 adds an optional note ----------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Reading {
    pub t: DateTime,
    pub v: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "qa_sensor_days", version = 2, migrate(v1 = SensorDayV1))]
#[bucket(series = sensor_id, period = day, per = "day", max = 3, items = readings, time = t)]
pub struct SensorDay {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub sensor_id: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[validate(max_length = 100)]
    pub note: Option<String>,
    #[schema_version]
    pub v: i32,
}

/// v1 as stored: no note, no version field.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct SensorDayV1 {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub sensor_id: String,
    pub day: String,
    pub count: i32,
    #[embed(max = 3, reason = "the bucket's max")]
    pub readings: Vec<Reading>,
}

impl From<SensorDayV1> for SensorDay {
    fn from(v1: SensorDayV1) -> Self {
        SensorDay {
            id: v1.id,
            sensor_id: v1.sensor_id,
            day: v1.day,
            count: v1.count,
            readings: v1.readings,
            note: Some("upgraded".into()),
            v: 2,
        }
    }
}

const DAY: i64 = 86_400_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_versioned_bucket_appends_to_old_buckets_and_creates_current_ones() {
    let db = testkit::database("versioned_bucket").await.unwrap();
    docshape::sync::<SensorDay>(&db).await.unwrap();
    let t0 = 20_000 * DAY;
    let reading = |ms: i64, v: f64| Reading { t: DateTime::from_millis(ms), v };
    // The release before the upgrade created today's bucket.
    let first = SensorDay::append(&db, "s1", &reading(t0, 1.0)).await.unwrap();
    assert_eq!(first.updates, 1);
    let buckets = db.collection::<Document>("qa_sensor_days");
    let today = buckets.find_one(doc! {}).await.unwrap().unwrap();
    assert_eq!(today.get_i32("v").unwrap(), 2, "a new bucket is written at the current version");
    // Make it what the old release wrote: no version field.
    buckets
        .update_one(doc! { "_id": today.get_str("_id").unwrap() }, doc! { "$unset": { "v": "" } })
        .await
        .unwrap();

    // Appends fill the v1 bucket, then overflow into a new, current one.
    SensorDay::append_many(&db, "s1", &[reading(t0 + 1, 2.0), reading(t0 + 2, 3.0), reading(t0 + 3, 4.0)])
        .await
        .unwrap();
    let raw: Vec<Document> = {
        use futures_util::TryStreamExt;
        buckets.find(doc! {}).sort(doc! { "_id": 1 }).await.unwrap().try_collect().await.unwrap()
    };
    assert_eq!(raw.len(), 2, "{raw:?}");
    assert!(raw[0].get("v").is_none(), "appends do not touch an old bucket's version");
    assert_eq!(raw[0].get_i32("count").unwrap(), 3);
    assert_eq!(raw[1].get_i32("v").unwrap(), 2);
    assert_eq!(raw[1].get_i32("count").unwrap(), 1);

    // Reads see every item, and an old bucket reads as the current type.
    let items = SensorDay::read_range(&db, "s1", DateTime::from_millis(t0), DateTime::from_millis(t0 + DAY))
        .await
        .unwrap();
    assert_eq!(items.iter().map(|r| r.v).collect::<Vec<_>>(), [1.0, 2.0, 3.0, 4.0]);
    let days = SensorDay::buckets_in(&db, "s1", DateTime::from_millis(t0), DateTime::from_millis(t0 + DAY))
        .await
        .unwrap();
    assert_eq!(days.len(), 2);
    assert_eq!(days[0].note.as_deref(), Some("upgraded"));
    assert_eq!(days[0].count, 3);
    assert_eq!(days[1].note, None);

    // The upgrade written back keeps the items and the count as stored.
    let id = raw[0].get_str("_id").unwrap().to_owned();
    versioning::update_one::<SensorDay>(
        &db,
        id.as_str(),
        doc! { "$set": { "note": "checked" } },
        RetryPolicy::default(),
    )
    .await
    .unwrap();
    let upgraded = buckets.find_one(doc! { "_id": &id }).await.unwrap().unwrap();
    assert_eq!(upgraded.get_i32("v").unwrap(), 2);
    assert_eq!(upgraded.get_i32("count").unwrap(), 3);
    assert_eq!(upgraded.get_array("readings").unwrap().len(), 3);
    assert_eq!(upgraded.get_str("note").unwrap(), "checked");
}
