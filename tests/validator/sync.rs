//! `sync` creates or updates a collection's validator and reports what it changed.

use docshape::bson::{doc, Document};
use docshape::sync::SyncChange;
use docshape::{Model, ValidationAction, ValidationLevel};
use docshape_testkit as testkit;
use docshape_tests::Usuario;
use serde::{Deserialize, Serialize};

use super::is_validation_failure;

/// `Usuario` with a tighter `nombre`.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "usuarios")]
struct UsuarioShortNames {
    #[validate(min_length = 2, max_length = 50)]
    nombre: String,
    email: String,
}

/// `Usuario` with another level and action.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "usuarios", validation_level = "moderate", validation_action = "warn")]
struct UsuarioLenient {
    nombre: String,
}

async fn options(db: &mongodb::Database, name: &str) -> Document {
    let reply = db.run_command(doc! { "listCollections": 1, "filter": { "name": name } }).await.unwrap();
    let batch = reply.get_document("cursor").unwrap().get_array("firstBatch").unwrap();
    batch[0].as_document().unwrap().get_document("options").unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_sync_changes_nothing_and_a_new_constraint_reaches_the_server() {
    let db = testkit::database("sync").await.unwrap();
    let first = docshape::sync::<Usuario>(&db).await.unwrap();
    assert_eq!(first.changes, vec![SyncChange::CreatedCollection]);
    let second = docshape::sync::<Usuario>(&db).await.unwrap();
    assert!(second.is_unchanged(), "second sync changed: {second}");
    assert_eq!(second.to_string(), "usuarios: unchanged");
    let opts = options(&db, "usuarios").await;
    assert_eq!(opts.get_document("validator").unwrap(), &Usuario::validator());

    let sixty = "n".repeat(60);
    let users = db.collection::<Document>("usuarios");
    users.insert_one(doc! { "nombre": &sixty, "email": "a@b.co" }).await.unwrap();

    let tighter = docshape::sync::<UsuarioShortNames>(&db).await.unwrap();
    assert!(
        matches!(tighter.changes.as_slice(), [SyncChange::ValidatorChanged { before: Some(_) }]),
        "{tighter}"
    );
    let opts = options(&db, "usuarios").await;
    let nombre = opts.get_document("validator").unwrap().get_document("$jsonSchema").unwrap();
    let nombre = nombre.get_document("properties").unwrap().get_document("nombre").unwrap();
    assert_eq!(nombre.get_i64("maxLength").unwrap(), 50);
    let err = users.insert_one(doc! { "nombre": &sixty, "email": "a@b.co" }).await.unwrap_err();
    assert!(is_validation_failure(&err), "{err}");
    assert!(docshape::sync::<UsuarioShortNames>(&db).await.unwrap().is_unchanged());

    let lenient = docshape::sync::<UsuarioLenient>(&db).await.unwrap();
    assert!(lenient.changes.contains(&SyncChange::ValidationLevelChanged {
        before: "strict".into(),
        after: ValidationLevel::Moderate
    }));
    assert!(lenient.changes.contains(&SyncChange::ValidationActionChanged {
        before: "error".into(),
        after: ValidationAction::Warn
    }));
    let opts = options(&db, "usuarios").await;
    assert_eq!(opts.get_str("validationLevel").unwrap(), "moderate");
    assert_eq!(opts.get_str("validationAction").unwrap(), "warn");

    let back = docshape::sync::<Usuario>(&db).await.unwrap();
    assert_eq!(back.changes.len(), 3, "{back}");
    assert!(docshape::sync::<Usuario>(&db).await.unwrap().is_unchanged());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_syncs_all_succeed_and_leave_one_validator() {
    let db = testkit::database("sync_race").await.unwrap();
    let runs = (0..4).map(|_| {
        let db = (*db).clone();
        tokio::spawn(async move { docshape::sync::<Usuario>(&db).await })
    });
    // A `create` that finds the collection already made with identical options
    // succeeds (as on mongod), so racing syncs may each report the creation; what
    // matters is that all succeed and leave the one validator in place.
    let mut created = 0;
    for run in runs.collect::<Vec<_>>() {
        let report = run.await.unwrap().unwrap();
        created += report.changes.iter().filter(|c| **c == SyncChange::CreatedCollection).count();
        assert!(report.changes.iter().all(|c| *c == SyncChange::CreatedCollection), "{report}");
    }
    assert!(created >= 1);
    assert!(docshape::sync::<Usuario>(&db).await.unwrap().is_unchanged());
    let opts = options(&db, "usuarios").await;
    assert_eq!(opts.get_document("validator").unwrap(), &Usuario::validator());
}
