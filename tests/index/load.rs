//! `freq` becomes a load estimate: documents per call from the filter and the unique
//! indexes, bytes per document from the model's size bound, and both per second.

use docshape::access::{DocsPerCall, RateKind};
use docshape::bson;
use docshape::size::MaxBsonSize;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "tickets")]
#[index(keys(venue, seat), unique)]
#[index(keys(code), unique, sparse)]
#[index(keys(venue, sold_at = -1, _id = -1))]
#[access(name = "ticket", filter(_id), freq = "500 r/s", consistency = "read-your-writes")]
#[access(name = "seat", filter(venue, seat), freq = "30 r/min")]
#[access(name = "by_code", filter(code), freq = "2 w/h")]
#[access(name = "latest_sales", filter(venue), sort(sold_at = -1), paginate, freq = "0.5 r/s")]
#[access(name = "sales_since", filter(venue), range(sold_at), freq = "1 r/s")]
#[access(name = "no_freq", filter(_id))]
struct Ticket {
    #[serde(rename = "_id")]
    id: i64,
    #[validate(max_length = 20)]
    venue: String,
    seat: i32,
    code: Option<i64>,
    sold_at: bson::DateTime,
}

fn pattern(name: &str) -> &'static docshape::access::AccessPattern {
    Ticket::ACCESS_PATTERNS.iter().find(|p| p.name == name).unwrap()
}

#[test]
fn documents_per_call_follow_the_filter_and_the_unique_indexes() {
    assert_eq!(pattern("ticket").load.docs_per_call, DocsPerCall::One);
    assert_eq!(pattern("seat").load.docs_per_call, DocsPerCall::One, "every key of a unique index");
    // A sparse unique index repeats its missing values: `code: null` matches many.
    assert_eq!(pattern("by_code").load.docs_per_call, DocsPerCall::Unbounded);
    assert_eq!(
        pattern("latest_sales").load.docs_per_call,
        DocsPerCall::Page { page_size: docshape::paginate::DEFAULT_PAGE_SIZE }
    );
    assert_eq!(pattern("latest_sales").load.docs_per_call.max(), Some(21), "a page and its look-ahead");
    assert_eq!(pattern("sales_since").load.docs_per_call, DocsPerCall::Unbounded);
}

#[test]
fn rates_are_per_second_and_bytes_come_from_the_size_bound() {
    let size = Ticket::MAX_BSON_SIZE.expect("every field is bounded");
    let ticket = &pattern("ticket").load;
    assert_eq!(ticket.doc_bytes, Some(size));
    let rate = ticket.rate.unwrap();
    assert_eq!((rate.per_second, rate.kind), (500.0, RateKind::Read));
    assert_eq!(ticket.bytes_per_call(), Some(size as u64));
    assert_eq!(ticket.docs_per_second(), Some(Some(500.0)));
    assert_eq!(ticket.bytes_per_second(), Some(Some(500.0 * size as f64)));
    assert_eq!(pattern("seat").load.rate.unwrap().per_second, 0.5);
    assert_eq!(pattern("by_code").load.rate.unwrap().kind, RateKind::Write);
    let page = &pattern("latest_sales").load;
    assert_eq!(page.bytes_per_call(), Some(21 * size as u64));
    assert_eq!(page.docs_per_second(), Some(Some(10.5)));
    assert_eq!(pattern("sales_since").load.docs_per_second(), Some(None));
    assert_eq!(pattern("no_freq").load.rate, None);
    assert_eq!(pattern("no_freq").load.docs_per_second(), None);
}

#[test]
fn the_table_shows_the_estimate_and_explains_what_is_unbounded() {
    let size = Ticket::MAX_BSON_SIZE.unwrap();
    let table = Ticket::access_table();
    assert!(table.starts_with(
        "| # | Operation | Fields needed | Freq | Consistency | Index | Docs/call | Bytes/call | Docs/s | Bytes/s |\n"
    ));
    let kib = |n: f64| format!("{:.1} KiB", n / 1024.0);
    let ticket_row = format!(
        "| 1 | ticket |  | 500 r/s | read-your-writes | tickets: `_id_` | 1 | {size} B | 500 | {} |",
        kib(500.0 * size as f64)
    );
    assert!(table.contains(&ticket_row), "{table}\nwants {ticket_row}");
    assert!(table.contains("| 5 | sales_since |  | 1 r/s |  | tickets: `venue_1_sold_at_-1__id_-1` | unbounded | unbounded | unbounded | unbounded |"), "{table}");
    assert!(table.contains("| 6 | no_freq |  |  |  | tickets: `_id_` | 1 |"), "{table}");
    assert!(
        table.contains("| 6 | no_freq |  |  |  | tickets: `_id_` | 1 | ") && table.contains(" | - | - |\n"),
        "{table}"
    );
    // 500 + 0.5 + 21 × 0.5 calls' documents per second from rows 1, 2 and 4.
    let total = format!(
        "| tickets | unbounded (rows 3, 5); the others 511 | unbounded (rows 3, 5); the others {} |\n",
        kib(511.0 * size as f64)
    );
    assert!(table.contains(&total), "{table}\nwants {total}");
    assert!(
        table.contains(
            "- row 5 (`sales_since`), documents: neither `_id` nor a unique index bounds its equality filter (one bounds it when the filter names \
             every key, the index is neither sparse nor partial, and compares as the query does), and it is not paginated, so nothing bounds how many documents one call reads\n"
        ),
        "{table}"
    );
    assert!(table.contains("- row 3 (`by_code`), documents:"), "{table}");
    assert!(!table.contains("bytes:"), "every document is bounded: {table}");
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "members")]
#[index(keys(handle), unique, name = "handle_exact")]
#[index(keys(handle), case_insensitive, name = "handle_any_case")]
#[index(keys(club, email), unique, partial_filter = r#"{"active": true}"#)]
#[index(keys(club, nick), unique, case_insensitive)]
#[access(name = "by_handle", filter(handle))]
#[access(name = "by_handle_any_case", filter(handle(case_insensitive)))]
#[access(name = "by_email", filter(club, email))]
#[access(
    name = "by_nick",
    filter(club, nick),
    allow(collation_mismatch, reason = "a test of the estimate only")
)]
#[access(name = "by_nick_any_case", filter(club(case_insensitive), nick(case_insensitive)))]
struct Member {
    #[serde(rename = "_id")]
    id: i64,
    handle: String,
    club: String,
    email: String,
    nick: String,
    active: bool,
}

