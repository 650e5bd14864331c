//! Relations inside the variants of a polymorphic model: a bounded embedded array in
//! one variant (validated there only), references in another (validated as the
//! referenced `_id`, loaded with `Ref::load`), and the design-decision table listing
//! each under its path and its variant.

use docshape::bson::oid::ObjectId;
use docshape::bson::{doc, Document};
use docshape::refs::Ref;
use docshape::{relation, Embedded, Model};
use serde::{Deserialize, Serialize};

use crate::validator::is_validation_failure;

/// The people an activity names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "poly_people")]
pub struct Person {
    #[serde(rename = "_id")]
    #[validate(max_length = 16)]
    pub id: String,
    pub name: String,
}

/// A line of a basket, with who packed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Line {
    pub sku: String,
    pub qty: i32,
    #[reference(reason = "a packer is a person of their own")]
    pub packed_by: Ref<Person>,
}

/// Three shapes: a comment references its author (and, raw, its reviewer); a basket
/// embeds at most three lines; a tag list stores plain strings under the same name
/// `lines`, which the basket's bound does not reach.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[model(collection = "poly_activities", strict)]
pub enum Activity {
    Comment {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[reference(reason = "people are edited on their own")]
        author: Ref<Person>,
        #[reference(Person)]
        reviewer: String,
        text: String,
    },
    Basket {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[embed(max = 3, reason = "a basket shows its lines")]
        lines: Vec<Line>,
    },
    Tags {
        #[serde(rename = "_id")]
        id: ObjectId,
        lines: Vec<String>,
    },
}

fn line(sku: &str) -> Document {
    doc! { "sku": sku, "qty": 1, "packed_by": "ann" }
}

fn branch<'v>(validator: &'v Document, kind: &str) -> &'v Document {
    let branches = validator.get_document("$jsonSchema").unwrap().get_array("anyOf").unwrap();
    branches
        .iter()
        .filter_map(|b| b.as_document())
        .find(|b| {
            let tag = b.get_document("properties").unwrap().get_document("kind").unwrap();
            tag.get_array("enum").unwrap()[0].as_str() == Some(kind)
        })
        .unwrap()
        .get_document("properties")
        .unwrap()
}

/// `#[embed(max = 3)]` bounds the basket's `lines`: the server takes three and refuses
/// a fourth, while a tag list of five `lines` is fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variants_bounded_embed_is_validated_in_that_variant_only() {
    let validator = Activity::validator();
    let basket = branch(&validator, "basket").get_document("lines").unwrap();
    assert_eq!(basket.get_i64("maxItems").ok().or(basket.get_i32("maxItems").ok().map(i64::from)), Some(3));
    let tags = branch(&validator, "tags").get_document("lines").unwrap();
    assert!(!tags.contains_key("maxItems"), "{tags}");

    let db = docshape_testkit::database("poly_embed").await.unwrap();
    docshape::sync::<Activity>(&db).await.unwrap();
    let raw = db.collection::<Document>("poly_activities");
    let three: Vec<Document> = ["a", "b", "c"].into_iter().map(line).collect();
    raw.insert_one(doc! { "_id": ObjectId::new(), "kind": "basket", "lines": three.clone() }).await.unwrap();
    let mut four = three;
    four.push(line("d"));
    let e =
        raw.insert_one(doc! { "_id": ObjectId::new(), "kind": "basket", "lines": four }).await.unwrap_err();
    assert!(is_validation_failure(&e), "{e}");
    let five = vec!["a", "b", "c", "d", "e"];
    raw.insert_one(doc! { "_id": ObjectId::new(), "kind": "tags", "lines": five }).await.unwrap();
    // A line inside the basket is validated too: its reference is the person's `_id`.
    let bad = vec![doc! { "sku": "x", "qty": 1, "packed_by": 7 }];
    let e =
        raw.insert_one(doc! { "_id": ObjectId::new(), "kind": "basket", "lines": bad }).await.unwrap_err();
    assert!(is_validation_failure(&e), "{e}");
}

/// A `Ref<Person>` in the comment variant loads its person; both references, the
/// `Ref` and the raw `#[reference(Person)]`, are validated as the person's `_id` (a
/// string of at most 16 characters).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_in_a_variant_loads_its_target_and_is_validated() {
    let db = docshape_testkit::database("poly_ref_variant").await.unwrap();
    docshape::sync::<Person>(&db).await.unwrap();
    docshape::sync::<Activity>(&db).await.unwrap();
    let ann = Person { id: "ann".into(), name: "Ann".into() };
    Person::collection(&db).insert_one(&ann).await.unwrap();
    let comment = Activity::Comment {
        id: ObjectId::new(),
        author: Ref::new("ann".to_owned()),
        reviewer: "ann".into(),
        text: "nice".into(),
    };
    Activity::collection(&db).insert_one(&comment).await.unwrap();
    let Activity::Comment { id, .. } = &comment else { unreachable!() };
    let read = Activity::collection(&db).find_one(doc! { "_id": id }).await.unwrap().unwrap();
    assert_eq!(read, comment);
    let Activity::Comment { author, .. } = &read else { panic!("{read:?}") };
    assert_eq!(author.load(&db).await.unwrap(), Some(ann));
    assert_eq!(Ref::<Person>::new("bob".to_owned()).load(&db).await.unwrap(), None);

    let raw = db.collection::<Document>("poly_activities");
    let long = "x".repeat(17);
    for (author, reviewer) in [(long.as_str(), "ann"), ("ann", long.as_str())] {
        let doc = doc! { "_id": ObjectId::new(), "kind": "comment", "author": author, "reviewer": reviewer, "text": "t" };
        let e = raw.insert_one(doc).await.unwrap_err();
        assert!(is_validation_failure(&e), "{author} / {reviewer}: {e}");
    }
    let e = raw
        .insert_one(
            doc! { "_id": ObjectId::new(), "kind": "comment", "author": 1, "reviewer": "ann", "text": "t" },
        )
        .await
        .unwrap_err();
    assert!(is_validation_failure(&e), "{e}");
}

/// The design-decision table lists each variant's relations under their path and the
/// variant's discriminator, nested ones included; none of them is the enum's own.
#[test]
fn the_design_decision_table_lists_each_variants_relations() {
    assert!(Activity::RELATIONS.is_empty());
    let table =
        relation::design_decisions_with_nested(&[("poly_activities", Activity::RELATIONS, Activity::NESTED)]);
    for row in [
        r#"| poly_activities | author (kind: "comment") | reference | poly_people | — | — | people are edited on their own |"#,
        r#"| poly_activities | reviewer (kind: "comment") | reference | poly_people | — | — | no reason declared: add `reason = "..."` to `#[reference]` |"#,
        r#"| poly_activities | lines (kind: "basket") | embed | Line (array) | ≤ 3 | — | a basket shows its lines |"#,
        r#"| poly_activities | lines.packed_by (kind: "basket") | reference | poly_people | — | — | a packer is a person of their own |"#,
    ] {
        assert!(table.contains(row), "{row}\n{table}");
    }
    assert!(!table.contains("kind: \"tags\""), "the tag list holds no relation:\n{table}");
    // The registry holds them as the generated `DESIGN_DECISIONS.md` reads them (the
    // file itself is checked in the relation tests, a program of their own).
    let registered = docshape::registry::models()
        .into_iter()
        .find(|m| m.collection == "poly_activities")
        .map(|m| relation::design_decisions_with_nested(&[(m.collection, m.relations, m.nested)]))
        .unwrap();
    assert_eq!(registered, table);
}
