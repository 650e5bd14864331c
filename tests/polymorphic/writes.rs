//! Write rows, upserts, paginated rows and cached rows on a polymorphic model: a row on
//! one variant writes and reads that variant's documents only (its command carries the
//! discriminator's `$eq`), typed by that variant's fields; a row on the enum writes
//! and reads what every variant stores.

use docshape::access::UpdateError;
use docshape::bson::{doc, DateTime, Document};
use docshape::keys::{CacheError, StringFamily};
use docshape::{KeyFamily, Model};
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};

/// A notification store: e-mails, pushes to a device, and one daily digest per user
/// and day, each kept as its own document shape in one collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[serde(tag = "channel", rename_all = "snake_case")]
#[model(collection = "notifications", strict)]
#[index(keys(user, at = -1, _id = -1))]
#[access(name = "inbox", filter(user), sort(at = -1, _id = -1), paginate)]
#[access(name = "email_pages", variant = Email, filter(user), sort(at = -1, _id = -1), paginate)]
#[access(name = "mark_read", filter(_id), update(set(read)))]
#[access(name = "open_email", variant = Email, filter(_id), update(inc(opens), push(clicked)))]
#[access(name = "retry_push", variant = Push, filter(_id), update(inc(attempts)))]
#[access(
    name = "count_into_digest",
    variant = Digest,
    filter(user, day),
    update(inc(count)),
    upsert(insert(_id, at), default(read))
)]
#[access(
    name = "email_by_id",
    variant = Email,
    filter(_id),
    view(derive(Debug, Clone, PartialEq)),
    cache = EmailCache,
    consistency = "eventual ok"
)]
pub enum Notification {
    Email {
        #[serde(rename = "_id")]
        id: String,
        user: String,
        at: DateTime,
        read: bool,
        subject: String,
        opens: i64,
        #[validate(max_items = 3)]
        clicked: Vec<String>,
    },
    Push {
        #[serde(rename = "_id")]
        id: String,
        user: String,
        at: DateTime,
        read: bool,
        device: String,
        attempts: i64,
    },
    #[index(keys(user, day), unique)]
    Digest {
        #[serde(rename = "_id")]
        id: String,
        user: String,
        at: DateTime,
        read: bool,
        day: String,
        count: i64,
    },
}

/// An e-mail notification, cached for a minute.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:email:{id}", kind = string, value = EmailByIdView, ttl = "60s", note = "invalidate on notification write")]
pub struct EmailCache {
    pub id: String,
}

fn at(minute: i64) -> DateTime {
    DateTime::from_millis(1_780_000_000_000 + minute * 60_000)
}

fn email(id: &str, user: &str, minute: i64) -> Notification {
    Notification::Email {
        id: id.into(),
        user: user.into(),
        at: at(minute),
        read: false,
        subject: format!("subject {id}"),
        opens: 0,
        clicked: Vec::new(),
    }
}

fn push(id: &str, user: &str, minute: i64) -> Notification {
    Notification::Push {
        id: id.into(),
        user: user.into(),
        at: at(minute),
        read: false,
        device: "phone".into(),
        attempts: 0,
    }
}

