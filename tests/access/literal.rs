//! Every value docshape puts into a command is a value: an operator-shaped document, a
//! regex, JavaScript code, `$`-prefixed or dotted keys are compared or stored, never
//! run, in every position (equality, range bound, `$in` member, pushed element, `$set`
//! value), and a `serde_json::Value` parameter shaped as extended JSON stays a
//! document.

use bson::{doc, Bson, Document, JavaScriptCodeWithScope, RawDocumentBuf, Regex};
use docshape::access::UpdateError;
use docshape::bson;
use docshape::refs::{self, Ref};
use docshape::Model;
use docshape_testkit as testkit;
use proptest::prelude::Rng as _;
use serde::{Deserialize, Serialize};

use super::finder::{Hostile, Owner};
use super::{order, Order};

/// A regex value under either bson: bson 3 holds its parts as C strings, bson 2 as
/// `String`s (where the conversion is the identity).
#[allow(clippy::unnecessary_fallible_conversions, clippy::useless_conversion)]
pub(crate) fn regex(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(Regex {
        pattern: pattern.to_owned().try_into().unwrap(),
        options: options.to_owned().try_into().unwrap(),
    })
}

/// A document holding one untyped value, a bounded untyped array and a key for ranges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "access_literal")]
#[index(keys(val))]
#[index(keys(key, val))]
#[access(name = "lit_by_val", filter(val))]
#[access(name = "lit_in_range", filter(key), range(val))]
#[access(name = "lit_set", filter(_id), update(set(val)), consistency = "strong (same doc)")]
#[access(name = "push_any", filter(_id), update(push(items)), consistency = "strong (same doc)")]
pub struct Lit {
    #[serde(rename = "_id")]
    pub id: i64,
    pub key: String,
    pub val: Bson,
    #[validate(max_items = 3)]
    pub items: Vec<Bson>,
}

/// A document keyed by an untyped `_id`, for `refs::load_many`'s `$in`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "access_literal_ids")]
pub struct LitId {
    #[serde(rename = "_id")]
    pub id: Bson,
    #[validate(max_length = 40)]
    pub name: String,
}

fn lit(id: i64) -> Lit {
    Lit { id, key: "k".into(), val: Bson::String(format!("placeholder-{id}")), items: Vec::new() }
}

/// Values of every BSON type and the shapes a query would read as operators, each
/// unique by `i` (no two equal under the server's comparison, none an element of
/// another), drawn at random for the rest.
pub fn hostile_values<R: proptest::prelude::Rng + ?Sized>(rng: &mut R, n: usize) -> Vec<Bson> {
    let fixed = vec![
        Bson::Document(doc! { "$ne": null }),
        Bson::Document(doc! { "$gt": "" }),
        Bson::Document(doc! { "$regex": "." }),
        Bson::Document(doc! { "$where": "true" }),
        Bson::Document(doc! { "$each": [1, 2, 3], "$slice": 0 }),
        Bson::Document(doc! { "$numberLong": "3" }),
        Bson::Document(doc! { "$oid": "000000000000000000000000" }),
        Bson::Document(doc! { "a.b": 1 }),
        Bson::Document(doc! { "$exists": true }),
        regex(".", ""),
        regex("^p", "i"),
        Bson::JavaScriptCode("true".into()),
        Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope { code: "x".into(), scope: doc! { "x": 1 } }),
        Bson::Null,
        Bson::Boolean(true),
        Bson::MinKey,
        Bson::MaxKey,
        Bson::Array(vec![Bson::from("arr-fixed"), Bson::Document(doc! { "$gt": "arr" })]),
    ];
    let mut out = fixed;
    let mut i = 0_i64;
    while out.len() < n {
        i += 1;
        let key = |r: u32| match r % 4 {
            0 => format!("$k{i}"),
            1 => format!("a.{i}"),
            2 => format!("$in.{i}"),
            _ => format!("k{i}"),
        };
        let v = match rng.next_u32() % 12 {
            0 => Bson::Int32(i as i32 * 16 + 1),
            1 => Bson::Int64(i * 16 + 2),
            2 => Bson::Double(i as f64 * 16.0 + 3.5),
            3 => Bson::String(format!("s-{i}")),
            4 => Bson::String(format!("{{\"$ne\": null, \"i\": {i}}}")),
            5 => {
                let op = ["$ne", "$gt", "$gte", "$lt", "$in", "$nin", "$exists", "$regex", "$where", "$expr"]
                    [rng.next_u32() as usize % 10];
                Bson::Document(doc! { op: format!("v{i}"), "n": i })
            }
            6 => Bson::Document(doc! { key(rng.next_u32()): { key(rng.next_u32()): format!("v{i}") } }),
            7 => regex(&format!("^r{i}.*"), ""),
            8 => Bson::JavaScriptCode(format!("return {i}")),
            9 => Bson::Array(vec![Bson::from(format!("arr-{i}")), Bson::Document(doc! { "$each": [i] })]),
            10 => Bson::DateTime(bson::DateTime::from_millis(i * 1_000)),
            _ => Bson::Document(doc! { "$each": [format!("e{i}"), { "$slice": 0 }], "$position": 0 }),
        };
        out.push(v);
    }
    out
}

