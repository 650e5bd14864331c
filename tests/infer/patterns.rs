//! The patterns `docshape infer` writes as attributes rather than comments, each
//! through the round trip: the generated source compiles (`patterns_inferred.rs`
//! beside this file, a module of this binary), every stored document reads into it,
//! `sync` into a fresh database takes every one of them (the validator refuses none,
//! the indexes are the original's) and `check` is clean. `--plain` keeps the plain
//! forms.
//!
//! - a polymorphic collection (`activity`: `kind` tells three document types apart)
//!   is an enum tagged by `kind`, one variant per value with its own fields;
//! - a collection whose every index leads with `org_id` (`tickets`) declares it the
//!   tenant, `#[model(tenant = org_id)]`: the profiled query that filters on it
//!   becomes a row led by it, the one that does not stays a comment; a collection
//!   whose indexes lead with different fields (`audit`) declares none;
//! - an outlier array (`channels.subscribers`, two documents of thousands) is first a
//!   plain array with its migration in the report (the attribute's `maxItems` would
//!   refuse them); migrated as the report says, it is `#[outlier(...)]` and its
//!   overflow collection has no model of its own;
//! - hourly bucket documents in docshape's shape (`sensor_hours`: `_id: {sensor,
//!   hour}`, a count equal to the readings' length) are `#[bucket(...)]`, and
//!   docshape's appends and range reads work on the stored buckets.
//!
//! `DOCSHAPE_INFER=overwrite` rewrites the fixture (review the diff).

use docshape::bson::{doc, oid::ObjectId, Bson, DateTime, Document};
use docshape::Model;
use docshape_cli::infer::{infer, InferOptions, Inferred};
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::options::IndexOptions;
use mongodb::IndexModel;

#[rustfmt::skip]
#[allow(dead_code)]
#[path = "patterns_inferred.rs"]
mod inferred;

async fn seed(db: &mongodb::Database) {
    let at = DateTime::from_millis(1_780_000_000_000);
    // Activity: 12 clicks, 12 page views (half with a duration), 12 purchases.
    let activity: Vec<Document> = (0..36_i64)
        .map(|i| {
            let user = format!("u{}", i % 4);
            match i % 3 {
                0 => doc! { "_id": ObjectId::new(), "kind": "click", "user": user, "at": at, "target": format!("button-{i}") },
                1 => {
                    let mut d = doc! { "_id": ObjectId::new(), "kind": "page_view", "user": user, "at": at, "path": format!("/p/{i}") };
                    if i % 2 == 0 {
                        d.insert("ms", i * 10);
                    }
                    d
                }
                _ => doc! { "_id": ObjectId::new(), "kind": "purchase", "user": user, "at": at, "order_id": format!("o-{i}"), "amount_cents": i * 100 },
            }
        })
        .collect();
    let events = db.collection::<Document>("activity");
    events.insert_many(activity).await.unwrap();
    events.create_index(IndexModel::builder().keys(doc! { "user": 1, "at": -1 }).build()).await.unwrap();

    // Tickets of three organisations: every index leads with `org_id` (the TTL one
    // aside), the number unique per organisation.
    let orgs = ["acme", "globex", "initech"];
    let expires = DateTime::from_millis(4_000_000_000_000);
    let tickets: Vec<Document> = (0..30_i32)
        .map(|i| {
            doc! {
                "org_id": orgs[i as usize % 3],
                "number": i / 3,
                "status": if i % 4 == 0 { "closed" } else { "open" },
                "title": format!("ticket {i}"),
                "opened": at,
                "expires_at": expires,
            }
        })
        .collect();
    let tickets_c = db.collection::<Document>("tickets");
    tickets_c.insert_many(tickets).await.unwrap();
    tickets_c
        .create_indexes(vec![
            IndexModel::builder().keys(doc! { "org_id": 1, "status": 1 }).build(),
            IndexModel::builder()
                .keys(doc! { "org_id": 1, "number": 1 })
                .options(IndexOptions::builder().unique(true).build())
                .build(),
            IndexModel::builder().keys(doc! { "org_id": 1, "opened": -1 }).build(),
            IndexModel::builder()
                .keys(doc! { "expires_at": 1 })
                .options(IndexOptions::builder().expire_after(std::time::Duration::from_secs(3_600)).build())
                .build(),
        ])
        .await
        .unwrap();

    // Audit entries: one index leads with `org_id`, another with `actor`.
    let audit: Vec<Document> = (0..10_i32)
        .map(|i| doc! { "org_id": orgs[i as usize % 3], "actor": format!("a{i}"), "at": at })
        .collect();
    let audit_c = db.collection::<Document>("audit");
    audit_c.insert_many(audit).await.unwrap();
    audit_c
        .create_indexes(vec![
            IndexModel::builder().keys(doc! { "org_id": 1, "at": 1 }).build(),
            IndexModel::builder().keys(doc! { "actor": 1 }).build(),
        ])
        .await
        .unwrap();
}

