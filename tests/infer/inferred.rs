//! Models inferred by `docshape infer` from the database "shop": review every
//! comment, bound and `TODO` before relying on them (see INFERRED.md).

#![allow(clippy::duplicated_attributes)]

use docshape::{Embedded, Model};
#[allow(unused_imports)]
use docshape::bson::{Binary, Bson, DateTime, Decimal128, Document, oid::ObjectId};
use serde::{Deserialize, Serialize};

/// The values of one field, stored as int 240 (80%), string 60 (20%).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
#[serde(untagged)]
pub enum CustomerScoreValue {
    Text(String),
    Number(i32),
}

/// A sub-document, seen 300 times.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct CustomerAddress {
    // "city": in 300 of 300 (100%); string 300 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 4, allowed = ["Lima", "Lyon", "Oslo"])]
    // every stored value is one of these 3 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
    #[validate(allowed = ["Lima", "Lyon", "Oslo"])]
    pub city: String,
    // "zip": in 300 of 300 (100%); string 300 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 5)]
    pub zip: String,
}

/// A sub-document, seen 750 times.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct CustomerOrder {
    // "sku": in 750 of 750 (100%); string 750 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 3, allowed = ["S-0", "S-1", "S-2", "S-3", "S-4"])]
    // every stored value is one of these 5 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
    #[validate(allowed = ["S-0", "S-1", "S-2", "S-3", "S-4"])]
    pub sku: String,
    // "qty": in 750 of 750 (100%); int 750 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 5)]
    pub qty: i32,
    // "tags": in 750 of 750 (100%); array 750 (100%)
    // arrays of up to 2 elements
    // proposed (observed, not enforced): #[validate(max_items = 2)]
    pub tags: Vec<String>,
}

/// The collection "customers": 300 of about 300 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "customers")]
#[index(keys("address.city", age = -1))]
#[index(keys(created_at), expire_after = "31536000s")]
#[index(keys(email), unique, partial_filter = r#"{"active":true}"#)]
pub struct Customer {
    // "_id": in 300 of 300 (100%); objectId 300 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "first-name": in 300 of 300 (100%); string 300 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 7)]
    #[serde(rename = "first-name")]
    pub first_name: String,
    // "email": in 300 of 300 (100%); string 300 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 16)]
    pub email: String,
    // "age": in 300 of 300 (100%); int 257 (86%), double 43 (14%)
    // integers and doubles mixed (int 257 (86%), double 43 (14%)): read as f64, written back as doubles
    // proposed (observed, not enforced): #[validate(minimum = 20.0, maximum = 69.0)]
    #[validate(bson_type = "number")]
    pub age: f64,
    // "active": in 300 of 300 (100%); bool 300 (100%)
    pub active: bool,
    // "last_login": in 300 of 300 (100%); date 225 (75%), null 75 (25%)
    pub last_login: Option<DateTime>,
    // "score": in 300 of 300 (100%); int 240 (80%), string 60 (20%)
    // mixed types (int 240 (80%), string 60 (20%)): one variant per type
    pub score: CustomerScoreValue,
    // "address": in 300 of 300 (100%); object 300 (100%)
    pub address: CustomerAddress,
    // "orders": in 300 of 300 (100%); array 300 (100%)
    // arrays of up to 5 elements
    // proposed (observed, not enforced): #[validate(max_items = 5)]
    #[embed(max = 5, reason = "TODO: the longest array sampled; say why it stays this small, or move the elements out")]
    pub orders: Vec<CustomerOrder>,
    // "customer_loyalty_program_membership_level": in 300 of 300 (100%); string 300 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 6, allowed = ["bronze", "gold", "silver"])]
    // every stored value is one of these 3 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
    #[validate(allowed = ["bronze", "gold", "silver"])]
    pub customer_loyalty_program_membership_level: String,
    // "created_at": in 300 of 300 (100%); date 300 (100%)
    pub created_at: DateTime,
    // "type": in 300 of 300 (100%); string 300 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 6, allowed = ["person"])]
    #[serde(rename = "type")]
    pub type_: String,
    // "nickname": in 150 of 300 (50%); string 150 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 7)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nickname: Option<String>,
}

/// A sub-document, seen 5001 times.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct FeedItem {
    // "at": in 5001 of 5001 (100%); date 5001 (100%)
    pub at: DateTime,
    // "kind": in 5001 of 5001 (100%); string 5001 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 2, allowed = ["k0", "k1", "k2", "k3"])]
    // every stored value is one of these 4 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
    #[validate(allowed = ["k0", "k1", "k2", "k3"])]
    pub kind: String,
}

