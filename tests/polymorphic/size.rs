//! The size bound of a polymorphic model, per variant: each variant is a document of its
//! fields plus the tag (a string holding the discriminator value), and the model is as
//! large as its largest variant. A document at a variant's bound is accepted by the
//! server and encodes to exactly that many bytes.

use docshape::bson::{doc, Document};
use docshape::size::MaxBsonSize;
use docshape::{bson_compat, Embedded, Model};
use serde::{Deserialize, Serialize};

/// Three bounded shapes: strings by `max_length`, an array by `max_items` and
/// `items(max_length)`, a fixed-size variant and one that stores only `_id` and the tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[model(collection = "sized_notes", strict)]
#[access(name = "note_by_id", variant = Note, filter(_id), freq = "10 r/s")]
#[access(name = "note_titles", variant = Note, filter(_id), fields(title))]
#[access(name = "any_by_id", filter(_id), freq = "10 r/s")]
pub enum Entry {
    Note {
        #[serde(rename = "_id")]
        id: i64,
        #[validate(max_length = 20)]
        title: String,
        #[validate(max_items = 3, items(max_length = 5))]
        tags: Vec<String>,
    },
    #[serde(rename = "pt")]
    Point {
        #[serde(rename = "_id")]
        id: i64,
        x: f64,
        y: f64,
    },
    Marker {
        #[serde(rename = "_id")]
        id: i64,
    },
}

/// `n` code points of four UTF-8 bytes each: the longest string a `max_length = n`
/// admits, in bytes.
fn widest(n: usize) -> String {
    "😀".repeat(n)
}

/// One document of each variant, each at its bound.
fn at_bound() -> Vec<Entry> {
    vec![
        Entry::Note { id: 1, title: widest(20), tags: vec![widest(5); 3] },
        Entry::Point { id: 2, x: f64::MAX, y: f64::MIN },
        Entry::Marker { id: 3 },
    ]
}

fn value(e: &Entry) -> &'static str {
    match e {
        Entry::Note { .. } => "note",
        Entry::Point { .. } => "pt",
        Entry::Marker { .. } => "marker",
    }
}

/// The tag's element: type byte, "kind\0", and the string `value` (length, bytes, NUL).
fn tag(value: &str) -> usize {
    1 + 5 + 4 + value.len() + 1
}

fn bound(e: &Entry) -> Option<usize> {
    Entry::VARIANT_SIZES.iter().find(|v| v.value == value(e)).and_then(|v| v.size)
}

#[test]
fn each_variant_is_sized_as_its_fields_and_the_tag() {
    let values: Vec<&str> = Entry::VARIANT_SIZES.iter().map(|v| v.value).collect();
    assert_eq!(values, ["note", "pt", "marker"], "discriminator values, in declaration order");
    // `Marker`: only `_id` and the tag.
    assert_eq!(Entry::VARIANT_SIZES[2].size, Some(4 + tag("marker") + (1 + 4 + 8) + 1));
    // `Point`: two doubles.
    assert_eq!(Entry::VARIANT_SIZES[1].size, Some(4 + tag("pt") + 13 + (1 + 2 + 8) * 2 + 1));
    // `Note`: 20 code points of up to 4 bytes; 3 strings of 5, keyed "0" to "2".
    let title = 1 + 6 + (4 + 80 + 1);
    let tags = 1 + 5 + (4 + 3 * (1 + 2 + (4 + 20 + 1)) + 1);
    assert_eq!(Entry::VARIANT_SIZES[0].size, Some(4 + tag("note") + 13 + title + tags + 1));
    for v in Entry::VARIANT_SIZES {
        assert!(v.why.to_string().is_empty(), "{}: {}", v.value, v.why);
    }
}

#[test]
fn the_model_is_as_large_as_its_largest_variant() {
    let largest = Entry::VARIANT_SIZES.iter().filter_map(|v| v.size).max();
    assert_eq!(Entry::MAX_BSON_SIZE, largest);
    assert_eq!(Entry::MAX_BSON_SIZE, Entry::VARIANT_SIZES[0].size);
}

