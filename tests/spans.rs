//! docshape's spans and events, as a subscriber sees them: sync and check, a paginator
//! fetch, a backfill with its progress, a copies worker's drain (claims, batches, lag)
//! and a bucket append that meets a full bucket. The subscriber is written here: it
//! records every span with its fields and every event with its fields and the span it
//! happened in, for this test's thread only.

// See tests/index/mod.rs: a clippy false positive on repeated helper-attribute keys.
#![allow(clippy::duplicated_attributes)]

use docshape::bson;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bson::{doc, DateTime, Document};
use docshape::denormalized::{Worker, QUEUE};
use docshape::refs::Ref;
use docshape::versioning::{self, BackfillOptions, Progress};
use docshape::{Embedded, Model};
use docshape_examples::bucket::Reading;
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

// ---- the subscriber -------------------------------------------------------------------

/// A span or an event: its name (an event's message), fields, and the span it is in.
#[derive(Debug, Clone, Default)]
struct Seen {
    name: String,
    target: String,
    fields: BTreeMap<String, String>,
    parent: Option<String>,
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

#[derive(Default)]
struct State {
    spans: HashMap<u64, Seen>,
    /// Every span in creation order, by id.
    order: Vec<u64>,
    events: Vec<Seen>,
    entered: Vec<u64>,
}

#[derive(Clone, Default)]
struct Collector {
    next: Arc<AtomicU64>,
    state: Arc<Mutex<State>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Collector {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut state = self.state.lock().unwrap();
        let mut seen = Seen {
            name: attrs.metadata().name().to_owned(),
            target: attrs.metadata().target().to_owned(),
            parent: state.entered.last().map(|p| state.spans[p].name.clone()),
            ..Seen::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        state.spans.insert(id, seen);
        state.order.push(id);
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut state = self.state.lock().unwrap();
        if let Some(seen) = state.spans.get_mut(&span.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut state = self.state.lock().unwrap();
        let mut seen = Seen {
            target: event.metadata().target().to_owned(),
            parent: state.entered.last().map(|p| state.spans[p].name.clone()),
            ..Seen::default()
        };
        event.record(&mut Fields(&mut seen.fields));
        seen.name = seen.fields.remove("message").unwrap_or_default();
        state.events.push(seen);
    }
    fn enter(&self, span: &Id) {
        self.state.lock().unwrap().entered.push(span.into_u64());
    }
    fn exit(&self, span: &Id) {
        let mut state = self.state.lock().unwrap();
        if let Some(at) = state.entered.iter().rposition(|s| *s == span.into_u64()) {
            state.entered.remove(at);
        }
    }
}

impl Collector {
    /// docshape's spans named `name`, in creation order.
    fn spans(&self, name: &str) -> Vec<Seen> {
        let state = self.state.lock().unwrap();
        state.order.iter().map(|id| state.spans[id].clone()).filter(|s| s.name == name).collect()
    }
    /// docshape's events whose message is `name`.
    fn events(&self, name: &str) -> Vec<Seen> {
        self.state.lock().unwrap().events.iter().filter(|e| e.name == name).cloned().collect()
    }
    /// Whether every span and event recorded has the target `docshape`, which a
    /// filter such as `docshape=debug` selects.
    fn all_docshape(&self) -> bool {
        let state = self.state.lock().unwrap();
        state.spans.values().chain(&state.events).all(|s| s.target == "docshape")
    }
    fn clear(&self) {
        let mut state = self.state.lock().unwrap();
        state.order.clear();
        state.events.clear();
    }
}

/// Installs a fresh collector for this thread (the tests run on a current-thread
/// runtime, so every poll of docshape's futures happens here).
fn collect() -> (Collector, tracing::dispatcher::DefaultGuard) {
    let collector = Collector::default();
    let guard = tracing::dispatcher::set_default(&tracing::Dispatch::new(collector.clone()));
    (collector, guard)
}

fn one(seen: Vec<Seen>, what: &str) -> Seen {
    assert_eq!(seen.len(), 1, "one {what}: {seen:#?}");
    seen.into_iter().next().unwrap()
}

// ---- the models -----------------------------------------------------------------------

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "notes")]
#[index(keys(owner, created, _id))]
#[access(
    name = "notes_by_owner",
    filter(owner),
    sort(created = 1),
    paginate,
    allow(mutable_sort, reason = "the paging test writes no note and the write test pages no feed")
)]
#[access(name = "note_created", filter(_id), fields(created))]
#[access(name = "touch_note", filter(_id), update(inc(created)))]
struct Note {
    #[serde(rename = "_id")]
    id: i64,
    owner: String,
    created: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "users", version = 2, migrate(v1 = UserV1))]
