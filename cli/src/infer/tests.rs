//! The generator's pure parts: names, types, bounds.

use super::source::{pascal, raw_string, singular};
use super::*;

#[test]
fn names_become_identifiers_and_types() {
    assert_eq!(rust_ident("first-name"), "first_name");
    assert_eq!(rust_ident("firstName"), "first_name");
    assert_eq!(rust_ident("type"), "type_");
    assert_eq!(rust_ident("2fa"), "f_2fa");
    assert_eq!(rust_ident("ünï"), "n");
    assert_eq!(rust_ident("\n// x"), "x");
    assert_eq!(pascal("order-items"), "OrderItems");
    assert_eq!(pascal("2024_logs"), "C2024Logs");
    assert_eq!(singular("Users"), "User");
    assert_eq!(singular("Addresses"), "Address");
    assert_eq!(singular("Categories"), "Category");
    assert_eq!(singular("Status"), "Status");
    assert_eq!(key_path("a.b"), "\"a.b\"");
    assert_eq!(key_path("email"), "email");
    assert_eq!(raw_string(r##"{"a": "#"}"##), r###"r##"{"a": "#"}"##"###);
    assert_eq!(thousands(1234567), "1,234,567");
}

#[test]
fn a_map_keyed_by_data_stops_at_the_bound() {
    let mut root = Node::default();
    for i in 0..(MAX_FIELDS + 50) {
        let mut d = Document::new();
        d.insert(format!("k{i}"), 1);
        root.fold_document(&d, 0);
    }
    assert!(root.opaque);
    assert!(root.fields.is_empty());
}

#[test]
fn mixed_numbers_and_types() {
    let mut node = Node::default();
    for v in [Bson::Int32(1), Bson::Double(2.5), Bson::Null] {
        node.fold(&v, 0);
    }
    let mut g = Gen::default();
    let t = g.field_type(&node, "X");
    assert_eq!(t.ty, "f64");
    assert!(t.notes[0].contains("integers and doubles"), "{:?}", t.notes);
    // Numbers and strings: a clean mix, an untagged enum of both.
    node.fold(&Bson::String("x".into()), 0);
    let t = g.field_type(&node, "X");
    assert_eq!(t.ty, "XValue");
    assert!(t.notes[0].starts_with("mixed types (") && t.notes[1].contains("as f64"), "{:?}", t.notes);
    assert!(
        g.items
            .last()
            .unwrap()
            .contains("#[serde(untagged)]\npub enum XValue {\n    Text(String),\n    Number(f64),\n}"),
        "{:?}",
        g.items
    );
    // A sub-document among them: not a clean mix, `Bson`.
    node.fold(&Bson::Document(doc! { "a": 1 }), 0);
    let t = g.field_type(&node, "X");
    assert_eq!(t.ty, "Bson");
    assert!(t.notes[0].starts_with("mixed types: "), "{:?}", t.notes);
}
