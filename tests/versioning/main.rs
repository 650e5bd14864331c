//! Schema versioning on a real server: both seeds' migrations, a three-version chain,
//! errors for versions the code cannot read, no lost update under concurrency, and a
//! backfill that survives being stopped and aborted.

use docshape::bson;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use docshape::bson::{doc, Bson, Document};
use docshape::versioning::{
    self, BackfillEnd, BackfillEvent, BackfillOptions, Progress, RetryPolicy, StopReason, VersionError,
    Versioned, CHECKPOINTS,
};
use docshape::{Embedded, Model};
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};

mod adversarial;
mod finish;
mod hardening;
mod patterns;

// ---- patterns-en: v1 `{name}` -> v2 `{full_name}`, typed --------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "users", version = 2, migrate(v1 = UserV1))]
struct User {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
    visits: i64,
    log: Vec<String>,
    #[schema_version]
    schema_version: i32,
}

/// v1 as stored: `name`, and no version field (documents without it are v1).
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct UserV1 {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    visits: i64,
    log: Vec<String>,
}

impl From<UserV1> for User {
    fn from(v1: UserV1) -> Self {
        User { id: v1.id, full_name: v1.name, visits: v1.visits, log: v1.log, schema_version: 1 }
    }
}

fn user_v1(id: i64) -> Document {
    doc! { "_id": id, "name": format!("User {id}"), "visits": 0_i64, "log": [] }
}

