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

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::{IsTerminal, Write as _};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use futures_util::TryStreamExt;
use mongodb::options::FindOptions;
use mongodb::Database;
use serde::Serialize;

use crate::core::model::Model;
pub use crate::core::version::{StepFailure, VersionError};

/// A model with a schema version: what `#[model(version = N, migrate(...))]` and
/// `#[schema_version]` generate.
pub trait Versioned: Model + Serialize + serde::de::DeserializeOwned {
    /// The current version.
    const VERSION: i64;
    /// The version field's stored name.
    const VERSION_FIELD: &'static str;
    /// The version of a document that has no version field.
    const MISSING_VERSION: i64;
    /// The older versions that have an upgrade step, ascending.
    const OLD_VERSIONS: &'static [i64];

    /// Upgrades a document stored at `version` (older than [`Versioned::VERSION`]) to
    /// the current type, through the declared steps; the result carries the current
    /// version in its version field. Call [`decode`] rather than this.
    fn upgrade(version: i64, document: Document) -> Result<Self, StepFailure>;

    /// Sets the version field to the current version.
    fn stamp(&mut self);

    /// The process's read counter for this model.
    #[doc(hidden)]
    fn read_counter() -> &'static ReadCounter;
}

/// Reads counted by the version they were stored at, for one model in this process.
#[derive(Debug, Default)]
pub struct ReadCounter(Mutex<BTreeMap<i64, u64>>);

impl ReadCounter {
    /// An empty counter (for generated statics).
    pub const fn new() -> Self {
        Self(Mutex::new(BTreeMap::new()))
    }

    fn count(&self, version: i64) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *map.entry(version).or_default() += 1;
    }

    fn snapshot(&self) -> BTreeMap<i64, u64> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// How many documents of `T` this process has read, by the version they were stored
/// at: when the old versions stay at zero for long enough, the old steps can go.
pub fn reads<T: Versioned>() -> BTreeMap<i64, u64> {
    T::read_counter().snapshot()
}

/// The version a document is stored at.
pub fn stored_version<T: Versioned>(document: &Document) -> Result<i64, VersionError> {
    match document.get(T::VERSION_FIELD) {
        None => Ok(T::MISSING_VERSION),
        Some(Bson::Int32(v)) => Ok(i64::from(*v)),
        Some(Bson::Int64(v)) => Ok(*v),
        // The legacy shell writes numbers as doubles.
        Some(Bson::Double(v)) if v.fract() == 0.0 && v.abs() < 9.0e15 => Ok(*v as i64),
        Some(other) => Err(VersionError::BadVersionField {
            collection: T::COLLECTION,
            id: id_of(document),
            field: T::VERSION_FIELD,
            value: other.clone(),
        }),
    }
}

fn id_of(document: &Document) -> Bson {
    document.get("_id").cloned().unwrap_or(Bson::Null)
}

/// A document read for writing back must have an `_id`: the compare-and-set is keyed
/// on it.
fn require_id<T: Versioned>(document: &Document) -> Result<(), VersionError> {
    if document.contains_key("_id") {
        Ok(())
    } else {
        Err(VersionError::NoId { collection: T::COLLECTION })
    }
}

/// Reads a stored document of any declared version as the current type.
pub fn decode<T: Versioned>(document: Document) -> Result<T, VersionError> {
    let version = stored_version::<T>(&document)?;
    decode_at(version, document)
}

