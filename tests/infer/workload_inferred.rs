//! Models inferred by `docshape infer` from the database "shop": review every
//! comment, bound and `TODO` before relying on them (see INFERRED.md).

#![allow(clippy::duplicated_attributes)]

use docshape::Model;
#[allow(unused_imports)]
use docshape::bson::{DateTime, oid::ObjectId};
use serde::{Deserialize, Serialize};

/// The collection "infer_workload_orders": 200 of about 200 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "infer_workload_orders")]
// workload (130 system.profile entries): rows a declared index serves are attributes, the others comments
#[access(name = "by_customer", filter(customer), sort(placed_at = -1), freq = "1 r/s")] // 60 calls; served by "customer_1_placed_at_-1"
#[access(name = "by_status_total", filter(status), range(total), freq = "1 r/s")] // 30 calls; served by "status_1_total_1"
#[access(name = "by_id", filter(_id), freq = "1 r/s")] // 20 calls; served by "_id_"
#[access(name = "by_region", filter(region), freq = "1 r/s")] // 10 calls; served by "region_1"
#[access(name = "by_customer_region", filter(customer, region), freq = "1 r/s")] // 6 calls; served by "customer_1_region_1"
#[access(name = "by_status", filter(status), freq = "1 r/s")] // 4 calls; served by "status_1_total_1"
#[index(keys(customer, placed_at = -1))]
#[index(keys(customer, region))]
#[index(keys(region))]
#[index(keys(status, total))]
pub struct InferWorkloadOrder {
    // "_id": in 200 of 200 (100%); objectId 200 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "customer": in 200 of 200 (100%); string 200 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 2)]
    pub customer: String,
    // "status": in 200 of 200 (100%); string 200 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 4, allowed = ["new", "paid"])]
    // every stored value is one of these 2 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
    #[validate(allowed = ["new", "paid"])]
    pub status: String,
    // "placed_at": in 200 of 200 (100%); date 200 (100%)
    pub placed_at: DateTime,
    // "total": in 200 of 200 (100%); long 200 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 0, maximum = 597)]
    pub total: i64,
    // "region": in 200 of 200 (100%); string 200 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 2, allowed = ["eu", "us"])]
    // every stored value is one of these 2 (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String
    #[validate(allowed = ["eu", "us"])]
    pub region: String,
    // "sku": in 200 of 200 (100%); string 200 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 4)]
    pub sku: String,
}
