//! What the derives generate for this crate's models, the examples' and the shop's, and the
//! compile-cost benchmark's three shapes, as
//! data: every registered model's collection spec (the `$jsonSchema` validator, its
//! level and action, the indexes, the shard key), its access-pattern table (with the
//! size bounds its rows carry), relations, copies, nested relations, stamps and
//! variants, and the extra collections (outlier overflow), written out and compared
//! with `registry/expected.txt`. A change to how the derive writes its output must
//! leave all of it as it was; a change of what it generates shows here line by line.
//!
//! After an intended change, `DOCSHAPE_REGISTRY=overwrite cargo test -p docshape-tests
//! --test registry` rewrites the file; review its diff.

use std::fmt::Write;

// The crates whose models are registered: linked, so that their registrations run.
use docshape_examples as _;
use docshape_tests as _;
use shop_models as _;

/// The compile-cost benchmark's model (a struct model with an embedded type, two indexes and a paginated row).
mod bench_struct {
    use docshape::bson::{oid::ObjectId, DateTime};
    use docshape::{Embedded, Model};
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
    pub struct Address0 {
        #[validate(min_length = 1, max_length = 100)]
        pub street: String,
        #[validate(max_length = 60)]
        pub city: String,
        #[validate(pattern = "^[0-9]{5}$")]
        pub zip: String,
    }

    #[derive(Debug, Clone, Serialize, Deserialize, Model)]
    #[model(collection = "items_0")]
    #[index(keys(owner_id, created_at = -1, _id = -1))]
    #[access(name = "by_owner_0", filter(owner_id), sort(created_at = -1), paginate)]
    pub struct Item0 {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[validate(max_length = 64)]
        pub owner_id: String,
        #[validate(min_length = 2, max_length = 100)]
        pub name: String,
        #[index(unique)]
        #[validate(pattern = "^[^@]+@[^@]+$")]
        pub email: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[validate(minimum = 0, maximum = 150)]
        pub age: Option<i32>,
        #[validate(allowed = ["active", "blocked"])]
        pub status: String,
        #[validate(max_items = 10)]
        pub tags: Vec<String>,
        #[validate(minimum = 0)]
        pub score: f64,
        pub created_at: DateTime,
        pub address: Address0,
    }
}

/// The compile-cost benchmark's model (a polymorphic model: four tagged variants, rows on the enum and on two variants).
mod bench_polymorphic {
    use docshape::bson::{oid::ObjectId, DateTime};
    use docshape::{Embedded, Model};
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
    pub struct Address0 {
        #[validate(min_length = 1, max_length = 100)]
        pub street: String,
        #[validate(max_length = 60)]
        pub city: String,
        #[validate(pattern = "^[0-9]{5}$")]
        pub zip: String,
    }

    #[derive(Debug, Clone, Serialize, Deserialize, Model)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    #[model(collection = "events_0")]
    #[index(keys(owner_id, created_at = -1))]
    #[access(name = "by_owner_0", filter(owner_id), sort(created_at = -1))]
    #[access(name = "person_by_email_0", variant = Person, filter(email))]
    #[access(name = "rated_of_0", variant = Rated, filter(owner_id), range(score))]
    pub enum Event0 {
        Person {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[validate(max_length = 64)]
            owner_id: String,
            created_at: DateTime,
            #[validate(min_length = 2, max_length = 100)]
            name: String,
            #[index(unique)]
            #[validate(pattern = "^[^@]+@[^@]+$")]
            email: String,
        },
        Status {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[validate(max_length = 64)]
            owner_id: String,
            created_at: DateTime,
            #[serde(skip_serializing_if = "Option::is_none")]
            #[validate(minimum = 0, maximum = 150)]
            age: Option<i32>,
            #[validate(allowed = ["active", "blocked"])]
            status: String,
        },
        #[index(keys(owner_id, score))]
        Rated {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[validate(max_length = 64)]
            owner_id: String,
            created_at: DateTime,
            #[validate(max_items = 10)]
            tags: Vec<String>,
            #[validate(minimum = 0)]
            score: f64,
        },
        Moved {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[validate(max_length = 64)]
            owner_id: String,
            created_at: DateTime,
            address: Address0,
        },
    }
}