fn decode_at<T: Versioned>(version: i64, document: Document) -> Result<T, VersionError> {
    let id = || id_of(&document);
    if version > T::VERSION {
        return Err(VersionError::NewerVersion {
            collection: T::COLLECTION,
            id: id(),
            version,
            current: T::VERSION,
        });
    }
    if version < T::VERSION && !T::OLD_VERSIONS.contains(&version) {
        let mut known = T::OLD_VERSIONS.to_vec();
        known.push(T::VERSION);
        return Err(VersionError::NoPath { collection: T::COLLECTION, id: id(), version, known });
    }
    let id = id();
    // Whatever the stored form (absent, an int, a shell's double), the version reaches
    // serde as a long, which every integer field accepts when it fits.
    let mut document = document;
    if version == T::VERSION || document.contains_key(T::VERSION_FIELD) {
        document.insert(T::VERSION_FIELD, Bson::Int64(version));
    }
    let value = if version == T::VERSION {
        bson::from_document(document).map_err(StepFailure::decode(version))
    } else {
        T::upgrade(version, document)
    };
    let value =
        value.map_err(|failure| VersionError::Upgrade { collection: T::COLLECTION, id, version, failure })?;
    T::read_counter().count(version);
    Ok(value)
}

/// The current shape of `value` as stored: serialized, with the current version in the
/// BSON type serde writes for the field (an `i32` field stays an int).
fn encode<T: Versioned>(value: &T) -> Result<Document, VersionError> {
    let mut document = bson::to_document(value).map_err(VersionError::Encode)?;
    let version = match document.get(T::VERSION_FIELD) {
        Some(Bson::Int32(_)) => i32::try_from(T::VERSION).map_or(Bson::Int64(T::VERSION), Bson::Int32),
        Some(Bson::Double(_)) => Bson::Double(T::VERSION as f64),
        _ => Bson::Int64(T::VERSION),
    };
    document.insert(T::VERSION_FIELD, version);
    Ok(document)
}

/// Matches the document only while every field it had when read still holds the same
/// value (its version included, or its absence): the compare of compare-and-set.
/// Field by field with `$eq`, so that the `_id` index serves it and a stored value
/// that looks like an operator is compared, not run.
fn unchanged_since<T: Versioned>(original: &Document) -> Document {
    let mut filter = doc! { "_id": id_of(original) };
    for (key, value) in original.iter().filter(|(k, _)| *k != "_id") {
        let condition = match value {
            // `$eq: null` also matches a missing field: a removed field would pass.
            Bson::Null => doc! { "$type": "null" },
            // `$eq: [..]` also matches an array holding that array as an element.
            Bson::Array(items) => doc! { "$eq": value.clone(), "$size": items.len() as i64 },
            _ => doc! { "$eq": value.clone() },
        };
        filter.insert(key.clone(), condition);
    }
    if !original.contains_key(T::VERSION_FIELD) {
        filter.insert(T::VERSION_FIELD, doc! { "$exists": false });
    }
    filter
}

/// A document read as the current type, with what is needed to write it back safely.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    /// The document as the current type.
    pub value: T,
    /// The version it was stored at.
    pub stored_version: i64,
    original: Document,
}

impl<T: Versioned> Loaded<T> {
    /// Reads `document` (as returned by the server) as the current type.
    pub fn from_document(document: Document) -> Result<Self, VersionError> {
        let stored_version = stored_version::<T>(&document)?;
        let value = decode_at(stored_version, document.clone())?;
        Ok(Self { value, stored_version, original: document })
    }

    /// The document's `_id`.
    pub fn id(&self) -> Bson {
        id_of(&self.original)
    }

    /// Whether the stored document is older than the current version.
    pub fn is_outdated(&self) -> bool {
        self.stored_version < T::VERSION
    }

    /// Whether the stored document lacks what a current one carries: an older version,
    /// or no version field at all (`missing` equal to the current version).
    fn needs_stamp(&self) -> bool {
        self.is_outdated() || !self.original.contains_key(T::VERSION_FIELD)
    }