struct User {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
    #[schema_version]
    schema_version: i32,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct UserV1 {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

impl From<UserV1> for User {
    fn from(v1: UserV1) -> Self {
        User { id: v1.id, full_name: v1.name, schema_version: 1 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "authors")]
struct Author {
    #[serde(rename = "_id")]
    id: String,
    name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "articles")]
#[index(keys(author_id))]
struct Article {
    #[serde(rename = "_id")]
    id: i64,
    author_id: Ref<Author>,
    #[denormalized(
        from = "Author::name",
        via = "author_id",
        refresh = "async",
        max_stale = "5m",
        reason = "a list of articles shows author names without a lookup"
    )]
    author_name: String,
}

const ARTICLES: &str = "articles.author_name";

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "small")]
#[bucket(series = sensor_id, period = day, per = "day", max = 10, items = readings, time = t)]
struct Small {
    #[serde(rename = "_id")]
    id: String,
    #[validate(max_length = 64)]
    sensor_id: String,
    day: String,
    count: i32,
    readings: Vec<Reading>,
}

// ---- the tests ------------------------------------------------------------------------

#[tokio::test]
async fn sync_and_check_have_a_span_per_collection_with_what_they_found() {
    let db = testkit::database("tracing_sync").await.unwrap();
    let (seen, _guard) = collect();
    docshape::sync::<Note>(&db).await.unwrap();
    let sync = one(seen.spans("sync"), "sync span");
    assert_eq!((sync.target.as_str(), sync.field("collection")), ("docshape", Some("notes")));
    let plan = one(seen.spans("sync.plan"), "plan span");
    assert_eq!((plan.field("collection"), plan.parent.as_deref()), (Some("notes"), Some("sync")));
    let synced = one(seen.events("synced"), "synced event");
    assert_eq!(synced.parent.as_deref(), Some("sync"));
    // Created the collection and its index.
    assert_ne!(synced.field("changes"), Some("0"), "{synced:?}");
    assert_eq!(one(seen.events("planned"), "planned").parent.as_deref(), Some("sync.plan"));
    // One event per action, in the order taken, naming what it touched.
    let actions: Vec<(String, String)> = seen
        .events("applied")
        .iter()
        .map(|a| {
            (a.field("action").unwrap_or_default().to_owned(), a.field("name").unwrap_or_default().to_owned())
        })
        .collect();
    assert_eq!(actions.first().map(|a| a.0.as_str()), Some("created the collection"), "{actions:?}");
    assert!(
        actions.iter().any(|(action, name)| action == "created index" && !name.is_empty()),
        "{actions:?}"
    );
    assert!(seen.events("applied").iter().all(|a| a.field("collection") == Some("notes")));

    seen.clear();
    let report = docshape::check::<Note>(&db).await.unwrap();
    assert!(report.is_clean(), "{report}");
    let check = one(seen.spans("check"), "check span");
    assert_eq!(check.field("collection"), Some("notes"));
    let checked = one(seen.events("checked"), "checked event");
    assert_eq!((checked.parent.as_deref(), checked.field("drift")), (Some("check"), Some("0")));

    // Nothing was profiled: each of the model's rows went uncalled.
    seen.clear();
    let options = docshape_cli::check::WorkloadOptions::default();
    let report = docshape_cli::check::check_workload::<Note>(&db, &options).await.unwrap();
    let rows = Note::ACCESS_PATTERNS.len().to_string();
    let span = one(seen.spans("check.workload"), "check.workload span");
    assert_eq!(span.field("collection"), Some("notes"));
    let checked = one(seen.events("checked the workload"), "checked the workload event");
    assert_eq!(
        (checked.parent.as_deref(), checked.field("findings")),
        (Some("check.workload"), Some(rows.as_str()))
    );
    assert_eq!(report.findings.len(), Note::ACCESS_PATTERNS.len(), "{report}");
    assert!(seen.all_docshape());
}