fn val_ids(found: Vec<Lit>) -> Vec<i64> {
    let mut ids: Vec<i64> = found.into_iter().map(|l| l.id).collect();
    ids.sort_unstable();
    ids
}

/// Finding 1: a pushed element shaped as `$push` modifiers is one element: it cannot
/// empty the array, nor push several elements past the bound guard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pushed_element_is_never_read_as_push_modifiers() {
    let (db, log) = testkit::monitored("access_literal_push").await.unwrap();
    // No validator on the collection: the bound guard alone must hold the bound.
    let mut start = lit(1);
    start.items = vec![Bson::Int32(1)];
    Lit::collection(&db).insert_one(&start).await.unwrap();
    let modifiers = doc! { "$each": [], "$slice": 0 };
    log.clear();
    Lit::push_any(1, Bson::Document(modifiers.clone())).run(&db).await.unwrap();
    let sent = log.take();
    let update = sent[0].1.get_array("updates").unwrap()[0].as_document().unwrap().clone();
    assert_eq!(
        update.get_document("u").unwrap(),
        &doc! { "$push": { "items": { "$each": [modifiers.clone()] } } }
    );
    let stored = Lit::collection(&db).find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(stored.items, vec![Bson::Int32(1), Bson::Document(modifiers)], "one literal element");

    // Eight elements in one `$each`: one element, and the bound of 3 holds.
    let eight = doc! { "$each": [1, 2, 3, 4, 5, 6, 7, 8] };
    Lit::push_any(1, Bson::Document(eight.clone())).run(&db).await.unwrap();
    let stored = Lit::collection(&db).find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(stored.items.len(), 3);
    assert_eq!(stored.items[2], Bson::Document(eight.clone()));
    match Lit::push_any(1, Bson::Document(eight)).run(&db).await {
        Err(UpdateError::Full { max: 3, .. }) => {}
        other => panic!("expected Full, got {other:?}"),
    }
    let stored = Lit::collection(&db).find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(stored.items.len(), 3, "the bound holds");
}

/// Finding 7: `first(n)` takes any `u32`, with and without a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_takes_any_u32() {
    let db = testkit::database("access_literal_first").await.unwrap();
    let orders =
        vec![order("o1", "c1", 1, "paid"), order("o2", "c1", 2, "paid"), order("o3", "c2", 3, "paid")];
    Order::collection(&db).insert_many(&orders).await.unwrap();
    for n in [u32::MAX, i32::MAX as u32, i32::MAX as u32 - 1, i32::MAX as u32 + 1] {
        let found = Order::orders_of_customer("c1").first(n, &db).await.unwrap();
        assert_eq!(found.len(), 2, "{n}");
        let mut session = db.client().start_session().await.unwrap();
        let found = Order::orders_of_customer("c1").session(&mut session).first(n, &db).await.unwrap();
        assert_eq!(found.len(), 2, "{n} in a session");
    }
}

