//! `docshape infer` over a database whose collections carry validators of their own,
//! then `sync` from the inferred models on that same database: the server's
//! constraints survive (every document the old validator refused is still refused,
//! asked of the server's own `$jsonSchema` query operator), what docshape cannot
//! express stops `sync` unless it is told, and numbers stored as integers and doubles
//! get a type whose validator admits every stored document.
//!
//! The generated source is compared with `server_inferred.rs` beside this file, which
//! this binary compiles (`DOCSHAPE_INFER=overwrite` rewrites it; review the diff).

use docshape::bson::{doc, Bson, Document};
use docshape::Model;
use docshape_cli::infer::{infer, InferOptions};
use docshape_testkit as testkit;
use futures_util::TryStreamExt;

#[rustfmt::skip]
#[allow(dead_code)]
#[path = "server_inferred.rs"]
mod inferred;

/// Sign-ups under a hand-written validator at `validationLevel: "moderate"`: patterns,
/// lengths, an enum, integer bounds, an exclusive bound, item counts and each item's
/// length, three required names.
fn signups_schema() -> Document {
    doc! {
        "bsonType": "object",
        "required": ["handle", "email", "plan"],
        "properties": {
            "handle": { "bsonType": "string", "minLength": 3, "maxLength": 16, "pattern": "^[a-z0-9_]+$" },
            "email": { "bsonType": "string", "pattern": "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$" },
            "plan": { "enum": ["free", "pro", "team"] },
            "seats": { "bsonType": "int", "minimum": 1, "maximum": 500 },
            "discount": { "bsonType": "double", "minimum": 0, "maximum": 1, "exclusiveMaximum": true },
            "tags": {
                "bsonType": "array",
                "maxItems": 4,
                "uniqueItems": true,
                "items": { "bsonType": "string", "maxLength": 10 },
            },
        },
    }
}

/// Ledger entries under a validator holding `multipleOf`, which no `#[validate]` says.
fn ledger_schema() -> Document {
    doc! {
        "bsonType": "object",
        "required": ["cents"],
        "properties": { "cents": { "bsonType": "int", "multipleOf": 5 }, "memo": { "bsonType": "string", "maxLength": 40 } },
    }
}

async fn seed(db: &mongodb::Database) {
    db.create_collection("signups")
        .validator(doc! { "$jsonSchema": signups_schema() })
        .validation_level(mongodb::options::ValidationLevel::Moderate)
        .await
        .unwrap();
    let plans = ["free", "pro", "team"];
    let signups: Vec<Document> = (0..40)
        .map(|i| {
            doc! {
                "handle": format!("user_{i}"),
                "email": format!("user{i}@example.org"),
                "plan": plans[i % 3],
                "seats": (i % 9 + 1) as i32,
                "discount": (i % 4) as f64 / 4.0,
                "tags": if i % 2 == 0 { vec!["new", "eu"] } else { vec!["old"] },
            }
        })
        .collect();
    db.collection::<Document>("signups").insert_many(signups).await.unwrap();

    db.create_collection("ledger_entries").validator(doc! { "$jsonSchema": ledger_schema() }).await.unwrap();
    let entries: Vec<Document> =
        (0..10).map(|i| doc! { "cents": i * 5, "memo": format!("entry {i}") }).collect();
    db.collection::<Document>("ledger_entries").insert_many(entries).await.unwrap();

    // 30 integers and 10 doubles, as a client that writes `21` and `21.5` leaves them.
    let readings: Vec<Document> = (0..40)
        .map(|i| {
            let value = if i % 4 == 0 { Bson::Double(f64::from(i) + 0.5) } else { Bson::Int32(i) };
            doc! { "sensor": format!("s{}", i % 3), "value": value }
        })
        .collect();
    db.collection::<Document>("sensor_readings").insert_many(readings).await.unwrap();
}

/// The collection's validator and level, as `listCollections` reports them.
async fn validator_of(db: &mongodb::Database, name: &str) -> (Document, String) {
    let reply = db.run_command(doc! { "listCollections": 1, "filter": { "name": name } }).await.unwrap();
    let batch = reply.get_document("cursor").unwrap().get_array("firstBatch").unwrap();
    let options = batch[0].as_document().unwrap().get_document("options").unwrap();
    (
        options.get_document("validator").unwrap().clone(),
        options.get_str("validationLevel").unwrap_or("strict").to_owned(),
    )
}

