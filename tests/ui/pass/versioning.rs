//! A document step before typed steps, a custom missing version, a renamed version
//! field of another integer type: it compiles, and the chain runs. Rows over fields an
//! older version stores alike (or as an `Option` of the same type) compile, and so does
//! a row over a changed field whose rule is waived. A versioned bucket, and a versioned
//! model with an outlier array, whose older shapes store the pattern's fields alike
//! (an `i64` version field: new buckets write it as a long).

use docshape::bson::{doc, Document};
use docshape::versioning::{decode, Versioned};
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, Model)]
#[model(collection = "accounts", version = 4, migrate(v2(document = v2_to_v3), v3 = AccountV3))]
#[index(keys(email), unique)]
#[index(keys(verified))]
#[index(keys(plan))]
#[access(name = "by_email", filter(email))]
#[access(name = "by_plan", filter(plan))]
#[access(
    name = "unverified",
    filter(verified),
    allow(old_version_field, reason = "backfilled before the release that reads it")
)]
struct Account {
    email: String,
    plan: String,
    verified: bool,
    #[schema_version(missing = 2)]
    #[serde(rename = "_v")]
    version: u8,
}

#[derive(Serialize, Deserialize, Embedded)]
struct AccountV3 {
    email: String,
    plan: Option<String>,
}

impl From<AccountV3> for Account {
    fn from(a: AccountV3) -> Self {
        Account { email: a.email, plan: a.plan.unwrap_or_default(), verified: false, version: 0 }
    }
}

fn v2_to_v3(mut d: Document) -> Result<Document, std::convert::Infallible> {
    if let Some(mail) = d.remove("mail") {
        d.insert("email", mail);
    }
    Ok(d)
}

#[derive(Serialize, Deserialize, Embedded)]
struct Reading {
    t: docshape::bson::DateTime,
    v: f64,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sensor_days", version = 2, migrate(v1 = SensorDayV1))]
#[bucket(series = sensor_id, period = day, per = "day", max = 1440, items = readings, time = t)]
struct SensorDay {
    #[serde(rename = "_id")]
    id: String,
    #[validate(max_length = 64)]
    sensor_id: String,
    day: String,
    count: i32,
    readings: Vec<Reading>,
    #[schema_version]
    v: i64,
}

#[derive(Serialize, Deserialize, Embedded)]
struct SensorDayV1 {
    #[serde(rename = "_id")]
    id: String,
    #[validate(max_length = 64)]
    sensor_id: String,
    day: String,
    count: i32,
    #[embed(max = 1440, reason = "the bucket's max")]
    readings: Vec<Reading>,
}

impl From<SensorDayV1> for SensorDay {
    fn from(d: SensorDayV1) -> Self {
        SensorDay { id: d.id, sensor_id: d.sensor_id, day: d.day, count: d.count, readings: d.readings, v: 2 }
    }
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "questions", version = 2, migrate(v1 = QuestionV1))]
struct Question {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[outlier(threshold = 50, overflow = "question_comments", flag = has_extras, count = comment_count)]
    comments: Vec<i64>,
    has_extras: bool,
    comment_count: i64,
    #[schema_version]
    schema_version: i32,
}

/// v1 had no title, and its count was optional.
#[derive(Serialize, Deserialize, Embedded)]
struct QuestionV1 {
    #[serde(rename = "_id")]
    id: i64,
    #[embed(max = 50, reason = "the threshold")]
    comments: Vec<i64>,
    has_extras: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    comment_count: Option<i64>,
}

impl From<QuestionV1> for Question {
    fn from(q: QuestionV1) -> Self {
        // Recounts: the upgrade keeps a stored count over this one.
        let comment_count = q.comments.len() as i64;
        Question {
            id: q.id,
            title: String::new(),
            comments: q.comments,
            has_extras: q.has_extras,
            comment_count,
            schema_version: 2,
        }
    }
}

pub(super) fn main() {
    use docshape::bucket::Bucket;
    let stamp = SensorDay::BUCKET.version.unwrap();
    assert_eq!((stamp.field, stamp.value()), ("v", docshape::bson::Bson::Int64(2)));
    // The stored flag and count, whatever the step computed; a missing count is the step's.
    let q: Question =
        decode(doc! { "_id": 1_i64, "comments": [1_i64], "has_extras": true, "comment_count": 9_i64 })
            .unwrap();
    assert_eq!((q.has_extras, q.comment_count, q.schema_version), (true, 9, 2));
    let q: Question = decode(doc! { "_id": 1_i64, "comments": [1_i64, 2_i64], "has_extras": false }).unwrap();
    assert_eq!(q.comment_count, 2);

    assert_eq!((Account::VERSION, Account::VERSION_FIELD, Account::MISSING_VERSION), (4, "_v", 2));
    let a: Account = decode(doc! { "mail": "a@b.c", "plan": "free" }).unwrap();
    assert_eq!((a.email.as_str(), a.verified, a.version), ("a@b.c", false, 4));
    let b: Account = decode(doc! { "email": "x@y.z", "plan": "pro", "verified": true, "_v": 4 }).unwrap();
    assert!(b.verified);
    assert!(decode::<Account>(doc! { "email": "x", "_v": 1 }).is_err());
}