    /// Writes [`Loaded::value`] back, at the current version, if every field the
    /// document had when read still holds the same value; otherwise
    /// [`VersionError::Conflict`], and nothing is written.
    ///
    /// The write is an update of what differs (`$set` of changed and new fields,
    /// `$unset` of removed ones), not a replacement, so a field another writer added
    /// since the read survives. After a save, the value is what is stored, so it can be
    /// saved again.
    pub async fn save(&mut self, db: &Database) -> Result<(), VersionError> {
        require_id::<T>(&self.original)?;
        let new = encode(&self.value)?;
        let (mut set, mut unset) = (Document::new(), Document::new());
        for (key, value) in new.iter().filter(|(k, _)| *k != "_id") {
            if self.original.get(key) != Some(value) {
                set.insert(key.clone(), value.clone());
            }
        }
        for key in self.original.keys().filter(|k| *k != "_id" && !new.contains_key(k.as_str())) {
            unset.insert(key.clone(), "");
        }
        let collection = db.collection::<Document>(T::COLLECTION);
        let filter = unchanged_since::<T>(&self.original);
        // A key `$set` would read as a path or an operator: replace the document instead
        // (keys with dots or a leading `$` come only from maps flattened into the type).
        let plain = |k: &String| !k.contains('.') && !k.starts_with('$');
        // What the write may have changed, for the denormalized copies of this model:
        // `None` for a replacement (anything).
        let mut written: Option<Document> = None;
        let matched = if !set.keys().chain(unset.keys()).all(plain) {
            let mut replacement = new.clone();
            replacement.insert("_id", self.id());
            collection.replace_one(filter, replacement).await?.matched_count
        } else if set.is_empty() && unset.is_empty() {
            // Nothing to write; still say whether the document is as it was read.
            collection.count_documents(filter).await?
        } else {
            let mut update = Document::new();
            if !set.is_empty() {
                update.insert("$set", set.clone());
            }
            if !unset.is_empty() {
                update.insert("$unset", unset.clone());
            }
            let matched = collection.update_one(filter, update.clone()).await?.matched_count;
            written = Some(update);
            matched
        };
        if matched == 0 {
            return Err(VersionError::Conflict { collection: T::COLLECTION, id: self.id(), attempts: 1 });
        }
        if !(set.is_empty() && unset.is_empty()) {
            crate::core::hooks::after_source_write(db, T::COLLECTION, &self.id(), written.as_ref())
                .await
                .map_err(|e| VersionError::Copies(Box::new(e)))?;
        }
        self.value.stamp();
        self.stored_version = T::VERSION;
        for key in unset.keys() {
            self.original.remove(key);
        }
        self.original.extend(set);
        Ok(())
    }
}

/// The first document matching `filter`, read as the current type.
pub async fn find_one<T: Versioned>(
    db: &Database,
    filter: Document,
) -> Result<Option<Loaded<T>>, VersionError> {
    match db.collection::<Document>(T::COLLECTION).find_one(filter).await? {
        Some(document) => Loaded::from_document(document).map(Some),
        None => Ok(None),
    }
}

/// Every document matching `filter`, read as the current type. An unreadable document
/// is an error, not a gap: nothing is silently dropped.
pub async fn find<T: Versioned>(db: &Database, filter: Document) -> Result<Vec<Loaded<T>>, VersionError> {
    let mut cursor = db.collection::<Document>(T::COLLECTION).find(filter).await?;
    let mut out = Vec::new();
    while let Some(document) = cursor.try_next().await? {
        out.push(Loaded::from_document(document)?);
    }
    Ok(out)
}

/// Inserts `value` at the current version, whatever its version field says.
pub async fn insert_one<T: Versioned>(db: &Database, value: &T) -> Result<(), VersionError> {
    db.collection::<Document>(T::COLLECTION).insert_one(encode(value)?).await?;
    Ok(())
}

/// How many times a write retries after losing a race with another writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included; at least 1.
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    /// Eight attempts: each lost race means another writer made progress.
    fn default() -> Self {
        Self { max_attempts: 8 }
    }
}

/// What [`update_one`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateOutcome {
    /// The version the document was stored at before.
    pub stored_version: i64,
    /// Whether this call persisted the upgraded shape.
    pub upgraded: bool,
    /// Attempts made, the first included.
    pub attempts: u32,
}

