//! Models inferred by `docshape infer` from the database "shop": review every
//! comment, bound and `TODO` before relying on them (see INFERRED.md).

#![allow(clippy::duplicated_attributes)]

use docshape::refs::Ref;
use docshape::Model;
#[allow(unused_imports)]
use docshape::bson::{oid::ObjectId};
use serde::{Deserialize, Serialize};

/// The collection "callouts": 40 of about 40 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "callouts")]
pub struct Callout {
    // "_id": in 40 of 40 (100%); int 40 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 40)]
    #[serde(rename = "_id")]
    pub id: i32,
    // "agent_id": in 40 of 40 (100%); int 40 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 6)]
    pub agent_id: i32,
}

/// The collection "columnists": 8 of about 8 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "columnists")]
pub struct Columnist {
    // "_id": in 8 of 8 (100%); objectId 8 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "name": in 8 of 8 (100%); string 8 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 11)]
    pub name: String,
}

/// The collection "dispatchers": 6 of about 6 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "dispatchers")]
pub struct Dispatcher {
    // "_id": in 6 of 6 (100%); long 6 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 6)]
    #[serde(rename = "_id")]
    pub id: i64,
    // "desk": in 6 of 6 (100%); string 6 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 2)]
    pub desk: String,
}

/// The collection "essays": 50 of about 50 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "essays")]
#[index(keys(author_id))]
pub struct Essay {
    // "_id": in 50 of 50 (100%); int 50 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 50)]
    #[serde(rename = "_id")]
    pub id: i32,
    // "title": in 50 of 50 (100%); string 50 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 7)]
    pub title: String,
    // "author_id": in 50 of 50 (100%); objectId 50 (100%)
    // holds `Columnist` ids (sampled values looked up there): `Ref<Columnist>`; `infer --plain` leaves the raw id
    pub author_id: Ref<Columnist>,
    // "author_name": in 50 of 50 (100%); string 50 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 11)]
    // a copy of the referenced document's field, stale in 2 of 50 documents (refresh them first: INFERRED.md): `#[denormalized]`; `infer --plain` leaves it undeclared
    #[denormalized(from = "Columnist::name", via = "author_id", refresh = "sync")]
    pub author_name: String,
    // "reviewer_id": in 30 of 50 (60%); objectId 30 (100%)
    // holds `Columnist` ids (sampled values looked up there): `Ref<Columnist>`; `infer --plain` leaves the raw id
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer_id: Option<Ref<Columnist>>,
}

/// The collection "remarks": 20 of about 20 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "remarks")]
pub struct Remark {
    // "_id": in 20 of 20 (100%); objectId 20 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "by": in 20 of 20 (100%); objectId 20 (100%)
    // holds `Columnist` ids (sampled values looked up there): `Ref<Columnist>`; `infer --plain` leaves the raw id
    pub by: Ref<Columnist>,
    // "by_name": in 20 of 20 (100%); string 20 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 11)]
    // a copy of the referenced document's field, equal in all 20 documents: `#[denormalized]`; `infer --plain` leaves it undeclared
    #[denormalized(from = "Columnist::name", via = "by", refresh = "never")]
    pub by_name: String,
    // "text": in 20 of 20 (100%); string 20 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 2, allowed = ["ok"])]
    pub text: String,
}
