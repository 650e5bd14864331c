//! Adversarial documents, written around the validator: random wrong types, missing
//! fields and oversized arrays. Every read returns the right value or a typed error,
//! never panics, and sends a bounded number of commands.

use docshape::bson::{doc, Bson, Document};
use docshape::versioning::{self, VersionCounts, VersionError};
use docshape_testkit as testkit;
use proptest::prelude::Rng as _;
use proptest::test_runner::TestRng;

use crate::User;

const DOCUMENTS: i64 = 1_000;

/// One of a few wrong values, or the right one.
fn pick(rng: &mut TestRng, right: Bson) -> Option<Bson> {
    match rng.next_u32() % 16 {
        0 => None,
        1 => Some(Bson::Null),
        2 => Some(Bson::Boolean(true)),
        3 => Some(Bson::Double(2.5)),
        4 => Some(Bson::Array((0..2_000).map(Bson::Int32).collect())),
        5 => Some(Bson::Document(doc! { "$gt": 1 })),
        _ => Some(right),
    }
}

/// A user document as another program may write it, and whether it is well formed
/// (a v2 document of the right shape, or a v1 document of the v1 shape).
fn adversarial(rng: &mut TestRng, id: i64) -> (Document, bool) {
    let mut d = doc! { "_id": id };
    let version = pick(rng, Bson::Int32(2));
    let v1 = rng.next_u32().is_multiple_of(3);
    let mut ok = true;
    let fields: [(&str, Bson); 3] = if v1 {
        [
            ("name", format!("n{id}").into()),
            ("visits", Bson::Int64(id)),
            ("log", Bson::Array(vec!["a".into()])),
        ]
    } else {
        [("full_name", format!("n{id}").into()), ("visits", Bson::Int64(id)), ("log", Bson::Array(vec![]))]
    };
    for (field, right) in fields {
        let value = pick(rng, right.clone());
        ok &= value.as_ref() == Some(&right);
        if let Some(value) = value {
            d.insert(field, value);
        }
    }
    // A v1 document has no version field.
    if !v1 {
        ok &= version == Some(Bson::Int32(2));
        if let Some(version) = version {
            d.insert("schema_version", version);
        }
    }
    (d, ok)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioned_reads_of_adversarial_documents_are_right_or_typed_errors() {
    let (db, log) = testkit::monitored("versioning-adversarial").await.unwrap();
    let users = db.collection::<Document>("users");
    let mut rng = docshape_test_seed::rng("versioning::adversarial");
    let docs: Vec<(Document, bool)> = (0..DOCUMENTS).map(|i| adversarial(&mut rng, i)).collect();
    for chunk in docs.chunks(200) {
        users.insert_many(chunk.iter().map(|(d, _)| d.clone())).await.unwrap();
    }
    let well_formed = docs.iter().filter(|(_, ok)| *ok).count();
    assert!(well_formed > 50 && well_formed < docs.len() - 50, "{well_formed}");

    for (d, ok) in &docs {
        let id = d.get_i64("_id").unwrap();
        log.clear();
        let read = versioning::find_one::<User>(&db, doc! { "_id": { "$eq": id } }).await;
        assert_eq!(log.count(), 1, "one command per find_one");
        match read {
            Ok(Some(loaded)) => {
                assert!(*ok, "read a malformed document as a value: {d}");
                let user = loaded.value;
                assert_eq!(
                    (user.id, user.full_name.as_str(), user.visits),
                    (id, format!("n{id}").as_str(), id)
                );
            }
            Ok(None) => panic!("document {id} not found"),
            Err(e) => {
                assert!(!ok, "refused a well-formed document {d}: {e}");
                assert!(
                    matches!(
                        e,
                        VersionError::BadVersionField { .. }
                            | VersionError::Upgrade { .. }
                            | VersionError::NewerVersion { .. }
                            | VersionError::NoPath { .. }
                    ),
                    "{e:?}"
                );
                assert!(e.to_string().contains(&id.to_string()), "names the _id: {e}");
            }
        }
    }

    log.clear();
    let all = versioning::find::<User>(&db, doc! {}).await;
    assert!(
        matches!(all, Err(VersionError::BadVersionField { .. } | VersionError::Upgrade { .. })),
        "{all:?}"
    );
    // One find and its getMores, no more than the documents need.
    assert!(log.count() <= 1 + DOCUMENTS as usize / 101 + 1, "{:?}", log.names());
    let good = versioning::find::<User>(&db, doc! { "_id": { "$in": docs.iter().filter(|(_, ok)| *ok).map(|(d, _)| d.get("_id").unwrap().clone()).collect::<Vec<_>>() } }).await.unwrap();
    assert_eq!(good.len(), well_formed);

    log.clear();
    let counts = versioning::version_counts::<User>(&db).await.unwrap();
    assert!(log.count() <= 3, "{:?}", log.names());
    let mut expected = VersionCounts::default();
    for (d, _) in &docs {
        match versioning::stored_version::<User>(d) {
            Ok(v) => *expected.by_version.entry(v).or_default() += 1,
            Err(_) => expected.unreadable += 1,
        }
    }
    assert_eq!(counts, expected);
    assert_eq!(counts.total(), DOCUMENTS as u64);
}
