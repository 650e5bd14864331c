//! The source of the measured crates: N models, each the same struct three times: with
//! docshape's derives and attributes, with serde's derives only, and with serde's plus
//! schemars' `JsonSchema` and the same constraints in schemars' attributes (what a
//! program picks today to get JSON schemas from its types).
//!
//! Each model has ten stored fields (seven validated), an embedded type, two indexes
//! (one on the struct, one on a field) and one paginated access pattern, which is
//! what a typical collection in the patterns documents declares.

use std::fmt::Write;

/// Which derives the generated structs carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `Serialize, Deserialize` plus `Model`/`Embedded`, with their attributes.
    Docshape,
    /// `Serialize, Deserialize` only: the baseline.
    Serde,
    /// `Serialize, Deserialize` plus schemars' `JsonSchema`, with the same constraints
    /// where schemars has them.
    Schemars,
}

impl Variant {
    /// The generated package's name.
    pub fn package(self) -> &'static str {
        match self {
            Variant::Docshape => "models_docshape",
            Variant::Serde => "models_serde",
            Variant::Schemars => "models_schemars",
        }
    }
}

/// What each generated model is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// A struct of ten stored fields and an embedded type (the default).
    #[default]
    Struct,
    /// A polymorphic model (`--polymorphic`): an internally tagged enum of four variants
    /// holding the struct's fields between them (see [`polymorphic`]).
    Polymorphic,
    /// The struct model with a tenant and a soft delete (`--tenant`): `tenant =
    /// owner_id`, `soft_delete = deleted_at` (one more field, with a TTL index), the
    /// unique index led by the tenant and partial to live documents.
    Tenant,
}

/// `lib.rs` of a crate of `n` struct models, as the tests read it.
#[cfg(test)]
fn lib_rs(variant: Variant, n: usize, salt: u64) -> String {
    lib_rs_of(Shape::Struct, variant, n, salt)
}

/// `lib.rs` of a crate of `n` models of `shape`. `salt` goes into a comment, so that
/// writing the file with a new salt changes its content and cargo rebuilds the crate.
pub fn lib_rs_of(shape: Shape, variant: Variant, n: usize, salt: u64) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "//! {n} generated models ({variant:?}, {shape:?}); build {salt}.");
    s.push_str("#![allow(dead_code)]\n\n");
    s.push_str("use bson::{oid::ObjectId, DateTime};\nuse serde::{Deserialize, Serialize};\n");
    match variant {
        Variant::Docshape => s.push_str("use docshape::{Embedded, Model};\n"),
        Variant::Schemars => s.push_str("use schemars::JsonSchema;\n"),
        Variant::Serde => {}
    }
    for i in 0..n {
        s.push('\n');
        match shape {
            Shape::Struct => model(&mut s, variant, i, false),
            Shape::Tenant => model(&mut s, variant, i, true),
            Shape::Polymorphic => polymorphic(&mut s, variant, i),
        }
    }
    s
}

/// Emits `attr` only for the docshape variant.
fn ds(s: &mut String, variant: Variant, attr: &str) {
    if variant == Variant::Docshape {
        let _ = writeln!(s, "{attr}");
    }
}

/// Emits `attr` only for the schemars variant.
fn sc(s: &mut String, variant: Variant, attr: &str) {
    if variant == Variant::Schemars {
        let _ = writeln!(s, "{attr}");
    }
}

/// The model's derive line: serde's, and the variant's own derive.
fn derive(s: &mut String, variant: Variant) {
    let extra = match variant {
        Variant::Docshape => ", Model",
        Variant::Schemars => ", JsonSchema",
        Variant::Serde => "",
    };
    let _ = writeln!(s, "#[derive(Debug, Clone, Serialize, Deserialize{extra})]");
}

