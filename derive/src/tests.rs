//! The expansion functions as library functions on token streams: what they generate,
//! and that no input, however garbled, makes them panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::str::FromStr;

use proc_macro2::TokenStream;

use crate::driver::{expand_embedded, expand_model};

fn expand_key_family(input: TokenStream) -> TokenStream {
    crate::keys::expand(input)
}

fn tokens(src: &str) -> TokenStream {
    TokenStream::from_str(src).unwrap()
}

fn is_error(out: &TokenStream) -> bool {
    out.to_string().contains("compile_error")
}

#[test]
fn valid_model_expands_inside_an_anonymous_const() {
    let out = expand_model(tokens(
        r#"#[model(collection = "usuarios")] struct Usuario { #[validate(min_length = 2)] nombre: String }"#,
    ));
    assert!(!is_error(&out), "{out}");
    let file: syn::File = syn::parse2(out).unwrap();
    assert_eq!(file.items.len(), 1);
    assert!(matches!(&file.items[0], syn::Item::Const(c) if c.ident == "_"));
}

#[test]
fn errors_come_with_stub_impls() {
    let out = expand_model(tokens(
        r#"#[model(collection = "u")] struct U { #[validate(min_length = 5, max_length = 1)] a: String }"#,
    ));
    let text = out.to_string();
    assert!(is_error(&out));
    assert!(text.contains("impl __ds :: Schema for U"), "{text}");
    assert!(text.contains("impl __ds :: Model for U"), "{text}");
}

/// An order model with one row of each kind, each `{}` filled in by a test.
const ORDER_ROWS: &str = r#"#[model(collection = "orders")]
    #[index(keys(customer_id, placed_at = -1, _id = -1))]
    #[access(name = "load_order", filter(_id), {})]
    #[access(name = "order_summary", filter(_id), fields(status))]
    #[access(name = "orders_of_customer", filter(customer_id), sort(placed_at = -1), paginate)]
    #[access(name = "set_status", filter(_id), update(set(status)))]
    struct Order { #[serde(rename = "_id")] id: String, customer_id: String, placed_at: DateTime,
                   status: String, address: Address }"#;

fn order(load_order_key: &str) -> TokenStream {
    tokens(&ORDER_ROWS.replace("{}", load_order_key))
}

