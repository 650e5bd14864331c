//! The models docshape's tests run against a real server, with proptest strategies
//! that generate every value the types can serialize (within their declared
//! constraints).

use docshape::bson;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use docshape::bson::oid::ObjectId;
use docshape::bson::{doc, Binary, Bson, DateTime, Decimal128, Document};
use docshape::{Embedded, Model};
use proptest::prelude::*;
use proptest_derive::Arbitrary;
use serde::{Deserialize, Serialize};

/// The seed's `usuarios` (patrones-es, "Reglas de Validación").
#[derive(Debug, Clone, Serialize, Deserialize, Model, Arbitrary)]
#[model(collection = "usuarios", validation_action = "error")]
pub struct Usuario {
    #[serde(rename = "_id")]
    #[proptest(strategy = "oid()")]
    pub id: ObjectId,
    #[validate(min_length = 2, max_length = 100)]
    #[proptest(strategy = "\"\\\\PC{2,100}\"")]
    pub nombre: String,
    #[validate(pattern = r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$")]
    #[proptest(strategy = "\"[a-zA-Z0-9._%+-]{1,20}@[a-zA-Z0-9.-]{1,20}\\\\.[a-zA-Z]{2,6}\"")]
    pub email: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[validate(minimum = 0, maximum = 150)]
    #[proptest(strategy = "proptest::option::of(0..=150_i32)")]
    pub edad: Option<i32>,
}

/// Scalars of every width, options written as null or left out, maps, renames,
/// `skip`, `flatten`, newtypes and `transparent`.
#[derive(Debug, Clone, Serialize, Deserialize, Model, Arbitrary)]
#[model(collection = "profiles", strict)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    #[serde(rename = "_id")]
    #[proptest(strategy = "oid()")]
    pub id: ObjectId,
    #[validate(min_length = 2, max_length = 40)]
    #[proptest(strategy = "\"\\\\PC{2,40}\"")]
    pub display_name: String,
    pub nickname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bio: Option<String>,
    #[validate(maximum = 150)]
    #[proptest(strategy = "0..=150_u8")]
    pub age: u8,
    pub small: i8,
    pub medium: i16,
    pub unsigned_medium: u16,
    pub count: u32,
    pub big: i64,
    #[proptest(strategy = "0..=i64::MAX as u64")]
    pub huge: u64,
    pub ratio: f64,
    pub weight: f32,
    pub active: bool,
    pub initial: char,
    #[serde(rename = "created")]
    #[proptest(strategy = "datetime()")]
    pub created_at: DateTime,
    #[proptest(strategy = "decimal()")]
    pub balance: Decimal128,
    #[proptest(strategy = "binary()")]
    pub avatar: Binary,
    #[proptest(strategy = "uuid()")]
    pub uid: bson::Uuid,
    #[proptest(strategy = "small_map(any::<i32>())")]
    pub scores: HashMap<String, i32>,
    #[proptest(strategy = "small_btree(proptest::option::of(any::<f64>()))")]
    pub ratios: BTreeMap<String, Option<f64>>,
    #[serde(skip)]
    pub cache: u32,
    #[serde(flatten)]
    pub audit: Audit,
    pub email: Email,
    pub handle: Handle,
    pub level: Level,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    pub nothing: (),
    #[proptest(strategy = "document()")]
    pub meta: Document,
    #[proptest(strategy = "any_bson()")]
    pub extra: Bson,
}

/// Flattened into [`Profile`].
#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
pub struct Audit {
    pub created_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A newtype: stored as the string itself.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
pub struct Email(
    #[validate(max_length = 254)]
    #[proptest(strategy = "\"\\\\PC{0,254}\"")]
    pub String,
);

/// `transparent`: stored as the one field.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
#[serde(transparent)]
pub struct Handle {
    #[validate(pattern = "^@[a-z0-9_]{1,15}$")]
    #[proptest(strategy = "\"@[a-z0-9_]{1,15}\"")]
    pub value: String,
}

/// A unit-only enum: a string enum, renamed.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Level {
    Beginner,
    SomewhatAdvanced,
    #[serde(rename = "pro")]
    Professional,
}

