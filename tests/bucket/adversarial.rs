//! Adversarial stored documents: 1,000 buckets written around the validator (raw
//! inserts, no validator on the collection) with wrong types, missing fields and
//! oversized arrays. Every `read_range` and `buckets_in` call returns the correct
//! data or a typed error, never panics, and sends at most two commands.

use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::bucket::BucketError;
use docshape_examples::bucket::Reading;
use docshape_testkit as testkit;
use mongodb::IndexModel;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

use super::{at, runtime, Small, DAY, T0};

const CASES: usize = 1000;

fn wrong() -> impl Strategy<Value = Bson> {
    prop_oneof![
        Just(Bson::Null),
        any::<i32>().prop_map(Bson::Int32),
        any::<i64>().prop_map(Bson::Int64),
        any::<f64>().prop_map(Bson::Double),
        "[a-z]{0,6}".prop_map(Bson::String),
        any::<bool>().prop_map(Bson::Boolean),
        Just(Bson::Document(doc! { "$ne": null })),
        Just(Bson::Array(vec![Bson::Int32(1)])),
        (0..DAY).prop_map(|ms| Bson::DateTime(at(T0 + ms))),
    ]
}

/// A field: mostly the right value, sometimes of another type, sometimes absent.
fn field(good: impl Strategy<Value = Bson> + 'static) -> impl Strategy<Value = Option<Bson>> {
    prop_oneof![6 => good.prop_map(Some), 2 => wrong().prop_map(Some), 1 => Just(None)]
}

fn item() -> impl Strategy<Value = Bson> {
    let t = (0..DAY + DAY / 4).prop_map(|ms| Bson::DateTime(at(T0 - DAY / 8 + ms)));
    let v = prop_oneof![any::<f64>().prop_map(Bson::Double), any::<i32>().prop_map(Bson::Int32)];
    let good = (field(t), field(v)).prop_map(|(t, v)| {
        let mut d = Document::new();
        if let Some(t) = t {
            d.insert("t", t);
        }
        if let Some(v) = v {
            d.insert("v", v);
        }
        Bson::Document(d)
    });
    prop_oneof![12 => good, 1 => wrong()]
}

fn readings() -> impl Strategy<Value = Option<Bson>> {
    let small = proptest::collection::vec(item(), 0..=10).prop_map(Bson::Array);
    // Past `max = 10`: what a writer around the validator can leave.
    let oversized = proptest::collection::vec(item(), 11..=60).prop_map(Bson::Array);
    prop_oneof![8 => small.prop_map(Some), 1 => oversized.prop_map(Some), 1 => wrong().prop_map(Some), 1 => Just(None)]
}

/// One stored bucket, for the series `s<i>` when its `sensor_id` is right.
fn bucket(i: usize) -> impl Strategy<Value = Document> {
    let series = format!("s{i}");
    (
        field(Just(Bson::String(series.clone()))),
        field(Just(Bson::String("2026-08-05".into()))),
        field((0..=10_i32).prop_map(Bson::Int32)),
        readings(),
    )
        .prop_map(move |(sensor, day, count, readings)| {
            let mut d = doc! { "_id": format!("{series}:2026-08-05") };
            for (k, v) in [("sensor_id", sensor), ("day", day), ("count", count), ("readings", readings)] {
                if let Some(v) = v {
                    d.insert(k, v);
                }
            }
            d
        })
}

/// What a correct `read_range(s<i>, from, to)` gives for this stored bucket: `None`
/// where it must be an error.
fn expected_range(stored: &Document, series: &str, from: DateTime, to: DateTime) -> Option<Vec<Reading>> {
    let matched = stored.get("sensor_id") == Some(&Bson::String(series.into()))
        && stored.get("day") == Some(&Bson::String("2026-08-05".into()));
    if !matched {
        return Some(Vec::new());
    }
    let Some(Bson::Array(items)) = stored.get("readings") else { return None };
    let mut hits = Vec::new();
    for item in items {
        let Bson::Document(item) = item else { return None };
        let Some(Bson::DateTime(t)) = item.get("t") else { return None };
        if from <= *t && *t < to {
            hits.push((*t, item.clone()));
        }
    }
    hits.sort_by_key(|(t, _)| *t);
    hits.into_iter().map(|(_, d)| docshape::bson_compat::from_document::<Reading>(d).ok()).collect()
}

