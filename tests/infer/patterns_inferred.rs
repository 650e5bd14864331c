//! Models inferred by `docshape infer` from the database "shop": review every
//! comment, bound and `TODO` before relying on them (see INFERRED.md).

#![allow(clippy::duplicated_attributes)]

use docshape::{Embedded, Model};
#[allow(unused_imports)]
use docshape::bson::{DateTime, oid::ObjectId};
use serde::{Deserialize, Serialize};

/// The collection "activity": 36 of about 36 documents sampled.
// "kind" tells 3 document types apart (INFERRED.md): one variant per value, each with the fields its documents hold; `infer --plain` writes one struct
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "activity")]
// workload (0 system.profile entries): rows a declared index serves are attributes, the others comments
#[index(keys(user, at = -1))]
pub enum Activity {
    // "kind" = "click": 12 of 36 documents of the second sample
    #[serde(rename = "click")]
    Click {
        // "_id": in 12 of 12 (100%); objectId 12 (100%)
        #[serde(rename = "_id")]
        id: ObjectId,
        // "user": in 12 of 12 (100%); string 12 (100%)
        // proposed (observed, not enforced): #[validate(max_length = 2, allowed = ["u0", "u1", "u2", "u3"])]
        // every stored value is one of these 4 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
        #[validate(allowed = ["u0", "u1", "u2", "u3"])]
        user: String,
        // "at": in 12 of 12 (100%); date 12 (100%)
        at: DateTime,
        // "target": in 12 of 12 (100%); string 12 (100%)
        // proposed (observed, not enforced): #[validate(max_length = 9)]
        target: String,
    },
    // "kind" = "page_view": 12 of 36 documents of the second sample
    #[serde(rename = "page_view")]
    PageView {
        // "_id": in 12 of 12 (100%); objectId 12 (100%)
        #[serde(rename = "_id")]
        id: ObjectId,
        // "user": in 12 of 12 (100%); string 12 (100%)
        // proposed (observed, not enforced): #[validate(max_length = 2, allowed = ["u0", "u1", "u2", "u3"])]
        // every stored value is one of these 4 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
        #[validate(allowed = ["u0", "u1", "u2", "u3"])]
        user: String,
        // "at": in 12 of 12 (100%); date 12 (100%)
        at: DateTime,
        // "path": in 12 of 12 (100%); string 12 (100%)
        // proposed (observed, not enforced): #[validate(max_length = 5)]
        path: String,
        // "ms": in 6 of 12 (50%); long 6 (100%)
        // proposed (observed, not enforced): #[validate(minimum = 40, maximum = 340)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ms: Option<i64>,
    },
    // "kind" = "purchase": 12 of 36 documents of the second sample
    #[serde(rename = "purchase")]
    Purchase {
        // "_id": in 12 of 12 (100%); objectId 12 (100%)
        #[serde(rename = "_id")]
        id: ObjectId,
        // "user": in 12 of 12 (100%); string 12 (100%)
        // proposed (observed, not enforced): #[validate(max_length = 2, allowed = ["u0", "u1", "u2", "u3"])]
        // every stored value is one of these 4 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
        #[validate(allowed = ["u0", "u1", "u2", "u3"])]
        user: String,
        // "at": in 12 of 12 (100%); date 12 (100%)
        at: DateTime,
        // "order_id": in 12 of 12 (100%); string 12 (100%)
        // proposed (observed, not enforced): #[validate(max_length = 4)]
        order_id: String,
        // "amount_cents": in 12 of 12 (100%); long 12 (100%)
        // proposed (observed, not enforced): #[validate(minimum = 200, maximum = 3500)]
        amount_cents: i64,
    },
}

/// The collection "audit": 10 of about 10 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "audit")]
// workload (0 system.profile entries): rows a declared index serves are attributes, the others comments
#[index(keys(actor))]
#[index(keys(org_id, at))]
pub struct Audit {
    // "_id": in 10 of 10 (100%); objectId 10 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "org_id": in 10 of 10 (100%); string 10 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 7, allowed = ["acme", "globex", "initech"])]
    // every stored value is one of these 3 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
    #[validate(allowed = ["acme", "globex", "initech"])]
    pub org_id: String,
    // "actor": in 10 of 10 (100%); string 10 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 2)]
    pub actor: String,
    // "at": in 10 of 10 (100%); date 10 (100%)
    pub at: DateTime,
}

