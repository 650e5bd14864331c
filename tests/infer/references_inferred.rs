//! Models inferred by `docshape infer` from the database "shop": review every
//! comment, bound and `TODO` before relying on them (see INFERRED.md).

use docshape::refs::Ref;
use docshape::Model;
#[allow(unused_imports)]
use docshape::bson::{oid::ObjectId};
use serde::{Deserialize, Serialize};

/// The collection "agents": 6 of about 6 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "agents")]
pub struct Agent {
    // "_id": in 6 of 6 (100%); long 6 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 6)]
    #[serde(rename = "_id")]
    pub id: i64,
    // "desk": in 6 of 6 (100%); string 6 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 2)]
    pub desk: String,
}

/// The collection "authors": 8 of about 8 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "authors")]
pub struct Author {
    // "_id": in 8 of 8 (100%); objectId 8 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "name": in 8 of 8 (100%); string 8 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 8)]
    pub name: String,
}

/// The collection "comments": 20 of about 20 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "comments")]
pub struct Comment {
    // "_id": in 20 of 20 (100%); objectId 20 (100%)
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // "by": in 20 of 20 (100%); objectId 20 (100%)
    // holds `Author` ids (sampled values looked up there): `Ref<Author>`; `infer --plain` leaves the raw id
    pub by: Ref<Author>,
    // "by_name": in 20 of 20 (100%); string 20 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 8)]
    // a copy of the referenced document's field, equal in all 20 documents: `#[denormalized]`; `infer --plain` leaves it undeclared
    #[denormalized(from = "Author::name", via = "by", refresh = "never")]
    pub by_name: String,
    // "text": in 20 of 20 (100%); string 20 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 2, allowed = ["ok"])]
    pub text: String,
}

/// The collection "posts": 50 of about 50 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id))]
pub struct Post {
    // "_id": in 50 of 50 (100%); int 50 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 50)]
    #[serde(rename = "_id")]
    pub id: i32,
    // "title": in 50 of 50 (100%); string 50 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 7)]
    pub title: String,
    // "author_id": in 50 of 50 (100%); objectId 50 (100%)
    // holds `Author` ids (sampled values looked up there): `Ref<Author>`; `infer --plain` leaves the raw id
    pub author_id: Ref<Author>,
    // "author_name": in 50 of 50 (100%); string 50 (100%)
    // proposed (observed, not enforced): #[validate(max_length = 8)]
    // a copy of the referenced document's field, stale in 2 of 50 documents (refresh them first: INFERRED.md): `#[denormalized]`; `infer --plain` leaves it undeclared
    #[denormalized(from = "Author::name", via = "author_id", refresh = "sync")]
    pub author_name: String,
    // "reviewer_id": in 30 of 50 (60%); objectId 30 (100%)
    // holds `Author` ids (sampled values looked up there): `Ref<Author>`; `infer --plain` leaves the raw id
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer_id: Option<Ref<Author>>,
}

/// The collection "tickets": 40 of about 40 documents sampled.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "tickets")]
pub struct Ticket {
    // "_id": in 40 of 40 (100%); int 40 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 40)]
    #[serde(rename = "_id")]
    pub id: i32,
    // "agent_id": in 40 of 40 (100%); int 40 (100%)
    // proposed (observed, not enforced): #[validate(minimum = 1, maximum = 6)]
    pub agent_id: i32,
}
