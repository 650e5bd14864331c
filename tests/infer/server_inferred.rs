//! Models inferred by `docshape infer` from the database "shop": review every
//! comment, bound and `TODO` before relying on them (see INFERRED.md).

#![allow(clippy::duplicated_attributes)]

use docshape::Model;
#[allow(unused_imports)]
use docshape::bson::{oid::ObjectId};
use serde::{Deserialize, Serialize};

/// The collection "ledger_entries": 10 of about 10 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "ledger_entries")]
pub struct LedgerEntry {
    // "_id": in 10 of 10 (100%); objectId 10 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "cents": in 10 of 10 (100%); int 10 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 0, maximum = 45)]
    pub cents: i32,
    // "memo": in 10 of 10 (100%); string 10 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 7)]
    // enforced by the server's $jsonSchema validator already
    #[validate(max_length = 40)]
    pub memo: String,
}

/// The collection "sensor_readings": 40 of about 40 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sensor_readings")]
pub struct SensorReading {
    // "_id": in 40 of 40 (100%); objectId 40 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "sensor": in 40 of 40 (100%); string 40 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 2, allowed = ["s0", "s1", "s2"])]
    // every stored value is one of these 3 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
    #[validate(allowed = ["s0", "s1", "s2"])]
    pub sensor: String,
    // "value": in 40 of 40 (100%); int 30 (75%), double 10 (25%)
    // integers and doubles mixed (int 30 (75%), double 10 (25%)): read as f64, written back as doubles
    // proposed (observed, not enforced): #[validate(minimum = 0.5, maximum = 39.0)]
    #[validate(bson_type = "number")]
    pub value: f64,
}

/// The collection "signups": 40 of about 40 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "signups", validation_level = "moderate")]
pub struct Signup {
    // "_id": in 40 of 40 (100%); objectId 40 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "handle": in 40 of 40 (100%); string 40 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 7)]
    // enforced by the server's $jsonSchema validator already
    #[validate(min_length = 3, max_length = 16, pattern = "^[a-z0-9_]+$")]
    pub handle: String,
    // "email": in 40 of 40 (100%); string 40 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 18)]
    // enforced by the server's $jsonSchema validator already
    #[validate(pattern = "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$")]
    pub email: String,
    // "plan": in 40 of 40 (100%); string 40 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 4, allowed = ["free", "pro", "team"])]
    // enforced by the server's $jsonSchema validator already
    #[validate(allowed = ["free", "pro", "team"])]
    pub plan: String,
    // "seats": in 40 of 40 (100%); int 40 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 9)]
    // enforced by the server's $jsonSchema validator already
    #[validate(minimum = 1, maximum = 500)]
    pub seats: i32,
    // "discount": in 40 of 40 (100%); double 40 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 0.0, maximum = 0.75)]
    // enforced by the server's $jsonSchema validator already
    #[validate(minimum = 0.0, exclusive_maximum = 1.0)]
    pub discount: f64,
    // "tags": in 40 of 40 (100%); array 40 (100%)
    // arrays of up to 2 elements
    // proposed (observed, not enforced): #[validate(max_items = 2)]
    // enforced by the server's $jsonSchema validator already
    #[validate(max_items = 4, unique_items, items(max_length = 10))]
    pub tags: Vec<String>,
}