/// Channels: 30, holding 1 to 12 subscribers, two of them 1,500 and 2,500.
async fn seed_channels(db: &mongodb::Database) -> Vec<ObjectId> {
    let ids: Vec<ObjectId> = (0..30).map(|_| ObjectId::new()).collect();
    let channels: Vec<Document> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let n = match i {
                5 => 1_500,
                17 => 2_500,
                _ => 1 + i % 12,
            };
            let subscribers: Vec<ObjectId> = (0..n).map(|_| ObjectId::new()).collect();
            doc! { "_id": *id, "name": format!("channel {i}"), "subscribers": subscribers }
        })
        .collect();
    db.collection::<Document>("channels").insert_many(channels).await.unwrap();
    ids
}

/// The migration the report gives for `channels.subscribers`, as a driver client runs
/// it: every document gets the flag and the count; each of the two outliers keeps 12
/// subscribers and moves the rest to `channels_overflow`, 12 a document, in order.
async fn migrate_channels(db: &mongodb::Database) {
    let channels = db.collection::<Document>("channels");
    let overflow = db.collection::<Document>("channels_overflow");
    let all: Vec<Document> = channels.find(doc! {}).await.unwrap().try_collect().await.unwrap();
    for d in all {
        let id = d.get_object_id("_id").unwrap();
        let items = d.get_array("subscribers").unwrap().clone();
        let mut set = doc! { "subscribers_overflowed": false, "subscribers_count": items.len() as i32 };
        if items.len() > 12 {
            let (kept, rest) = items.split_at(12);
            for (seq, chunk) in rest.chunks(12).enumerate() {
                overflow
                    .insert_one(doc! { "_id": { "parent": id, "seq": seq as i64 }, "parent": id, "count": chunk.len() as i32, "items": chunk.to_vec() })
                    .await
                    .unwrap();
            }
            set.insert("subscribers", kept.to_vec());
            set.insert("subscribers_overflowed", true);
        }
        channels.update_one(doc! { "_id": id }, doc! { "$set": set }).await.unwrap();
    }
}

/// The first hour of the seeded sensor buckets (on the hour, not on the day).
const HOUR0: i64 = 494_444 * 3_600_000;

/// Hourly buckets of readings, as docshape's `#[bucket]` stores them: `_id: {sensor,
/// hour}`, the count, at most 6 readings of a sensor per hour.
async fn seed_buckets(db: &mongodb::Database) {
    let mut buckets = Vec::new();
    for (s, sensor) in ["s1", "s2", "s3"].iter().enumerate() {
        for h in 0..3_i64 {
            let hour = DateTime::from_millis(HOUR0 + h * 3_600_000);
            let n = if h == 0 { 6 } else { 1 + (s as i64 + h) % 5 };
            let readings: Vec<Document> = (0..n)
                .map(|k| doc! { "t": DateTime::from_millis(HOUR0 + h * 3_600_000 + k * 600_000), "v": k as f64 * 1.5 })
                .collect();
            buckets.push(doc! { "_id": { "sensor": *sensor, "hour": hour }, "sensor": *sensor, "hour": hour, "count": n as i32, "readings": readings });
        }
    }
    let c = db.collection::<Document>("sensor_hours");
    c.insert_many(buckets).await.unwrap();
    c.create_index(IndexModel::builder().keys(doc! { "sensor": 1, "hour": 1 }).build()).await.unwrap();
}

/// The profiled queries on tickets: one filtering on the tenant (written second), one
/// without it.
async fn profile(db: &mongodb::Database) {
    let tickets = db.collection::<Document>("tickets");
    db.run_command(doc! { "profile": 2 }).await.unwrap();
    for _ in 0..4 {
        tickets.find_one(doc! { "status": "open", "org_id": "acme" }).await.unwrap();
    }
    for _ in 0..2 {
        tickets.find_one(doc! { "status": "closed" }).await.unwrap();
    }
    db.run_command(doc! { "profile": 0 }).await.unwrap();
}

