//! A polymorphic model's expansion: its variants, their rows, versions and bounds,
//! and the index matcher's answers on them.

#[allow(unused_imports)]
use super::*;

/// An event store: two variants, a row on each, an index partial to one.
const EVENTS: &str = r#"#[serde(tag = "kind")]
    #[model(collection = "events")]
    #[index(keys(user))]
    #[access(name = "clicks_of_user", variant = Click, filter(user){})]
    enum Event {
        Click { #[serde(rename = "_id")] id: ObjectId, user: String },
        #[index(keys(order_id), unique)]
        Purchase { #[serde(rename = "_id")] id: ObjectId, user: String, order_id: String },
    }"#;

#[test]
fn a_polymorphic_model_expands_its_variants() {
    let out = expand_model(tokens(&EVENTS.replace("{}", "")));
    assert!(!is_error(&out), "{out}");
    let text = out.to_string();
    // The view type of the variant's row, the discriminator in its filter, and the
    // index partial to its variant.
    assert!(text.contains("struct EventClicksOfUserView"), "{text}");
    assert!(text.contains("type ClicksOfUserView = EventClicksOfUserView"), "{text}");
    assert!(text.contains(r#". tag ("kind" , "Click")"#), "{text}");
    assert!(text.contains(r#"order_id_1_Purchase"#), "{text}");
    assert!(text.contains(r#"{\"kind\":{\"$eq\":\"Purchase\"}}"#), "{text}");
}

#[test]
fn a_write_row_on_a_variant_writes_that_variant_only() {
    let out = expand_model(tokens(&EVENTS.replace("{}", ", update(set(user))")));
    assert!(!is_error(&out), "{out}");
    let text = out.to_string();
    // One write method, typed by the variant's fields, whose filter carries the tag.
    assert!(text.contains("fn clicks_of_user (user : impl :: core :: convert :: Into < String >"), "{text}");
    assert!(text.contains("__ds :: Update < Self >"), "{text}");
    assert!(text.contains(r#"FilterBuilder :: new () . equal ("user" , & :: core :: convert :: Into :: < String > :: into (user)) . tag ("kind" , "Click") . build ()"#), "{text}");
    assert!(!text.contains("ClicksOfUserView"), "a write row has no view: {text}");
}

#[test]
fn an_upsert_on_the_enum_is_one_error_that_names_a_variant() {
    let src = EVENTS.replace("variant = Click, ", "").replace("{}", ", update(set(user)), upsert");
    let out = expand_model(tokens(&src));
    let text = out.to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(text.contains("a created document is one variant: name it, like `variant = Click`"), "{text}");
}

/// `EVENTS`, versioned: `version = 2`, a step for version 1, and `fields` in each variant.
fn versioned_events(click: &str, purchase: &str) -> String {
    EVENTS
        .replace("{}", "")
        .replace(
            r#"#[model(collection = "events")]"#,
            r#"#[model(collection = "events", version = 2, migrate(v1(document = up)))]"#,
        )
        .replace("Click { ", &format!("Click {{ {click} "))
        .replace("Purchase { ", &format!("Purchase {{ {purchase} "))
}

#[test]
fn a_versioned_polymorphic_model_stamps_every_variant() {
    let v = "#[schema_version] v: i32,";
    let text = expand_model(tokens(&versioned_events(v, v))).to_string();
    assert!(!text.contains("compile_error"), "{text}");
    assert!(text.contains("Self :: Click { v : __v , .. } => * __v = 2"), "{text}");
    assert!(text.contains("Self :: Purchase { v : __v , .. } => * __v = 2"), "{text}");
    assert!(text.contains("versioned_variants_validator"), "{text}");
}

#[test]
fn a_versioned_polymorphic_model_without_its_field_is_one_error() {
    let src = EVENTS
        .replace("{}", "")
        .replace(r#"#[model(collection = "events")]"#, r#"#[model(collection = "events", version = 2)]"#);
    let text = expand_model(tokens(&src)).to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(text.contains("needs the field that stores it"), "{text}");
}

#[test]
fn a_variant_without_the_version_field_is_one_error_naming_it() {
    let text = expand_model(tokens(&versioned_events("#[schema_version] v: i32,", ""))).to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(text.contains("variant `Purchase` stores no schema version"), "{text}");
    assert!(text.contains("add `#[schema_version] v: i32` to `Purchase`"), "{text}");
}

#[test]
fn a_variant_version_of_another_type_or_name_is_one_error() {
    let text =
        expand_model(tokens(&versioned_events("#[schema_version] v: i32,", "#[schema_version] v: i64,")))
            .to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(text.contains("the schema version of variant `Purchase` is `i64`"), "{text}");
    let text =
        expand_model(tokens(&versioned_events("#[schema_version] v: i32,", "#[schema_version] w: i32,")))
            .to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(text.contains("stores its schema version as `w`"), "{text}");
}

#[test]
fn a_typed_step_on_a_polymorphic_model_is_one_error() {
    let v = "#[schema_version] v: i32,";
    let src = versioned_events(v, v).replace("v1(document = up)", "v1 = EventV1");
    let text = expand_model(tokens(&src)).to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(text.contains("make `v1` a document step"), "{text}");
}

#[test]
fn a_row_on_a_field_of_two_types_names_the_type() {
    let out = expand_model(tokens(
        r#"#[serde(tag = "kind")] #[model(collection = "e")] #[access(name = "by_n", filter(n))]
        enum E { A { #[serde(rename = "_id")] id: i64, n: i32 }, B { #[serde(rename = "_id")] id: i64, n: String } }"#,
    ));
    let text = out.to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(text.contains("but not with one type"), "{text}");
}

#[test]
fn a_variant_holds_the_rules_of_a_struct_for_its_arrays() {
    let src = EVENTS
        .replace("{}", "")
        .replace("user: String },", "user: String, items: Vec<Line> },")
        .replace("ObjectId", "u32");
    let text = expand_model(tokens(&src)).to_string();
    assert!(!text.contains("compile_error"), "{text}");
    assert!(text.contains("`items` is an array of sub-documents with no bound"), "{text}");
    // The `_id` every variant declares is the model's id.
    assert!(text.contains("type Id = u32"), "{text}");
}

#[test]
fn a_variant_partial_filter_keeps_the_users_keys() {
    use crate::polymorphic::partial_filter;
    assert_eq!(partial_filter("kind", "buy", None).unwrap(), r#"{"kind":{"$eq":"buy"}}"#);
    assert_eq!(
        partial_filter("kind", "buy", Some(r#" {"amount": {"$gt": 0}, "ok": true} "#)).unwrap(),
        r#"{"kind":{"$eq":"buy"},"amount": {"$gt": 0}, "ok": true}"#
    );
    assert_eq!(partial_filter("kind", "buy", Some("{}")).unwrap(), r#"{"kind":{"$eq":"buy"}}"#);
    assert!(partial_filter("kind", "buy", Some(r#"{"kind": "view"}"#)).unwrap_err().contains("drop `kind`"));
    // A value with quotes is escaped as JSON, never spliced.
    let text = partial_filter("kind", "a\"b", None).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed["kind"]["$eq"], "a\"b");
}

#[test]
fn a_range_on_the_sort_key_is_served_by_the_sort_keys_index() {
    // mongod reads the range as bounds on `at` while it walks `{user: 1, at: -1}` in
    // order: no key after the sort is needed (and a second `at` key would be refused).
    let src = r#"#[model(collection = "events")]
        #[index(keys(user, at = -1))]
        #[access(name = "recent", filter(user), sort(at = -1), range(at))]
        struct E { #[serde(rename = "_id")] id: String, user: String, at: i64, other: i64 }"#;
    let out = expand_model(tokens(src));
    assert!(!is_error(&out), "{out}");
    assert!(
        // The row's index is the last argument of `AccessPattern::row`, which its sort
        // and range complete.
        out.to_string().contains(r#", :: core :: option :: Option :: Some ("user_1_at_-1")) . with_sort"#),
        "{out}"
    );
    // Without an index, the proposal holds each key once.
    let out = expand_model(tokens(&src.replace("#[index(keys(user, at = -1))]", "")));
    let text = out.to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(text.contains("#[index(keys(user, at = -1))]"), "{text}");
}

#[test]
fn a_push_into_a_variants_bounded_embed_is_bounded() {
    let src = r#"#[serde(tag = "kind")]
    #[model(collection = "carts")]
    #[access(name = "add_line", variant = Basket, filter(_id), update(push(lines)))]
    enum Cart {
        Basket { #[serde(rename = "_id")] id: ObjectId, #[embed(max = 2, reason = "a few lines")] lines: Vec<Line> },
        Wishlist { #[serde(rename = "_id")] id: ObjectId, #[validate(max_items = 9)] lines: Vec<String> },
    }"#;
    let out = expand_model(tokens(src));
    assert!(!is_error(&out), "{out}");
    let text = out.to_string();
    // The push takes the variant's item type and its bound, not the other variant's.
    assert!(text.contains("fn add_line (id : impl :: core :: convert :: Into < ObjectId > , lines : impl :: core :: convert :: Into < Line >)"), "{text}");
    assert!(text.contains(r#"__ds :: PushBound { field : "lines" , max : 2"#), "{text}");
}

/// The `unserved` messages in an expansion.
fn unserved(src: &str) -> Vec<String> {
    let out = expand_model(tokens(src)).to_string();
    out.split("compile_error").skip(1).map(|e| e.chars().take(400).collect()).collect()
}

#[test]
fn an_id_equality_is_served_by_the_id_index_whatever_else_the_row_holds() {
    let src = r#"#[model(collection = "docs")]
        #[access(name = "touch", filter(_id, updated_at), update(set(title)))]
        #[access(name = "fresh", filter(_id, title), range(updated_at), sort(updated_at = -1))]
        struct Doc { #[serde(rename = "_id")] id: String, title: String, updated_at: i64 }"#;
    let errors = unserved(src);
    assert!(errors.is_empty(), "{errors:?}");
    let out = expand_model(tokens(src)).to_string();
    assert_eq!(out.matches(r#"Option :: Some ("_id_")"#).count(), 2, "{out}");
    // Under a case-insensitive collation the `_id_` index (simple collation) gives no
    // bounds on a string `_id`: still unserved.
    let ci = src.replace("filter(_id, title)", "filter(_id(case_insensitive), title(case_insensitive))");
    assert_eq!(unserved(&ci).len(), 1, "{:?}", unserved(&ci));
}