/// Applies `update` (an update document: `$set`, `$inc`, ...) to the current-version
/// document with this `_id`. A document at an older version is first upgraded and
/// written back with a compare-and-set on every field of the document as read, then updated; a
/// lost race reads again, up to `policy.max_attempts`. One round trip when the
/// document is already current.
pub async fn update_one<T: Versioned>(
    db: &Database,
    id: impl Into<Bson>,
    update: Document,
    policy: RetryPolicy,
) -> Result<UpdateOutcome, VersionError> {
    let id = id.into();
    let collection = db.collection::<Document>(T::COLLECTION);
    let mut upgraded = false;
    let mut stored = T::VERSION;
    let attempts = policy.max_attempts.max(1);
    let mut attempt = 0;
    while attempt < attempts {
        attempt += 1;
        let done = collection
            .update_one(doc! { "_id": id.clone(), T::VERSION_FIELD: T::VERSION }, update.clone())
            .await?;
        if done.matched_count == 1 {
            crate::core::hooks::after_source_write(db, T::COLLECTION, &id, Some(&update))
                .await
                .map_err(|e| VersionError::Copies(Box::new(e)))?;
            return Ok(UpdateOutcome { stored_version: stored, upgraded, attempts: attempt });
        }
        let Some(document) = collection.find_one(doc! { "_id": id.clone() }).await? else {
            return Err(VersionError::NotFound { collection: T::COLLECTION, id });
        };
        let mut loaded = Loaded::<T>::from_document(document)?;
        if !loaded.needs_stamp() {
            // Made current by someone else between the two commands: update again.
            continue;
        }
        stored = loaded.stored_version;
        match loaded.save(db).await {
            // The first upgrade is not the caller's update: it does not use up an
            // attempt (later ones do, so old writers cannot keep this loop going).
            Ok(()) => {
                if !upgraded {
                    attempt -= 1;
                }
                upgraded = true;
            }
            Err(VersionError::Conflict { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Err(VersionError::Conflict { collection: T::COLLECTION, id, attempts })
}

/// Read, change, write back: reads the document with this `_id` as the current type,
/// applies `change`, and saves it with a compare-and-set on every field of the document as read,
/// retrying from the read when another writer got there first.
pub async fn modify<T: Versioned>(
    db: &Database,
    id: impl Into<Bson>,
    policy: RetryPolicy,
    mut change: impl FnMut(&mut T),
) -> Result<T, VersionError> {
    let id = id.into();
    let attempts = policy.max_attempts.max(1);
    for _ in 0..attempts {
        let Some(mut loaded) = find_one::<T>(db, doc! { "_id": id.clone() }).await? else {
            return Err(VersionError::NotFound { collection: T::COLLECTION, id });
        };
        change(&mut loaded.value);
        match loaded.save(db).await {
            Ok(()) => return Ok(loaded.value),
            Err(VersionError::Conflict { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(VersionError::Conflict { collection: T::COLLECTION, id, attempts })
}

/// How many documents of a collection are stored at each version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionCounts {
    /// Documents by version; documents without the field count as
    /// [`Versioned::MISSING_VERSION`].
    pub by_version: BTreeMap<i64, u64>,
    /// Documents whose version field is not an integer.
    pub unreadable: u64,
}

impl VersionCounts {
    /// Documents in all.
    pub fn total(&self) -> u64 {
        self.by_version.values().sum::<u64>() + self.unreadable
    }

    /// Documents below `version`.
    pub fn older_than(&self, version: i64) -> u64 {
        self.by_version.range(..version).map(|(_, n)| n).sum()
    }
}

impl fmt::Display for VersionCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (v, n)) in self.by_version.iter().enumerate() {
            write!(f, "{}{v}: {n}", if i > 0 { ", " } else { "" })?;
        }
        if self.unreadable > 0 {
            write!(f, ", unreadable: {}", self.unreadable)?;
        }
        f.write_str("}")
    }
}

/// `{1: n, 2: m}`: the collection's documents by stored version, counted by the server.
pub async fn version_counts<T: Versioned>(db: &Database) -> Result<VersionCounts, VersionError> {
    let field = format!("${}", T::VERSION_FIELD);
    let mut cursor = db
        .collection::<Document>(T::COLLECTION)
        .aggregate([doc! { "$group": { "_id": field, "n": { "$sum": 1 } } }])
        .await?;
    let mut counts = VersionCounts::default();
    while let Some(group) = cursor.try_next().await? {
        let n = match group.get("n") {
            Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or(0),
            Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or(0),
            Some(Bson::Double(n)) => *n as u64,
            _ => 0,
        };
        let version = match group.get("_id") {
            None | Some(Bson::Null) => Some(T::MISSING_VERSION),
            Some(Bson::Int32(v)) => Some(i64::from(*v)),
            Some(Bson::Int64(v)) => Some(*v),
            Some(Bson::Double(v)) if v.fract() == 0.0 => Some(*v as i64),
            Some(_) => None,
        };
        match version {
            Some(v) => *counts.by_version.entry(v).or_default() += n,
            None => counts.unreadable += n,
        }
    }
    Ok(counts)
}

/// How [`backfill`] reports progress.
#[derive(Clone, Default)]
pub enum Progress {
    /// A progress bar on stderr when stderr is a terminal; nothing otherwise.
    #[default]
    Auto,
    /// Nothing.
    Silent,
    /// Each event to this function (after every batch, and at the end).
    Events(Arc<dyn Fn(&BackfillEvent) + Send + Sync>),
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "Auto",
            Self::Silent => "Silent",
            Self::Events(_) => "Events(..)",
        })
    }
}

/// [`backfill`]'s settings.
#[derive(Debug, Clone)]
pub struct BackfillOptions {
    /// Documents read per batch: memory stays within one batch. Default 500.
    pub batch_size: u32,
    /// At most this many documents upgraded per second; `None` for no limit.
    pub max_per_second: Option<f64>,
    /// Stop after upgrading this many documents, leaving the checkpoint for the next
    /// run (a bounded maintenance window); `None` to run to the end.
    pub max_documents: Option<u64>,
    /// Where progress goes.
    pub progress: Progress,
}

impl Default for BackfillOptions {
    fn default() -> Self {
        Self { batch_size: 500, max_per_second: None, max_documents: None, progress: Progress::Auto }
    }
}

/// Progress of a [`backfill`], after a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackfillEvent {
    /// Old-version documents when the run started (the server's count).
    pub total: u64,
    /// Old documents read so far in this run.
    pub scanned: u64,
    /// Old documents this run upgraded.
    pub upgraded: u64,
    /// Old documents another writer upgraded or changed first (left to it, or to the
    /// next run).
    pub raced: u64,
    /// Documents that could not be read (see [`BackfillReport::failures`]).
    pub failed: u64,
    /// Whether this is the last event of the run.
    pub done: bool,
}