/// Finding 8: a `serde_json::Value` shaped as extended JSON is a document, not the
/// BSON value it spells.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_json_in_a_json_parameter_is_a_document() {
    let db = testkit::database("access_literal_json").await.unwrap();
    let hostile = |id: i64, json: serde_json::Value| Hostile {
        id,
        owner: Owner { id: "o".into() },
        owner_key: "o".into(),
        meta: Bson::Null,
        extra: Document::new(),
        json,
        rank: Bson::Null,
    };
    Hostile::collection(&db).insert_one(hostile(1, serde_json::json!(3))).await.unwrap();
    // Stored through a raw collection so that the document is written as it reads.
    let mut literal = docshape::bson_compat::to_document(&hostile(2, serde_json::Value::Null)).unwrap();
    literal.insert("json", doc! { "$numberLong": "3" });
    db.collection::<Document>(Hostile::COLLECTION).insert_one(literal).await.unwrap();
    let ids = |found: Vec<Hostile>| found.into_iter().map(|h| h.id).collect::<Vec<_>>();
    let shaped = serde_json::json!({ "$numberLong": "3" });
    assert_eq!(ids(Hostile::by_json(shaped).all(&db).await.unwrap()), [2], "the document, not the number");
    assert_eq!(ids(Hostile::by_json(serde_json::json!(3)).all(&db).await.unwrap()), [1]);
    let oid = serde_json::json!({ "$oid": "000000000000000000000000" });
    assert!(Hostile::by_json(oid).all(&db).await.unwrap().is_empty());
}

/// Finding 2: `load_many`'s `$in` matches each reference literally: a regex id names
/// the document holding that regex (none here), never the documents it would match,
/// and a real id is still found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_many_matches_regex_and_operator_ids_literally() {
    let db = testkit::database("access_literal_refs").await.unwrap();
    let docs: Vec<LitId> =
        (0..20).map(|i| LitId { id: Bson::String(format!("b_{i}")), name: format!("n{i}") }).collect();
    LitId::collection(&db).insert_many(&docs).await.unwrap();
    let regex = regex(".", "");
    let asked = [Ref::<LitId>::new(regex.clone()), Ref::new(Bson::from("b_5"))];
    let got = refs::load_many(&db, &asked).await.unwrap();
    assert_eq!(got.missing(), [regex]);
    let names: Vec<Option<String>> = got.items().iter().map(|d| d.as_ref().map(|d| d.name.clone())).collect();
    assert_eq!(names, [None, Some("n5".to_owned())]);
    // An operator-shaped id: a value, not refused, not a condition.
    let op = Bson::Document(doc! { "$ne": null });
    let got =
        refs::load_many(&db, &[Ref::<LitId>::new(op.clone()), Ref::new(Bson::from("b_7"))]).await.unwrap();
    assert_eq!(got.missing(), [op]);
}

/// The encoder's property: a value reaches the server only as a value, in each
/// position. Every value is stored through `$set` and pushed onto an empty array; then
/// the equality finder, the range finder (`v..=v`) and `load_many` by `_id` each find
/// exactly the document holding it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_value_in_every_position_is_only_a_value() {
    let db = testkit::database("access_literal_property").await.unwrap();
    let mut rng = docshape_test_seed::rng("access::literal");
    let values = hostile_values(&mut *rng, 80);
    let docs: Vec<Lit> = (0..values.len() as i64).map(lit).collect();
    Lit::collection(&db).insert_many(&docs).await.unwrap();
    for (i, v) in values.iter().enumerate() {
        let i = i as i64;
        // `$set` value.
        Lit::lit_set(i, v.clone()).run(&db).await.unwrap_or_else(|e| panic!("set {v:?}: {e}"));
        // Pushed element.
        Lit::push_any(i, v.clone()).run(&db).await.unwrap_or_else(|e| panic!("push {v:?}: {e}"));
        // Read raw: serde's `Bson` reads a `$numberLong`-keyed document as a number, the
        // raw conversion keeps what is stored.
        let stored = db
            .collection::<RawDocumentBuf>(Lit::COLLECTION)
            .find_one(doc! { "_id": i })
            .await
            .unwrap()
            .unwrap();
        let field = |name: &str| Bson::try_from(stored.get(name).unwrap().unwrap()).unwrap();
        assert_eq!(field("val"), *v, "stored by $set");
        assert_eq!(field("items"), Bson::Array(vec![v.clone()]), "pushed as one element");
    }
    // `_id`s: the server stores no array, regex or `$`-prefixed key there; those are
    // still asked for below, and must find nothing.
    fn dollar(v: &Bson) -> bool {
        match v {
            Bson::Document(d) => d.iter().any(|(k, v)| k.starts_with('$') || dollar(v)),
            Bson::Array(a) => a.iter().any(dollar),
            _ => false,
        }
    }
    let id_values: Vec<Bson> = values
        .iter()
        .filter(|v| !matches!(v, Bson::Array(_) | Bson::RegularExpression(_)) && !dollar(v))
        .cloned()
        .collect();
    let id_docs: Vec<LitId> =
        id_values.iter().enumerate().map(|(i, v)| LitId { id: v.clone(), name: format!("n{i}") }).collect();
    LitId::collection(&db).insert_many(&id_docs).await.unwrap();
    for (i, v) in values.iter().enumerate() {
        let i = i as i64;
        // Equality.
        let found = val_ids(Lit::lit_by_val(v.clone()).all(&db).await.unwrap());
        assert_eq!(found, [i], "eq {v:?}");
        // Range bound: a regex cannot be a comparison's bound (the server may refuse it).
        match Lit::lit_in_range("k", v.clone()..=v.clone()).all(&db).await {
            Ok(found) => assert_eq!(val_ids(found), [i], "range {v:?}"),
            Err(e) => assert!(matches!(v, Bson::RegularExpression(_)), "range {v:?}: {e}"),
        }
        // `$in` member, alone and beside a real id.
        let got = refs::load_many(&db, &[Ref::<LitId>::new(v.clone())]).await.unwrap();
        let want = id_values.iter().position(|x| x == v).map(|k| format!("n{k}"));
        let names: Vec<Option<String>> =
            got.items().iter().map(|d| d.as_ref().map(|d| d.name.clone())).collect();
        assert_eq!(names, [want], "$in {v:?}");
    }
    let pick = rng.next_u32() as usize % values.len();
    let all: Vec<Ref<LitId>> = values.iter().map(|v| Ref::new(v.clone())).collect();
    let got = refs::load_many(&db, &all).await.unwrap();
    assert_eq!(got.items().iter().filter(|d| d.is_some()).count(), id_values.len(), "all at once");
    assert_eq!(got.items()[pick].is_some(), id_values.contains(&values[pick]));
}