#[tokio::test]
async fn a_paginator_fetch_is_a_span_with_its_pattern_and_an_event_with_the_page() {
    let db = testkit::database("tracing_paginate").await.unwrap();
    docshape::sync::<Note>(&db).await.unwrap();
    let notes = db.collection::<Document>("notes");
    for i in 0..3_i64 {
        notes.insert_one(doc! { "_id": i, "owner": "u1", "created": i }).await.unwrap();
    }
    let (seen, _guard) = collect();
    let first = Note::notes_by_owner("u1").page_size(2).fetch(&db).await.unwrap();
    let next = first.next.clone().expect("a second page");
    let second = Note::notes_by_owner("u1").after(&next).page_size(2).fetch(&db).await.unwrap();
    assert_eq!((first.items.len(), second.items.len()), (2, 1));
    let fetches = seen.spans("paginate.fetch");
    assert_eq!(fetches.len(), 2, "{fetches:#?}");
    for (fetch, side) in fetches.iter().zip(["first", "after"]) {
        assert_eq!(fetch.field("collection"), Some("notes"));
        assert_eq!(fetch.field("pattern"), Some("notes_by_owner"));
        assert_eq!(fetch.field("page_size"), Some("2"));
        assert_eq!(fetch.field("side"), Some(side));
        assert_eq!(fetch.field("signed"), Some("false"));
    }
    let pages = seen.events("page");
    assert_eq!(pages.len(), 2, "{pages:#?}");
    assert!(pages.iter().all(|p| p.parent.as_deref() == Some("paginate.fetch")));
    assert_eq!((pages[0].field("items"), pages[0].field("next")), (Some("2"), Some("true")));
    assert_eq!((pages[1].field("items"), pages[1].field("next")), (Some("1"), Some("false")));
    // A refused token is an event too, with the error.
    seen.clear();
    assert!(Note::notes_by_owner("u2").after(&next).fetch(&db).await.is_err());
    let refused = one(seen.events("refused"), "refused event");
    assert!(refused.field("error").is_some_and(|e| e.contains("another access pattern")), "{refused:?}");
}

#[tokio::test]
async fn a_backfill_is_a_span_with_its_progress_as_events() {
    let db = testkit::database("tracing_backfill").await.unwrap();
    docshape::sync::<User>(&db).await.unwrap();
    let users = db.collection::<Document>("users");
    for i in 0..5_i64 {
        users.insert_one(doc! { "_id": i, "name": format!("User {i}") }).await.unwrap();
    }
    let (seen, _guard) = collect();
    let options = BackfillOptions::default().progress(Progress::Silent).batch_size(2);
    let report = versioning::backfill::<User>(&db, options).await.unwrap();
    assert_eq!(report.progress.upgraded, 5);
    let span = one(seen.spans("backfill"), "backfill span");
    assert_eq!((span.field("collection"), span.field("version")), (Some("users"), Some("2")));
    let progress = seen.events("progress");
    // After each full batch of 2, and at the end.
    assert_eq!(progress.len(), 3, "{progress:#?}");
    assert!(progress
        .iter()
        .all(|p| p.parent.as_deref() == Some("backfill") && p.field("total") == Some("5")));
    let upgraded: Vec<_> = progress.iter().map(|p| p.field("upgraded").unwrap().to_owned()).collect();
    assert_eq!(upgraded, ["2", "4", "5"]);
    assert_eq!(progress.last().unwrap().field("done"), Some("true"));
    let finished = one(seen.events("finished"), "finished event");
    assert_eq!((finished.field("stopped_early"), finished.field("resumed")), (Some("false"), Some("false")));
    assert_eq!((finished.field("outcome"), finished.field("left")), (Some("done"), Some("0")));
    // An operator's progress line: the rate, the time, the position.
    let last = progress.last().unwrap();
    for field in ["elapsed_ms", "per_second", "eta_ms", "position"] {
        assert!(last.field(field).is_some(), "{field}: {last:?}");
    }
    assert_eq!(progress[0].field("position"), Some("1"), "the last `_id` of the first batch");

    // A fatal error is returned and is an ERROR event of the span: a backfill of a
    // database whose client cannot reach its server.
    seen.clear();
    let unreachable = docshape::mongodb::Client::with_uri_str(
        "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=200&connectTimeoutMS=200",
    )
    .await
    .unwrap()
    .database("tracing_backfill");
    let options = BackfillOptions::default().progress(Progress::Silent);
    let err = versioning::backfill::<User>(&unreachable, options).await.unwrap_err();
    let failed = one(seen.events("failed"), "failed event");
    assert_eq!(failed.parent.as_deref(), Some("backfill"));
    assert_eq!(failed.field("error"), Some(err.to_string().as_str()));
}

