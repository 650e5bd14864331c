//! Every generated read's filter is index bounds of its row's index and nothing else:
//! each condition names a key of that index, under `$eq` or a comparison (and on a
//! first page `$type`, which the server turns into the bounds of that type), and the
//! only `$or` is the keyset's, whose clauses are the same. No `$not`, no `$type` inside
//! an `$or`: on mongod each `$or` clause is planned with bounds of its own, and a clause
//! that leaves a key unbounded reads every index key of the feed on every page.
//!
//! Checked on the commands as sent (the builders' `find_command` and the finders'
//! filter, which `count` sends too), for the finders and the pages of several models;
//! the walk tests (tests/paginate) show these filters return the right documents.

use docshape::bson::{Bson, DateTime, Document};
use docshape::index::Index;
use docshape::Model;

use super::{order, Order};
use crate::paginate::FeedItem;

/// The stored paths of the index named `name` among `indexes` (`_id_` is `_id`'s).
fn index_keys(indexes: &[Index], name: Option<&str>) -> Vec<&'static str> {
    match name {
        Some("_id_") => vec!["_id"],
        Some(name) => indexes
            .iter()
            .find(|i| i.name == name)
            .unwrap_or_else(|| panic!("no index {name}"))
            .keys
            .iter()
            .map(|(k, _)| *k)
            .collect(),
        None => panic!("the row has no index"),
    }
}

/// Panics unless `filter` is bounds on `keys` only (see the module docs).
fn assert_index_bounds(what: &str, filter: &Document, keys: &[&str]) {
    check(what, filter, filter, keys, true);
}

fn check(what: &str, whole: &Document, filter: &Document, keys: &[&str], top: bool) {
    for (key, value) in filter {
        if key == "$or" {
            assert!(top, "{what}: an `$or` inside an `$or`: {whole}");
            let clauses = value.as_array().unwrap_or_else(|| panic!("{what}: `$or` of no array: {whole}"));
            for clause in clauses {
                let clause =
                    clause.as_document().unwrap_or_else(|| panic!("{what}: an `$or` clause: {whole}"));
                check(what, whole, clause, keys, false);
            }
            continue;
        }
        assert!(
            keys.contains(&key.as_str()),
            "{what}: `{key}` is not a key of the row's index {keys:?}: {whole}"
        );
        let Bson::Document(ops) = value else {
            panic!("{what}: `{key}` is compared without an operator: {whole}");
        };
        assert!(!ops.is_empty(), "{what}: `{key}` has an empty condition: {whole}");
        for (op, _) in ops {
            match op.as_str() {
                "$eq" | "$gt" | "$gte" | "$lt" | "$lte" => {}
                "$type" if top => {}
                other => panic!("{what}: `{key}: {{{other}: ...}}` is no index bound here: {whole}"),
            }
        }
    }
}

/// The finders of the access tests' orders: their `find` (as `first`, `stream` and
/// `all` send it) and their filter (as `count` sends it).
#[test]
fn finder_and_count_filters_bound_their_index_only() {
    let t0 = DateTime::from_millis(0);
    let t1 = DateTime::from_millis(1_000);
    let finds = [
        ("load_order", Order::load_order("o_1").find_command(Some(1)).unwrap()),
        ("orders_of_customer", Order::orders_of_customer("c_1").find_command(Some(20)).unwrap()),
        ("orders_of_buyer", Order::orders_of_buyer("c_1").find_command(None).unwrap()),
        ("orders_since", Order::orders_since("new", t0..t1).find_command(None).unwrap()),
        ("orders_since", Order::orders_since("new", t0..).find_command(None).unwrap()),
    ];
    for (name, find) in finds {
        let row = Order::ACCESS_PATTERNS.iter().find(|p| p.name == name).unwrap();
        let keys = index_keys(Order::INDEXES, row.index);
        assert_index_bounds(name, find.get_document("filter").unwrap(), &keys);
    }
    let count = Order::orders_of_customer("c_1");
    let row = count.pattern();
    assert_index_bounds("count", count.filter().unwrap(), &index_keys(Order::INDEXES, row.index));
    // Whatever the caller passes stays under `$eq`.
    let hostile = Order::orders_of_customer(order("o", "c", 0, "x").customer_id + "\"}, {\"$where\": 1}");
    assert_index_bounds("hostile", hostile.filter().unwrap(), &index_keys(Order::INDEXES, row.index));
}

/// Pages of the feed's two rows (a date sort, and a two-key sort of numbers): the first
/// page, and pages after and before a cursor.
#[test]
fn page_filters_bound_their_index_only() {
    type Page = fn() -> docshape::paginate::Paginator<FeedItem>;
    let rows: [(&str, Page, Vec<Bson>); 2] = [
        (
            "feed_by_author",
            || FeedItem::feed_by_author("a"),
            vec![Bson::DateTime(DateTime::from_millis(5)), Bson::Int64(3)],
        ),
        ("by_score", || FeedItem::by_score("a"), vec![Bson::Int32(2), Bson::Int64(7), Bson::Int64(3)]),
    ];
    for (name, paginator, values) in rows {
        let row = FeedItem::ACCESS_PATTERNS.iter().find(|p| p.name == name).unwrap();
        let keys = index_keys(FeedItem::INDEXES, row.index);
        let token = paginator().token_at("db", &values).unwrap();
        let pages = [
            ("first", paginator().find_command("db").unwrap()),
            ("after", paginator().after(&token).find_command("db").unwrap()),
            ("before", paginator().before(&token).find_command("db").unwrap()),
        ];
        for (side, find) in pages {
            let what = format!("{name}, {side} page");
            assert_index_bounds(&what, find.get_document("filter").unwrap(), &keys);
        }
    }
}

/// The checker refuses what it must: the branches pages used to carry.
#[test]
#[should_panic(expected = "is no index bound here")]
fn a_type_branch_inside_the_or_is_refused() {
    let filter = docshape::bson::doc! {
        "author_id": { "$eq": "a" },
        "$or": [ { "created_at": { "$lt": 5 } }, { "_id": { "$not": { "$type": "string" } } } ],
    };
    assert_index_bounds("old page", &filter, &["author_id", "created_at", "_id"]);
}