/// `not_in_filter` (the worker's exclusion of the jobs it failed, stored ids of any
/// shape) excludes exactly its members: a regex or an operator-shaped member neither
/// excludes other documents nor makes the server refuse the query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_in_excludes_exactly_its_members() {
    use docshape::access::{not_in_filter, Literal};
    use futures_util::TryStreamExt;
    let db = testkit::database("access_literal_nin").await.unwrap();
    let mut rng = docshape_test_seed::rng("access::literal::nin");
    let values = hostile_values(&mut *rng, 80);
    // Stored ids: the shapes the server keeps in `_id` (see above); the others are
    // still excluded below, and must exclude nothing.
    let storable = |v: &Bson| {
        fn dollar(v: &Bson) -> bool {
            match v {
                Bson::Document(d) => d.iter().any(|(k, v)| k.starts_with('$') || dollar(v)),
                Bson::Array(a) => a.iter().any(dollar),
                _ => false,
            }
        }
        !matches!(v, Bson::Array(_) | Bson::RegularExpression(_)) && !dollar(v)
    };
    let ids: Vec<Bson> = values.iter().filter(|v| storable(v)).cloned().collect();
    let raw = db.collection::<Document>("nin");
    raw.insert_many(ids.iter().map(|id| doc! { "_id": id.clone() })).await.unwrap();
    let remaining = |filter: Document| {
        let raw = raw.clone();
        async move {
            let found: Vec<Document> = raw.find(filter).await.unwrap().try_collect().await.unwrap();
            found.into_iter().map(|d| d.get("_id").unwrap().clone()).collect::<Vec<Bson>>()
        }
    };
    for v in &values {
        let left = remaining(not_in_filter("_id", [Literal::stored(v.clone())])).await;
        let want: Vec<Bson> = ids.iter().filter(|id| *id != v).cloned().collect();
        assert_eq!(left.len(), want.len(), "$nin {v:?}: {left:?}");
        assert!(want.iter().all(|id| left.contains(id)), "$nin {v:?}");
    }
    // Half of them at once, hostile and plain mixed.
    let excluded: Vec<Bson> = values.iter().filter(|_| rng.next_u32().is_multiple_of(2)).cloned().collect();
    let left = remaining(not_in_filter("_id", excluded.iter().cloned().map(Literal::stored))).await;
    let want: Vec<&Bson> = ids.iter().filter(|id| !excluded.contains(id)).collect();
    assert_eq!(left.len(), want.len(), "{left:?}");
    assert!(want.iter().all(|id| left.contains(id)));
}
