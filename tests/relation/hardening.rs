//! References against documents other programs wrote: numeric `_id`s stored as another
//! BSON number type than the Rust type asks (the shell writes `int32` and `double`)
//! match as the server matches them, and an answer too large for one reply still ends.

use docshape::bson::{doc, Bson, Document};
use docshape::refs::{self, Ref};
use docshape::Model;
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

/// An account keyed by a number, as another service may have stored it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "accounts")]
pub struct Account {
    #[serde(rename = "_id")]
    pub id: i64,
    #[validate(max_length = 20_000)]
    pub name: String,
}

/// `_id` `i` stored as int32 or int64, by `i % 2`.
fn stored_id(i: i64) -> Bson {
    match i % 2 {
        0 => Bson::Int32(i as i32),
        _ => Bson::Int64(i),
    }
}

#[test]
fn numeric_ids_of_another_width_are_found_not_missing() {
    super::runtime().block_on(async {
        let (db, log) = testkit::monitored("refs_numeric").await.unwrap();
        let raw = db.collection::<Document>(Account::COLLECTION);
        let docs: Vec<Document> =
            (0..30).map(|i| doc! { "_id": stored_id(i), "name": format!("a{i}") }).collect();
        raw.insert_many(docs).await.unwrap();

        let wanted: Vec<Ref<Account>> = (0..30).rev().map(Ref::new).collect();
        log.clear();
        let loaded = refs::load_many(&db, &wanted).await.unwrap();
        assert_eq!(log.names(), ["find"]);
        assert!(loaded.missing().is_empty(), "reported missing: {:?}", loaded.missing());
        let names: Vec<String> = loaded.all().unwrap().into_iter().map(|a| a.name).collect();
        let expected: Vec<String> = (0..30).rev().map(|i| format!("a{i}")).collect();
        assert_eq!(names, expected);
        // A whole double matches as the server matches it, and since an `i64` field
        // does not decode from a double, it is a typed error naming it, not "missing".
        raw.insert_one(doc! { "_id": 50.0, "name": "double" }).await.unwrap();
        match refs::load_many(&db, &[Ref::<Account>::new(50)]).await {
            Err(e @ refs::RefError::Decode { .. }) => {
                let refs::RefError::Decode { id, .. } = &e else { unreachable!() };
                assert_eq!(**id, Bson::Double(50.0));
                // The decoder's own error is kept as the cause, not flattened to text.
                let cause = std::error::Error::source(&e).expect("a cause");
                assert!(e.to_string().ends_with(&cause.to_string()), "{e} / {cause}");
            }
            other => panic!("expected a decode error for the double-stored id, got {other:?}"),
        }
        // A fractional double is not the integer it rounds to.
        raw.insert_one(doc! { "_id": 100.5, "name": "half" }).await.unwrap();
        let loaded = refs::load_many(&db, &[Ref::<Account>::new(100)]).await.unwrap();
        assert_eq!(loaded.missing(), [Bson::Int64(100)]);
        // One by one agrees with many at a time.
        for i in [0, 1, 2] {
            assert_eq!(
                Ref::<Account>::new(i).load(&db).await.unwrap().map(|a| a.name),
                Some(format!("a{i}"))
            );
        }
    });
}

/// More than one reply can carry, with ids stored as int32: every round settles the ids
/// it saw, so the calls end after a few finds with every account found.
#[test]
fn an_answer_larger_than_a_reply_ends_with_every_id_found() {
    super::runtime().block_on(async {
        let (db, log) = testkit::monitored("refs_large").await.unwrap();
        let raw = db.collection::<Document>(Account::COLLECTION);
        let pad = "x".repeat(15_000);
        for chunk in (0..1_300_i64).collect::<Vec<_>>().chunks(200) {
            let docs: Vec<Document> =
                chunk.iter().map(|&i| doc! { "_id": i as i32, "name": format!("{i}{pad}") }).collect();
            raw.insert_many(docs).await.unwrap();
        }
        let wanted: Vec<Ref<Account>> = (0..1_300).map(Ref::new).collect();
        log.clear();
        let loaded = tokio::time::timeout(std::time::Duration::from_secs(120), refs::load_many(&db, &wanted))
            .await
            .expect("load_many kept asking the server")
            .unwrap();
        assert!(loaded.missing().is_empty(), "{} reported missing", loaded.missing().len());
        assert_eq!(loaded.items().iter().flatten().count(), 1_300);
        // About 19.5 MB of documents: mongod caps a reply at 16 MB (two finds), the
        // local server may not (one); a few at most either way.
        let finds = log.names().iter().filter(|n| *n == "find").count();
        assert!((1..=4).contains(&finds), "{finds} finds for 19.5 MB");
    });
}