// ---- patrones-es: v1 `nombre_completo` -> v2 `nombre {primero, apellido}`, over documents

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "usuarios", version = 2, migrate(v1(document = nombre_v1_a_v2)))]
struct Usuario {
    #[serde(rename = "_id")]
    id: bson::oid::ObjectId,
    nombre: Nombre,
    email: String,
    #[schema_version]
    version_esquema: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Nombre {
    primero: String,
    apellido: String,
}

/// The seed's `obtenerNombre`, now that every reader sees v2.
fn obtener_nombre(u: &Usuario) -> String {
    format!("{} {}", u.nombre.primero, u.nombre.apellido)
}

/// v1 stored the whole name as one string: the first word is the first name.
fn nombre_v1_a_v2(mut d: Document) -> Result<Document, String> {
    let completo = d.get_str("nombre_completo").map_err(|_| "v1 sin nombre_completo".to_owned())?.to_owned();
    let (primero, apellido) = completo.split_once(' ').unwrap_or((completo.as_str(), ""));
    d.insert("nombre", doc! { "primero": primero, "apellido": apellido });
    d.remove("nombre_completo");
    Ok(d)
}

// ---- a three-version chain: v1 -> v2 -> v3, typed all the way (profiles.rs, which the
// backfill's child process shares) ----------------------------------------------------

mod profiles;
use profiles::{profile, Profile};

async fn raw(db: &mongodb::Database, collection: &str) -> Vec<Document> {
    db.collection::<Document>(collection)
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

fn is_validation_error(e: &mongodb::error::Error) -> bool {
    matches!(e.kind.as_ref(), mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) if w.code == 121)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patterns_en_name_becomes_full_name_on_read_and_on_the_next_write() {
    let db = testkit::database("users").await.unwrap();
    docshape::sync::<User>(&db).await.unwrap();
    let users = db.collection::<Document>("users");
    // Old code keeps writing v1 documents until it is gone: the validator admits them.
    users.insert_many((1..=5).map(user_v1)).await.unwrap();
    let current = User { id: 6, full_name: "Grace Hopper".into(), visits: 0, log: vec![], schema_version: 2 };
    versioning::insert_one(&db, &current).await.unwrap();

    let before = versioning::reads::<User>();
    let all = versioning::find::<User>(&db, doc! {}).await.unwrap();
    assert_eq!(all.len(), 6);
    for loaded in &all[..5] {
        assert_eq!(loaded.stored_version, 1);
        assert_eq!(loaded.value.full_name, format!("User {}", loaded.value.id));
        assert_eq!(loaded.value.schema_version, 2, "read values carry the current version");
    }
    assert_eq!(all[5].value, current);
    let after = versioning::reads::<User>();
    assert_eq!(after.get(&1).copied().unwrap_or(0) - before.get(&1).copied().unwrap_or(0), 5);
    assert_eq!(after.get(&2).copied().unwrap_or(0) - before.get(&2).copied().unwrap_or(0), 1);

    // Reading changed nothing on the server.
    assert_eq!(
        versioning::version_counts::<User>(&db).await.unwrap().by_version,
        BTreeMap::from([(1, 5), (2, 1)])
    );

    // The next write persists the v2 shape: `full_name`, no `name`, version 2.
    let outcome =
        versioning::update_one::<User>(&db, &3_i64, doc! { "$inc": { "visits": 1 } }, RetryPolicy::default())
            .await
            .unwrap();
    assert!(outcome.upgraded);
    assert_eq!(outcome.stored_version, 1);
    let stored = users.find_one(doc! { "_id": 3_i64 }).await.unwrap().unwrap();
    assert_eq!(
        stored,
        doc! { "_id": 3_i64, "full_name": "User 3", "visits": 1_i64, "log": [], "schema_version": 2 }
    );
    // A current document: one update, no upgrade.
    let outcome =
        versioning::update_one::<User>(&db, &3_i64, doc! { "$inc": { "visits": 1 } }, RetryPolicy::default())
            .await
            .unwrap();
    assert_eq!((outcome.upgraded, outcome.attempts), (false, 1));

    // Loaded::save does the same for a value changed in memory.
    let mut loaded = versioning::find_one::<User>(&db, doc! { "_id": 4_i64 }).await.unwrap().unwrap();
    loaded.value.log.push("saved".into());
    loaded.save(&db).await.unwrap();
    loaded.value.visits = 10;
    loaded.save(&db).await.unwrap();
    let stored = users.find_one(doc! { "_id": 4_i64 }).await.unwrap().unwrap();
    assert_eq!(
        stored,
        doc! { "_id": 4_i64, "full_name": "User 4", "visits": 10_i64, "log": ["saved"], "schema_version": 2 }
    );

    // The validator: v2 shape at v2, v1 shape at v1 (or without the field); nothing else.
    let bad = [
        doc! { "_id": 100_i64, "name": "v1 shape", "visits": 0_i64, "log": [], "schema_version": 2 },
        doc! { "_id": 101_i64, "full_name": "v2 shape", "visits": 0_i64, "log": [] },
        doc! { "_id": 102_i64, "full_name": "x", "visits": 0_i64, "log": [], "schema_version": 3 },
        doc! { "_id": 103_i64, "visits": 0_i64, "log": [], "schema_version": 1 },
    ];
    for d in bad {
        let e = users.insert_one(d.clone()).await.expect_err(&format!("admitted {d}"));
        assert!(is_validation_error(&e), "{e}");
    }
    users
        .insert_one(
            doc! { "_id": 104_i64, "name": "v1 with field", "visits": 0_i64, "log": [], "schema_version": 1 },
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patrones_es_nombre_completo_se_separa() {
    let db = testkit::database("usuarios").await.unwrap();
    docshape::sync::<Usuario>(&db).await.unwrap();
    let col = db.collection::<Document>("usuarios");
    let id = bson::oid::ObjectId::new();
    col.insert_one(doc! { "_id": id, "version_esquema": 1, "nombre_completo": "Alicia García", "email": "alicia@example.com" }).await.unwrap();
    let u: Usuario = versioning::find_one(&db, doc! { "_id": id }).await.unwrap().unwrap().value;
    assert_eq!(u.nombre, Nombre { primero: "Alicia".into(), apellido: "García".into() });
    assert_eq!(obtener_nombre(&u), "Alicia García");
    assert_eq!(u.version_esquema, 2);

    versioning::update_one::<Usuario>(
        &db,
        &id,
        doc! { "$set": { "email": "a@example.com" } },
        RetryPolicy::default(),
    )
    .await
    .unwrap();
    let stored = col.find_one(doc! { "_id": id }).await.unwrap().unwrap();
    assert_eq!(
        stored,
        doc! { "_id": id, "nombre": { "primero": "Alicia", "apellido": "García" }, "email": "a@example.com", "version_esquema": 2 }
    );
    // A v1 document the step cannot read is an error naming it, not a panic.
    let broken = bson::oid::ObjectId::new();
    col.insert_one(doc! { "_id": broken, "version_esquema": 1, "email": "x@example.com" }).await.unwrap();
    let e = versioning::find_one::<Usuario>(&db, doc! { "_id": broken }).await.unwrap_err();
    assert!(
        matches!(&e, VersionError::Upgrade { collection: "usuarios", version: 1, id, .. } if *id == Bson::ObjectId(broken)),
        "{e:?}"
    );
    assert!(e.to_string().contains("v1 sin nombre_completo"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_version_chain_reads_every_version() {
    let db = testkit::database("profiles").await.unwrap();
    docshape::sync::<Profile>(&db).await.unwrap();
    let (stored, expected): (Vec<Document>, Vec<Profile>) = (0..30).map(profile).unzip();
    db.collection::<Document>("profiles").insert_many(stored).await.unwrap();
    let read: Vec<Profile> =
        versioning::find::<Profile>(&db, doc! {}).await.unwrap().into_iter().map(|l| l.value).collect();
    assert_eq!(read, expected);
    assert_eq!(
        versioning::version_counts::<Profile>(&db).await.unwrap().by_version,
        BTreeMap::from([(1, 10), (2, 10), (3, 10)])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_the_code_cannot_read_are_typed_errors() {
    let db = testkit::database("unreadable").await.unwrap();
    // No validator yet, so anything can be stored.
    let col = db.collection::<Document>("profiles");
    col.insert_many([
        doc! { "_id": 1_i64, "email": "a@b.c", "email_verified": true, "tags": [], "v": 9_i64 },
        doc! { "_id": 2_i64, "email": "a@b.c", "tags": [], "v": 0_i64 },
        doc! { "_id": 3_i64, "email": "a@b.c", "tags": [], "v": "two" },
        doc! { "_id": 4_i64, "mail": "a@b.c", "tags": "x,y", "v": 1.0 },
        doc! { "_id": 5_i64, "email": "a@b.c", "tags": [] },
    ])
    .await
    .unwrap();
    let db: &mongodb::Database = &db;
    let one = |id: i64| async move { versioning::find_one::<Profile>(db, doc! { "_id": id }).await };
    match one(1).await {
        Err(VersionError::NewerVersion {
            collection: "profiles",
            id: Bson::Int64(1),
            version: 9,
            current: 3,
        }) => {}
        other => panic!("{other:?}"),
    }
    match one(2).await {
        Err(VersionError::NoPath { collection: "profiles", id: Bson::Int64(2), version: 0, known }) => {
            assert_eq!(known, [1, 2, 3])
        }
        other => panic!("{other:?}"),
    }
    match one(3).await {
        Err(VersionError::BadVersionField { field: "v", value: Bson::String(s), .. }) => assert_eq!(s, "two"),
        other => panic!("{other:?}"),
    }
    // A shell's double 1.0 is version 1.
    assert_eq!(one(4).await.unwrap().unwrap().value.tags, ["x", "y"]);
    // No field: version 1, whose shape this is not.
    match one(5).await {
        Err(e @ VersionError::Upgrade { version: 1, .. }) => {
            assert!(e.to_string().contains("profiles 5"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    // `find` over them all fails rather than skipping the bad ones.
    assert!(versioning::find::<Profile>(db, doc! {}).await.is_err());
    // And a write to a newer document refuses rather than downgrading it.
    let e = versioning::update_one::<Profile>(
        db,
        &1_i64,
        doc! { "$set": { "email": "x" } },
        RetryPolicy::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, VersionError::NewerVersion { version: 9, .. }), "{e:?}");
    assert_eq!(
        col.find_one(doc! { "_id": 1_i64 }).await.unwrap().unwrap().get_str("email").unwrap(),
        "a@b.c"
    );
    let e = versioning::update_one::<Profile>(
        db,
        &77_i64,
        doc! { "$set": { "email": "x" } },
        RetryPolicy::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, VersionError::NotFound { .. }), "{e:?}");
}

/// Writers increment and append through `update_one`, readers upgrade and save, a
/// backfill runs alongside: every increment and every append survives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_upgraders_and_writers_lose_no_update() {
    const DOCS: i64 = 40;
    const WRITERS: usize = 4;
    const ROUNDS: usize = 3;
    let db = Arc::new(testkit::database("concurrency").await.unwrap());
    docshape::sync::<User>(&db).await.unwrap();
    db.collection::<Document>("users").insert_many((0..DOCS).map(user_v1)).await.unwrap();

    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                for id in 0..DOCS {
                    let entry = format!("w{w}-r{round}");
                    // Plenty of attempts: with every task on the same documents, races are the point.
                    let policy = RetryPolicy::default().max_attempts(100);
                    versioning::update_one::<User>(
                        &db,
                        &id,
                        doc! { "$inc": { "visits": 1 }, "$push": { "log": entry } },
                        policy,
                    )
                    .await
                    .unwrap();
                }
            }
        }));
    }
    for r in 0..2 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            // Readers that upgrade and save what they read; a lost race is fine.
            for id in (0..DOCS).rev().skip(r) {
                if let Some(mut loaded) = versioning::find_one::<User>(&db, doc! { "_id": id }).await.unwrap()
                {
                    match loaded.save(&db).await {
                        Ok(()) | Err(VersionError::Conflict { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        }));
    }
    {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let options = BackfillOptions::default().batch_size(7).progress(Progress::Silent);
            versioning::backfill::<User>(&db, options).await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let report = versioning::backfill::<User>(&db, BackfillOptions::default().progress(Progress::Silent))
        .await
        .unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.counts.by_version, BTreeMap::from([(2, DOCS as u64)]));

    let expected_log: BTreeSet<String> =
        (0..WRITERS).flat_map(|w| (0..ROUNDS).map(move |r| format!("w{w}-r{r}"))).collect();
    for d in raw(&db, "users").await {
        let id = d.get_i64("_id").unwrap();
        assert_eq!(d.get_i32("schema_version").unwrap(), 2, "{d}");
        assert_eq!(d.get_str("full_name").unwrap(), format!("User {id}"), "{d}");
        assert!(!d.contains_key("name"), "{d}");
        assert_eq!(d.get_i64("visits").unwrap(), (WRITERS * ROUNDS) as i64, "lost increments: {d}");
        let log: Vec<&str> = d.get_array("log").unwrap().iter().filter_map(Bson::as_str).collect();
        assert_eq!(log.len(), WRITERS * ROUNDS, "lost or doubled appends: {d}");
        assert_eq!(log.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>(), expected_log, "{d}");
    }
}

/// 3,000 documents across three versions: a backfill stopped by its budget, one
/// aborted mid-batch, and one more to finish; counts right, every document intact.
/// (Sized for the local server: each run still spans several batches, the budget stops
/// one mid-way, and the abort lands after some batches and before the end.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_of_thousands_of_mixed_documents_survives_interruption() {
    const N: i64 = 3_000;
    let db = Arc::new(testkit::database("backfill").await.unwrap());
    docshape::sync::<Profile>(&db).await.unwrap();
    let (stored, expected): (Vec<Document>, Vec<Profile>) = (0..N).map(profile).unzip();
    for chunk in stored.chunks(2_000) {
        db.collection::<Document>("profiles").insert_many(chunk.to_vec()).await.unwrap();
    }
    let counts = versioning::version_counts::<Profile>(&db).await.unwrap();
    assert_eq!(counts.by_version, BTreeMap::from([(1, 1000), (2, 1000), (3, 1000)]));
    assert_eq!(counts.to_string(), "{1: 1000, 2: 1000, 3: 1000}");

    // A budget of 750: stops, keeps its checkpoint.
    let events: Arc<Mutex<Vec<BackfillEvent>>> = Arc::default();
    let sink = events.clone();
    let options = BackfillOptions::default()
        .batch_size(120)
        .max_documents(750)
        .progress(Progress::Events(Arc::new(move |e| sink.lock().unwrap().push(e.clone()))));
    let first = versioning::backfill::<Profile>(&db, options).await.unwrap();
    assert!(first.stopped_early && !first.resumed);
    assert_eq!(first.end, BackfillEnd::Stopped(StopReason::MaxDocuments), "not done: stopped by its budget");
    assert_eq!(first.progress.upgraded, 750);
    assert_eq!(first.progress.total, 2_000);
    assert_eq!(first.counts.older_than(3), 2_000 - 750);
    assert!(db
        .collection::<Document>(CHECKPOINTS)
        .find_one(doc! { "_id": "profiles" })
        .await
        .unwrap()
        .is_some());
    {
        let events = events.lock().unwrap();
        assert!(events.len() >= 2 && events.last().unwrap().done);
        assert!(events.windows(2).all(|w| w[0].upgraded <= w[1].upgraded), "progress goes forward");
    }

    // Aborted while running: whatever it finished is kept, nothing half-written.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u64>();
    let aborted = {
        let db = db.clone();
        let options =
            BackfillOptions::default().batch_size(75).progress(Progress::Events(Arc::new(move |e| {
                let _ = tx.send(e.upgraded);
            })));
        tokio::spawn(async move { versioning::backfill::<Profile>(&db, options).await })
    };
    while let Some(upgraded) = rx.recv().await {
        if upgraded >= 300 {
            break;
        }
    }
    aborted.abort();
    assert!(aborted.await.unwrap_err().is_cancelled());
    let mid = versioning::version_counts::<Profile>(&db).await.unwrap();
    assert!(mid.older_than(3) <= 2_000 - 750 - 300, "{mid}");
    assert!(mid.older_than(3) > 0, "aborted before the end: {mid}");

    // Run again: resumes from the checkpoint, then sweeps from the start.
    let last = versioning::backfill::<Profile>(&db, BackfillOptions::default().progress(Progress::Silent))
        .await
        .unwrap();
    assert!(last.resumed && !last.stopped_early);
    assert!(last.failures.is_empty(), "{:?}", last.failures);
    assert_eq!(last.counts.by_version, BTreeMap::from([(3, N as u64)]));
    assert!(db
        .collection::<Document>(CHECKPOINTS)
        .find_one(doc! { "_id": "profiles" })
        .await
        .unwrap()
        .is_none());

    // Every document, field by field, is what its original version meant.
    let docs = raw(&db, "profiles").await;
    assert_eq!(docs.len(), N as usize);
    for (d, want) in docs.into_iter().zip(&expected) {
        let got: Profile = docshape::bson_compat::from_document(d.clone()).unwrap();
        assert_eq!(&got, want, "{d}");
        // Upgrades are updates of what differs (so fields other writers add survive): the
        // fields are exactly these, in whatever order the updates left them.
        let keys: BTreeSet<&str> = d.keys().map(String::as_str).collect();
        assert_eq!(keys, BTreeSet::from(["_id", "email", "email_verified", "tags", "v"]), "{d}");
    }
    // Idempotent: nothing left to do.
    let again = versioning::backfill::<Profile>(&db, BackfillOptions::default().progress(Progress::Silent))
        .await
        .unwrap();
    assert_eq!((again.progress.scanned, again.progress.upgraded), (0, 0));
}

#[test]
fn versioned_constants_follow_the_attributes() {
    assert_eq!(
        (User::VERSION, User::VERSION_FIELD, User::MISSING_VERSION, User::OLD_VERSIONS),
        (2, "schema_version", 1, &[1][..])
    );
    assert_eq!((Usuario::VERSION_FIELD, Usuario::OLD_VERSIONS), ("version_esquema", &[1][..]));
    assert_eq!(Profile::OLD_VERSIONS, [1, 2]);
    // The validator admits each version's shape: one branch per version.
    let validator = Profile::validator();
    let branches = validator.get_document("$jsonSchema").unwrap().get_array("anyOf").unwrap();
    assert_eq!(branches.len(), 3);
}

// ---- generated paginators read every version too ---------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "notes", version = 2, migrate(v1(document = note_v1)))]
#[index(keys(owner, created, _id))]
#[access(name = "notes_by_owner", filter(owner), sort(created = 1), paginate)]
struct Note {
    #[serde(rename = "_id")]
    id: i64,
    owner: String,
    created: i64,
    body: String,
    #[schema_version]
    v: i32,
}

/// v1 called the text `text`.
fn note_v1(mut d: Document) -> Result<Document, String> {
    let text = d.remove("text").ok_or("v1 note without text")?;
    d.insert("body", text);
    Ok(d)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paginators_of_a_versioned_model_upgrade_what_they_read() {
    let db = testkit::database("notes").await.unwrap();
    docshape::sync::<Note>(&db).await.unwrap();
    let stored: Vec<Document> = (0..20_i64)
        .map(|i| match i % 2 {
            0 => doc! { "_id": i, "owner": "ada", "created": i, "text": format!("note {i}") },
            _ => doc! { "_id": i, "owner": "ada", "created": i, "body": format!("note {i}"), "v": 2 },
        })
        .collect();
    db.collection::<Document>("notes").insert_many(stored).await.unwrap();
    let mut seen = Vec::new();
    let mut page = Note::notes_by_owner("ada").page_size(7).fetch(&db).await.unwrap();
    loop {
        seen.extend(page.items.iter().cloned());
        let Some(next) = page.next.clone() else { break };
        page = Note::notes_by_owner("ada").page_size(7).after(&next).fetch(&db).await.unwrap();
    }
    let expected: Vec<Note> = (0..20_i64)
        .map(|i| Note { id: i, owner: "ada".into(), created: i, body: format!("note {i}"), v: 2 })
        .collect();
    assert_eq!(seen, expected);
    // A note at a version the code cannot read (written past the validator) stops the
    // page with a typed error naming it.
    db.run_command(doc! {
        "insert": "notes",
        "documents": [{ "_id": 99_i64, "owner": "bob", "created": 1_i64, "body": "x", "v": 5 }],
        "bypassDocumentValidation": true,
    })
    .await
    .unwrap();
    match Note::notes_by_owner("bob").fetch(&db).await {
        Err(docshape::paginate::PageError::Version(e)) => {
            assert!(matches!(*e, VersionError::NewerVersion { collection: "notes", version: 5, .. }), "{e}")
        }
        other => panic!("{:?}", other.map(|p| p.items)),
    }
}

/// `max_per_second` holds the pace: 40 upgrades at 100 per second cannot finish in less
/// than about 0.4 s, however fast the server is (a lower bound, so load cannot fail it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_keeps_to_its_rate_limit() {
    let db = testkit::database("rate").await.unwrap();
    docshape::sync::<User>(&db).await.unwrap();
    db.collection::<Document>("users").insert_many((0..40).map(user_v1)).await.unwrap();
    let started = std::time::Instant::now();
    let options = BackfillOptions::default().max_per_second(100.0).progress(Progress::Silent);
    let report = versioning::backfill::<User>(&db, options).await.unwrap();
    assert_eq!(report.progress.upgraded, 40);
    assert!(started.elapsed() >= std::time::Duration::from_millis(390), "{:?}", started.elapsed());
}

// ---- edge cases: version 1 added to an existing collection, mixed `_id`s, bad upgrades --

/// `version = 1` on a collection whose documents have no version field yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "tallies", version = 1)]
struct Tally {
    #[serde(rename = "_id")]
    id: i64,
    n: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    #[schema_version]
    v: u8,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_one_on_unversioned_documents_reads_writes_and_stamps() {
    let db = testkit::database("tallies").await.unwrap();
    docshape::sync::<Tally>(&db).await.unwrap();
    let col = db.collection::<Document>("tallies");
    // Written before the model had a version (the validator admits it), and, before
    // there was a validator, by a shell that wrote the version as a double.
    col.insert_one(doc! { "_id": 1_i64, "n": 0_i64 }).await.unwrap();
    db.run_command(doc! {
        "insert": "tallies",
        "documents": [{ "_id": 2_i64, "n": 0_i64, "v": 1.0 }],
        "bypassDocumentValidation": true,
    })
    .await
    .unwrap();
    for id in [1_i64, 2] {
        let t = versioning::find_one::<Tally>(&db, doc! { "_id": id }).await.unwrap().unwrap().value;
        assert_eq!(t, Tally { id, n: 0, note: None, v: 1 });
    }
    // update_one stamps the version, then updates, within one attempt.
    let outcome = versioning::update_one::<Tally>(
        &db,
        &1_i64,
        doc! { "$inc": { "n": 1 } },
        RetryPolicy::default().max_attempts(1),
    )
    .await
    .unwrap();
    assert!(outcome.upgraded);
    assert_eq!(
        col.find_one(doc! { "_id": 1_i64 }).await.unwrap().unwrap(),
        doc! { "_id": 1_i64, "n": 1_i64, "v": 1 }
    );

    // save writes what differs: a field another writer added since the read survives.
    let mut loaded = versioning::find_one::<Tally>(&db, doc! { "_id": 1_i64 }).await.unwrap().unwrap();
    col.update_one(doc! { "_id": 1_i64 }, doc! { "$set": { "note": "added meanwhile" } }).await.unwrap();
    loaded.value.n = 5;
    loaded.save(&db).await.unwrap();
    let stored = col.find_one(doc! { "_id": 1_i64 }).await.unwrap().unwrap();
    assert_eq!(stored.get_str("note").unwrap(), "added meanwhile");
    assert_eq!(stored.get_i64("n").unwrap(), 5);
    // ...while a field it read and someone changed is a conflict, and nothing is written.
    col.update_one(doc! { "_id": 1_i64 }, doc! { "$set": { "n": 6_i64 } }).await.unwrap();
    loaded.value.n = 7;
    assert!(matches!(loaded.save(&db).await, Err(VersionError::Conflict { .. })));
    assert_eq!(col.find_one(doc! { "_id": 1_i64 }).await.unwrap().unwrap().get_i64("n").unwrap(), 6);
    // The backfill stamps documents without the field; one whose version is a double is
    // at the current version already and is read as such, not rewritten.
    col.insert_one(doc! { "_id": 3_i64, "n": 0_i64 }).await.unwrap();
    let report = versioning::backfill::<Tally>(&db, BackfillOptions::default().progress(Progress::Silent))
        .await
        .unwrap();
    assert_eq!(report.progress.upgraded, 1);
    assert_eq!(col.find_one(doc! { "_id": 3_i64 }).await.unwrap().unwrap().get_i32("v").unwrap(), 1);
    assert_eq!(report.counts.by_version, BTreeMap::from([(1, 3)]));
}

/// v1 stored codes in any case; v2 lowercases them under a unique index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "items", version = 2, migrate(v1(document = item_v1)))]
#[index(keys(code), unique)]
struct Item {
    #[serde(rename = "_id")]
    id: Bson,
    code: String,
    #[schema_version]
    v: i32,
}

fn item_v1(mut d: Document) -> Result<Document, String> {
    let code = d.get_str("code").map_err(|e| e.to_string())?.to_lowercase();
    d.insert("code", code);
    Ok(d)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_visits_mixed_ids_and_goes_on_past_a_document_it_cannot_write() {
    let db = testkit::database("items").await.unwrap();
    docshape::sync::<Item>(&db).await.unwrap();
    let col = db.collection::<Document>("items");
    let mut stored =
        vec![doc! { "_id": "k1", "code": "DUP" }, doc! { "_id": bson::oid::ObjectId::new(), "code": "dup" }];
    for i in 0..30_i64 {
        stored.push(doc! { "_id": i, "code": format!("N{i}") });
        stored.push(doc! { "_id": format!("s{i}"), "code": format!("S{i}") });
    }
    col.insert_many(stored).await.unwrap();
    // Small batches, so the pass crosses from numbers to strings to ObjectIds.
    let options = BackfillOptions::default().batch_size(7).progress(Progress::Silent);
    let report = versioning::backfill::<Item>(&db, options).await.unwrap();
    // "DUP" and "dup" both become "dup": one of them cannot be written (11000), and is
    // reported; every other document is upgraded.
    assert_eq!(report.progress.upgraded, 61, "{:?}", report.progress);
    assert_eq!(report.progress.failed, 1);
    assert_eq!(report.failures.len(), 1);
    assert!(matches!(report.failures[0], VersionError::Mongo(_)), "{:?}", report.failures[0]);
    assert_eq!(report.counts.by_version, BTreeMap::from([(1, 1), (2, 61)]));
    // Not done: one old document is left, and the report says so.
    assert_eq!(report.end, BackfillEnd::Stopped(StopReason::Remaining { old: 1 }));
}