/// Nested embedded types, arrays of them, fixed arrays, sets, tuples, validated items.
#[derive(Debug, Clone, Serialize, Deserialize, Model, Arbitrary)]
#[model(collection = "orders", validation_level = "moderate", strict)]
pub struct Order {
    #[serde(rename = "_id")]
    #[proptest(strategy = "\"ord_[0-9]{1,6}\"")]
    pub id: String,
    pub customer: Customer,
    #[validate(min_items = 1, max_items = 20)]
    #[proptest(strategy = "proptest::collection::vec(any::<LineItem>(), 1..=20)")]
    pub items: Vec<LineItem>,
    pub shipping: Option<Address>,
    #[validate(allowed = ["pending", "shipped", "delivered"])]
    #[proptest(
        strategy = "prop_oneof![Just(\"pending\".to_owned()), Just(\"shipped\".to_owned()), Just(\"delivered\".to_owned())]"
    )]
    pub status: String,
    #[validate(unique_items, max_items = 5)]
    #[proptest(
        strategy = "proptest::collection::btree_set(\"[a-z]{1,6}\", 0..=5).prop_map(|s| s.into_iter().collect())"
    )]
    pub tags: Vec<String>,
    pub rgb: [u8; 3],
    pub location: (f64, f64),
    pub coupons: BTreeSet<String>,
    #[validate(exclusive_minimum = 0, maximum = 1000000)]
    #[proptest(strategy = "1..=1_000_000_i64")]
    pub total_cents: i64,
    pub schema_version: i32,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
#[embedded(strict)]
pub struct Customer {
    #[proptest(strategy = "oid()")]
    pub id: ObjectId,
    pub name: String,
    pub address: Address,
}

/// patrones-es's `direccion`.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
pub struct Address {
    pub calle: String,
    pub ciudad: String,
    #[validate(pattern = "^[0-9]{5}$")]
    #[proptest(strategy = "\"[0-9]{5}\"")]
    pub cp: String,
    pub geo: Option<Geo>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
pub struct Geo {
    #[validate(minimum = -90.0, maximum = 90.0)]
    #[proptest(strategy = "-90.0..=90.0_f64")]
    pub lat: f64,
    #[validate(minimum = -180.0, maximum = 180.0)]
    #[proptest(strategy = "-180.0..=180.0_f64")]
    pub lng: f64,
}

/// patterns-en's order line.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
pub struct LineItem {
    #[validate(min_length = 1, max_length = 32)]
    #[proptest(strategy = "\"[A-Z]-[0-9]{1,6}\"")]
    pub sku: String,
    #[validate(minimum = 1, maximum = 999)]
    #[proptest(strategy = "1..=999_u32")]
    pub qty: u32,
    pub unit_price_cents: i64,
}

/// Enums in every serde representation.
#[derive(Debug, Clone, Serialize, Deserialize, Model, Arbitrary)]
#[model(collection = "events", strict)]
pub struct EventLog {
    #[proptest(strategy = "small_vec(any::<Shape>())")]
    #[embed(max = 16)]
    pub shapes: Vec<Shape>,
    pub event: Event,
    pub message: Message,
    pub loose: Loose,
    pub maybe: Option<Shape>,
    pub renamed: Renamed,
    #[proptest(strategy = "small_map(any::<Message>())")]
    pub by_key: HashMap<String, Message>,
}

/// Externally tagged (serde's default).
#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
pub enum Shape {
    Circle {
        radius: f64,
    },
    Square(f64),
    Line(f64, f64),
    Empty,
    #[serde(skip)]
    #[proptest(skip)]
    #[allow(dead_code)]
    Hidden,
}

/// Internally tagged.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    UserCreated {
        user_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        referrer: Option<String>,
    },
    Renamed(RenameInfo),
    Deleted,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
#[embedded(strict)]
pub struct RenameInfo {
    pub from: String,
    pub to: String,
}

/// Adjacently tagged.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
#[serde(tag = "t", content = "c")]
pub enum Message {
    Ping,
    Text(String),
    Move { x: i32, y: i32 },
    Pair(i32, String),
}

/// Untagged.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
#[serde(untagged)]
pub enum Loose {
    Number(i64),
    Text(String),
    Point { x: f64, y: f64 },
    Nothing,
}

/// `rename_all_fields` and per-variant renames.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded, Arbitrary)]
#[serde(rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum Renamed {
    FirstKind {
        some_value: i32,
    },
    #[serde(rename = "second")]
    SecondKind {
        other_value: String,
    },
}