/// The collection "feeds": 3 of about 3 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "feeds")]
pub struct Feed {
    // "_id": in 3 of 3 (100%); int 3 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 3)]
    #[serde(rename = "_id")]
    pub id: i32,
    // "items": in 3 of 3 (100%); array 3 (100%)
    // arrays of up to 5000 elements
    // 1 array(s) past 1000 elements: see INFERRED.md (an outlier array, or the elements in a collection of their own)
    // proposed (observed, not enforced): #[validate(max_items = 5000)]
    #[embed(max = 5000, reason = "TODO: the longest array sampled; say why it stays this small, or move the elements out")]
    pub items: Vec<FeedItem>,
    // "blob": in 1 of 3 (33%); string 1 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 2200000)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// The collection "members": 3 of about 3 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "members")]
pub struct Member {
    // "_id": in 3 of 3 (100%); objectId 3 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "name": in 3 of 3 (100%); string 3 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 3)]
    // enforced by the server's $jsonSchema validator already
    #[validate(min_length = 2, max_length = 40)]
    pub name: String,
    // "level": in 3 of 3 (100%); string 3 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 1)]
    // enforced by the server's $jsonSchema validator already
    #[validate(allowed = ["a", "b"])]
    pub level: String,
    // "score": in 3 of 3 (100%); int 3 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 0, maximum = 100)]
    // enforced by the server's $jsonSchema validator already
    #[validate(minimum = 0, maximum = 100)]
    pub score: i32,
    // "ratio": in 3 of 3 (100%); double 3 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 0.0, maximum = 0.5)]
    // enforced by the server's $jsonSchema validator already
    #[validate(minimum = 0.0, exclusive_maximum = 1.0)]
    pub ratio: f64,
}

/// A sub-document, seen 2 times.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct OddThingId {
    // "tenant": in 2 of 2 (100%); string 2 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 2)]
    pub tenant: String,
    // "n": in 2 of 2 (100%); int 2 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 2)]
    pub n: i32,
}

/// A sub-document, seen 1 times.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct OddThingMaybe {
    // "x": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 1)]
    pub x: i32,
}

/// A sub-document, seen 1 times.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct OddThingLine {
    // "sku": in 1 of 1 (100%); string 1 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 1)]
    pub sku: String,
    // "codes": in 1 of 1 (100%); array 1 (100%)
    // arrays of up to 1 elements
    // proposed (observed, not enforced): #[validate(max_items = 1)]
    pub codes: Vec<String>,
}

/// The collection "odd-things": 2 of about 2 documents sampled.
// index "missing_field_1" not declared (`missing_field` is not a field of the inferred types): "{\"key\":{\"missing_field\":1},\"name\":\"missing_field_1\",\"v\":2}"
// index "mixed_obj.k_1" not declared (`mixed_obj.k` is not a field of the inferred types): "{\"key\":{\"mixed_obj.k\":1},\"name\":\"mixed_obj.k_1\",\"v\":2}"
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "odd-things")]
#[index(keys(firstName), allow(redundant_index, reason = "TODO: on the server already (inferred); a prefix of another index, drop one?"))]
#[index(keys(firstName, first_name = -1))]
#[index(keys("lines.sku"), unique, allow(unique_in_array, reason = "TODO: on the server already (inferred); say why it is right"))]
#[index(keys(note), partial_filter = r##"{"note":{"$eq":"a\"#b"}}"##)]
pub struct OddThing {
    // "_id": in 2 of 2 (100%); object 2 (100%)
    #[serde(rename = "_id")]
    pub id: OddThingId,
    // "firstName": in 2 of 2 (100%); string 2 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 1)]
    #[serde(rename = "firstName")]
    pub first_name: String,
    // "first_name": in 2 of 2 (100%); string 2 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 1)]
    #[serde(rename = "first_name")]
    pub first_name_2: String,
    // "line\n// injected\nfn evil() {}": in 1 of 2 (50%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 1)]
    #[serde(rename = "line\n// injected\nfn evil() {}")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_injected_fn_evil: Option<i32>,
    // "Self": in 1 of 2 (50%); string 1 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 1)]
    #[serde(rename = "Self")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_: Option<String>,
    // "é": in 1 of 2 (50%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 1)]
    #[serde(rename = "é")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<i32>,
    // "2fa": in 1 of 2 (50%); bool 1 (100%)
    #[serde(rename = "2fa")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f_2fa: Option<bool>,
    // "grid": in 1 of 2 (50%); array 1 (100%)
    // elements: arrays of up to 2 elements
    // arrays of up to 2 elements
    // proposed (observed, not enforced): #[validate(max_items = 2)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<Vec<Vec<i32>>>,
    // "maybe": in 1 of 2 (50%); array 1 (100%)
    // arrays of up to 2 elements
    // proposed (observed, not enforced): #[validate(max_items = 2)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[embed(max = 2, reason = "TODO: the longest array sampled; say why it stays this small, or move the elements out")]
    pub maybe: Option<Vec<Option<OddThingMaybe>>>,
    // "mixed_obj": in 2 of 2 (100%); object 1 (50%), string 1 (50%)
    // mixed types: object 1 (50%), string 1 (50%)
    pub mixed_obj: Bson,
    // "empty": in 2 of 2 (100%); array 2 (100%)
    // only empty arrays seen: the elements' type is unknown
    pub empty: Vec<Bson>,
    // "nothing": in 2 of 2 (100%); null 2 (100%)
    // only null seen: the type is unknown
    pub nothing: Option<Bson>,
    // "price": in 1 of 2 (50%); decimal 1 (100%)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Decimal128>,
    // "raw": in 1 of 2 (50%); binData 1 (100%)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Binary>,
    // "counts": in 1 of 2 (50%); object 1 (100%)
    // a plain Document: more than 200 distinct names (a map keyed by data) or nested deeper than 16
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<Document>,
    // "lines": in 2 of 2 (100%); array 2 (100%)
    // arrays of up to 1 elements
    // proposed (observed, not enforced): #[validate(max_items = 1)]
    #[embed(max = 1, reason = "TODO: the longest array sampled; say why it stays this small, or move the elements out")]
    pub lines: Vec<OddThingLine>,
    // "note": in 2 of 2 (100%); string 2 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 4)]
    pub note: String,
    // left out: the field "a.b" (1 values), a name MongoDB cannot query (`.`, a leading `$`, or empty); serde ignores it on read
    // left out: the field "$x" (1 values), a name MongoDB cannot query (`.`, a leading `$`, or empty); serde ignores it on read
    // left out: the field "" (1 values), a name MongoDB cannot query (`.`, a leading `$`, or empty); serde ignores it on read
}