#[test]
fn a_document_at_its_variants_bound_encodes_within_it() {
    for e in at_bound() {
        let bytes = bson_compat::to_vec(&e).unwrap().len();
        let bound = bound(&e).unwrap();
        assert!(bytes <= bound, "{}: {bytes} bytes above its bound {bound}", value(&e));
        // The widest values reach it exactly: the bound is not loose.
        assert_eq!(bytes, bound, "{}", value(&e));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_accepts_documents_at_the_bound_and_refuses_one_past_it() {
    let db = docshape_testkit::database("poly_size").await.unwrap();
    docshape::sync::<Entry>(&db).await.unwrap();
    let written = at_bound();
    Entry::collection(&db).insert_many(&written).await.unwrap();
    for e in &written {
        let id = match e {
            Entry::Note { id, .. } | Entry::Point { id, .. } | Entry::Marker { id } => *id,
        };
        let read = Entry::collection(&db).find_one(doc! { "_id": id }).await.unwrap();
        assert_eq!(read.as_ref(), Some(e));
        // As stored, the document is no larger than its variant's bound.
        let raw =
            db.collection::<Document>("sized_notes").find_one(doc! { "_id": id }).await.unwrap().unwrap();
        assert!(bson_compat::to_vec(&raw).unwrap().len() <= bound(e).unwrap(), "{raw}");
    }
    // One code point more than the bound counts on is refused by the validator, so a
    // stored document stays within the size the access table reports.
    let past = Entry::Note { id: 9, title: widest(21), tags: Vec::new() };
    let e = Entry::collection(&db).insert_one(&past).await.unwrap_err();
    assert!(crate::validator::is_validation_failure(&e), "{e}");
}

/// A variant with no bound leaves the model unbounded, and the reason names the variant
/// and the field; the bounded variant keeps its own size.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "sized_mixed")]
#[access(name = "fixed_by_id", variant = Fixed, filter(_id), freq = "2 r/s")]
#[access(name = "open_by_id", variant = Open, filter(_id), freq = "2 r/s")]
pub enum Mixed {
    Fixed {
        #[serde(rename = "_id")]
        id: i64,
        n: i32,
    },
    Open {
        #[serde(rename = "_id")]
        id: i64,
        text: String,
    },
}

#[test]
fn an_unbounded_variant_is_named_with_its_field() {
    assert_eq!(Mixed::MAX_BSON_SIZE, None);
    assert_eq!(Mixed::VARIANT_SIZES[0].size, Some(4 + tag("Fixed") + 13 + (1 + 2 + 4) + 1));
    assert_eq!(Mixed::VARIANT_SIZES[1].size, None);
    assert_eq!(
        Mixed::UNSIZED.to_string(),
        "`Mixed::Open.text` is a String with no `#[validate(max_length = N)]`; add it to `Mixed::Open.text`"
    );
    // Each row's bytes are its variant's (it reads the variant whole, tag included):
    // the bounded one is bounded.
    let row = |name: &str| Mixed::ACCESS_PATTERNS.iter().find(|p| p.name == name).unwrap();
    assert_eq!(row("fixed_by_id").load.doc_bytes, Mixed::VARIANT_SIZES[0].size);
    assert_eq!(row("open_by_id").load.doc_bytes, None);
    let md = Mixed::access_table();
    assert!(md.contains("| 1 | fixed_by_id (variant `kind: \"Fixed\"`) | _id, n | 2 r/s |  | sized_mixed: `_id_` | 1 | 41 B | 2 | 82 B |"), "{md}");
    assert!(
        md.contains(
            "- row 2, bytes: a document of `sized_mixed` has no size bound (`Mixed::Open.text` is a String"
        ),
        "{md}"
    );
}

#[test]
fn a_row_on_a_variant_reads_that_variants_bound() {
    let row = |name: &str| Entry::ACCESS_PATTERNS.iter().find(|p| p.name == name).unwrap();
    // A row on a variant without `fields(...)` reads the variant whole: its fields and
    // the tag, which the enum's decoding reads first.
    let note = Entry::VARIANT_SIZES[0].size.unwrap();
    assert_eq!(row("note_by_id").load.doc_bytes, Some(note));
    assert_eq!(
        <NoteByIdView as docshape::access::Projection>::FIELDS,
        Some(&["_id", "title", "tags", "kind"][..])
    );
    let projected = bson_compat::to_vec(
        &doc! { "_id": 1_i64, "title": widest(20), "tags": vec![widest(5); 3], "kind": "note" },
    );
    assert_eq!(Some(projected.unwrap().len()), Some(note), "the widest note, as its row returns it");
    // A row on the enum reads any variant, whole.
    assert_eq!(row("any_by_id").load.doc_bytes, Entry::MAX_BSON_SIZE);
    // A view of the variant's fields: `title` alone, as the projection returns it.
    assert_eq!(row("note_titles").load.doc_bytes, Some(4 + (1 + 6 + 4 + 80 + 1) + 1));
    let md = Entry::access_table();
    assert!(md.contains(&format!("| 1 | note_by_id (variant `kind: \"note\"`) | _id, title, tags | 10 r/s |  | sized_notes: `_id_` | 1 | {note} B |")), "{md}");
    assert!(md.contains("| 3 | any_by_id |  | 10 r/s |"), "{md}");
}

/// An `Embedded` internally tagged enum is sized the same way, so a model holding one
/// is bounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
#[serde(tag = "shape", rename_all = "snake_case")]
pub enum Shape {
    Circle {
        r: f64,
    },
    Label {
        #[validate(max_length = 8)]
        text: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sized_drawings")]
pub struct Drawing {
    #[serde(rename = "_id")]
    pub id: i64,
    pub shape: Shape,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_tagged_enum_is_sized_per_variant() {
    assert_eq!(Shape::MAX_BSON_SIZE, Shape::VARIANT_SIZES[1].size);
    let label = Drawing { id: 1, shape: Shape::Label { text: widest(8) } };
    let bytes = bson_compat::to_vec(&label).unwrap().len();
    assert_eq!(Some(bytes), Drawing::MAX_BSON_SIZE, "the widest label reaches the bound exactly");
    let db = docshape_testkit::database("poly_size_embedded").await.unwrap();
    docshape::sync::<Drawing>(&db).await.unwrap();
    Drawing::collection(&db).insert_one(&label).await.unwrap();
    let read = Drawing::collection(&db).find_one(doc! { "_id": 1 }).await.unwrap();
    assert_eq!(read, Some(label));
}
