//! The expansion functions as library functions on token streams: what they generate,
//! and that no input, however garbled, makes them panic. The helpers every test file
//! uses are here; the tests are in `model`, `polymorphic` and `fuzz`.

mod fuzz;
mod model;
mod polymorphic;

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

/// Valid inputs: the fuzzer garbles them, and the model tests expand the last ones.
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
