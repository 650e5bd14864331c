//! The seed's `usuarios` written as a Rust struct is enforced exactly like the seed's
//! literal `$jsonSchema`.

use docshape::bson::{doc, Bson, Document};
use docshape_testkit as testkit;
use docshape_tests::Usuario;

use super::is_validation_failure;

/// patrones-es, "Reglas de Validación", verbatim.
fn seed_validator() -> Document {
    doc! {
        "$jsonSchema": {
            "bsonType": "object",
            "required": ["nombre", "email"],
            "properties": {
                "nombre": { "bsonType": "string", "minLength": 2, "maxLength": 100 },
                "email": {
                    "bsonType": "string",
                    "pattern": "^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$"
                },
                "edad": { "bsonType": "int", "minimum": 0, "maximum": 150 }
            }
        }
    }
}

/// Each document with whether the seed's rules admit it.
fn corpus() -> Vec<(&'static str, Document, bool)> {
    let base = || doc! { "nombre": "Alicia", "email": "alicia@example.com", "edad": 30_i32 };
    let with = |key: &str, value: Bson| {
        let mut d = base();
        d.insert(key, value);
        d
    };
    let without = |key: &str| {
        let mut d = base();
        d.remove(key);
        d
    };
    vec![
        ("valid", base(), true),
        ("no edad", without("edad"), true),
        ("nombre of 2", with("nombre", "Al".into()), true),
        ("nombre of 100", with("nombre", "n".repeat(100).into()), true),
        ("nombre of 2 code points, 4 bytes", with("nombre", "Łó".into()), true),
        ("edad 0", with("edad", Bson::Int32(0)), true),
        ("edad 150", with("edad", Bson::Int32(150)), true),
        ("email with plus", with("email", "a+b@x.io".into()), true),
        ("extra field", with("apodo", "Ali".into()), true),
        ("nombre of 1", with("nombre", "A".into()), false),
        ("nombre of 101", with("nombre", "n".repeat(101).into()), false),
        ("nombre empty", with("nombre", "".into()), false),
        ("nombre a number", with("nombre", Bson::Int32(12)), false),
        ("email without @", with("email", "not-an-email".into()), false),
        ("email one-letter TLD", with("email", "a@b.c".into()), false),
        ("email null", with("email", Bson::Null), false),
        ("edad -1", with("edad", Bson::Int32(-1)), false),
        ("edad 151", with("edad", Bson::Int32(151)), false),
        ("edad a long", with("edad", Bson::Int64(30)), false),
        ("edad a double", with("edad", Bson::Double(30.0)), false),
        ("edad a string", with("edad", "30".into()), false),
        ("edad null", with("edad", Bson::Null), false),
        ("missing nombre", without("nombre"), false),
        ("missing email", without("email"), false),
        ("empty document", doc! {}, false),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usuarios_struct_enforces_exactly_what_the_seed_schema_enforces() {
    let db = testkit::database("usuarios").await.unwrap();
    let report = docshape::sync::<Usuario>(&db).await.unwrap();
    assert!(!report.is_unchanged());
    db.run_command(
        doc! { "create": "usuarios_seed", "validator": seed_validator(), "validationAction": "error" },
    )
    .await
    .unwrap();

    let ours = db.collection::<Document>("usuarios");
    let seed = db.collection::<Document>("usuarios_seed");
    let corpus = corpus();
    assert!(corpus.len() >= 20);
    for (name, document, admitted) in corpus {
        let by_seed = outcome(seed.insert_one(document.clone()).await);
        let by_ours = outcome(ours.insert_one(document.clone()).await);
        assert_eq!(
            by_seed, admitted,
            "{name}: the seed's validator disagrees with the expected outcome: {document}"
        );
        assert_eq!(by_ours, by_seed, "{name}: docshape's validator disagrees with the seed's: {document}");
    }
}

fn outcome<T>(result: mongodb::error::Result<T>) -> bool {
    match result {
        Ok(_) => true,
        Err(e) if is_validation_failure(&e) => false,
        Err(e) => panic!("not a validation failure: {e}"),
    }
}
