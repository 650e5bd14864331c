//! What `docshape infer` generated for the seeded database of `tests/infer` (the
//! fixture `tests/infer/inferred.rs`, compared there with the generator's output)
//! compiles under docshape's rules, and its types read documents shaped like the seed's.

use docshape::bson::{doc, oid::ObjectId, Bson, DateTime};
use docshape::Model;

// Byte for byte what the generator writes, which rustfmt would reflow.
#[rustfmt::skip]
#[allow(dead_code)]
#[path = "../../infer/inferred.rs"]
mod models;

// What `infer --workload` generated for `tests/infer/workload.rs`'s orders, its rates
// written as `1 r/s` (the measured ones depend on timing): the rows an index serves are
// attributes, which must compile.
// Rows repeating `freq = "1 r/s"` or a `filter(...)`: see tests/index/mod.rs for the
// clippy false positive on repeated helper-attribute keys.
#[rustfmt::skip]
#[allow(dead_code, clippy::duplicated_attributes)]
#[path = "../../infer/workload_inferred.rs"]
mod workload_models;

use models::{Customer, CustomerScoreValue, Feed, Member, OddThing, Wide};
use workload_models::InferWorkloadOrder;

pub fn main() {
    let now = DateTime::now();
    // Every planted oddity at once: a double age, a null date, a string score, no
    // nickname, an order with tags.
    let stored = doc! {
        "_id": ObjectId::new(), "first-name": "Ada", "email": "a@example.com", "age": 30.5,
        "active": true, "last_login": Bson::Null, "score": "n/a",
        "address": { "city": "Oslo", "zip": "00001" },
        "orders": [{ "sku": "S-1", "qty": 2, "tags": ["a"] }],
        "customer_loyalty_program_membership_level": "gold", "created_at": now, "type": "person",
    };
    let customer: Customer = docshape::bson_compat::from_document(stored.clone()).unwrap();
    assert_eq!(customer.first_name, "Ada");
    assert_eq!(customer.score, CustomerScoreValue::Text("n/a".into()));
    // A number reads as the number variant, and each is written back as stored.
    let mut numbered = stored.clone();
    numbered.insert("score", 7);
    let scored: Customer = docshape::bson_compat::from_document(numbered).unwrap();
    assert_eq!(scored.score, CustomerScoreValue::Number(7));
    assert_eq!(docshape::bson_compat::to_document(&scored).unwrap().get("score"), Some(&Bson::Int32(7)));
    assert!(customer.nickname.is_none() && customer.last_login.is_none());
    // Written back: the same names, no nickname (left out when None), null kept.
    let written = docshape::bson_compat::to_document(&customer).unwrap();
    assert_eq!(written.get_str("first-name").unwrap(), "Ada");
    assert!(!written.contains_key("nickname"));
    assert_eq!(written.get("last_login"), Some(&Bson::Null));
    // The validator names the stored names; bounds from the sample stayed comments; the
    // age takes any number; a string of three values (every document read) is an enum.
    let json = Customer::validator_json();
    assert!(json.contains("\"first-name\"") && json.contains("\"maxItems\": 5"), "{json}");
    assert!(!json.contains("maxLength"), "{json}");
    assert!(json.contains("\"number\"") && json.contains("\"silver\""), "{json}");
    let names: Vec<&str> = Customer::INDEXES.iter().map(|i| i.name).collect();
    assert_eq!(names, ["address.city_1_age_-1", "created_at_1", "email_1"]);
    assert_eq!(Customer::INDEXES[1].expire_after_secs, Some(365 * 24 * 3600));
    assert!(Customer::INDEXES[2].unique && Customer::INDEXES[2].partial_filter.is_some());
    assert_eq!(Wide::INDEXES.len(), 31);
    let feed: Feed = docshape::bson_compat::from_document(doc! { "_id": 3, "items": [] }).unwrap();
    assert!(feed.items.is_empty() && feed.blob.is_none());
    assert!(Feed::validator_json().contains("\"maxItems\": 5000"));
    assert_eq!(Customer::COLLECTION, "customers");
    // The odd collection's second document: names MongoDB cannot query are ignored on
    // read; a string where the first held a sub-document is a `Bson`.
    let odd: OddThing = docshape::bson_compat::from_document(doc! {
        "_id": { "tenant": "t1", "n": 2 }, "firstName": "c", "first_name": "d", "mixed_obj": "text",
        "empty": [], "nothing": Bson::Null, "lines": [], "note": "n", "a.b": 1, "$x": 2, "": 3,
    })
    .unwrap();
    assert_eq!((odd.first_name.as_str(), odd.first_name_2.as_str()), ("c", "d"));
    assert_eq!(odd.mixed_obj, Bson::String("text".into()));
    let written = docshape::bson_compat::to_document(&odd).unwrap();
    assert!(written.contains_key("firstName") && !written.contains_key("a.b"));
    let json = OddThing::validator_json();
    assert!(json.contains("line\\n// injected"), "{json}");
    // The server's validator read back: its bounds are the model's again.
    let json = Member::validator_json();
    assert!(json.contains("\"maxLength\": 40") && json.contains("\"maximum\": 100"), "{json}");
    // Each inferred row, served by the index the workload's server used.
    let rows: Vec<(&str, Option<&str>)> =
        InferWorkloadOrder::ACCESS_PATTERNS.iter().map(|p| (p.name, p.index)).collect();
    assert_eq!(
        rows,
        [
            ("by_customer", Some("customer_1_placed_at_-1")),
            ("by_status_total", Some("status_1_total_1")),
            ("by_id", Some("_id_")),
            ("by_region", Some("region_1")),
            ("by_customer_region", Some("customer_1_region_1")),
            ("by_status", Some("status_1_total_1")),
        ]
    );
    assert!(InferWorkloadOrder::ACCESS_PATTERNS.iter().all(|p| p.freq == "1 r/s"));
}