/// A model that declares one of each constraint, for the completeness test.
#[derive(Debug, Clone, Serialize, Deserialize, Model, Arbitrary)]
#[model(collection = "constrained", strict)]
pub struct Constrained {
    #[validate(min_length = 3, max_length = 8, pattern = "^[a-z]+$")]
    #[proptest(strategy = "\"[a-z]{3,8}\"")]
    pub code: String,
    #[validate(minimum = 10, maximum = 20)]
    #[proptest(strategy = "10..=20_i32")]
    pub inclusive: i32,
    #[validate(exclusive_minimum = 0.0, exclusive_maximum = 1.0)]
    #[proptest(strategy = "(1..1000_u32).prop_map(|n| f64::from(n) / 1000.0)")]
    pub fraction: f64,
    #[validate(
        min_items = 1,
        max_items = 3,
        unique_items,
        items(min_length = 1, max_length = 4, pattern = "^[a-z]+$")
    )]
    #[proptest(
        strategy = "proptest::collection::btree_set(\"[a-z]{1,4}\", 1..=3).prop_map(|s| s.into_iter().collect())"
    )]
    pub labels: Vec<String>,
    #[validate(allowed = ["red", "green"])]
    #[proptest(strategy = "prop_oneof![Just(\"red\".to_owned()), Just(\"green\".to_owned())]")]
    pub color: String,
    #[validate(allowed = [1, 2, 3])]
    #[proptest(strategy = "1..=3_i32")]
    pub rank: i32,
    pub level: Level,
    pub small: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[validate(max_length = 4)]
    #[proptest(strategy = "proptest::option::of(\"\\\\PC{0,4}\")")]
    pub optional: Option<String>,
}

impl Constrained {
    /// A value that meets every constraint.
    pub fn valid() -> Self {
        Self {
            code: "abcd".into(),
            inclusive: 15,
            fraction: 0.5,
            labels: vec!["x".into(), "y".into()],
            color: "red".into(),
            rank: 2,
            level: Level::Beginner,
            small: 7,
            optional: Some("ok".into()),
        }
    }
}

/// A random ObjectId.
pub fn oid() -> impl Strategy<Value = ObjectId> {
    any::<[u8; 12]>().prop_map(ObjectId::from_bytes)
}

/// A BSON date in years 1 to 9999. mongod stores any 64-bit millisecond count, but
/// the local test server is written in Python and refuses dates outside the years
/// Python's `datetime` can hold.
pub fn datetime() -> impl Strategy<Value = DateTime> {
    (-62_135_596_800_000_i64..=253_402_300_799_999_i64).prop_map(DateTime::from_millis)
}

/// Any 128-bit decimal bit pattern.
pub fn decimal() -> impl Strategy<Value = Decimal128> {
    any::<[u8; 16]>().prop_map(Decimal128::from_bytes)
}

/// Generic binary data.
pub fn binary() -> impl Strategy<Value = Binary> {
    proptest::collection::vec(any::<u8>(), 0..32)
        .prop_map(|bytes| Binary { subtype: bson::spec::BinarySubtype::Generic, bytes })
}

/// A random UUID.
pub fn uuid() -> impl Strategy<Value = bson::Uuid> {
    any::<[u8; 16]>().prop_map(bson::Uuid::from_bytes)
}

/// Keys MongoDB accepts as field names.
pub fn key() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,8}"
}

pub fn small_map<V: std::fmt::Debug>(
    v: impl Strategy<Value = V>,
) -> impl Strategy<Value = HashMap<String, V>> {
    proptest::collection::hash_map(key(), v, 0..4)
}

pub fn small_btree<V: std::fmt::Debug>(
    v: impl Strategy<Value = V>,
) -> impl Strategy<Value = BTreeMap<String, V>> {
    proptest::collection::btree_map(key(), v, 0..4)
}

pub fn small_vec<V: std::fmt::Debug>(v: impl Strategy<Value = V>) -> impl Strategy<Value = Vec<V>> {
    proptest::collection::vec(v, 0..4)
}

/// A small free-form document.
pub fn document() -> impl Strategy<Value = Document> {
    proptest::collection::btree_map(key(), any::<i32>(), 0..4).prop_map(|m| {
        let mut d = doc! {};
        for (k, v) in m {
            d.insert(k, v);
        }
        d
    })
}

/// A value of any of several BSON types.
pub fn any_bson() -> impl Strategy<Value = Bson> {
    prop_oneof![
        any::<i32>().prop_map(Bson::Int32),
        any::<i64>().prop_map(Bson::Int64),
        any::<f64>().prop_map(Bson::Double),
        any::<String>().prop_map(Bson::String),
        any::<bool>().prop_map(Bson::Boolean),
        Just(Bson::Null),
        document().prop_map(Bson::Document),
    ]
}

/// patterns-en's posts: "posts by user, newest first", served by
/// `createIndex({author_id: 1, created_at: -1})`.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1))]
#[access(
    name = "posts_by_author",
    operation = "Posts by user, newest first",
    filter(author_id),
    sort(created_at = -1),
    fields(title, author_name, created_at),
    freq = "500 r/s",
    consistency = "eventual ok"
)]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: String,
    pub author_id: String,
    /// Copy of the author's name, refreshed on rename.
    pub author_name: String,
    pub title: String,
    pub created_at: DateTime,
}
