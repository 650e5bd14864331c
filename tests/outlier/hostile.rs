//! Parents and overflow documents written by other programs (around the validator):
//! a flag stored as another type never hides the overflow, and an outlier field or an
//! overflow `items` that is not an array is a typed error.

use docshape::bson::{doc, Bson, Document};
use docshape::outlier::OutlierError;
use docshape_testkit as testkit;

use super::{runtime, Usuario};

async fn parent_with(db: &mongodb::Database, id: i64, flag: Option<Bson>, seguidores: Option<Bson>) {
    let mut parent = doc! { "_id": id, "nombre": "x", "num_seguidores": 5_i64 };
    if let Some(f) = flag {
        parent.insert("tiene_extras", f);
    }
    if let Some(s) = seguidores {
        parent.insert("seguidores", s);
    }
    db.collection::<Document>("usuarios").insert_one(parent).await.unwrap();
    db.collection::<Document>("seguidores_extra")
        .insert_one(doc! { "_id": { "parent": id, "seq": 0_i64 }, "parent": id, "count": 3, "items": [3_i64, 4_i64, 5_i64] })
        .await
        .unwrap();
}

/// Only a flag stored as `false` skips the overflow: `1`, `"true"`, or no flag at all
/// (another program's writes) read it, so `load` returns every item.
#[test]
fn a_flag_stored_as_another_type_never_hides_the_overflow() {
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("outlier_flag_types").await.unwrap();
        let flags = [Some(Bson::Int32(1)), Some(Bson::String("true".into())), None, Some(Bson::Double(1.0))];
        for (id, flag) in flags.into_iter().enumerate() {
            let id = id as i64 + 1;
            parent_with(&db, id, flag.clone(), Some(Bson::Array(vec![Bson::Int64(1), Bson::Int64(2)]))).await;
            let loaded = Usuario::load_seguidores(&db, &id).await.unwrap();
            assert_eq!(loaded, [1, 2, 3, 4, 5], "flag {flag:?}");
        }
    });
}

/// An outlier field, or an overflow document's `items`, that is not an array is a
/// typed error, not an empty answer.
#[test]
fn an_outlier_field_that_is_not_an_array_is_a_typed_error() {
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("outlier_not_array").await.unwrap();
        let cases = [Some(Bson::String("1,2".into())), Some(Bson::Int64(2)), Some(Bson::Document(doc! { "0": 1_i64 }))];
        for (id, field) in cases.into_iter().enumerate() {
            let id = id as i64 + 1;
            parent_with(&db, id, Some(Bson::Boolean(false)), field.clone()).await;
            let r = Usuario::load_seguidores(&db, &id).await;
            assert!(matches!(r, Err(OutlierError::Corrupt { .. })), "{field:?}: {r:?}");
        }
        // The overflow's items.
        db.collection::<Document>("usuarios")
            .insert_one(doc! { "_id": 10_i64, "nombre": "y", "seguidores": [1_i64], "tiene_extras": true, "num_seguidores": 2_i64 })
            .await
            .unwrap();
        db.collection::<Document>("seguidores_extra")
            .insert_one(doc! { "_id": { "parent": 10_i64, "seq": 0_i64 }, "parent": 10_i64, "count": 1, "items": 7_i64 })
            .await
            .unwrap();
        let r = Usuario::load_seguidores(&db, &10).await;
        assert!(matches!(r, Err(OutlierError::Corrupt { .. })), "overflow items not an array: {r:?}");
    });
}
