//! Adversarial referents, written around the validator: `_id`s of other numeric
//! widths, random wrong types, missing fields and oversized arrays. `load_many`
//! returns the right documents or a typed error, never panics, and sends a bounded
//! number of commands.

use docshape::bson::{doc, Bson, Document};
use docshape::refs::{self, Ref, RefError};
use docshape::Model;
use docshape_testkit as testkit;
use proptest::prelude::Rng as _;

use super::hardening::Account;

const DOCUMENTS: i64 = 1_000;

#[test]
fn load_many_of_adversarial_documents_is_right_or_a_typed_error() {
    super::runtime().block_on(async {
        let (db, log) = testkit::monitored("refs_adversarial").await.unwrap();
        let raw = db.collection::<Document>(Account::COLLECTION);
        let mut rng = docshape_test_seed::rng("relation::adversarial");
        // For each id: the stored document (or none) and the name a read must give,
        // `Err(())` where the document cannot be an `Account`.
        let mut expected: Vec<Option<Result<String, ()>>> = Vec::new();
        let mut docs = Vec::new();
        for i in 0..DOCUMENTS {
            let id = match rng.next_u32() % 4 {
                0 => Bson::Int32(i as i32),
                1 => Bson::Double(i as f64),
                _ => Bson::Int64(i),
            };
            let name = format!("a{i}");
            let (value, outcome) = match rng.next_u32() % 8 {
                0 => (None, Err(())),
                1 => (Some(Bson::Null), Err(())),
                2 => (Some(Bson::Int32(7)), Err(())),
                3 => (Some(Bson::Array((0..2_000).map(Bson::Int32).collect())), Err(())),
                4 => (Some(Bson::Document(doc! { "$gt": "" })), Err(())),
                _ => (Some(Bson::String(name.clone())), Ok(name)),
            };
            if rng.next_u32().is_multiple_of(10) {
                expected.push(None);
                continue;
            }
            // An `i64` field does not decode from a double: a typed error.
            let outcome = if matches!(id, Bson::Double(_)) { Err(()) } else { outcome };
            let mut d = doc! { "_id": id };
            if let Some(value) = value {
                d.insert("name", value);
            }
            docs.push(d);
            expected.push(Some(outcome));
        }
        for chunk in docs.chunks(200) {
            raw.insert_many(chunk.to_vec()).await.unwrap();
        }

        // Every id one at a time, and all at once.
        for (i, want) in expected.iter().enumerate() {
            log.clear();
            let got = refs::load_many(&db, &[Ref::<Account>::new(i as i64)]).await;
            assert!(log.count() <= 2, "{:?}", log.names());
            match (want, got) {
                (None, Ok(r)) => assert_eq!(r.missing(), [Bson::Int64(i as i64)]),
                (Some(Ok(name)), Ok(r)) => {
                    assert_eq!(r.into_items(), [Some(Account { id: i as i64, name: name.clone() })])
                }
                (Some(Err(())), Err(RefError::Decode { .. })) => {}
                (want, got) => panic!("id {i}: expected {want:?}, got {got:?}"),
            }
        }
        let all: Vec<Ref<Account>> = (0..DOCUMENTS).map(Ref::new).collect();
        log.clear();
        let got = refs::load_many(&db, &all).await;
        assert!(log.count() <= 4, "{:?}", log.names());
        assert!(matches!(got, Err(RefError::Decode { .. })), "{got:?}");
        let good: Vec<Ref<Account>> = expected
            .iter()
            .enumerate()
            .filter(|(_, w)| matches!(w, None | Some(Ok(_))))
            .map(|(i, _)| Ref::new(i as i64))
            .collect();
        let loaded = refs::load_many(&db, &good).await.unwrap();
        let missing = expected.iter().filter(|w| w.is_none()).count();
        assert_eq!(loaded.missing().len(), missing);
        assert_eq!(loaded.items().iter().flatten().count(), good.len() - missing);
    });
}
