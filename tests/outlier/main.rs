//! The outlier pattern on a real server, with patrones-es' users with millions of
//! followers: pushes spill past the threshold into overflow documents, set the flag on
//! the outlier only and read back whole, in push order; the overflow collection has its
//! own validator and index and is covered by `sync_all` and `check`.

use docshape::bson::{doc, Document};
use docshape::Model;
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};

/// patrones-es's outlier: users with millions of followers.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "usuarios")]
pub struct Usuario {
    #[serde(rename = "_id")]
    pub id: i64,
    #[validate(max_length = 100)]
    pub nombre: String,
    #[outlier(threshold = 100, overflow = "seguidores_extra", flag = tiene_extras, count = num_seguidores, per_doc = 250)]
    pub seguidores: Vec<i64>,
    pub tiene_extras: bool,
    pub num_seguidores: i64,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn validators_carry_the_outlier_bounds_and_the_server_enforces_them() {
    let v = Usuario::validator();
    let props = v.get_document("$jsonSchema").unwrap().get_document("properties").unwrap();
    assert_eq!(props.get_document("seguidores").unwrap().get_i64("maxItems").unwrap(), 100);
    assert_eq!(props.get_document("num_seguidores").unwrap().get_i32("minimum").unwrap(), 0);

    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("outlier_validator").await.unwrap();
        // The outlier's overflow collection gets its own validator and index.
        docshape::sync::<Usuario>(&db).await.unwrap();
        docshape::outlier::sync::<Usuario>(&db).await.unwrap();
        let overflow = db.collection::<Document>("seguidores_extra");
        let too_many: Vec<i64> = (0..251).collect();
        let e = overflow
            .insert_one(doc! { "_id": { "parent": 1_i64, "seq": 0_i64 }, "parent": 1_i64, "count": 251, "items": too_many })
            .await
            .unwrap_err();
        assert!(e.to_string().contains("121") || e.to_string().contains("validation"), "{e}");
    });
}

#[test]
fn outliers_spill_past_the_threshold_set_the_flag_and_read_back_whole() {
    let rt = runtime();
    rt.block_on(async {
        let (db, log) = testkit::monitored("outlier").await.unwrap();
        docshape::sync::<Usuario>(&db).await.unwrap();
        docshape::outlier::sync::<Usuario>(&db).await.unwrap();
        let usuarios = Usuario::collection(&db);
        for (id, nombre) in [(1, "Celebridad"), (2, "Usuario Regular")] {
            let u = Usuario {
                id,
                nombre: nombre.into(),
                seguidores: vec![],
                tiene_extras: false,
                num_seguidores: 0,
            };
            usuarios.insert_one(u).await.unwrap();
        }
        // A normal user: one update per push.
        for f in [10, 11, 12, 13, 14] {
            log.clear();
            let pushed = Usuario::push_seguidores(&db, &2, &[f]).await.unwrap();
            assert_eq!((pushed.embedded, pushed.overflow), (1, 0));
            assert_eq!(log.names(), ["update"]);
        }
        // The celebrity: 10x the threshold, singly and in batches.
        let mut expected: Vec<i64> = Vec::new();
        for i in 0..300 {
            Usuario::push_seguidores(&db, &1, &[1000 + i]).await.unwrap();
            expected.push(1000 + i);
        }
        for chunk in (300..1000).collect::<Vec<i64>>().chunks(70) {
            let batch: Vec<i64> = chunk.iter().map(|i| 1000 + i).collect();
            Usuario::push_seguidores(&db, &1, &batch).await.unwrap();
            expected.extend(batch);
        }
        let celeb = usuarios.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
        let regular = usuarios.find_one(doc! { "_id": 2 }).await.unwrap().unwrap();
        assert!(celeb.tiene_extras);
        assert!(!regular.tiene_extras, "the flag is set only on the outlier");
        assert_eq!(celeb.seguidores.len(), 100, "the threshold is kept embedded");
        assert_eq!(celeb.num_seguidores, 1000);
        assert_eq!(regular.num_seguidores, 5);
        let loaded = Usuario::load_seguidores(&db, &1).await.unwrap();
        assert_eq!(loaded, expected, "every follower once, in push order");
        assert_eq!(Usuario::load_seguidores(&db, &2).await.unwrap(), [10, 11, 12, 13, 14]);
        let overflow: Vec<Document> = db
            .collection::<Document>("seguidores_extra")
            .find(doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let mut stored = 0;
        for d in &overflow {
            let n = d.get_array("items").unwrap().len();
            assert!(n <= 250);
            assert_eq!(d.get_i32("count").unwrap() as usize, n);
            stored += n;
        }
        assert_eq!(stored, 900);
        assert!(matches!(
            Usuario::push_seguidores(&db, &99, &[1; 101]).await,
            Err(docshape::outlier::OutlierError::ParentNotFound(_))
        ));
    });
}

#[test]
fn sync_all_and_check_cover_the_overflow_collection() {
    let rt = runtime();
    rt.block_on(async {
        let specs = docshape::registry::specs().unwrap();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"usuarios") && names.contains(&"seguidores_extra"), "{names:?}");
        let db = testkit::database("outlier_registry").await.unwrap();
        let reports = docshape::sync_all(&db, Default::default()).await.unwrap();
        assert_eq!(reports.len(), specs.len());
        let overflow = db
            .run_command(doc! { "listCollections": 1, "filter": { "name": "seguidores_extra" } })
            .await
            .unwrap();
        let batch = overflow.get_document("cursor").unwrap().get_array("firstBatch").unwrap();
        assert_eq!(batch.len(), 1, "sync_all created the overflow collection");
        for report in docshape::check::check_all(&db).await.unwrap() {
            assert!(report.is_clean(), "{report}");
        }
        // Dropping its index by hand is drift on the overflow collection.
        db.run_command(doc! { "dropIndexes": "seguidores_extra", "index": "parent_1__id.seq_1" })
            .await
            .unwrap();
        let drift: Vec<_> =
            docshape::check::check_all(&db).await.unwrap().into_iter().filter(|r| !r.is_clean()).collect();
        assert_eq!(drift.len(), 1);
        assert_eq!(drift[0].collection, "seguidores_extra");
    });
}

mod adversarial;
mod hostile;
mod refs;