/// What a [`backfill`] run did.
#[derive(Debug)]
pub struct BackfillReport {
    /// The last progress event.
    pub progress: BackfillEvent,
    /// Whether the run stopped at [`BackfillOptions::max_documents`], leaving a
    /// checkpoint.
    pub stopped_early: bool,
    /// Whether it started from a previous run's checkpoint.
    pub resumed: bool,
    /// The first 100 documents that could not be read; they are left as they are.
    pub failures: Vec<VersionError>,
    /// The collection's counts by version at the end.
    pub counts: VersionCounts,
}

/// The collection where backfill checkpoints are kept, one document per collection.
pub const CHECKPOINTS: &str = "docshape_backfill";

/// Upgrades every document of `T` stored at an older version, in `_id` order and in
/// batches, each with a compare-and-set on every field of the document as read (a document
/// changed meanwhile is left to whoever changed it). Safe to run while the application
/// reads and writes, idempotent, and resumable: the last `_id` of every batch is saved
/// in [`CHECKPOINTS`], and the next run starts after it, then makes one more pass from
/// the start for documents written behind it. A document that cannot be read is
/// reported in [`BackfillReport::failures`] and left alone.
pub async fn backfill<T: Versioned>(
    db: &Database,
    options: BackfillOptions,
) -> Result<BackfillReport, VersionError> {
    let collection = db.collection::<Document>(T::COLLECTION);
    let checkpoints = db.collection::<Document>(CHECKPOINTS);
    let old = doc! { T::VERSION_FIELD: { "$not": { "$gte": T::VERSION } } };
    let total = collection.count_documents(old.clone()).await?;
    let checkpoint =
        checkpoints.find_one(doc! { "_id": T::COLLECTION }).await?.and_then(|c| c.get("after").cloned());
    let resumed = checkpoint.is_some();
    let mut progress = BackfillEvent { total, scanned: 0, upgraded: 0, raced: 0, failed: 0, done: false };
    let mut failures = Vec::new();
    let mut bar = Bar::new(&options.progress);
    let started = Instant::now();
    let batch = options.batch_size.max(1);
    // Rates below one document per 1,000 s are taken as that, so waits stay finite.
    let rate = options.max_per_second.filter(|r| r.is_finite() && *r > 0.0).map(|r| r.max(0.001));
    // Documents this run failed on or lost to another writer: a second pass does not
    // count them again.
    let mut seen: HashSet<String> = HashSet::new();
    // A resumed run goes from its checkpoint to the end, then once from the start (for
    // documents written behind the checkpoint, or of another `_id` type).
    let mut passes: Vec<Option<Bson>> = vec![checkpoint];
    if resumed {
        passes.push(None);
    }
    let mut stopped_early = false;
    'passes: for start in passes {
        let mut filter = old.clone();
        if let Some(after) = &start {
            filter.insert("_id", doc! { "$gt": after.clone() });
        }
        // One cursor per pass, in `_id` order, `batch` documents per round trip: memory
        // stays within a batch, and `_id`s of mixed types are all visited.
        let find = FindOptions::builder().sort(doc! { "_id": 1 }).batch_size(batch).build();
        let mut cursor = collection.find(filter).with_options(find).await?;
        let mut in_batch = 0;
        let mut last = None;
        while let Some(document) = cursor.try_next().await? {
            if options.max_documents.is_some_and(|max| progress.upgraded >= max) {
                stopped_early = true;
                if let Some(last) = last {
                    save_checkpoint::<T>(&checkpoints, last).await?;
                }
                break 'passes;
            }
            let id = id_of(&document);
            last = Some(id.clone());
            let key = format!("{id:?}");
            if seen.contains(&key) {
                continue;
            }
            progress.scanned += 1;
            match upgrade_one::<T>(db, document).await {
                Ok(Upgrade::Done) => progress.upgraded += 1,
                Ok(Upgrade::Raced) => {
                    progress.raced += 1;
                    seen.insert(key);
                }
                Err(e) if is_fatal(&e) => return Err(e),
                Err(e) => {
                    progress.failed += 1;
                    seen.insert(key);
                    if failures.len() < 100 {
                        failures.push(e);
                    }
                }
            }
            if let Some(rate) = rate {
                let due = started + Duration::from_secs_f64(progress.upgraded as f64 / rate);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    tokio::time::sleep(wait).await;
                }
            }
            in_batch += 1;
            if in_batch == batch {
                in_batch = 0;
                save_checkpoint::<T>(&checkpoints, id).await?;
                bar.show(&progress);
            }
        }
    }
    if !stopped_early {
        checkpoints.delete_one(doc! { "_id": T::COLLECTION }).await?;
    }
    progress.done = true;
    bar.show(&progress);
    bar.finish();
    let counts = version_counts::<T>(db).await?;
    Ok(BackfillReport { progress, stopped_early, resumed, failures, counts })
}

