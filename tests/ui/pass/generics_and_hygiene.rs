// Names the generated code must not depend on, shadowed in the user's module.
#![allow(dead_code)]
struct Document;
struct Bson;
struct Schema;
mod __ds {}

use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Page<T> {
    #[validate(max_items = 50)]
    items: Vec<T>,
    next: Option<String>,
}

// A generic internally tagged enum whose variants store fields alike: the schema steps
// they repeat stay in each variant's list (a constant in `schema` could not name `T`).
#[derive(Serialize, Deserialize, Embedded)]
#[serde(tag = "kind")]
enum Slot<T> {
    Full {
        value: T,
        #[validate(max_length = 8)]
        label: String,
    },
    Empty {
        value: T,
        #[validate(max_length = 8)]
        label: String,
    },
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "feeds")]
struct Feed {
    first: Page<u32>,
    #[validate(allowed = [-1, 0, 1])]
    direction: i8,
}

pub(super) fn main() {
    use docshape::validator::Schema as _;
    let schema = <Feed as docshape::validator::Schema>::schema();
    let first = schema.get_document("properties").unwrap().get_document("first").unwrap();
    let items = first.get_document("properties").unwrap().get_document("items").unwrap();
    assert_eq!(items.get_document("items").unwrap().get_str("bsonType").unwrap(), "long");
    assert_eq!(items.get_i64("maxItems").unwrap(), 50);
    let _ = <Page<String>>::schema();
    let slot = <Slot<u32>>::schema();
    let variants = slot.get_array("anyOf").unwrap();
    assert_eq!(variants.len(), 2);
    for (variant, kind) in variants.iter().zip(["Full", "Empty"]) {
        let props = variant.as_document().unwrap().get_document("properties").unwrap();
        assert_eq!(props.get_document("value").unwrap().get_str("bsonType").unwrap(), "long");
        assert_eq!(props.get_document("label").unwrap().get_i64("maxLength").unwrap(), 8);
        assert_eq!(props.get_document("kind").unwrap().get_array("enum").unwrap()[0].as_str(), Some(kind));
    }
}
