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
}