/// The collection "channels": 30 of about 30 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "channels")]
// workload (0 system.profile entries): rows a declared index serves are attributes, the others comments
pub struct Channel {
    // "_id": in 30 of 30 (100%); objectId 30 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "name": in 30 of 30 (100%); string 30 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 10)]
    pub name: String,
    // "subscribers": in 30 of 30 (100%); array 30 (100%)
    // arrays of up to 12 elements
    // proposed (observed, not enforced): #[validate(max_items = 12)]
    // an outlier array in docshape's shape already: 2 document(s) overflowed into "channels_overflow" (flag `subscribers_overflowed`); `infer --plain` leaves a plain array
    #[outlier(threshold = 12, overflow = "channels_overflow", flag = subscribers_overflowed, count = subscribers_count)]
    pub subscribers: Vec<ObjectId>,
    // "subscribers_overflowed": in 30 of 30 (100%); bool 30 (100%)
    pub subscribers_overflowed: bool,
    // "subscribers_count": in 30 of 30 (100%); int 30 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 2500)]
    pub subscribers_count: i32,
}

// The collection "channels_overflow": the overflow of `channels.subscribers`, declared by its `#[outlier]`: no model of its own.

/// A sub-document, seen 39 times.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct SensorHourItem {
    // "t": in 39 of 39 (100%); date 39 (100%)
    pub t: DateTime,
    // "v": in 39 of 39 (100%); double 39 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 0.0, maximum = 7.5)]
    pub v: f64,
}

/// A bucket's id: its series and its period's start, and `seq` on the period's next bucket once one is full.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct SensorHourId {
    #[validate(max_length = 64)]
    pub sensor: String,
    pub hour: DateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i32>,
}

/// The collection "sensor_hours": 9 of about 9 documents sampled.
// bucket documents in docshape's shape (INFERRED.md): `#[bucket]` appends and reads them; `infer --plain` writes a plain struct
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sensor_hours")]
// workload (0 system.profile entries): rows a declared index serves are attributes, the others comments
#[index(keys(sensor, hour))]
#[bucket(series = sensor, period = hour, per = "hour", max = 6, items = readings, time = t, count = count)]
pub struct SensorHour {
    #[serde(rename = "_id")]
    pub id: SensorHourId,
    // the series: string 9 (100%)
    #[validate(max_length = 64)]
    pub sensor: String,
    // the period's start, on the hour
    pub hour: DateTime,
    // the items' count, equal to their length in every document
    pub count: i32,
    // the items, at most 6 a bucket (the longest stored), each with its time `t`
    pub readings: Vec<SensorHourItem>,
}

/// The collection "tickets": 30 of about 30 documents sampled.
// every index but `_id_` (3 of them, TTL aside) leads with "org_id": the tenant, which every row filters on first (INFERRED.md); `infer --plain` leaves it off
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "tickets", tenant = org_id)]
// workload (6 system.profile entries): rows a declared index serves are attributes, the others comments
#[access(name = "by_org_id_status", filter(org_id, status), freq = "3 r/s")] // 4 calls; served by "org_id_1_status_1"
// #[access(name = "by_status", filter(status), freq = "1 r/s")] // 2 calls; does not filter on the tenant `org_id` (rule `tenant_filter`): the application must say whose documents it reads
#[index(keys(expires_at), expire_after = "3600s")]
#[index(keys(org_id, number), unique)]
#[index(keys(org_id, opened = -1))]
#[index(keys(org_id, status))]
pub struct Ticket {
    // "_id": in 30 of 30 (100%); objectId 30 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "org_id": in 30 of 30 (100%); string 30 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 7, allowed = ["acme", "globex", "initech"])]
    // the tenant: every index leads with it (INFERRED.md); no `allowed` from the data, a tenant's values grow with its customers
    pub org_id: String,
    // "number": in 30 of 30 (100%); int 30 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 0, maximum = 9)]
    pub number: i32,
    // "status": in 30 of 30 (100%); string 30 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 6, allowed = ["closed", "open"])]
    // every stored value is one of these 2 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
    #[validate(allowed = ["closed", "open"])]
    pub status: String,
    // "title": in 30 of 30 (100%); string 30 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 9)]
    pub title: String,
    // "opened": in 30 of 30 (100%); date 30 (100%)
    pub opened: DateTime,
    // "expires_at": in 30 of 30 (100%); date 30 (100%)
    pub expires_at: DateTime,
}