async fn stored(db: &docshape::mongodb::Database, id: &str) -> Notification {
    Notification::collection(db).find_one(doc! { "_id": id }).await.unwrap().expect(id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_row_on_a_variant_writes_only_that_variants_documents() {
    let (db, log) = testkit::monitored("poly_writes").await.unwrap();
    // The model caches a row: its write rows delete the written document's key.
    let mut redis = testkit::redis::database().await.unwrap();
    docshape::sync::<Notification>(&db).await.unwrap();
    Notification::collection(&db).insert_many([email("e1", "u1", 1), push("p1", "u1", 2)]).await.unwrap();
    log.clear();

    // The variant's row: its filter carries the discriminator, its parameters are the
    // variant's field types, and a bounded push stays bounded.
    Notification::open_email("e1", 1_i64, "https://a.example/1").run(&db, &mut redis).await.unwrap();
    let sent = log.take();
    assert_eq!(sent.len(), 1, "one command: {sent:?}");
    let (name, command) = &sent[0];
    assert_eq!(name, "update");
    let statement = command.get_array("updates").unwrap()[0].as_document().unwrap();
    let filter = statement.get_document("q").unwrap();
    assert_eq!(filter.get_document("channel").unwrap(), &doc! { "$eq": "email" }, "{filter}");
    assert_eq!(filter.get_document("_id").unwrap(), &doc! { "$eq": "e1" }, "{filter}");
    let Notification::Email { opens, clicked, .. } = stored(&db, "e1").await else {
        panic!("still an email")
    };
    assert_eq!((opens, clicked), (1, vec!["https://a.example/1".to_owned()]));

    // Another variant's `_id` is not this row's document: nothing is written, and the
    // push keeps its shape (no `opens` or `clicked` sneaks into it).
    let wrong =
        Notification::open_email("p1", 1_i64, "https://a.example/2").run(&db, &mut redis).await.unwrap_err();
    assert!(
        matches!(wrong, CacheError::Update(UpdateError::NotFound { pattern: "open_email", .. })),
        "{wrong:?}"
    );
    assert_eq!(stored(&db, "p1").await, push("p1", "u1", 2));
    let raw =
        db.collection::<Document>("notifications").find_one(doc! { "_id": "p1" }).await.unwrap().unwrap();
    assert!(!raw.contains_key("opens") && !raw.contains_key("clicked"), "{raw}");
    let wrong = Notification::retry_push("e1", 1_i64).run(&db, &mut redis).await.unwrap_err();
    assert!(matches!(wrong, CacheError::Update(UpdateError::NotFound { .. })), "{wrong:?}");
    Notification::retry_push("p1", 2_i64).run(&db, &mut redis).await.unwrap();
    let Notification::Push { attempts, .. } = stored(&db, "p1").await else { panic!("still a push") };
    assert_eq!(attempts, 2);

    // The bound is the variant field's: a fourth click is refused as full.
    for i in 2..=3 {
        Notification::open_email("e1", 1_i64, format!("https://a.example/{i}"))
            .run(&db, &mut redis)
            .await
            .unwrap();
    }
    let full =
        Notification::open_email("e1", 1_i64, "https://a.example/4").run(&db, &mut redis).await.unwrap_err();
    assert!(matches!(full, CacheError::Update(UpdateError::Full { max: 3, .. })), "{full:?}");

    // A row on the enum writes what every variant stores, in any variant.
    log.clear();
    Notification::mark_read("e1", true).run(&db, &mut redis).await.unwrap();
    Notification::mark_read("p1", true).run(&db, &mut redis).await.unwrap();
    for (_, command) in log.take() {
        let q = command.get_array("updates").unwrap()[0]
            .as_document()
            .unwrap()
            .get_document("q")
            .unwrap()
            .clone();
        assert!(!q.contains_key("channel"), "a row on the enum has no discriminator: {q}");
    }
    assert!(matches!(stored(&db, "e1").await, Notification::Email { read: true, opens: 3, .. }));
    assert!(matches!(stored(&db, "p1").await, Notification::Push { read: true, attempts: 2, .. }));

    // A hostile value is compared literally: it matches nothing and writes nothing.
    let hostile = Notification::retry_push(doc! { "$ne": "x" }.to_string(), 1_i64)
        .run(&db, &mut redis)
        .await
        .unwrap_err();
    assert!(matches!(hostile, CacheError::Update(UpdateError::NotFound { .. })), "{hostile:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upsert_on_a_variant_creates_that_variant_and_its_unique_index_is_per_variant() {
    let db = testkit::database("poly_upsert").await.unwrap();
    // The model caches a row: an upsert deletes the written key through this connection.
    docshape::keys::invalidate_on_write(&db, testkit::redis::database().await.unwrap());
    docshape::sync::<Notification>(&db).await.unwrap();
    // Another variant's document with the same user and no `day`: the digest's unique
    // index is partial to digests, so it is no duplicate of the digest created below.
    Notification::collection(&db).insert_one(push("p1", "u1", 1)).await.unwrap();
    Notification::collection(&db).insert_one(push("p2", "u1", 2)).await.unwrap();

    let first =
        Notification::count_into_digest("u1", "2026-12-04", 1_i64, "d1", at(5)).run(&db).await.unwrap();
    assert!(first.inserted(), "{first:?}");
    let second =
        Notification::count_into_digest("u1", "2026-12-04", 2_i64, "d1-again", at(9)).run(&db).await.unwrap();
    assert!(!second.inserted(), "{second:?}");
    let digests: Vec<Notification> = Notification::collection(&db)
        .find(doc! { "channel": "digest" })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(digests.len(), 1, "{digests:?}");
    let Notification::Digest { user, day, count, read, at: when, .. } = &digests[0] else {
        panic!("the upsert creates a digest: {digests:?}")
    };
    // Created with the filter's values and the discriminator, `at` given on insert only,
    // `read` its type's default, and both counts.
    assert_eq!((user.as_str(), day.as_str(), *count, *read, *when), ("u1", "2026-12-04", 3, false, at(5)));
    // Another day is another digest; the pushes are untouched.
    Notification::count_into_digest("u1", "2026-12-05", 1_i64, "d2", at(6)).run(&db).await.unwrap();
    let count =
        db.collection::<Document>("notifications").count_documents(doc! { "channel": "digest" }).await;
    assert_eq!(count.unwrap(), 2);
    assert_eq!(stored(&db, "p1").await, push("p1", "u1", 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paginated_row_pages_its_variant_or_every_variant() {
    let (db, log) = testkit::monitored("poly_pages").await.unwrap();
    docshape::sync::<Notification>(&db).await.unwrap();
    let mut all = Vec::new();
    for i in 0..14 {
        // Pairs share a minute: `_id` breaks the ties.
        let (id, minute) = (format!("n{i:02}"), i / 2);
        all.push(if i % 3 == 0 { push(&id, "u1", minute) } else { email(&id, "u1", minute) });
    }
    all.push(email("other", "u2", 3));
    Notification::collection(&db).insert_many(&all).await.unwrap();
    log.clear();

    // The variant's row pages e-mails only, as the variant's view, newest first.
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    for pages in 1.. {
        assert!(pages <= 10, "the walk does not end");
        let mut p = Notification::email_pages("u1").page_size(4);
        if let Some(c) = &cursor {
            p = p.after(c);
        }
        let page = p.fetch(&db).await.unwrap();
        seen.extend(page.items.into_iter().map(|v: EmailPagesView| v.id));
        match page.next {
            Some(n) => cursor = Some(n),
            None => break,
        }
    }
    let mut expected: Vec<(DateTime, String)> = all
        .iter()
        .filter_map(|n| match n {
            Notification::Email { id, user, at, .. } if user == "u1" => Some((*at, id.clone())),
            _ => None,
        })
        .collect();
    expected.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, expected.into_iter().map(|(_, id)| id).collect::<Vec<_>>());
    for find in log.named("find") {
        let filter = find.get_document("filter").unwrap();
        assert_eq!(filter.get_document("channel").unwrap(), &doc! { "$eq": "email" }, "{find}");
    }

    // The enum's row pages every variant, each read back as what it is.
    log.clear();
    let page = Notification::inbox("u1").page_size(20).fetch(&db).await.unwrap();
    assert_eq!(page.items.len(), 14);
    assert_eq!(page.items.iter().filter(|n| matches!(n, Notification::Push { .. })).count(), 5);
    let find = &log.named("find")[0];
    assert!(!find.get_document("filter").unwrap().contains_key("channel"), "{find}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_row_on_a_variant_caches_that_variant_only() {
    let db = testkit::database("poly_cache").await.unwrap();
    let mut redis = testkit::redis::database().await.unwrap();
    docshape::sync::<Notification>(&db).await.unwrap();
    Notification::collection(&db).insert_many([email("e1", "u1", 1), push("p1", "u1", 2)]).await.unwrap();

    let view = Notification::email_by_id("e1").one(&db, &mut redis).await.unwrap().expect("e1");
    assert_eq!(view.subject, "subject e1");
    assert_eq!(EmailCache { id: "e1".into() }.get(&mut redis).await.unwrap(), Some(view));
    // A push's `_id` is no e-mail: nothing is read, and nothing is cached under it.
    assert!(Notification::email_by_id("p1").one(&db, &mut redis).await.unwrap().is_none());
    assert_eq!(EmailCache { id: "p1".into() }.get(&mut redis).await.unwrap(), None);
    // The model's write rows delete the key, whichever variant's row writes.
    Notification::mark_read("e1", true).run(&db, &mut redis).await.unwrap();
    assert_eq!(EmailCache { id: "e1".into() }.get(&mut redis).await.unwrap(), None);
    let fresh = Notification::email_by_id("e1").one(&db, &mut redis).await.unwrap().unwrap();
    assert!(fresh.read);
}