#[test]
fn only_an_index_that_compares_as_the_query_and_covers_every_document_bounds_it() {
    let docs =
        |name: &str| Member::ACCESS_PATTERNS.iter().find(|p| p.name == name).unwrap().load.docs_per_call;
    assert_eq!(docs("by_handle"), DocsPerCall::One);
    // "Ann" and "ann" are two values to the exact index and one to this query.
    assert_eq!(docs("by_handle_any_case"), DocsPerCall::Unbounded);
    // Documents outside the partial filter may repeat a pair.
    assert_eq!(docs("by_email"), DocsPerCall::Unbounded);
    // Unique whatever the case, so unique exactly too.
    assert_eq!(docs("by_nick"), DocsPerCall::One);
    assert_eq!(docs("by_nick_any_case"), DocsPerCall::One);
    // `String` fields without `max_length`: the size has no bound, and says which field.
    let load = Member::ACCESS_PATTERNS[0].load;
    assert_eq!(load.doc_bytes, None);
    let why = load.doc_unsized.to_string();
    assert!(why.contains("`Member.handle` is a String with no `#[validate(max_length = N)]`"), "{why}");
    // And the fix: the attribute, and the field it goes on.
    assert!(why.ends_with("add it to `Member.handle`"), "{why}");
}

/// Sizes fixed by the attributes alone, which the derive writes as counted bytes.
#[derive(Debug, Clone, Serialize, Deserialize, docshape::Embedded)]
struct Profile {
    #[validate(max_length = 40)]
    name: String,
    #[validate(max_items = 12, items(max_length = 30))]
    tags: Vec<String>,
    #[validate(max_items = 120, items(max_length = 9))]
    codes: Vec<String>,
    #[validate(max_items = 3)]
    notes: Vec<String>,
    scores: Vec<i64>,
    bio: String,
    rank: i32,
}

/// The fields of [`Profile`] whose sizes the attributes fix, each alone in a document.
#[derive(Debug, Clone, Serialize, Deserialize, docshape::Embedded)]
struct OneName {
    #[validate(max_length = 40)]
    name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, docshape::Embedded)]
struct OneTags {
    #[validate(max_items = 12, items(max_length = 30))]
    tags: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, docshape::Embedded)]
struct OneCodes {
    #[validate(max_items = 120, items(max_length = 9))]
    codes: Vec<String>,
}

/// Those fields together, with a size the compiler looks up (`inner`) between them.
#[derive(Debug, Clone, Serialize, Deserialize, docshape::Embedded)]
struct Bounded {
    #[validate(max_length = 40)]
    name: String,
    inner: OneName,
    #[validate(max_items = 12, items(max_length = 30))]
    tags: Vec<String>,
    #[validate(max_items = 120, items(max_length = 9))]
    codes: Vec<String>,
    rank: i32,
}