fn section<'a>(report: &'a str, name: &str) -> &'a str {
    let body = report.split(&format!("## `{name}`")).nth(1).unwrap_or_else(|| panic!("{name}:\n{report}"));
    body.split("\n## ").next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patterns_are_written_as_attributes_and_the_models_round_trip() {
    use inferred::{Activity, Audit, Channel, SensorHour, SensorHourItem, Ticket};
    let db = testkit::database("infer_patterns").await.unwrap();
    seed(&db).await;

    // Raw outliers: no attribute, which would refuse them; the migration is said.
    let channel_ids = seed_channels(&db).await;
    let raw = infer(&db, &InferOptions::default().collections(["channels"])).await.unwrap();
    let raw_source = raw.source();
    assert!(
        raw_source.contains("    pub subscribers: Vec<ObjectId>,") && !raw_source.contains("#[outlier"),
        "{raw_source}"
    );
    let raw_report = raw.report();
    assert!(
        raw_report.contains("### Migrations\n\n- `subscribers`: an outlier array (2 of 30 documents (6.7%) past 1,000: ")
            && raw_report.contains("`#[outlier(threshold = 12, overflow = \"channels_overflow\", flag = subscribers_overflowed, count = subscribers_count)]` would give the validator `maxItems: 12`, which refuses those documents")
            && raw_report.contains("`{_id: {parent: <its _id>, seq: 0, 1, ...}, parent: <its _id>, count: <n>, items: [<at most 12>]}`"),
        "{raw_report}"
    );
    // Migrated as the report says, the array is in docshape's shape: the attribute.
    migrate_channels(&db).await;
    seed_buckets(&db).await;

    profile(&db).await;
    let options = InferOptions::default().workload(true).collections([
        "activity",
        "audit",
        "channels",
        "channels_overflow",
        "sensor_hours",
        "tickets",
    ]);
    let inferred = infer(&db, &options).await.unwrap();
    let source = inferred.source();
    let report = inferred.report();

    // The polymorphic collection: an enum tagged by `kind`, each variant its own fields.
    for written in [
        "#[derive(Debug, Clone, Serialize, Deserialize, Model)]\n#[serde(tag = \"kind\")]\n#[model(collection = \"activity\")]\n",
        "#[index(keys(user, at = -1))]\npub enum Activity {\n",
        "    #[serde(rename = \"click\")]\n    Click {\n",
        "    #[serde(rename = \"page_view\")]\n    PageView {\n",
        "    #[serde(rename = \"purchase\")]\n    Purchase {\n",
        "        target: String,\n",
        "        #[serde(default, skip_serializing_if = \"Option::is_none\")]\n        ms: Option<i64>,\n",
        "        amount_cents: i64,\n",
    ] {
        assert!(source.contains(written), "{written:?} not in:\n{source}");
    }
    let activity = section(&report, "activity");
    assert!(activity.contains("`models.rs` writes it: `#[serde(tag = \"kind\")]`"), "{activity}");

    // The tenant: declared, its values not made `allowed`; the row that filters on it
    // is led by it, the one that does not is a comment.
    for written in [
        "#[model(collection = \"tickets\", tenant = org_id)]\n",
        "#[access(name = \"by_org_id_status\", filter(org_id, status), freq = ",
        "// #[access(name = \"by_status\", filter(status), freq = ",
        "does not filter on the tenant `org_id` (rule `tenant_filter`)",
        "#[index(keys(org_id, number), unique)]",
        "#[index(keys(expires_at), expire_after = \"3600s\")]",
        "no `allowed` from the data, a tenant's values grow with its customers\n    pub org_id: String,",
    ] {
        assert!(source.contains(written), "{written:?} not in:\n{source}");
    }
    let tickets = section(&report, "tickets");
    assert!(
        tickets.contains(
            "### Tenant\n\nEvery index besides `_id_` (3 of them, TTL indexes aside) leads with `org_id`"
        ) && tickets.contains("`models.rs` declares it `#[model(tenant = org_id)]`")
            && tickets.contains("1 here, stays a comment"),
        "{tickets}"
    );
    // Indexes leading with two fields: no tenant.
    assert!(source.contains("#[model(collection = \"audit\")]\n"), "{source}");
    assert!(!section(&report, "audit").contains("### Tenant"), "{report}");

    // The outlier in docshape's shape: declared, its overflow collection left to it.
    for written in [
        "#[outlier(threshold = 12, overflow = \"channels_overflow\", flag = subscribers_overflowed, count = subscribers_count)]\n    pub subscribers: Vec<ObjectId>,",
        "    pub subscribers_overflowed: bool,",
        "// The collection \"channels_overflow\": the overflow of `channels.subscribers`, declared by its `#[outlier]`: no model of its own.",
    ] {
        assert!(source.contains(written), "{written:?} not in:\n{source}");
    }
    let channels = section(&report, "channels");
    assert!(
        channels.contains("- `subscribers` is an outlier array in docshape's shape already: at most 12 items embedded (the longest stored), 2 document(s) flagged `subscribers_overflowed`")
            && !channels.contains("bucket count mismatch"),
        "{channels}"
    );

    // The bucket documents: `#[bucket]`, the compound id with its `seq`.
    for written in [
        "#[bucket(series = sensor, period = hour, per = \"hour\", max = 6, items = readings, time = t, count = count)]\npub struct SensorHour {\n    #[serde(rename = \"_id\")]\n    pub id: SensorHourId,",
        "    #[validate(max_length = 64)]\n    pub sensor: String,\n    pub hour: DateTime,\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub seq: Option<i32>,",
        "    pub readings: Vec<SensorHourItem>,",
    ] {
        assert!(source.contains(written), "{written:?} not in:\n{source}");
    }
    let buckets = section(&report, "sensor_hours");
    assert!(buckets.contains("### Bucket\n\nEvery document is a bucket in docshape's shape"), "{buckets}");

    // `--plain`: one struct, no tenant.
    let plain = Inferred { plain: true, ..inferred.clone() };
    let plain_source = plain.source();
    assert!(
        !plain_source.contains("tenant =")
            && !plain_source.contains("\npub enum")
            && !plain_source.contains("#[outlier")
            && !plain_source.contains("#[bucket"),
        "{plain_source}"
    );
    assert!(
        plain_source.contains("pub struct Activity {")
            && plain_source.contains("//   #[serde(tag = \"kind\")]"),
        "{plain_source}"
    );
    assert!(
        plain.report().contains("`--plain` was given: `models.rs` declares no tenant."),
        "{}",
        plain.report()
    );

    let source = source.replace(db.name(), "shop");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("infer/patterns_inferred.rs");
    if std::env::var("DOCSHAPE_INFER").is_ok_and(|v| v == "overwrite") {
        std::fs::write(&fixture, &source).unwrap();
    }
    let expected = std::fs::read_to_string(&fixture).unwrap().replace("\r\n", "\n");
    assert!(
        expected == source,
        "the generated source differs from {} (DOCSHAPE_INFER=overwrite rewrites it):\n{source}",
        fixture.display()
    );

    // Every stored document reads into its variant.
    let all: Vec<Activity> =
        Activity::collection(&db).find(doc! {}).await.unwrap().try_collect().await.unwrap();
    let kinds = |f: fn(&Activity) -> bool| all.iter().filter(|a| f(a)).count();
    assert_eq!(
        (
            kinds(|a| matches!(a, Activity::Click { .. })),
            kinds(|a| matches!(a, Activity::PageView { ms: Some(_), .. })),
            kinds(|a| matches!(a, Activity::PageView { ms: None, .. })),
            kinds(|a| matches!(a, Activity::Purchase { .. })),
        ),
        (12, 6, 6, 12)
    );
    // Sync into a fresh database takes every document (the validator refuses none, the
    // indexes are the original's) and `check` is clean there and on the original.
    let fresh = testkit::database("infer_patterns_fresh").await.unwrap();
    assert_eq!(super::copy_through::<Activity>(&db, &fresh).await, 36);
    assert_eq!(super::copy_through::<Ticket>(&db, &fresh).await, 30);
    assert_eq!(super::copy_through::<Audit>(&db, &fresh).await, 10);
    let index_drift = |report: &docshape::CheckReport| -> Vec<String> {
        report
            .drift
            .iter()
            .filter(|d| !matches!(d, docshape::check::Drift::MissingValidator))
            .map(|d| d.to_string())
            .collect()
    };
    for report in [
        docshape::check::<Activity>(&db).await.unwrap(),
        docshape::check::<Ticket>(&db).await.unwrap(),
        docshape::check::<Audit>(&db).await.unwrap(),
    ] {
        assert_eq!(index_drift(&report), Vec::<String>::new(), "{report}");
    }
    // The validator is one branch per type: a click carrying a purchase's tag is refused.
    let wrong = fresh
        .collection::<Document>("activity")
        .insert_one(doc! { "_id": ObjectId::new(), "kind": "purchase", "user": "u", "at": DateTime::now(), "target": "x" })
        .await;
    assert!(wrong.is_err(), "a purchase without its order was accepted");
    let unknown = fresh
        .collection::<Document>("activity")
        .insert_one(doc! { "_id": ObjectId::new(), "kind": "scroll", "user": "u", "at": DateTime::now() })
        .await;
    assert!(unknown.is_err(), "an unknown kind was accepted");

    // The outlier: every subscriber loads, embedded then overflowed, in order; sync on
    // the original database gives both collections validators that refuse none of
    // the stored documents, and `check` is clean.
    let all: Vec<Channel> =
        Channel::collection(&db).find(doc! {}).await.unwrap().try_collect().await.unwrap();
    assert_eq!(all.len(), 30);
    let loaded = Channel::load_subscribers(&db, &channel_ids[17]).await.unwrap();
    assert_eq!(loaded.len(), 2_500);
    assert_eq!(super::copy_through::<Channel>(&db, &fresh).await, 30);
    docshape::sync::<Channel>(&db).await.unwrap();
    for name in ["channels", "channels_overflow"] {
        let reply = db.run_command(doc! { "listCollections": 1, "filter": { "name": name } }).await.unwrap();
        let batch = reply.get_document("cursor").unwrap().get_array("firstBatch").unwrap();
        let validator = batch[0]
            .as_document()
            .unwrap()
            .get_document("options")
            .unwrap()
            .get_document("validator")
            .unwrap()
            .clone();
        let refused = db
            .collection::<Document>(name)
            .count_documents(doc! { "$nor": [validator.clone()] })
            .await
            .unwrap();
        assert_eq!(refused, 0, "{name}: {validator}");
    }
    let report = docshape::check::<Channel>(&db).await.unwrap();
    assert!(report.is_clean(), "{report}");
    // docshape's writers keep the shape under the synced validators (an `i32` count
    // stays an int32): one push stays embedded, one goes to the overflow.
    Channel::push_subscribers(&db, &channel_ids[0], &[ObjectId::new()]).await.unwrap();
    Channel::push_subscribers(&db, &channel_ids[17], &[ObjectId::new()]).await.unwrap();
    assert_eq!(Channel::load_subscribers(&db, &channel_ids[17]).await.unwrap().len(), 2_501);
    assert_eq!(Channel::load_subscribers(&db, &channel_ids[0]).await.unwrap().len(), 2);

    // The buckets: every one reads, syncs and checks clean; docshape appends into a
    // new hour and past a full one (the next bucket, `seq` 1), and reads them back.
    assert_eq!(super::copy_through::<SensorHour>(&db, &fresh).await, 9);
    let report = docshape::check::<SensorHour>(&db).await.unwrap();
    assert_eq!(index_drift(&report), Vec::<String>::new(), "{report}");
    docshape::sync::<SensorHour>(&db).await.unwrap();
    let item = |ms: i64| SensorHourItem { t: DateTime::from_millis(ms), v: 9.0 };
    SensorHour::append(&db, "s1", &item(HOUR0 + 3_000)).await.unwrap();
    SensorHour::append(&db, "s1", &item(HOUR0 + 3 * 3_600_000)).await.unwrap();
    let from = DateTime::from_millis(HOUR0);
    let to = DateTime::from_millis(HOUR0 + 4 * 3_600_000);
    let read = SensorHour::read_range(&db, "s1", from, to).await.unwrap();
    assert_eq!(read.len(), 6 + 2 + 3 + 2, "{read:?}");
    assert!(read.windows(2).all(|w| w[0].t <= w[1].t), "{read:?}");
    let overflow =
        db.collection::<Document>("sensor_hours").count_documents(doc! { "_id.seq": 1 }).await.unwrap();
    assert_eq!(overflow, 1);

    // The tenant's row reads one organisation's tickets only.
    let acme = Ticket::by_org_id_status("acme", "open").all(&db).await.unwrap();
    assert!(!acme.is_empty() && acme.iter().all(|t| t.org_id == "acme" && t.status == "open"), "{acme:?}");
    assert_eq!(<Ticket as Model>::TENANT, Some("org_id"));
    let _ = Bson::Null;
}