#[tokio::test]
async fn a_worker_drain_is_a_span_with_claims_batches_and_lag() {
    let db = testkit::database("tracing_worker").await.unwrap();
    docshape::sync::<Author>(&db).await.unwrap();
    docshape::sync::<Article>(&db).await.unwrap();
    db.collection::<Document>("authors").insert_one(doc! { "_id": "a1", "name": "New" }).await.unwrap();
    for i in 0..3_i64 {
        db.collection::<Document>("articles")
            .insert_one(doc! { "_id": i, "author_id": "a1", "author_name": "Old" })
            .await
            .unwrap();
    }
    let enqueued = DateTime::from_millis(DateTime::now().timestamp_millis() - 2_000);
    db.collection::<Document>(QUEUE)
        .insert_one(doc! { "_id": { "copy": ARTICLES, "id": "a1" }, "seq": 1_i64, "enqueued_at": enqueued, "due": enqueued })
        .await
        .unwrap();
    let (seen, _guard) = collect();
    let lag = docshape::denormalized::lag(&db).await.unwrap();
    assert_eq!(lag.pending, 1);
    let lag = one(seen.events("copies.lag"), "lag event");
    assert_eq!((lag.field("pending"), lag.field("overdue")), (Some("1"), Some("1")));
    assert!(lag.field("oldest_age_ms").is_some_and(|ms| ms.parse::<u64>().unwrap() >= 2_000), "{lag:?}");

    let report = Worker::new(&db).id("w1").batch(2).run_until_empty().await.unwrap();
    assert_eq!((report.jobs, report.documents_updated), (1, 3), "{report:?}");
    let drain = one(seen.spans("copies.drain"), "drain span");
    assert_eq!(drain.field("worker"), Some("w1"));
    let claimed = one(seen.events("claimed"), "claimed event");
    assert_eq!((claimed.parent.as_deref(), claimed.field("copy")), (Some("copies.drain"), Some(ARTICLES)));
    assert_eq!(claimed.field("claims"), Some("1"));
    // Three copies in batches of two.
    let batches = seen.events("batch");
    let modified: Vec<_> = batches.iter().map(|b| b.field("modified").unwrap().to_owned()).collect();
    assert_eq!(modified, ["2", "1"], "{batches:#?}");
    assert!(batches
        .iter()
        .all(|b| b.field("copy") == Some(ARTICLES) && b.parent.as_deref() == Some("copies.drain")));
    let done = one(seen.events("done"), "done event");
    assert!(done.field("lag_ms").is_some_and(|ms| ms.parse::<u64>().unwrap() >= 2_000), "{done:?}");
    let drained = one(seen.events("drained"), "drained event");
    assert_eq!((drained.field("jobs"), drained.field("documents")), (Some("1"), Some("3")));
    assert!(drained.field("max_lag_ms").is_some_and(|ms| ms.parse::<u64>().unwrap() >= 2_000));
}

#[tokio::test]
async fn a_contended_bucket_append_says_it_retried_and_where_the_items_went() {
    let db = testkit::database("tracing_bucket").await.unwrap();
    docshape::sync::<Small>(&db).await.unwrap();
    // Another writer filled the day's first bucket.
    let readings: Vec<Document> =
        (0..10).map(|i| doc! { "t": DateTime::from_millis(1_785_888_000_000 + i), "v": 1.0 }).collect();
    db.collection::<Document>("small")
        .insert_one(doc! { "_id": "s1:2026-08-05", "sensor_id": "s1", "day": "2026-08-05", "count": 10, "readings": readings })
        .await
        .unwrap();
    let (seen, _guard) = collect();
    Small::append(&db, "s1", &Reading { t: DateTime::from_millis(1_785_888_000_100), v: 2.0 }).await.unwrap();
    let span = one(seen.spans("bucket.append"), "append span");
    assert_eq!((span.field("collection"), span.field("items")), (Some("small"), Some("1")));
    let retry = one(seen.events("contended; retrying"), "retry event");
    assert_eq!(retry.parent.as_deref(), Some("bucket.append"));
    assert_eq!(
        (retry.field("seq"), retry.field("attempt"), retry.field("room")),
        (Some("0"), Some("1"), Some("0"))
    );
    let appended = one(seen.events("appended"), "appended event");
    assert_eq!(appended.parent.as_deref(), Some("bucket.append"));
    assert_eq!(
        (
            appended.field("stored"),
            appended.field("updates"),
            appended.field("finds"),
            appended.field("created")
        ),
        (Some("1"), Some("2"), Some("1"), Some("1"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finder_and_a_write_row_are_spans_with_their_pattern() {
    let db = testkit::database("tracing_access").await.unwrap();
    docshape::sync::<Note>(&db).await.unwrap();
    db.collection::<Document>("notes")
        .insert_one(doc! { "_id": 1_i64, "owner": "u1", "created": 5_i64 })
        .await
        .unwrap();
    let (seen, _guard) = collect();
    let found = Note::note_created(1).one(&db).await.unwrap().unwrap();
    assert_eq!(found.created, 5);
    let find = one(seen.spans("access.find"), "access.find");
    assert_eq!((find.field("pattern"), find.field("limit")), (Some("note_created"), Some("1")));
    let event = one(seen.events("found"), "found");
    assert_eq!((event.parent.as_deref(), event.field("items")), (Some("access.find"), Some("1")));
    Note::touch_note(1, 1_i64).run(&db).await.unwrap();
    assert_eq!(one(seen.spans("access.update"), "access.update").field("pattern"), Some("touch_note"));
    assert!(Note::touch_note(2, 1_i64).run(&db).await.is_err());
    assert_eq!(one(seen.events("refused"), "refused").parent.as_deref(), Some("access.update"));
    assert!(seen.all_docshape());
}
