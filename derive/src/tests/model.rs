//! A struct model's and a key family's expansions: their items, their errors beside
//! stub impls, and every mistake reported at once.

#[allow(unused_imports)]
use super::*;

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