/// The compile-cost benchmark's model (a struct model with a tenant and a soft delete).
mod bench_tenant {
    use docshape::bson::{oid::ObjectId, DateTime};
    use docshape::{Embedded, Model};
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
    pub struct Address0 {
        #[validate(min_length = 1, max_length = 100)]
        pub street: String,
        #[validate(max_length = 60)]
        pub city: String,
        #[validate(pattern = "^[0-9]{5}$")]
        pub zip: String,
    }

    #[derive(Debug, Clone, Serialize, Deserialize, Model)]
    #[model(collection = "tenant_items_0", tenant = owner_id, soft_delete = deleted_at)]
    #[index(keys(owner_id, email), unique, partial_filter = r#"{"deleted_at": null}"#)]
    #[index(keys(owner_id, created_at = -1, _id = -1))]
    #[access(name = "by_owner_0", filter(owner_id), sort(created_at = -1), paginate)]
    pub struct Item0 {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[validate(max_length = 64)]
        pub owner_id: String,
        #[validate(min_length = 2, max_length = 100)]
        pub name: String,
        #[validate(pattern = "^[^@]+@[^@]+$")]
        pub email: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[validate(minimum = 0, maximum = 150)]
        pub age: Option<i32>,
        #[validate(allowed = ["active", "blocked"])]
        pub status: String,
        #[validate(max_items = 10)]
        pub tags: Vec<String>,
        #[validate(minimum = 0)]
        pub score: f64,
        pub created_at: DateTime,
        #[index(expire_after = "30d")]
        pub deleted_at: Option<DateTime>,
        pub address: Address0,
    }
}

fn dump() -> String {
    let mut out = String::new();
    let models = docshape::registry::models();
    for m in &models {
        let _ = writeln!(out, "== {} ({})", m.collection, (m.type_name)());
        let _ = writeln!(out, "spec: {:#?}", (m.spec)());
        let _ = writeln!(out, "access_patterns: {:#?}", m.access_patterns);
        let _ = writeln!(out, "polymorphic_rows: {:#?}", m.polymorphic_rows);
        let _ = writeln!(out, "relations: {:#?}", m.relations);
        let _ = writeln!(out, "nested: {:#?}", m.nested);
        let _ = writeln!(out, "stamps: {:#?}", m.stamps);
        let _ = writeln!(out, "copies: {:#?}", m.copies);
        let _ = writeln!(out, "variants: {:#?}", m.variants);
        let _ = writeln!(out, "tenant: {:?}, soft_delete: {:?}", m.tenant, m.soft_delete);
    }
    let mut extra: Vec<String> = docshape::__private::inventory::iter::<
        docshape::registry::RegisteredCollection,
    >
        .into_iter()
        .map(|c| format!("== extra of {}\nspec: {:#?}\nnested: {:#?}\n", (c.owner)(), (c.spec)(), c.nested))
        .collect();
    extra.sort();
    out.extend(extra);
    out
}

#[test]
fn generated_specs_are_the_expected_ones() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("registry/expected.txt");
    let actual = dump();
    // The crates and this file hold fourteen models: an empty dump would mean they were not linked.
    assert!(actual.matches("\n== ").count() > 10, "too few registered models:\n{actual}");
    if std::env::var("DOCSHAPE_REGISTRY").as_deref() == Ok("overwrite") {
        std::fs::write(&path, &actual).expect("write the expected dump");
        return;
    }
    let expected = std::fs::read_to_string(&path).expect("registry/expected.txt exists");
    if actual != expected {
        let first = actual.lines().zip(expected.lines()).position(|(a, e)| a != e);
        let line = first.unwrap_or_else(|| actual.lines().count().min(expected.lines().count()));
        panic!(
            "the generated specs differ from registry/expected.txt from line {}:\n  actual:   {:?}\n  expected: {:?}",
            line + 1,
            actual.lines().nth(line),
            expected.lines().nth(line)
        );
    }
}