fn model(s: &mut String, variant: Variant, i: usize, tenant: bool) {
    address(s, variant, i);
    derive(s, variant);
    if tenant {
        let model =
            format!("#[model(collection = \"items_{i}\", tenant = owner_id, soft_delete = deleted_at)]");
        ds(s, variant, &model);
        ds(
            s,
            variant,
            "#[index(keys(owner_id, email), unique, partial_filter = r#\"{\"deleted_at\": null}\"#)]",
        );
    } else {
        ds(s, variant, &format!("#[model(collection = \"items_{i}\")]"));
    }
    ds(s, variant, "#[index(keys(owner_id, created_at = -1, _id = -1))]");
    ds(
        s,
        variant,
        &format!("#[access(name = \"by_owner_{i}\", filter(owner_id), sort(created_at = -1), paginate)]"),
    );
    let _ = writeln!(s, "pub struct Item{i} {{");
    s.push_str("    #[serde(rename = \"_id\")]\n");
    // bson's types have no `JsonSchema`: a schemars user names what they serialize as.
    sc(s, variant, "    #[schemars(with = \"String\")]");
    s.push_str("    pub id: ObjectId,\n");
    ds(s, variant, "    #[validate(max_length = 64)]");
    sc(s, variant, "    #[schemars(length(max = 64))]");
    s.push_str("    pub owner_id: String,\n");
    ds(s, variant, "    #[validate(min_length = 2, max_length = 100)]");
    sc(s, variant, "    #[schemars(length(min = 2, max = 100))]");
    s.push_str("    pub name: String,\n");
    if !tenant {
        ds(s, variant, "    #[index(unique)]");
    }
    ds(s, variant, "    #[validate(pattern = \"^[^@]+@[^@]+$\")]");
    sc(s, variant, "    #[schemars(regex(pattern = \"^[^@]+@[^@]+$\"))]");
    s.push_str("    pub email: String,\n");
    s.push_str("    #[serde(skip_serializing_if = \"Option::is_none\")]\n");
    ds(s, variant, "    #[validate(minimum = 0, maximum = 150)]");
    sc(s, variant, "    #[schemars(range(min = 0, max = 150))]");
    s.push_str("    pub age: Option<i32>,\n");
    ds(s, variant, "    #[validate(allowed = [\"active\", \"blocked\"])]");
    sc(s, variant, "    #[schemars(extend(\"enum\" = [\"active\", \"blocked\"]))]");
    s.push_str("    pub status: String,\n");
    ds(s, variant, "    #[validate(max_items = 10)]");
    sc(s, variant, "    #[schemars(length(max = 10))]");
    s.push_str("    pub tags: Vec<String>,\n");
    ds(s, variant, "    #[validate(minimum = 0)]");
    sc(s, variant, "    #[schemars(range(min = 0))]");
    s.push_str("    pub score: f64,\n");
    sc(s, variant, "    #[schemars(with = \"String\")]");
    s.push_str("    pub created_at: DateTime,\n");
    if tenant {
        ds(s, variant, "    #[index(expire_after = \"30d\")]");
        sc(s, variant, "    #[schemars(with = \"Option<String>\")]");
        s.push_str("    pub deleted_at: Option<DateTime>,\n");
    }
    let _ = writeln!(s, "    pub address: Address{i},\n}}");
}

/// The embedded type of model `i`: three fields, two validated.
fn address(s: &mut String, variant: Variant, i: usize) {
    let extra = match variant {
        Variant::Docshape => ", Embedded",
        Variant::Schemars => ", JsonSchema",
        Variant::Serde => "",
    };
    let _ = writeln!(s, "#[derive(Debug, Clone, Serialize, Deserialize{extra})]");
    let _ = writeln!(s, "pub struct Address{i} {{");
    ds(s, variant, "    #[validate(min_length = 1, max_length = 100)]");
    sc(s, variant, "    #[schemars(length(min = 1, max = 100))]");
    s.push_str("    pub street: String,\n");
    ds(s, variant, "    #[validate(max_length = 60)]");
    sc(s, variant, "    #[schemars(length(max = 60))]");
    s.push_str("    pub city: String,\n");
    ds(s, variant, "    #[validate(pattern = \"^[0-9]{5}$\")]");
    sc(s, variant, "    #[schemars(regex(pattern = \"^[0-9]{5}$\"))]");
    s.push_str("    pub zip: String,\n}\n\n");
}

/// The three fields every variant of a polymorphic model stores: `_id`, the owner and
/// the creation time.
fn common_fields(s: &mut String, variant: Variant) {
    s.push_str("        #[serde(rename = \"_id\")]\n");
    sc(s, variant, "        #[schemars(with = \"String\")]");
    s.push_str("        id: ObjectId,\n");
    ds(s, variant, "        #[validate(max_length = 64)]");
    sc(s, variant, "        #[schemars(length(max = 64))]");
    s.push_str("        owner_id: String,\n");
    sc(s, variant, "        #[schemars(with = \"String\")]");
    s.push_str("        created_at: DateTime,\n");
}

