//! Schema versioning: every stored version is read into the current type, the next
//! write persists the upgraded shape, and a resumable backfill upgrades the rest.
//!
//! Declare the current version, the field that holds it, and one upgrade step for every
//! older version:
//!
//! ```
//! use docshape::{Embedded, Model};
//! use docshape::bson::oid::ObjectId;
//! use serde::{Deserialize, Serialize};
//!
//! // patterns-en: v1 stored `name`, v2 stores `full_name`.
//! #[derive(Serialize, Deserialize, Model)]
//! #[model(collection = "users", version = 2, migrate(v1 = UserV1))]
//! struct User {
//!     #[serde(rename = "_id")]
//!     id: ObjectId,
//!     full_name: String,
//!     #[schema_version]
//!     schema_version: i32,
//! }
//!
//! // The v1 shape, as stored; `Embedded` gives the validator its schema.
//! #[derive(Serialize, Deserialize, Embedded)]
//! struct UserV1 {
//!     #[serde(rename = "_id")]
//!     id: ObjectId,
//!     name: String,
//! }
//!
//! impl From<UserV1> for User {
//!     fn from(v1: UserV1) -> Self {
//!         User { id: v1.id, full_name: v1.name, schema_version: 2 }
//!     }
//! }
//!
//! let v1 = docshape::bson::doc! { "_id": ObjectId::new(), "name": "Ada" };
//! let user: User = docshape::versioning::decode(v1).unwrap();
//! assert_eq!((user.full_name.as_str(), user.schema_version), ("Ada", 2));
//! ```
//!
//! A step is either **typed** (`v1 = UserV1`: the old shape as a struct, with
//! `From<UserV1>` for the next version's struct, chained up to the current type) or
//! **over documents** (`v1(document = upgrade_v1)` with
//! `fn upgrade_v1(Document) -> Result<Document, E>`, `E: Display`, returning the next
//! version's document). Document steps may come before typed ones, not after. A
//! document without the version field is version 1, or what
//! `#[schema_version(missing = N)]` says. The compiler refuses a version with no path
//! to the current one, a version field that is not an integer, and steps that do not
//! chain.
//!
//! **Reading** ([`decode`], [`find_one`], [`find`]) upgrades in memory; a version newer
//! than the code or without a step is an error naming the collection, the `_id` and the
//! version, never a panic or a silently dropped document. Each read is counted by the
//! version it was stored at ([`reads`]) so you can see when the old reader can go.
//!
//! **Writing**: [`update_one`] applies an update only to a current-version document; it
//! first persists the upgraded shape of an old one with a compare-and-set: the write
//! (an update of what differs, never a replacement) applies only while every field the
//! document had when read still holds the same value, so a concurrent writer's change
//! is never overwritten, and a field another writer added meanwhile survives. A lost
//! race means reading again and retrying ([`RetryPolicy`]). [`Loaded::save`] writes a
//! document read with [`find_one`] the same way, and returns
//! [`VersionError::Conflict`] when it changed meanwhile.
//!
//! **Backfill** ([`backfill`]) upgrades the remaining old documents in batches, with
//! the same compare-and-set: resumable from a checkpoint, idempotent, bounded in memory
//! and rate-limitable, with a progress bar on a terminal and events otherwise.
//! [`version_counts`] gives `{1: n, 2: m}` for the collection.
//!
//! **The validator** of a versioned model accepts every declared version:
//! `anyOf` the current shape with the version field equal to the current version, each
//! typed step's shape with its version, and, for a document step, any object with that
//! version. Old documents can still be inserted by old code and read and updated by new
//! code until the backfill is done; then drop the steps to tighten it.

// A `VersionError` names the document (`_id` as `Bson`) it concerns, which makes it
// large; errors here are rare and cost a round trip anyway, so the size is not boxed away.
#![allow(clippy::result_large_err)]

mod backfill;
mod decode;
mod write;

pub use crate::core::version::{StepFailure, VersionError};
pub use backfill::{
    backfill, version_counts, BackfillEnd, BackfillEvent, BackfillOptions, BackfillReport, Progress,
    StopReason, VersionCounts, CHECKPOINTS,
};
pub use decode::{decode, reads, stored_version, validator, variants_validator, ReadCounter, Versioned};
pub use write::{
    find, find_one, insert_one, insert_one_in, modify, update_one, upgrade_in_place, Loaded, RetryPolicy,
    UpdateOutcome,
};
