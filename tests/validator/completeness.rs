//! Completeness: for each declared constraint, a document that breaks only that
//! constraint is rejected by the server.

use docshape::bson::{Bson, Document};
use docshape_testkit as testkit;
use docshape_tests::Constrained;

use super::is_validation_failure;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_constraint_alone_rejects() {
    let db = testkit::database("complete").await.unwrap();
    docshape::sync::<Constrained>(&db).await.unwrap();
    let collection = db.collection::<Document>("constrained");
    let base = docshape::bson_compat::to_document(&Constrained::valid()).unwrap();
    collection.insert_one(base.clone()).await.expect("the valid document is admitted");

    let set = |key: &str, value: Bson| {
        let mut d = base.clone();
        d.insert(key, value);
        d
    };
    let remove = |key: &str| {
        let mut d = base.clone();
        d.remove(key);
        d
    };
    let cases: Vec<(&str, Document)> = vec![
        ("min_length", set("code", "ab".into())),
        ("max_length", set("code", "abcdefghi".into())),
        ("pattern", set("code", "abc1".into())),
        ("minimum", set("inclusive", Bson::Int32(9))),
        ("maximum", set("inclusive", Bson::Int32(21))),
        ("bsonType int (a long)", set("inclusive", Bson::Int64(15))),
        ("exclusive_minimum", set("fraction", Bson::Double(0.0))),
        ("exclusive_maximum", set("fraction", Bson::Double(1.0))),
        ("bsonType double (an int)", set("fraction", Bson::Int32(0))),
        ("min_items", set("labels", Bson::Array(vec![]))),
        ("max_items", set("labels", Bson::Array(vec!["a".into(), "b".into(), "c".into(), "d".into()]))),
        ("unique_items", set("labels", Bson::Array(vec!["x".into(), "x".into()]))),
        ("items bsonType", set("labels", Bson::Array(vec![Bson::Int32(1)]))),
        ("items(min_length)", set("labels", Bson::Array(vec!["x".into(), "".into()]))),
        ("items(max_length)", set("labels", Bson::Array(vec!["x".into(), "abcde".into()]))),
        ("items(pattern)", set("labels", Bson::Array(vec!["x".into(), "a1".into()]))),
        ("allowed strings", set("color", "blue".into())),
        ("allowed numbers", set("rank", Bson::Int32(4))),
        ("unit enum values", set("level", "NOPE".into())),
        ("u8 upper bound", set("small", Bson::Int32(256))),
        ("u8 lower bound", set("small", Bson::Int32(-1))),
        ("max_length on an optional", set("optional", "toolong".into())),
        ("null where serde leaves the field out", set("optional", Bson::Null)),
        ("strict: an unknown field", set("zzz", Bson::Int32(1))),
        ("required", remove("code")),
    ];
    for (constraint, document) in cases {
        let differing: Vec<_> = document
            .iter()
            .filter(|(k, v)| base.get(k.as_str()) != Some(v))
            .chain(base.iter().filter(|(k, _)| !document.contains_key(k.as_str())))
            .collect();
        assert_eq!(differing.len(), 1, "{constraint}: the case must break one field only");
        match collection.insert_one(document.clone()).await {
            Ok(_) => panic!("{constraint}: admitted a document that breaks it: {document}"),
            Err(e) => assert!(is_validation_failure(&e), "{constraint}: failed for another reason: {e}"),
        }
    }
}