/// A polymorphic model: the struct model's ten fields spread over an internally tagged
/// enum of four variants, each storing `_id`, `owner_id` and `created_at` and two (the
/// last one) of the other seven, with the same validations; the same embedded type.
/// An index and a row on the enum (`owner_id`, newest first), and on two variants an
/// index partial to it with a row it serves: a unique `email` of `Person` and
/// `(owner_id, score)` of `Rated`.
fn polymorphic(s: &mut String, variant: Variant, i: usize) {
    address(s, variant, i);
    derive(s, variant);
    s.push_str("#[serde(tag = \"kind\", rename_all = \"snake_case\")]\n");
    ds(s, variant, &format!("#[model(collection = \"events_{i}\")]"));
    ds(s, variant, "#[index(keys(owner_id, created_at = -1))]");
    ds(s, variant, &format!("#[access(name = \"by_owner_{i}\", filter(owner_id), sort(created_at = -1))]"));
    ds(s, variant, &format!("#[access(name = \"person_by_email_{i}\", variant = Person, filter(email))]"));
    ds(
        s,
        variant,
        &format!("#[access(name = \"rated_of_{i}\", variant = Rated, filter(owner_id), range(score))]"),
    );
    let _ = writeln!(s, "pub enum Event{i} {{");
    s.push_str("    Person {\n");
    common_fields(s, variant);
    ds(s, variant, "        #[validate(min_length = 2, max_length = 100)]");
    sc(s, variant, "        #[schemars(length(min = 2, max = 100))]");
    s.push_str("        name: String,\n");
    ds(s, variant, "        #[index(unique)]");
    ds(s, variant, "        #[validate(pattern = \"^[^@]+@[^@]+$\")]");
    sc(s, variant, "        #[schemars(regex(pattern = \"^[^@]+@[^@]+$\"))]");
    s.push_str("        email: String,\n    },\n");
    s.push_str("    Status {\n");
    common_fields(s, variant);
    s.push_str("        #[serde(skip_serializing_if = \"Option::is_none\")]\n");
    ds(s, variant, "        #[validate(minimum = 0, maximum = 150)]");
    sc(s, variant, "        #[schemars(range(min = 0, max = 150))]");
    s.push_str("        age: Option<i32>,\n");
    ds(s, variant, "        #[validate(allowed = [\"active\", \"blocked\"])]");
    sc(s, variant, "        #[schemars(extend(\"enum\" = [\"active\", \"blocked\"]))]");
    s.push_str("        status: String,\n    },\n");
    ds(s, variant, "    #[index(keys(owner_id, score))]");
    s.push_str("    Rated {\n");
    common_fields(s, variant);
    ds(s, variant, "        #[validate(max_items = 10)]");
    sc(s, variant, "        #[schemars(length(max = 10))]");
    s.push_str("        tags: Vec<String>,\n");
    ds(s, variant, "        #[validate(minimum = 0)]");
    sc(s, variant, "        #[schemars(range(min = 0))]");
    s.push_str("        score: f64,\n    },\n");
    s.push_str("    Moved {\n");
    common_fields(s, variant);
    let _ = writeln!(s, "        address: Address{i},\n    }},\n}}");
}

/// The generated workspace's `Cargo.toml`: both variants as members, docshape by path
/// from this repository, and the repository's own dev profile.
pub fn workspace_toml() -> String {
    r#"[workspace]
resolver = "2"
members = ["models_docshape", "models_serde", "models_schemars"]

[profile.dev]
debug = "line-tables-only"

[profile.dev.package."*"]
debug = false
"#
    .to_owned()
}