/// How one document's upgrade ended.
enum Upgrade {
    Done,
    /// Another writer changed it first, and it is current now (or gone).
    Raced,
}

/// Upgrades one old document with a compare-and-set; on a lost race, reads it again
/// and retries while it is still old (a few times: each loss is another writer's
/// progress).
async fn upgrade_one<T: Versioned>(db: &Database, document: Document) -> Result<Upgrade, VersionError> {
    let collection = db.collection::<Document>(T::COLLECTION);
    let mut document = document;
    for _ in 0..3 {
        let mut loaded = Loaded::<T>::from_document(document)?;
        if !loaded.needs_stamp() {
            return Ok(Upgrade::Raced);
        }
        match loaded.save(db).await {
            Ok(()) => return Ok(Upgrade::Done),
            Err(VersionError::Conflict { .. }) => {}
            Err(e) => return Err(e),
        }
        match collection.find_one(doc! { "_id": loaded.id() }).await? {
            Some(again) => document = again,
            None => return Ok(Upgrade::Raced),
        }
    }
    Ok(Upgrade::Raced)
}

/// Whether an error stops a backfill: the server or the network failing, not one
/// document that cannot be read or written (a validation or duplicate-key error).
fn is_fatal(e: &VersionError) -> bool {
    match e {
        VersionError::Mongo(e) => !matches!(
            e.kind.as_ref(),
            mongodb::error::ErrorKind::Write(_) | mongodb::error::ErrorKind::Command(_)
        ),
        _ => false,
    }
}