#[test]
fn the_sizes_the_derive_counts_are_the_runtime_arithmetic() {
    use docshape::size::{self as sz, Element, Unsized};
    let known = |chars| (sz::string(chars), Unsized::Known);
    let name = sz::element_of("name", false, known(40));
    let tags = sz::element_of("tags", true, sz::array_of(12, known(30)));
    // Three-digit index keys from "100" on.
    let codes = sz::element_of("codes", true, sz::array_of(120, known(9)));
    // By hand: type byte, "codes", NUL; then the array's length and NUL, and per item a
    // type byte, its index key and NUL, and a string of 9 code points (4 + 36 + 1).
    assert_eq!(codes.size, Some(1 + 5 + 1 + 5 + 120 * (1 + 1 + 41) + (10 + 90 * 2 + 20 * 3)));
    // Each size the derive counts, alone: the runtime's arithmetic for that element.
    assert_eq!(OneName::MAX_BSON_SIZE, sz::document_of(&[name]));
    assert_eq!(OneTags::MAX_BSON_SIZE, sz::document_of(&[tags]));
    assert_eq!(OneCodes::MAX_BSON_SIZE, sz::document_of(&[codes]));
    // Together: the counted sizes added up into one element with no key, after the
    // element whose size the compiler looks up; the total is the runtime's for every
    // element.
    let inner = sz::element_of("inner", false, (OneName::MAX_BSON_SIZE, OneName::UNSIZED));
    let rank = sz::element_of("rank", false, (i32::MAX_BSON_SIZE, i32::UNSIZED));
    let Unsized::Fields { owner: "Bounded", elements } = Bounded::UNSIZED else {
        panic!("a struct lists its fields")
    };
    let counted = [name, tags, codes, rank].iter().map(|e| e.size.unwrap()).sum::<usize>();
    let merged = Element { key: "", many: false, size: Some(counted), why: Unsized::Known };
    assert_eq!(elements, &[inner, merged]);
    assert_eq!(Bounded::MAX_BSON_SIZE, sz::document_of(&[name, inner, tags, codes, rank]));
    // With a field that has no bound by its attributes (`notes`, the first of three),
    // the list ends there: the size is unknown, and `notes` is the field to blame.
    let Unsized::Fields { owner: "Profile", elements } = Profile::UNSIZED else {
        panic!("a struct lists its fields")
    };
    let notes = Unsized::Value {
        what: "an array of Strings with no `#[validate(items(max_length = N))]`",
        fix: true,
    };
    assert_eq!(elements, &[sz::element_of("notes", true, (None, notes))]);
    assert_eq!(Profile::MAX_BSON_SIZE, None);
    let why = Profile::UNSIZED.to_string();
    assert_eq!(
        why,
        "`Profile.notes` is an array of Strings with no `#[validate(items(max_length = N))]`; add it to `Profile.notes`"
    );
}

/// Every scalar whose size its spelling tells, bare and inside the wrappers that write
/// their content: the derive writes these sizes as numbers instead of looking them up.
#[derive(Debug, Clone, Serialize, Deserialize, docshape::Embedded)]
struct Scalars {
    flag: bool,
    tiny: i8,
    small: i16,
    int: i32,
    byte: u8,
    word: u16,
    long: i64,
    size: isize,
    unsigned: u32,
    big: u64,
    length: usize,
    single: f32,
    double: f64,
    maybe: Option<i32>,
    boxed: Box<u16>,
    nested: Option<Option<bool>>,
    #[validate(max_items = 3)]
    few: Vec<i32>,
}

/// Each of those sizes is the one BSON writes: a value with every field set (and
/// `few` full) serializes to exactly the bound, and the bound is the runtime's sum of
/// the types' own sizes.
#[test]
fn scalars_are_sized_as_bson_writes_them() {
    let full = Scalars {
        flag: true,
        tiny: -1,
        small: -1,
        int: -1,
        byte: 1,
        word: 1,
        long: -1,
        size: -1,
        unsigned: 1,
        big: 1,
        length: 1,
        single: 1.0,
        double: 1.0,
        maybe: Some(1),
        boxed: Box::new(1),
        nested: Some(Some(true)),
        few: vec![1, 2, 3],
    };
    let written = docshape::bson_compat::to_vec(&full).unwrap().len();
    assert_eq!(Scalars::MAX_BSON_SIZE, Some(written));
    // The same total from the types' own bounds, as the runtime looks them up.
    // Each element: type byte, key, NUL and the value; the document: length and NUL.
    let elements: [(&str, Option<usize>); 17] = [
        ("flag", bool::MAX_BSON_SIZE),
        ("tiny", i8::MAX_BSON_SIZE),
        ("small", i16::MAX_BSON_SIZE),
        ("int", i32::MAX_BSON_SIZE),
        ("byte", u8::MAX_BSON_SIZE),
        ("word", u16::MAX_BSON_SIZE),
        ("long", i64::MAX_BSON_SIZE),
        ("size", isize::MAX_BSON_SIZE),
        ("unsigned", u32::MAX_BSON_SIZE),
        ("big", u64::MAX_BSON_SIZE),
        ("length", usize::MAX_BSON_SIZE),
        ("single", f32::MAX_BSON_SIZE),
        ("double", f64::MAX_BSON_SIZE),
        ("maybe", Option::<i32>::MAX_BSON_SIZE),
        ("boxed", Box::<u16>::MAX_BSON_SIZE),
        ("nested", Option::<Option<bool>>::MAX_BSON_SIZE),
        ("few", <[i32; 3]>::MAX_BSON_SIZE),
    ];
    let from_types = 5 + elements.iter().map(|(key, value)| value.unwrap() + key.len() + 2).sum::<usize>();
    assert_eq!(Scalars::MAX_BSON_SIZE, Some(from_types));
}
