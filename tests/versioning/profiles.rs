//! The three-version profile of the versioning tests (v1 -> v2 -> v3, typed all the
//! way), shared by the test binary and the backfill's child process.

// Not every item is used by both the test binary and the child process.
#![allow(dead_code)]

use docshape::bson::{doc, Document};
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "profiles", version = 3, migrate(v1 = ProfileV1, v2 = ProfileV2))]
pub struct Profile {
    #[serde(rename = "_id")]
    pub id: i64,
    pub email: String,
    pub email_verified: bool,
    pub tags: Vec<String>,
    #[schema_version]
    pub v: i64,
}

/// v1: `mail`, tags as one comma-separated string.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct ProfileV1 {
    #[serde(rename = "_id")]
    id: i64,
    mail: String,
    tags: String,
}

/// v2: `email`, tags as an array.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct ProfileV2 {
    #[serde(rename = "_id")]
    id: i64,
    email: String,
    tags: Vec<String>,
}

impl From<ProfileV1> for ProfileV2 {
    fn from(p: ProfileV1) -> Self {
        let tags = p.tags.split(',').filter(|t| !t.is_empty()).map(str::to_owned).collect();
        ProfileV2 { id: p.id, email: p.mail, tags }
    }
}

impl From<ProfileV2> for Profile {
    fn from(p: ProfileV2) -> Self {
        Profile { id: p.id, email: p.email, email_verified: false, tags: p.tags, v: 0 }
    }
}

/// The profile `i` stored at version `1 + i % 3`, and what it must read as.
pub fn profile(i: i64) -> (Document, Profile) {
    let tags: Vec<String> = (0..i % 4).map(|t| format!("t{t}")).collect();
    let email = format!("p{i}@example.com");
    let expected = Profile {
        id: i,
        email: email.clone(),
        email_verified: i % 3 == 2 && i % 2 == 0,
        tags: tags.clone(),
        v: 3,
    };
    let stored = match i % 3 {
        0 => doc! { "_id": i, "mail": &email, "tags": tags.join(",") },
        1 => doc! { "_id": i, "email": &email, "tags": &tags, "v": 2_i64 },
        _ => {
            doc! { "_id": i, "email": &email, "email_verified": expected.email_verified, "tags": &tags, "v": 3_i64 }
        }
    };
    (stored, expected)
}