/// The collection "wide": 1 of about 1 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "wide", max_indexes = 31)]
#[index(keys(f0))]
#[index(keys(f10))]
#[index(keys(f11))]
#[index(keys(f12))]
#[index(keys(f13))]
#[index(keys(f14))]
#[index(keys(f15))]
#[index(keys(f16))]
#[index(keys(f17))]
#[index(keys(f18))]
#[index(keys(f19))]
#[index(keys(f1))]
#[index(keys(f20))]
#[index(keys(f21))]
#[index(keys(f22))]
#[index(keys(f23))]
#[index(keys(f24))]
#[index(keys(f25))]
#[index(keys(f26))]
#[index(keys(f27))]
#[index(keys(f28))]
#[index(keys(f29))]
#[index(keys(f2))]
#[index(keys(f30))]
#[index(keys(f3))]
#[index(keys(f4))]
#[index(keys(f5))]
#[index(keys(f6))]
#[index(keys(f7))]
#[index(keys(f8))]
#[index(keys(f9))]
pub struct Wide {
    // "_id": in 1 of 1 (100%); objectId 1 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "f0": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 0, maximum = 0)]
    pub f0: i32,
    // "f1": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 1)]
    pub f1: i32,
    // "f2": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 2, maximum = 2)]
    pub f2: i32,
    // "f3": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 3, maximum = 3)]
    pub f3: i32,
    // "f4": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 4, maximum = 4)]
    pub f4: i32,
    // "f5": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 5, maximum = 5)]
    pub f5: i32,
    // "f6": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 6, maximum = 6)]
    pub f6: i32,
    // "f7": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 7, maximum = 7)]
    pub f7: i32,
    // "f8": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 8, maximum = 8)]
    pub f8: i32,
    // "f9": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 9, maximum = 9)]
    pub f9: i32,
    // "f10": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 10, maximum = 10)]
    pub f10: i32,
    // "f11": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 11, maximum = 11)]
    pub f11: i32,
    // "f12": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 12, maximum = 12)]
    pub f12: i32,
    // "f13": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 13, maximum = 13)]
    pub f13: i32,
    // "f14": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 14, maximum = 14)]
    pub f14: i32,
    // "f15": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 15, maximum = 15)]
    pub f15: i32,
    // "f16": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 16, maximum = 16)]
    pub f16: i32,
    // "f17": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 17, maximum = 17)]
    pub f17: i32,
    // "f18": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 18, maximum = 18)]
    pub f18: i32,
    // "f19": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 19, maximum = 19)]
    pub f19: i32,
    // "f20": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 20, maximum = 20)]
    pub f20: i32,
    // "f21": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 21, maximum = 21)]
    pub f21: i32,
    // "f22": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 22, maximum = 22)]
    pub f22: i32,
    // "f23": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 23, maximum = 23)]
    pub f23: i32,
    // "f24": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 24, maximum = 24)]
    pub f24: i32,
    // "f25": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 25, maximum = 25)]
    pub f25: i32,
    // "f26": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 26, maximum = 26)]
    pub f26: i32,
    // "f27": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 27, maximum = 27)]
    pub f27: i32,
    // "f28": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 28, maximum = 28)]
    pub f28: i32,
    // "f29": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 29, maximum = 29)]
    pub f29: i32,
    // "f30": in 1 of 1 (100%); int 1 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 30, maximum = 30)]
    pub f30: i32,
}