async fn save_checkpoint<T: Versioned>(
    checkpoints: &mongodb::Collection<Document>,
    after: Bson,
) -> Result<(), VersionError> {
    checkpoints
        .update_one(
            doc! { "_id": T::COLLECTION },
            doc! { "$set": { "after": after, "at": bson::DateTime::now() } },
        )
        .upsert(true)
        .await?;
    Ok(())
}

/// The terminal progress bar, or the event callback.
struct Bar {
    progress: Progress,
    terminal: bool,
    drawn: bool,
}

impl Bar {
    fn new(progress: &Progress) -> Self {
        let terminal = matches!(progress, Progress::Auto) && std::io::stderr().is_terminal();
        Self { progress: progress.clone(), terminal, drawn: false }
    }

    fn show(&mut self, event: &BackfillEvent) {
        match &self.progress {
            Progress::Events(f) => f(event),
            Progress::Auto if self.terminal => {
                let done = event.upgraded + event.raced + event.failed;
                const WIDTH: u64 = 30;
                let filled = (done.min(event.total) * WIDTH).checked_div(event.total).unwrap_or(WIDTH);
                let bar: String = "#".repeat(filled as usize) + &".".repeat((WIDTH - filled) as usize);
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\rbackfill [{bar}] {done}/{} ({} upgraded, {} raced, {} failed)",
                    event.total, event.upgraded, event.raced, event.failed
                );
                let _ = err.flush();
                self.drawn = true;
            }
            _ => {}
        }
    }

    fn finish(&self) {
        if self.drawn {
            eprintln!();
        }
    }
}

#[doc(hidden)]
/// The validator of a versioned model: `anyOf` the current shape at the current version
/// and each older version's shape (any object for a document step) at its version.
pub fn validator(
    current: Document,
    field: &str,
    version: i64,
    missing: i64,
    old: Vec<(i64, Option<Document>)>,
) -> Document {
    let at = |mut schema: Document, v: i64| {
        let mut properties = schema.get_document("properties").cloned().unwrap_or_default();
        let mut constraint = properties.get_document(field).cloned().unwrap_or_default();
        constraint.insert("enum", vec![Bson::Int64(v)]);
        properties.insert(field, constraint);
        schema.insert("properties", properties);
        // Required at every version but the one a document without the field has.
        let mut required = schema.get_array("required").cloned().unwrap_or_default();
        required.retain(|r| r.as_str() != Some(field));
        if v != missing {
            required.push(Bson::String(field.to_owned()));
        }
        if required.is_empty() {
            schema.remove("required");
        } else {
            schema.insert("required", required);
        }
        if !schema.contains_key("bsonType") {
            schema.insert("bsonType", "object");
        }
        Bson::Document(schema)
    };
    let mut branches = vec![at(current, version)];
    for (v, schema) in old {
        branches.push(at(schema.unwrap_or_default(), v));
    }
    doc! { "$jsonSchema": { "bsonType": "object", "anyOf": branches } }
}