/// A variant's `Cargo.toml`. `repo` is this repository's root.
pub fn package_toml(variant: Variant, repo: &str) -> String {
    let mut s = format!(
        "[package]\nname = \"{}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\n",
        variant.package()
    );
    s.push_str("bson = \"2.15\"\nserde = { version = \"1\", features = [\"derive\"] }\n");
    match variant {
        Variant::Docshape => {
            let _ = writeln!(s, "docshape = {{ path = \"{repo}/runtime\" }}");
        }
        // The current release line; its derive with its default features.
        Variant::Schemars => s.push_str("schemars = \"1\"\n"),
        Variant::Serde => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_model_has_its_declared_parts() {
        let n = 3;
        let ds = lib_rs(Variant::Docshape, n, 0);
        assert_eq!(ds.matches("#[derive(").count(), 2 * n);
        assert_eq!(ds.matches(", Model)]").count(), n);
        assert_eq!(ds.matches(", Embedded)]").count(), n);
        assert_eq!(ds.matches("#[index(").count(), 2 * n);
        assert_eq!(ds.matches("#[access(").count(), n);
        assert_eq!(ds.matches("#[validate(").count(), 10 * n);
        // Ten stored fields in each model, three in its embedded type.
        assert_eq!(ds.matches("    pub ").count(), 13 * n);
        assert_eq!(ds.matches('{').count(), ds.matches('}').count());
    }

    #[test]
    fn the_baseline_is_the_same_structs_without_docshape() {
        let ds = lib_rs(Variant::Docshape, 2, 7);
        let serde = lib_rs(Variant::Serde, 2, 7);
        let strip = |s: &str| -> Vec<String> {
            s.lines()
                .filter(|l| {
                    let t = l.trim_start();
                    !(t.starts_with("#[validate")
                        || t.starts_with("#[index")
                        || t.starts_with("#[access")
                        || t.starts_with("#[model")
                        || t.starts_with("//!")
                        || t.starts_with("use docshape"))
                })
                .map(|l| l.replace(", Model)]", ")]").replace(", Embedded)]", ")]"))
                .collect()
        };
        assert_eq!(strip(&ds), strip(&serde));
        assert!(!serde.contains("docshape"));
        assert_ne!(lib_rs(Variant::Serde, 2, 1), serde, "the salt changes the text");
    }

    #[test]
    fn a_polymorphic_model_is_the_same_fields_over_four_variants() {
        let n = 3;
        let ds = lib_rs_of(Shape::Polymorphic, Variant::Docshape, n, 0);
        assert_eq!(ds.matches(", Model)]").count(), n);
        assert_eq!(ds.matches(", Embedded)]").count(), n);
        assert_eq!(ds.matches("#[serde(tag = \"kind\"").count(), n);
        assert_eq!(ds.matches("#[index(").count(), 3 * n);
        assert_eq!(ds.matches("#[access(").count(), 3 * n);
        assert_eq!(ds.matches("variant = ").count(), 2 * n);
        // The struct model's validations, `owner_id`'s once per variant.
        assert_eq!(ds.matches("#[validate(").count(), (10 + 3) * n);
        // Four variants of three common fields and seven others, and the address.
        assert_eq!(ds.matches("        id: ObjectId,").count(), 4 * n);
        assert_eq!(ds.matches("        ").count() - ds.matches("        #[").count(), (12 + 7) * n);
        assert_eq!(ds.matches('{').count(), ds.matches('}').count());
        let strip = |s: &str, extra: &[&str]| -> Vec<String> {
            s.lines()
                .filter(|l| {
                    let t = l.trim_start();
                    !(extra.iter().any(|e| t.starts_with(e)) || t.starts_with("//!") || t.starts_with("use "))
                })
                .map(|l| {
                    l.replace(", Model)]", ")]").replace(", Embedded)]", ")]").replace(", JsonSchema)]", ")]")
                })
                .collect()
        };
        let serde = lib_rs_of(Shape::Polymorphic, Variant::Serde, n, 0);
        let sc = lib_rs_of(Shape::Polymorphic, Variant::Schemars, n, 0);
        let docshape_attrs = ["#[validate", "#[index", "#[access", "#[model"];
        assert_eq!(strip(&ds, &docshape_attrs), strip(&serde, &[]));
        assert_eq!(strip(&sc, &["#[schemars"]), strip(&serde, &[]));
        assert!(!serde.contains("docshape") && !serde.contains("schemars"));
    }

    #[test]
    fn only_the_docshape_variant_depends_on_docshape() {
        assert!(package_toml(Variant::Docshape, "/r").contains("path = \"/r/runtime\""));
        assert!(!package_toml(Variant::Serde, "/r").contains("docshape"));
        assert!(!package_toml(Variant::Schemars, "/r").contains("docshape"));
        assert!(package_toml(Variant::Schemars, "/r").contains("schemars = "));
        assert!(!package_toml(Variant::Serde, "/r").contains("schemars"));
    }

    #[test]
    fn the_schemars_variant_is_the_same_structs_with_json_schema_and_its_constraints() {
        let n = 2;
        let sc = lib_rs(Variant::Schemars, n, 7);
        let serde = lib_rs(Variant::Serde, n, 7);
        assert_eq!(sc.matches(", JsonSchema)]").count(), 2 * n);
        // Every docshape constraint but none has its schemars attribute, plus the two
        // `with` of bson's types.
        assert_eq!(sc.matches("#[schemars(").count(), (10 + 2) * n);
        assert!(!sc.contains("docshape") && !sc.contains("#[validate"));
        let strip = |s: &str| -> Vec<String> {
            s.lines()
                .filter(|l| {
                    let t = l.trim_start();
                    !(t.starts_with("#[schemars") || t.starts_with("//!") || t.starts_with("use schemars"))
                })
                .map(|l| l.replace(", JsonSchema)]", ")]"))
                .collect()
        };
        assert_eq!(strip(&sc), strip(&serde));
    }
}
