//! Adversarial stored documents: 1,000 parents, and their overflow documents,
//! written around the validator (raw inserts) with wrong types, missing fields and
//! oversized arrays. Every `load_*` call returns the correct data or a typed error,
//! never panics, and sends at most three commands.

use docshape::bson::{doc, Bson, Document};
use docshape::outlier::OutlierError;
use docshape_testkit as testkit;
use mongodb::IndexModel;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

use super::{runtime, Usuario};

const CASES: usize = 1000;

fn wrong() -> impl Strategy<Value = Bson> {
    prop_oneof![
        Just(Bson::Null),
        any::<f64>().prop_map(Bson::Double),
        "[a-z]{0,6}".prop_map(Bson::String),
        any::<bool>().prop_map(Bson::Boolean),
        Just(Bson::Document(doc! { "$ne": null })),
    ]
}

fn follower() -> impl Strategy<Value = Bson> {
    prop_oneof![20 => any::<i64>().prop_map(Bson::Int64), 3 => any::<i32>().prop_map(Bson::Int32), 1 => wrong()]
}

/// An items array: mostly within its bound, sometimes past it, sometimes not an array.
fn items(bound: usize) -> impl Strategy<Value = Option<Bson>> {
    let within = proptest::collection::vec(follower(), 0..=bound.min(8)).prop_map(Bson::Array);
    let past = proptest::collection::vec(follower(), bound + 1..=bound + 20).prop_map(Bson::Array);
    prop_oneof![12 => within.prop_map(Some), 1 => past.prop_map(Some), 2 => wrong().prop_map(Some), 1 => Just(None)]
}

fn flag() -> impl Strategy<Value = Option<Bson>> {
    prop_oneof![
        4 => any::<bool>().prop_map(|b| Some(Bson::Boolean(b))),
        1 => Just(Some(Bson::Int32(1))),
        1 => Just(Some(Bson::Int32(0))),
        1 => Just(Some(Bson::String("true".into()))),
        1 => Just(None),
    ]
}

fn seq() -> impl Strategy<Value = Option<Bson>> {
    prop_oneof![
        10 => (0..50_i64).prop_map(|s| Some(Bson::Int64(s))),
        2 => (0..50_i32).prop_map(|s| Some(Bson::Int32(s))),
        1 => "[a-z]{1,3}".prop_map(|s| Some(Bson::String(s))),
        1 => Just(None),
    ]
}

/// A parent's outlier field and flag, and its overflow documents' `seq` and `items`
/// (`None`: absent).
type Case = (Option<Bson>, Option<Bson>, Vec<(Option<Bson>, Option<Bson>)>);

/// A parent and its overflow documents.
fn case() -> impl Strategy<Value = Case> {
    (items(100), flag(), proptest::collection::vec((seq(), items(250)), 0..=3))
}

/// What a correct `load_seguidores` gives: `None` where it must be an error.
fn expected(parent: &Document, overflow: &[Document]) -> Option<Vec<i64>> {
    let Some(Bson::Array(embedded)) = parent.get("seguidores") else { return None };
    let mut out: Vec<i64> =
        embedded.iter().map(|b| docshape::bson_compat::from_bson(b.clone()).ok()).collect::<Option<_>>()?;
    if parent.get("tiene_extras") == Some(&Bson::Boolean(false)) {
        return Some(out);
    }
    let mut pages: Vec<(i64, &Document)> = Vec::new();
    for d in overflow {
        let seq = match d.get_document("_id").ok()?.get("seq")? {
            Bson::Int64(s) => *s,
            Bson::Int32(s) => i64::from(*s),
            _ => return None,
        };
        pages.push((seq, d));
    }
    pages.sort_by_key(|(s, _)| *s);
    for (_, d) in pages {
        let Some(Bson::Array(items)) = d.get("items") else { return None };
        for b in items {
            out.push(docshape::bson_compat::from_bson(b.clone()).ok()?);
        }
    }
    Some(out)
}

#[test]
fn loads_of_adversarial_parents_return_the_data_or_a_typed_error_in_bounded_commands() {
    let mut runner = docshape_test_seed::runner("outlier::adversarial", CASES as u32);
    let mut parents = Vec::new();
    let mut overflow: Vec<Vec<Document>> = Vec::new();
    for i in 0..CASES as i64 {
        let (seguidores, flag, pages) = case().new_tree(&mut runner).unwrap().current();
        let mut p = doc! { "_id": i, "nombre": "x", "num_seguidores": 0_i64 };
        if let Some(s) = seguidores {
            p.insert("seguidores", s);
        }
        if let Some(f) = flag {
            p.insert("tiene_extras", f);
        }
        parents.push(p);
        let mut docs = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (n, (seq, items)) in pages.into_iter().enumerate() {
            let mut id = doc! { "parent": i };
            match seq {
                // Distinct numeric seqs, so the expected order is defined.
                Some(Bson::Int64(s)) if seen.insert(s) => id.insert("seq", s),
                Some(Bson::Int32(s)) if seen.insert(i64::from(s)) => id.insert("seq", s),
                Some(Bson::Int64(_) | Bson::Int32(_)) => id.insert("seq", 100 + n as i64),
                Some(other) => id.insert("seq", other),
                None => id.insert("n", n as i64),
            };
            let mut d = doc! { "_id": id, "parent": i, "count": 0 };
            if let Some(items) = items {
                d.insert("items", items);
            }
            docs.push(d);
        }
        overflow.push(docs);
    }
    let rt = runtime();
    rt.block_on(async {
        let (db, log) = testkit::monitored("outlier_adversarial").await.unwrap();
        let extra = db.collection::<Document>("seguidores_extra");
        extra
            .create_index(IndexModel::builder().keys(doc! { "parent": 1, "_id.seq": 1 }).build())
            .await
            .unwrap();
        for chunk in parents.chunks(200) {
            db.collection::<Document>("usuarios").insert_many(chunk.to_vec()).await.unwrap();
        }
        let pages: Vec<Document> = overflow.iter().flatten().cloned().collect();
        for chunk in pages.chunks(200) {
            extra.insert_many(chunk.to_vec()).await.unwrap();
        }
        let (mut ok, mut errors) = (0, 0);
        for (i, (parent, pages)) in parents.iter().zip(&overflow).enumerate() {
            log.clear();
            let got = Usuario::load_seguidores(&db, &(i as i64)).await;
            assert!(log.count() <= 3, "load {i}: {} commands", log.count());
            match (got, expected(parent, pages)) {
                (Ok(got), Some(want)) => {
                    assert_eq!(got, want, "load of {parent} with {pages:?}");
                    ok += 1;
                }
                (Err(e), None) => {
                    assert!(
                        matches!(e, OutlierError::Corrupt { .. } | OutlierError::Decode(_)),
                        "load of {parent}: untyped {e:?}"
                    );
                    errors += 1;
                }
                (got, want) => panic!("load of {parent} with {pages:?}: got {got:?}, want {want:?}"),
            }
        }
        eprintln!("{CASES} adversarial parents: {ok} read back, {errors} typed errors");
        assert!(ok > CASES / 10 && errors > CASES / 10, "{ok} ok, {errors} errors: the mix is too one-sided");
    });
}