/// Documents that break one rule of the sign-ups' validator each (and two that break
/// none): what the old validator refused must stay refused.
fn probes() -> Vec<Document> {
    let ok = || doc! { "handle": "ada_l", "email": "ada@example.org", "plan": "pro" };
    let with = |key: &str, value: Bson| {
        let mut d = ok();
        d.insert(key, value);
        d
    };
    let without = |key: &str| {
        let mut d = ok();
        d.remove(key);
        d
    };
    vec![
        ok(),
        with("seats", Bson::Int32(3)),
        with("handle", Bson::String("Ada-L".into())),
        with("handle", Bson::String("ab".into())),
        with("handle", Bson::String("a_very_long_handle_indeed".into())),
        with("email", Bson::String("not-an-email".into())),
        with("plan", Bson::String("enterprise".into())),
        with("seats", Bson::Int32(0)),
        with("seats", Bson::Int32(501)),
        with("discount", Bson::Double(1.0)),
        with("discount", Bson::Double(-0.1)),
        with("tags", Bson::Array(vec!["a".into(), "a".into()])),
        with("tags", Bson::Array(vec!["a".into(), "b".into(), "c".into(), "d".into(), "e".into()])),
        with("tags", Bson::Array(vec!["much_too_long_tag".into()])),
        without("handle"),
        without("email"),
        without("plan"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infer_keeps_the_servers_validator_and_sync_from_it_loosens_nothing() {
    use inferred::{LedgerEntry, SensorReading, Signup};
    let db = testkit::database("infer_server").await.unwrap();
    seed(&db).await;
    let inferred = infer(&db, &InferOptions::default()).await.unwrap();
    let source = inferred.source();
    let report = inferred.report();

    // The level and every keyword a `#[validate]` says, on its field.
    assert!(
        source.contains("#[model(collection = \"signups\", validation_level = \"moderate\")]"),
        "{source}"
    );
    for kept in [
        "#[validate(min_length = 3, max_length = 16, pattern = \"^[a-z0-9_]+$\")]\n    pub handle: String,",
        "#[validate(pattern = \"^[^@\\\\s]+@[^@\\\\s]+\\\\.[a-z]{2,}$\")]\n    pub email: String,",
        "#[validate(allowed = [\"free\", \"pro\", \"team\"])]\n    pub plan: String,",
        "#[validate(minimum = 1, maximum = 500)]\n    pub seats: i32,",
        "#[validate(minimum = 0.0, exclusive_maximum = 1.0)]\n    pub discount: f64,",
        "#[validate(max_items = 4, unique_items, items(max_length = 10))]\n    pub tags: Vec<String>,",
    ] {
        assert!(source.contains(kept), "{kept} not in:\n{source}");
    }
    let signups = report.split("## `signups`").nth(1).unwrap().split("\n## ").next().unwrap();
    assert!(signups.contains("`validationLevel: moderate`, `validationAction: error`"), "{signups}");
    assert!(signups.contains("Nothing of it is lost"), "{signups}");
    let ledger = report.split("## `ledger_entries`").nth(1).unwrap().split("\n## ").next().unwrap();
    assert!(
        ledger.contains(
            "- `$jsonSchema.properties.cents.multipleOf: 5` — docshape cannot express it: `sync` refuses"
        ),
        "{ledger}"
    );
    // The integer/double mix: counted, the wider type taken, the migration said.
    let readings = report.split("## `sensor_readings`").nth(1).unwrap();
    assert!(
        readings
            .contains("### Migrations\n\n- `value`: 30 of 40 values (75%) in all 40 documents are integers"),
        "{readings}"
    );
    assert!(readings.contains("$toDouble"), "{readings}");
    assert!(source.contains("#[validate(bson_type = \"number\")]\n    pub value: f64,"), "{source}");

    let source = source.replace(db.name(), "shop");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("infer/server_inferred.rs");
    if std::env::var("DOCSHAPE_INFER").is_ok_and(|v| v == "overwrite") {
        std::fs::write(&fixture, &source).unwrap();
    }
    let expected = std::fs::read_to_string(&fixture).unwrap().replace("\r\n", "\n");
    assert!(
        expected == source,
        "the generated source differs from {} (DOCSHAPE_INFER=overwrite rewrites it):\n{source}",
        fixture.display()
    );

    // Every stored document reads into the models.
    let all: Vec<Signup> = Signup::collection(&db).find(doc! {}).await.unwrap().try_collect().await.unwrap();
    assert_eq!(all.len(), 40);
    let all: Vec<SensorReading> =
        SensorReading::collection(&db).find(doc! {}).await.unwrap().try_collect().await.unwrap();
    assert_eq!(all.len(), 40);

    // Sync on the same database: no weaker than the server's own validator, checked by
    // the server's `$jsonSchema` on probes the old one refuses.
    let (old, _) = validator_of(&db, "signups").await;
    docshape::sync::<Signup>(&db).await.unwrap();
    let (new, level) = validator_of(&db, "signups").await;
    assert_eq!(level, "moderate");
    let probe = db.collection::<Document>("probes");
    probe.insert_many(probes()).await.unwrap();
    let refused_by = |v: &Document| doc! { "$nor": [v.clone()] };
    assert_eq!(probe.count_documents(refused_by(&old)).await.unwrap(), 15, "the probes test something");
    let slipped = probe.count_documents(doc! { "$and": [refused_by(&old), new.clone()] }).await.unwrap();
    assert_eq!(slipped, 0, "documents the old validator refused pass the new one: {new}");
    // Every stored document still passes (the generated validator is no stricter than
    // the data), and `check` is clean.
    assert_eq!(Signup::collection(&db).count_documents(refused_by(&new)).await.unwrap(), 0, "{new}");
    let report = docshape::check::<Signup>(&db).await.unwrap();
    assert!(report.is_clean(), "{report}");

    // `required` is a set: the same names in another order are no drift, and a name
    // missing on the server is one difference, not one per shifted position.
    let required =
        |v: &Document| v.get_document("$jsonSchema").unwrap().get_array("required").unwrap().clone();
    let with_required = |names: Vec<Bson>| {
        let mut v = new.clone();
        v.get_document_mut("$jsonSchema").unwrap().insert("required", names);
        v
    };
    let mut names = required(&new);
    assert!(names.len() >= 3, "{new}");
    names.reverse();
    db.run_command(doc! { "collMod": "signups", "validator": with_required(names.clone()) }).await.unwrap();
    let report = docshape::check::<Signup>(&db).await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert!(docshape::sync::<Signup>(&db).await.unwrap().is_unchanged());
    let dropped = names.pop().unwrap();
    db.run_command(doc! { "collMod": "signups", "validator": with_required(names) }).await.unwrap();
    let report = docshape::check::<Signup>(&db).await.unwrap();
    match &report.drift[..] {
        [docshape::check::Drift::ValidatorDiffers { differences }] => {
            assert_eq!(differences.len(), 1, "{report}");
            assert_eq!(differences[0].path, "$jsonSchema.required", "{report}");
            assert_eq!(
                (differences[0].server.as_ref(), differences[0].code.as_ref()),
                (None, Some(&dropped))
            );
        }
        _ => panic!("{report}"),
    }
    docshape::sync::<Signup>(&db).await.unwrap();

    // The integer/double mix: the stored integers pass the model's validator.
    docshape::sync::<SensorReading>(&db).await.unwrap();
    let (readings_validator, _) = validator_of(&db, "sensor_readings").await;
    let refused = db
        .collection::<Document>("sensor_readings")
        .count_documents(refused_by(&readings_validator))
        .await
        .unwrap();
    assert_eq!(refused, 0, "{readings_validator}");

    // `multipleOf`: sync refuses to drop it, and changes nothing, unless told.
    let (before, _) = validator_of(&db, "ledger_entries").await;
    let err = docshape::sync::<LedgerEntry>(&db).await.unwrap_err();
    assert!(
        matches!(&err, docshape::Error::WeakerValidator { collection, lost }
            if collection == "ledger_entries" && lost == &["$jsonSchema.properties.cents.multipleOf: 5".to_owned()]),
        "{err}"
    );
    assert!(err.to_string().contains("--allow-weaker-validator"), "{err}");
    assert_eq!(validator_of(&db, "ledger_entries").await.0, before);
    // `check` reports it as drift rather than failing.
    let drift = docshape::check::<LedgerEntry>(&db).await.unwrap();
    assert!(!drift.is_clean(), "{drift}");
    let options = docshape::SyncOptions::default().allow_weaker_validator(true);
    docshape::sync_with::<LedgerEntry>(&db, options).await.unwrap();
    assert_ne!(validator_of(&db, "ledger_entries").await.0, before);
}
