//! A bucket series reaches the server only as a value: a series that writes as an
//! operator-shaped document, a regex or an array reads its own buckets in
//! `read_range` and `buckets_in`, never another series'.

use docshape::bson::{doc, Bson, Document};
use docshape::size::MaxBsonSize;
use docshape::validator::Schema;
use docshape::Model;
use docshape_examples::bucket::Reading;
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

use super::{at, runtime, DAY, T0};

/// A series key of any BSON type, bounded in size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Key(pub Bson);

impl Schema for Key {
    fn schema() -> Document {
        Document::new()
    }
}

impl MaxBsonSize for Key {
    const MAX_BSON_SIZE: Option<usize> = Some(256);
}

/// One bucket per series key per day.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "bucket_literal")]
#[bucket(series = key, period = day, per = "day", max = 10, items = readings, time = t)]
pub struct ByKey {
    #[serde(rename = "_id")]
    pub id: String,
    pub key: Key,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
}

/// Finding 3, and the encoder's bucket-series position: each series finds its own
/// bucket only; `{$ne: null}` finds none but its own.
#[test]
fn a_series_is_compared_never_run() {
    runtime().block_on(async {
        let db = testkit::database("bucket_literal").await.unwrap();
        let raw = db.collection::<Document>(ByKey::COLLECTION);
        let mut rng = docshape_test_seed::rng("bucket::literal");
        let mut values = crate::access::literal::hostile_values(&mut *rng, 60);
        values.push(Bson::from("plain"));
        for (i, v) in values.iter().enumerate() {
            let reading = doc! { "t": at(T0 + i as i64), "v": i as f64 };
            raw.insert_one(doc! { "_id": format!("b{i}"), "key": v.clone(), "day": "2026-08-05", "count": 1, "readings": [reading] })
                .await
                .unwrap();
        }
        let (from, to) = (at(T0), at(T0 + DAY));
        for (i, v) in values.iter().enumerate() {
            let got = ByKey::read_range(&db, Key(v.clone()), from, to).await.unwrap();
            assert_eq!(got, vec![Reading { t: at(T0 + i as i64), v: i as f64 }], "read_range {v:?}");
            let buckets = ByKey::buckets_in(&db, Key(v.clone()), from, to).await.unwrap();
            let ids: Vec<String> = buckets.into_iter().map(|b| b.id).collect();
            assert_eq!(ids, [format!("b{i}")], "buckets_in {v:?}");
        }
        // A series that is an operator no bucket holds reads nothing.
        let op = Key(Bson::Document(doc! { "$exists": true, "$ne": "x" }));
        assert!(ByKey::read_range(&db, op.clone(), from, to).await.unwrap().is_empty());
        assert!(ByKey::buckets_in(&db, op, from, to).await.unwrap().is_empty());
    });
}