fn expected_buckets(stored: &Document, series: &str) -> Option<usize> {
    let matched = stored.get("sensor_id") == Some(&Bson::String(series.into()))
        && stored.get("day") == Some(&Bson::String("2026-08-05".into()));
    if !matched {
        return Some(0);
    }
    let Some(Bson::Array(items)) = stored.get("readings") else { return None };
    if items.iter().any(|i| !matches!(i, Bson::Document(_))) {
        return None;
    }
    docshape::bson_compat::from_document::<Small>(stored.clone()).ok().map(|_| 1)
}

fn typed(e: &BucketError) -> bool {
    matches!(e, BucketError::CorruptBucket { .. } | BucketError::ItemTime { .. } | BucketError::Decode(_))
}

#[test]
fn range_reads_of_adversarial_buckets_return_the_data_or_a_typed_error_in_bounded_commands() {
    let mut runner = docshape_test_seed::runner("bucket::adversarial", CASES as u32);
    let stored: Vec<Document> =
        (0..CASES).map(|i| bucket(i).new_tree(&mut runner).unwrap().current()).collect();
    let windows: Vec<(i64, i64)> = (0..CASES)
        .map(|_| {
            let a = (0..DAY).new_tree(&mut runner).unwrap().current();
            let b = (0..DAY).new_tree(&mut runner).unwrap().current();
            (a.min(b), a.max(b) + 1)
        })
        .collect();
    let rt = runtime();
    rt.block_on(async {
        let (db, log) = testkit::monitored("bucket_adversarial").await.unwrap();
        let raw = db.collection::<Document>("small");
        raw.create_index(IndexModel::builder().keys(doc! { "sensor_id": 1, "day": 1 }).build())
            .await
            .unwrap();
        for chunk in stored.chunks(200) {
            raw.insert_many(chunk.to_vec()).await.unwrap();
        }
        let (mut ok, mut errors) = (0, 0);
        for (i, (doc, (a, b))) in stored.iter().zip(&windows).enumerate() {
            let series = format!("s{i}");
            let (from, to) = (at(T0 + a), at(T0 + b));
            log.clear();
            let got = Small::read_range(&db, series.as_str(), from, to).await;
            assert!(log.count() <= 2, "read_range {i}: {} commands", log.count());
            match (got, expected_range(doc, &series, from, to)) {
                (Ok(got), Some(want)) => {
                    assert_eq!(got, want, "read_range of {doc}");
                    ok += 1;
                }
                (Err(e), None) => {
                    assert!(typed(&e), "read_range of {doc}: untyped {e:?}");
                    errors += 1;
                }
                (got, want) => panic!("read_range of {doc}: got {got:?}, want {want:?}"),
            }
            log.clear();
            let got = Small::buckets_in(&db, series.as_str(), at(T0), at(T0 + DAY)).await;
            assert!(log.count() <= 2, "buckets_in {i}: {} commands", log.count());
            match (got, expected_buckets(doc, &series)) {
                (Ok(got), Some(n)) => assert_eq!(got.len(), n, "buckets_in of {doc}"),
                (Err(e), None) => assert!(typed(&e), "buckets_in of {doc}: untyped {e:?}"),
                (got, want) => panic!("buckets_in of {doc}: got {got:?}, want {want:?} buckets"),
            }
        }
        eprintln!("{CASES} adversarial buckets: {ok} read back, {errors} typed errors");
        assert!(ok > CASES / 10 && errors > CASES / 10, "{ok} ok, {errors} errors: the mix is too one-sided");
    });
}