#[test]
fn errors_keep_every_generated_method_and_type() {
    let out = expand_model(order(r#"consistency = "eventualy consistent""#));
    let text = out.to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(text.contains("unknown consistency"), "{text}");
    for generated in [
        "fn load_order",
        "fn order_summary",
        "fn orders_of_customer",
        "fn set_status",
        // The struct is named after the model and the row; the row's name for it.
        "struct OrderOrderSummaryView",
        "type OrderSummaryView = OrderOrderSummaryView",
        "impl __ds :: Identified for Order",
        "impl __ds :: Model for Order",
        "impl __ds :: Schema for Order",
    ] {
        assert!(text.contains(generated), "{generated}: {text}");
    }
}

#[test]
fn an_expansion_with_errors_keeps_its_methods_and_leaves_out_its_checks() {
    // The nested path's lookup is a check, in a `const _` of its own beside the wrapper.
    let checked = order(r#"consistency = "strong", fields("address.city")"#);
    let out = expand_model(checked).to_string();
    assert!(!out.contains("compile_error"), "{out}");
    assert!(out.matches("const _ : () =").count() > 1, "{out}");
    let out = expand_model(order(r#"consistency = "stong", fields("address.city")"#)).to_string();
    assert!(out.contains("compile_error"), "{out}");
    assert!(out.contains("fn load_order"), "{out}");
    assert_eq!(out.matches("const _ : () =").count(), 1, "{out}");
}

#[test]
fn a_misspelt_key_keeps_the_method_unless_it_could_shape_it() {
    // `consistency` does not shape the method: the row is read without it.
    let text = expand_model(order(r#"consistancy = "strong""#)).to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(text.contains("consistancy"), "{text}");
    assert!(text.contains("fn load_order"), "{text}");
    // Nor does a `freq` that is no string.
    let text = expand_model(order("freq = 500")).to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(text.contains("fn load_order"), "{text}");
    // `range` does: a guessed method would be a second, wrong error at every call.
    let text = expand_model(order("rnage(placed_at)")).to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    assert!(!text.contains("fn load_order"), "{text}");
    assert!(text.contains("fn set_status"), "{text}");
}

#[test]
fn the_items_darling_refuses_are_reported_and_the_rest_expands() {
    let out = expand_model(tokens(
        r#"#[model(collection = "users", validation_level = "lax")]
           #[access(name = "load_user", filter(_id))]
           struct User { #[serde(rename = "_id")] id: String, #[validate(min_lenght = 2, max_length = 9)] name: String }"#,
    ));
    let text = out.to_string();
    assert_eq!(text.matches("compile_error").count(), 2, "{text}");
    assert!(text.contains("min_lenght"), "{text}");
    assert!(text.contains("lax"), "{text}");
    // The items beside the refused ones are read.
    assert!(text.contains("fn load_user"), "{text}");
    assert!(text.contains("const COLLECTION : & 'static str = \"users\""), "{text}");
    assert!(text.contains("\"maxLength\""), "{text}");
    let out =
        expand_embedded(tokens(r#"#[embedded(strict, stict)] enum E { A(#[validate(maxx = 1)] i32) }"#));
    let text = out.to_string();
    assert_eq!(text.matches("compile_error").count(), 2, "{text}");
    assert!(text.contains("impl __ds :: Schema for E"), "{text}");
    assert!(text.contains("impl __ds :: MaxBsonSize for E"), "{text}");
}

#[test]
fn rows_named_twice_or_with_no_identifier_expand_without_their_methods() {
    for (name, methods) in [("load order", 0), ("set_status", 1), ("r#type", 1)] {
        let src = order("").to_string().replace("\"load_order\"", &format!("{name:?}"));
        let out = catch_unwind(|| expand_model(tokens(&src))).expect("no panic");
        let text = out.to_string();
        assert_eq!(text.matches("fn set_status").count(), 1, "{text}");
        if name == "r#type" {
            assert!(!is_error(&out), "{text}");
            assert!(text.contains("fn r#type"), "{text}");
        } else {
            assert_eq!(text.matches("compile_error").count(), 1, "{text}");
            assert_eq!(text.matches(&format!("fn {}", name.replace(' ', "_"))).count(), methods, "{text}");
        }
    }
}

#[test]
fn a_row_that_both_paginates_and_writes_has_one_method() {
    let text = expand_model(order("paginate, update(set(status))")).to_string();
    assert!(text.contains("compile_error"), "{text}");
    assert_eq!(text.matches("fn load_order").count(), 1, "{text}");
}

/// A question model whose paginated row `ranked` is `{row}` and whose write rows are
/// `{writes}`.
fn questions(row: &str, writes: &[&str]) -> String {
    let writes: String = writes.iter().map(|w| format!("#[access({w})]\n")).collect();
    format!(
        r#"#[model(collection = "questions")]
        #[index(keys(board, score = -1, _id = -1))]
        #[index(keys(board, "stats.views" = -1, _id = -1))]
        #[index(keys(board, rank, _id))]
        #[access(name = "ranked", filter(board), {row}, paginate)]
        {writes}
        struct Question {{ #[serde(rename = "_id")] id: String, board: String, score: i64,
                           score_note: String, rank: i64, stats: Stats }}"#
    )
}

#[test]
fn a_paginated_sort_key_a_write_row_changes_is_one_error_naming_the_rows() {
    let upvote = r#"name = "upvote", filter(_id), update(inc(score))"#;
    let reset = r#"name = "reset", filter(_id), update(set(score_note), set(score))"#;
    let cases: &[(&str, &[&str], Option<&str>)] = &[
        // Two rows write the key: one error names both.
        (
            "sort(score = -1)",
            &[upvote, reset],
            Some("write rows `upvote` (`inc(score)`) and `reset` (`set(score)`) change"),
        ),
        ("sort(score = -1)", &[upvote], Some("write row `upvote` (`inc(score)`) changes")),
        // Replacing the sub-document replaces the value inside it.
        (
            r#"sort("stats.views" = -1)"#,
            &[r#"name = "restat", filter(_id), update(set(stats))"#],
            Some("paginates on `stats.views`, which write row `restat` (`set(stats)`) changes"),
        ),
        // Waived with a reason.
        (
            r#"sort(score = -1), allow(mutable_sort, reason = "a moved question may be seen twice")"#,
            &[upvote, reset],
            None,
        ),
        // A field whose name only begins like the key's.
        ("sort(score = -1)", &[r#"name = "note", filter(_id), update(set(score_note))"#], None),
        // Rows that write other fields, and a key no row writes.
        ("sort(rank)", &[upvote, reset], None),
        // A key matched by equality holds one value over the whole walk: a write to it
        // takes a document out of the walk, as a delete does.
        ("sort(board, rank)", &[r#"name = "move_board", filter(_id), update(set(board))"#], None),
    ];
    for (row, writes, expected) in cases {
        let src = questions(row, writes);
        let text = expand_model(tokens(&src)).to_string();
        match expected {
            Some(words) => {
                assert_eq!(text.matches("compile_error").count(), 1, "{src}: {text}");
                assert!(text.contains("docshape rule `mutable_sort`"), "{src}: {text}");
                assert!(text.contains(words), "{words}: {text}");
            }
            None => assert!(!text.contains("compile_error"), "{src}: {text}"),
        }
    }
}

#[test]
fn all_errors_are_reported_at_once() {
    let out = expand_model(tokens(
        r#"#[model(collection = "u")] struct U {
            #[validate(min_length = 5, max_length = 1)] a: String,
            #[validate(pattern = "(")] b: String,
            #[validate(minimum = 3, maximum = 2)] c: i32,
        }"#,
    ));
    assert_eq!(out.to_string().matches("compile_error").count(), 3, "{out}");
}

#[test]
fn a_flag_given_a_value_is_an_error_not_a_panic() {
    // darling's own `Flag` panicked on the first of these.
    for src in [
        r#"#[embedded(strict {})] struct H { a: String }"#,
        r#"#[embedded(strict = true)] struct H { a: String }"#,
    ] {
        assert!(is_error(&expand_embedded(tokens(src))), "{src}");
    }
}

#[test]
fn the_most_negative_numbers_are_errors_not_overflows() {
    // Found by the fuzzer: negating i64::MIN overflowed.
    let most_negative = proc_macro2::Literal::i64_unsuffixed(i64::MIN);
    let srcs = [
        quote::quote!(
            #[model(collection = "c")]
            #[access(name = "a", sort(x = - #most_negative))]
            struct S {
                x: i64,
            }
        ),
        quote::quote!(
            #[model(collection = "c")]
            struct S {
                #[validate(minimum = - #most_negative)]
                x: i64,
            }
        ),
    ];
    for src in srcs {
        let out = std::panic::catch_unwind(|| expand_model(src.clone())).expect("no panic");
        assert!(is_error(&out), "{src}");
    }
}

#[test]
fn valid_key_family_expands_inside_an_anonymous_const() {
    let out = expand_key_family(tokens(
        r#"#[key(pattern = "user:{id}:session", kind = hash, ttl = "30d", sliding, note = "auth token data")]
           struct UserSession { id: String }"#,
    ));
    assert!(!is_error(&out), "{out}");
    let file: syn::File = syn::parse2(out.clone()).unwrap();
    assert_eq!(file.items.len(), 1);
    let text = out.to_string();
    assert!(text.contains("impl __ds :: KeyFamily for UserSession"), "{text}");
    assert!(text.contains("impl __ds :: HashFamily for UserSession"), "{text}");
    assert!(text.contains("type Encoding = __ds :: Text"), "{text}");
}

#[test]
fn key_family_errors_come_with_stub_impls_of_the_kind() {
    // No TTL decision, but the kind is known: the stubs include the counter trait, so
    // `.incr()` at a use site raises no second error.
    let out = expand_key_family(tokens(
        r#"#[key(pattern = "rate:{ip}", kind = counter)] struct Rate { ip: String }"#,
    ));
    let text = out.to_string();
    assert!(is_error(&out));
    assert!(text.contains("key_ttl"), "{text}");
    assert!(text.contains("impl __ds :: KeyFamily for Rate"), "{text}");
    assert!(text.contains("impl __ds :: CounterFamily for Rate"), "{text}");
}

#[test]
fn all_key_family_errors_are_reported_at_once() {
    let out = expand_key_family(tokens(
        r#"#[key(pattern = "cache:{idd}:x*", kind = hash, ttl = "none")] struct C { id: String }"#,
    ));
    // A pattern that does not parse is not compared with the fields; the TTL rules
    // are still applied.
    let text = out.to_string();
    for expected in ["glob", "ttl_reason", "cache_ttl"] {
        assert!(text.contains(expected), "{expected}: {text}");
    }
    assert_eq!(text.matches("compile_error").count(), 3, "{text}");
    let out = expand_key_family(tokens(
        r#"#[key(pattern = "cache:{idd}", kind = hash, ttl = "none")] struct C { id: String }"#,
    ));
    let text = out.to_string();
    for expected in ["did you mean `{id}`", "field `id` is not in the key pattern", "ttl_reason", "cache_ttl"]
    {
        assert!(text.contains(expected), "{expected}: {text}");
    }
}

#[test]
fn a_key_family_without_its_row_is_one_error() {
    let out = expand_key_family(tokens("struct Orphan { id: String }"));
    assert_eq!(out.to_string().matches("compile_error").count(), 1, "{out}");
    assert!(out.to_string().contains("#[key(pattern"), "{out}");
}

#[test]
fn a_document_step_with_generic_arguments_is_an_error_not_broken_code() {
    // Found by the fuzzer: `Option<String>(doc)` is not an expression.
    let out = expand_model(tokens(
        r#"#[model(collection = "users", version = 2, migrate(v1(document = Option<String>)))]
           struct User { full_name: String, #[schema_version] v: i32 }"#,
    ));
    assert!(is_error(&out), "{out}");
    assert!(out.to_string().contains("names a function"), "{out}");
}

#[test]
fn a_bucket_expands_into_its_trait_methods_and_size_assertion() {
    let out = expand_model(tokens(SEEDS[SEEDS.len() - 3]));
    assert!(!is_error(&out), "{out}");
    let text = out.to_string();
    assert!(text.contains("impl __ds :: Bucket for SensorDay"), "{text}");
    assert!(text.contains("async fn append_many"), "{text}");
    assert!(text.contains("\"bucket_size\""), "{text}");
    // The range reads' index is declared.
    assert!(text.contains("\"sensor_id_1_day_1\""), "{text}");
    let file: syn::File = syn::parse2(out).unwrap();
    assert_eq!(file.items.len(), 1);
}

#[test]
fn a_capped_bucket_registers_its_counter_collection() {
    let bucket = |cap: &str| {
        expand_model(tokens(&format!(
            r#"#[model(collection = "feed")]
               #[bucket(series = u, period = day, per = "day", max = 20, items = readings, time = t{cap})]
               struct Feed {{ #[validate(max_length = 8)] u: String, day: String, count: i32, readings: Vec<R> }}"#
        )))
        .to_string()
    };
    let capped = bucket(", cap = 3");
    assert!(!capped.contains("compile_error"), "{capped}");
    assert!(capped.contains("cap_collection_spec :: < Feed >"), "{capped}");
    assert!(capped.contains("cap : :: core :: option :: Option :: Some (3u32)"), "{capped}");
    let uncapped = bucket("");
    assert!(!uncapped.contains("cap_collection_spec"), "{uncapped}");
    assert!(uncapped.contains("cap : :: core :: option :: Option :: None"), "{uncapped}");
}

#[test]
fn relations_expand_into_their_tables_checks_and_registrations() {
    let out = expand_model(tokens(SEEDS[SEEDS.len() - 1]));
    assert!(!is_error(&out), "{out}");
    let text = out.to_string();
    assert!(text.contains("impl __ds :: Identified for Post"), "{text}");
    assert!(text.contains("const RELATIONS"), "{text}");
    assert!(text.contains("inventory :: submit"), "{text}");
    assert!(text.contains("assert_copy_type"), "{text}");
    assert!(text.contains("assert_via"), "{text}");
    // The waived foreign path is listed; the copied one became the copy.
    assert!(text.contains("\"User::address.city\"") || text.contains("\"city\""), "{text}");
    assert!(text.contains("\"author_name\""), "{text}");
}

#[test]
fn an_outlier_expands_into_push_and_load() {
    let out = expand_model(tokens(SEEDS[SEEDS.len() - 2]));
    assert!(!is_error(&out), "{out}");
    let text = out.to_string();
    assert!(text.contains("impl __ds :: Outliers for Usuario"), "{text}");
    assert!(text.contains("async fn push_seguidores"), "{text}");
    assert!(text.contains("async fn load_seguidores"), "{text}");
}

#[test]
fn bad_bucket_and_outlier_attributes_are_all_reported() {
    let out = expand_model(tokens(
        r#"#[model(collection = "c")]
           #[bucket(series = s, period = p, per = "fortnight", max = 0, items = n, time = t, max_bytes = 99999999)]
           struct B { s: String, p: String, count: String, n: i32, extra: i32,
                      #[outlier(threshold = 0, overflow = "c", flag = f)] o: Vec<i32>, f: u8 }"#,
    ));
    let text = out.to_string();
    for expected in [
        "not a bucket period",
        "max = 0",
        "max_bytes",
        "growable array",
        "must be an integer field",
        "threshold",
        "another collection",
        "must be a `bool`",
        "stored as `_id`",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in {text}");
    }
}

/// Valid inputs the fuzzer garbles.
const SEEDS: &[&str] = &[
    r#"#[model(collection = "usuarios", validation_action = "error", strict)]
       #[serde(rename_all = "camelCase")]
       struct Usuario {
           #[serde(rename = "_id")] id: ObjectId,
           #[validate(min_length = 2, max_length = 100)] nombre: String,
           #[validate(pattern = r"^[a-z]+@[a-z]+\.[a-z]{2,}$")] email: String,
           #[serde(skip_serializing_if = "Option::is_none")] #[validate(minimum = 0, maximum = 150)] edad: Option<i32>,
           #[validate(min_items = 1, max_items = 3, unique_items)] tags: Vec<String>,
           #[validate(allowed = ["a", "b"])] nivel: String,
           #[serde(flatten)] extra: HashMap<String, i32>,
           #[serde(with = "bson::serde_helpers::hex_string_as_object_id")] legacy: String,
       }"#,
    r#"#[model(collection = "orders", validation_level = "moderate")]
       struct Order<T> {
           #[validate(exclusive_minimum = 0, exclusive_maximum = 1.5)] ratio: f64,
           #[serde(skip)] cache: u32,
           #[validate(bson_type = "date")] #[serde(serialize_with = "x")] when: u64,
           items: Vec<T>,
           r#type: Kind,
       }"#,
    r#"#[serde(tag = "type", rename_all = "snake_case")]
       enum Event { Created { #[validate(max_length = 3)] id: String }, Renamed(Info), Deleted, #[serde(skip)] Hidden }"#,
    r#"#[serde(tag = "t", content = "c")] enum Message { Ping, Text(String), Move { x: i32, y: i32 }, Pair(i32, String) }"#,
    r#"#[serde(untagged)] enum Loose { N(i64), T(String), P { x: f64 }, Nothing }"#,
    r#"#[embedded(strict)] #[serde(transparent)] struct Handle { #[validate(pattern = "^@")] value: String }"#,
    r#"struct Email(#[validate(max_length = 254)] String);"#,
    r##"#[model(collection = "posts", max_indexes = 4, shard_key(author_id), allow(index_budget, reason = "r"))]
       #[index(keys(author_id, created_at = -1, _id = -1))]
       #[index(keys("meta.tags", score = "hashed"), unique, sparse, name = "n", partial_filter = r#"{"a": 1}"#)]
       #[access(name = "posts_by_author", operation = "Feed", filter(author_id), sort(created_at = -1), paginate,
                fields(title, "meta.tags"), freq = "5 r/s", consistency = "eventual ok")]
       #[access(name = "by_email", filter(author_id, email(case_insensitive)), range(score), allow(unserved, collation_mismatch, reason = "r"))]
       struct Post {
           author_id: String,
           created_at: DateTime,
           #[index(unique, case_insensitive, locale = "fr")] email: String,
           #[index(expire_after = "30d")] seen: DateTime,
           #[index(desc)] score: i64,
           #[index(wildcard)] meta: Meta,
           #[serde(rename = "t")] title: String,
       }"##,
    r#"#[model(collection = "users", version = 3, migrate(v1(document = up_v1), v2 = UserV2))]
       struct User {
           full_name: String,
           #[schema_version(missing = 1)] #[serde(rename = "_v")] schema_version: i32,
       }"#,
    r#"#[key(pattern = "rate:{ip}:{minute}", kind = counter, ttl = "120s", note = "rate limiting window")]
       struct RateWindow { ip: IpAddr, minute: u64 }"#,
    r#"#[key(pattern = "cache:product:{id}", kind = string, value = Product, ttl = "300s", sliding)]
       struct ProductCache<T> { id: T }"#,
    r#"#[key(pattern = "counter:orders:{0..15}", kind = "sharded_counter", ttl = "none", reason = "r")]
       struct OrderCounter;"#,
    r#"#[key(pattern = "queue:{tenant}:emails", kind = list, value = "Vec<Email>", ttl = "none", reason = "durable store elsewhere")]
       pub struct Queue { pub r#tenant: String }"#,
    r#"#[model(collection = "sensor_days")]
       #[bucket(series = sensor_id, period = day, per = "day", max = 1440, items = readings, time = t, count = count, max_bytes = 100000)]
       struct SensorDay {
           #[serde(rename = "_id")] id: String,
           #[validate(max_length = 64)] sensor_id: String,
           day: String,
           count: i32,
           readings: Vec<Reading>,
           #[bucket(sum = "v")] sum_v: f64,
           #[bucket(max = "meta.t")] last: DateTime,
       }"#,
    r#"#[model(collection = "usuarios")]
       struct Usuario {
           #[serde(rename = "_id")] id: ObjectId,
           #[outlier(threshold = 1000, overflow = "seguidores_extra", flag = tiene_extras, count = "n", per_doc = 500)]
           seguidores: Vec<ObjectId>,
           tiene_extras: bool,
           n: i64,
       }"#,
    r#"#[model(collection = "posts")]
       #[index(keys(author_id, created_at = -1))]
       #[access(name = "feed", filter(author_id), fields(title, User::name, "User::address.city"), allow(lookup, reason = "r"))]
       struct Post {
           #[reference(reason = "grows")] author_id: Ref<User>,
           #[reference(User, max = 5)] editors: Vec<String>,
           #[denormalized(from = "User::name", via = "author_id", refresh = "async", max_stale = "5m", reason = "r")]
           author_name: String,
           #[denormalized(from = "User::address.city", via = "author_id", refresh = "sync", on_delete = "clear")] city: Option<String>,
           #[embed(max = 50, reason = "r")] items: Vec<Item>,
           #[embed(allow(unbounded_array, reason = "r"))] log: Vec<Entry>,
           #[embed] address: Address,
           title: String,
           created_at: DateTime,
       }"#,
];

/// Pieces the fuzzer splices in.
const VOCAB: &[&str] = &[
    "model",
    "validate",
    "embedded",
    "serde",
    "collection",
    "strict",
    "min_length",
    "max_length",
    "pattern",
    "minimum",
    "maximum",
    "exclusive_minimum",
    "exclusive_maximum",
    "min_items",
    "max_items",
    "unique_items",
    "allowed",
    "bson_type",
    "validation_level",
    "validation_action",
    "rename",
    "rename_all",
    "skip",
    "flatten",
    "tag",
    "content",
    "untagged",
    "transparent",
    "into",
    "with",
    "serialize_with",
    "skip_serializing_if",
    "rename_all_fields",
    "=",
    ",",
    "-",
    "#",
    "!",
    ":",
    "::",
    ";",
    "<",
    ">",
    "&",
    "'a",
    "\"\"",
    "\"(\"",
    "\"[\"",
    "\"strict\"",
    "\"camelCase\"",
    "\"bogus\"",
    "\"a.b\"",
    "\"$x\"",
    "\"system.x\"",
    "\"date\"",
    "\"Option::is_none\"",
    "0",
    "-1",
    "1.5",
    "-0.0",
    "1e308",
    "1e999",
    "18446744073709551615",
    "9223372036854775808",
    "-9223372036854775808",
    "true",
    "false",
    "'c'",
    "b\"x\"",
    "[]",
    "[1, \"a\"]",
    "[-1, 2.5]",
    "()",
    "(x)",
    "{}",
    "String",
    "i32",
    "u8",
    "f64",
    "Option<String>",
    "Vec<u8>",
    "[u8; 3]",
    "(i32, String)",
    "Box<Self>",
    "T",
    "struct",
    "enum",
    "union",
    "where",
    "pub",
    "fn",
    "impl",
    "r#type",
    "index",
    "access",
    "keys",
    "filter",
    "sort",
    "range",
    "fields",
    "paginate",
    "allow",
    "unserved",
    "reason",
    "expire_after",
    "\"30d\"",
    "\"-1s\"",
    "\"a.b.c\"",
    "\"a..b\"",
    "\".\"",
    "case_insensitive",
    "shard_key",
    "max_indexes",
    "partial_filter",
    "\"{}\"",
    "\"[1]\"",
    "desc",
    "asc",
    "\"hashed\"",
    "_id",
    "(desc)",
    "schema_version",
    "migrate",
    "v1",
    "v0",
    "document",
    "missing",
    "pattern",
    "kind",
    "ttl",
    "sliding",
    "note",
    "value",
    "\"none\"",
    "\"a:{b}\"",
    "\"a:{b}{c}\"",
    "\"{0..15}\"",
    "\"x:{0..0}\"",
    "\"cache:{a\"",
    "\"::\"",
    "\"*\"",
    "\"0s\"",
    "\"99999999999999999999d\"",
    "hash",
    "sorted_set",
    "sharded_counter",
    "counter",
    "Product",
    "key",
    "bucket",
    "outlier",
    "series",
    "period",
    "per",
    "max",
    "items",
    "time",
    "count",
    "max_bytes",
    "cap",
    "threshold",
    "overflow",
    "flag",
    "per_doc",
    "sum",
    "min",
    "\"day\"",
    "\"fortnight\"",
    "\"minute\"",
    "4294967296",
    "\"User::name\"",
    "\"User::\"",
    "\"::name\"",
    "\"async\"",
    "\"never\"",
    "\"5m\"",
    "Ref",
    "from",
    "via",
    "refresh",
    "max_stale",
    "on_delete",
    "\"clear\"",
    "unbounded_array",
    "lookup",
];

/// `#[key(...)]`'s keys, and one near miss.
const KEY_KEYS: &[&str] = &["pattern", "kind", "ttl", "sliding", "reason", "note", "value", "patern"];

/// proptest's generator: the workspace's seeded one (`docshape-test-seed`), which
/// prints the seed that replays a failure.
type Rng = proptest::test_runner::TestRng;

/// A number below `n`.
trait Below {
    fn below(&mut self, n: usize) -> usize;
}

impl Below for Rng {
    fn below(&mut self, n: usize) -> usize {
        (proptest::prelude::Rng::next_u64(self) % n as u64) as usize
    }
}

/// Splits source into lexemes the mutations work on.
fn lexemes(src: &str) -> Vec<String> {
    fn walk(ts: TokenStream, out: &mut Vec<String>) {
        for tt in ts {
            match tt {
                proc_macro2::TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                        proc_macro2::Delimiter::Brace => ("{", "}"),
                        proc_macro2::Delimiter::Bracket => ("[", "]"),
                        proc_macro2::Delimiter::None => ("", ""),
                    };
                    out.push(open.to_owned());
                    walk(g.stream(), out);
                    out.push(close.to_owned());
                }
                other => out.push(other.to_string()),
            }
        }
    }
    let mut out = Vec::new();
    walk(tokens(src), &mut out);
    out
}

fn garble(rng: &mut Rng) -> String {
    let mut lex = lexemes(SEEDS[rng.below(SEEDS.len())]);
    for _ in 0..=rng.below(4) {
        let at = rng.below(lex.len().max(1));
        match rng.below(5) {
            0 if !lex.is_empty() => {
                lex.remove(at);
            }
            1 => lex.insert(at, VOCAB[rng.below(VOCAB.len())].to_owned()),
            2 if !lex.is_empty() => lex[at] = VOCAB[rng.below(VOCAB.len())].to_owned(),
            3 if !lex.is_empty() => {
                let other = rng.below(lex.len());
                lex.swap(at, other);
            }
            _ if !lex.is_empty() => {
                let copy = lex[at].clone();
                lex.insert(at, copy);
            }
            _ => {}
        }
    }
    lex.join(" ")
}

/// A struct whose attributes are random sequences of keys and values.
fn random_attributes(rng: &mut Rng) -> String {
    let attr = |rng: &mut Rng| {
        let name = [
            "model",
            "validate",
            "embedded",
            "serde",
            "index",
            "access",
            "key",
            "bucket",
            "outlier",
            "embed",
            "reference",
            "denormalized",
        ][rng.below(12)];
        let mut body = Vec::new();
        for _ in 0..rng.below(5) {
            // `#[key]`'s own keys are at the end of the vocabulary.
            let key = if name == "key" && rng.below(4) > 0 {
                KEY_KEYS[rng.below(KEY_KEYS.len())]
            } else {
                VOCAB[rng.below(33)]
            };
            match rng.below(3) {
                0 => body.push(key.to_owned()),
                1 => body.push(format!("{key} = {}", VOCAB[33 + rng.below(VOCAB.len() - 33)])),
                _ => body.push(format!("{key}({})", VOCAB[rng.below(VOCAB.len())])),
            }
        }
        format!("#[{name}({})]", body.join(", "))
    };
    let container: Vec<String> = (0..rng.below(3)).map(|_| attr(rng)).collect();
    let mut fields = Vec::new();
    for i in 0..rng.below(4) {
        let attrs: Vec<String> = (0..rng.below(3)).map(|_| attr(rng)).collect();
        let ty = ["String", "i32", "u8", "f64", "Option<String>", "Vec<u8>", "[u8; 3]", "(i32, String)", "T"]
            [rng.below(9)];
        fields.push(format!("{} f{i}: {ty}", attrs.join(" ")));
    }
    let shape = match rng.below(4) {
        0 => format!("struct S<T> {{ {} }}", fields.join(", ")),
        1 => format!("enum E {{ A {{ {} }}, B(i32), C }}", fields.join(", ")),
        2 => "struct S(i32, String);".to_owned(),
        _ => format!("union U {{ {} }}", fields.join(", ")),
    };
    format!("{} {shape}", container.join(" "))
}

#[test]
fn ten_thousand_garbled_inputs_never_panic() {
    let cases: usize =
        std::env::var("DOCSHAPE_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let mut rng = docshape_test_seed::rng("derive::garbled_inputs");
    let (mut expanded, mut errors) = (0, 0);
    while expanded < cases {
        let src = if expanded % 2 == 0 { garble(&mut rng) } else { random_attributes(&mut rng) };
        // Text that does not even tokenize never reaches a derive.
        let Ok(input) = TokenStream::from_str(&src) else { continue };
        for expand in [expand_model as fn(TokenStream) -> TokenStream, expand_embedded, expand_key_family] {
            let out = catch_unwind(AssertUnwindSafe(|| expand(input.clone())))
                .unwrap_or_else(|_| panic!("the derive panicked on:\n{src}"));
            if is_error(&out) {
                errors += 1;
            } else {
                // Whatever is not an error must be well-formed items.
                syn::parse2::<syn::File>(out.clone())
                    .unwrap_or_else(|e| panic!("malformed expansion ({e}) of:\n{src}\n{out}"));
            }
        }
        expanded += 1;
    }
    // Most garbled inputs are errors; a run where none were would test nothing.
    assert!(errors > cases / 2, "only {errors} error results");
}

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
        out.to_string().contains(r#"index : :: core :: option :: Option :: Some ("user_1_at_-1")"#),
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
