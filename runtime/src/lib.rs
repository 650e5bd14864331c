//! # docshape
//!
//! NoSQL data models written as annotated serde structs, turned into what MongoDB and
//! the application need, and checked before any data exists.
//!
//! Derive [`Model`] on a struct stored in a collection and [`Embedded`] on the types it
//! contains, and docshape generates the collection's `$jsonSchema` validator (**every
//! value the Rust type can serialize passes it, and it rejects what the attributes
//! forbid**), its indexes, and its access-pattern table, checked at compile time to be
//! served by the indexes and generated as the application's typed query and update API.
//! The patterns of document modelling (keyset pagination, schema versions with lazy
//! migration, buckets, outliers, time series, embedded, referenced and denormalized
//! relations, a Redis key catalog) are attributes too, and a design the server could not
//! hold does not compile.
//!
//! ```
//! use docshape::bson::DateTime;
//! use docshape::Model;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Model)]
//! #[model(collection = "posts")]
//! #[index(keys(author_id, created_at = -1))]
//! #[access(name = "posts_by_author", filter(author_id), sort(created_at = -1),
//!          fields(title, created_at), freq = "500 r/s")]
//! struct Post {
//!     #[serde(rename = "_id")]
//!     id: String,
//!     #[validate(max_length = 64)]
//!     author_id: String,
//!     #[validate(min_length = 1, max_length = 200)]
//!     title: String,
//!     created_at: DateTime,
//! }
//!
//! // Before any database exists: the validator, the indexes, the access table.
//! assert!(Post::validator_json().contains(r#""maxLength": 200"#));
//! assert_eq!(Post::INDEXES[0].name, "author_id_1_created_at_-1");
//! assert_eq!(Post::ACCESS_PATTERNS[0].index, Some("author_id_1_created_at_-1"));
//! # // The validator as README.md shows it.
//! # let readme: serde_json::Value = serde_json::from_str(r#"
//! # {"$jsonSchema": {
//! #   "bsonType": "object",
//! #   "required": ["_id", "author_id", "title", "created_at"],
//! #   "properties": {
//! #     "_id": {"bsonType": "string"},
//! #     "author_id": {"bsonType": "string", "maxLength": 64},
//! #     "title": {"bsonType": "string", "minLength": 1, "maxLength": 200},
//! #     "created_at": {"bsonType": "date"}
//! #   }
//! # }}
//! # "#).unwrap();
//! # assert_eq!(serde_json::from_str::<serde_json::Value>(&Post::validator_json()).unwrap(), readme);
//!
//! # async fn run(db: &docshape::mongodb::Database) -> Result<(), Box<dyn std::error::Error>> {
//! // With one: the collection, then one `find` per call, returning the row's view.
//! docshape::sync::<Post>(db).await?;
//! let latest: Vec<PostsByAuthorView> = Post::posts_by_author("u_42").first(20, db).await?;
//! # Ok(()) }
//! ```
//!
//! ## Where to read on
//!
//! - The [guide] teaches docshape one chapter per pattern and per operation, starting
//!   with [a model and its validator](guide::validator).
//! - The [attribute reference](guide::attributes) lists every attribute the derives read.
//! - The modules below are the API reference: [`sync`](mod@sync), [`check`](mod@check)
//!   and [`artifacts`] keep a database in step with the code; [`access`], [`paginate`],
//!   [`versioning`], [`bucket`], [`outlier`], [`timeseries`], [`relation`] and
//!   [`refs`], [`denormalized`] and [`keys`] are the patterns' runtime.
//!
//! docshape re-exports the crates it is built on ([`mongodb`], [`bson`], and `redis`
//! with the `redis` feature), so an application uses the same versions without naming
//! them; its features are described in [the guide](guide::features).

#![warn(missing_docs)]
// Some docs link to items of optional features (`redis`, `redis-cluster`), which
// exist only when those are on. The documentation is built with
// every feature (`package.metadata.docs.rs`), where every link resolves and is checked
// (`RUSTDOCFLAGS="-D warnings" cargo doc -p docshape --no-deps --all-features`); in a
// build without them, those links are left as text instead of warning.
#![cfg_attr(not(feature = "redis-cluster"), allow(rustdoc::broken_intra_doc_links))]

// Lets the derives' `::docshape::...` paths resolve inside this crate's own tests.
extern crate self as docshape;

/// Derives the schema of a sub-document type (struct or enum) with no collection of its
/// own. Its attributes (`#[embedded]`, `#[validate]`, `#[embed]`, `#[reference]`,
/// `#[denormalized]`) are listed in the [attribute reference](guide::attributes).
pub use docshape_derive::Embedded;
/// Derives [`KeyFamily`](trait@KeyFamily) for a struct whose fields fill the placeholders of
/// a Redis key pattern. Its attribute, `#[key(...)]`, is described in the [attribute
/// reference](guide::attributes#redis-key-families).
pub use docshape_derive::KeyFamily;
/// Derives [`Model`](trait@Model) for a struct stored in a collection, or for an internally
/// tagged enum whose variants are the shapes of a polymorphic collection. Its attributes
/// (`#[model]`, `#[index]`, `#[access]`, `#[validate]`, ...) are listed in the [attribute
/// reference](guide::attributes).
pub use docshape_derive::Model;

// One of the two renamed dependencies becomes `bson` for the whole crate (an aliased
// `extern crate` at the root joins the extern prelude, so `use bson::...` works in
// every module). The choice follows the driver's: bson 3 as soon as `bson-3` is on.
#[cfg(not(any(feature = "bson-2", feature = "bson-3")))]
compile_error!("docshape needs one of its features `bson-2` (the default) and `bson-3`.");
/// The `bson` crate docshape's types come from: the driver's own (`mongodb::bson`),
/// bson 2, or bson 3 with the feature `bson-3`.
#[cfg(all(feature = "bson-2", not(feature = "bson-3")))]
pub extern crate bson2 as bson;
/// The `bson` crate docshape's types come from: the driver's own (`mongodb::bson`),
/// bson 2, or bson 3 with the feature `bson-3`.
#[cfg(feature = "bson-3")]
pub extern crate bson3 as bson;
/// What differs between bson 2 and bson 3 (renamed serde functions, one error type),
/// under the same names in both, for code that builds with either feature.
pub use crate::core::bson_compat;
pub use mongodb;
/// The `redis` crate docshape's key operations use (feature `redis`).
#[cfg(feature = "redis")]
pub use redis;

// The crate is three layers, and imports point one way, towards the core
// (`tests/layering.rs` checks it):
//
// - core: `Model`, validator, index, access, size, registry, `Error`, paths, the
//   collection spec, the guarded append, hooks; imports nothing above it;
// - ops: sync, check, artifacts; import the core (the tools, the CLI and `infer`, are
//   the crate `docshape-cli`; the test servers `docshape-testkit`);
// - patterns: paginate, versioning, bucket, outlier, relation and refs, denormalized
//   (its former name `copies` is a deprecated alias), keys; import the core, never
//   another pattern.
//
// A descriptor that the `Model` trait or the registry names (a relation, a copy, the
// error of decoding a stored version) lives in the core and is re-exported by its
// pattern. A pattern that reacts to another registers a hook in the core: the
// versioned writers refresh denormalized copies through one, and the key catalog and
// the design-decision table join the artifacts through another. A public module that
// gathers items of several layers (`registry`, `outlier`) is put together here, in the
// crate root, the one place that imports everything.
//
// Private: the paths below are the public ones.
mod core;
mod ops;
mod patterns;

pub mod guide;

// core
pub use crate::core::{access, index, size, soft_delete, stamps, validator};
// ops
pub use crate::ops::{artifacts, check, sync};
// patterns
pub use crate::patterns::denormalized;
/// The denormalized pattern under its first name, kept for code written against it:
/// use [`denormalized`], whose items these are.
// Hidden, so that the compiler names items by their one path in its messages.
#[doc(hidden)]
#[deprecated(note = "the pattern's one name is `denormalized`: use `docshape::denormalized`")]
pub mod copies {
    pub use crate::patterns::denormalized::*;
}
pub use crate::patterns::relation::refs;
pub use crate::patterns::{keys, paginate, relation, summary, timeseries, versioning};

pub use crate::core::error::{Error, Result};
pub use crate::core::model::{IdOf, Identified, Model, NoTenant, ValidationAction, ValidationLevel};
pub use crate::core::transaction::{transaction, Transaction, TransactionError};
pub use crate::ops::check::{check, CheckReport};
pub use crate::ops::sync::{sync, sync_all, sync_with, SyncOptions, SyncReport};
pub use crate::patterns::keys::KeyFamily;

// The public modules below gather items of more than one layer, which only the crate
// root may import together.

pub mod registry {
    //! Every [`Model`](crate::Model) and Redis key family linked into the program, found without listing
    //! them by hand.
    //!
    //! `#[derive(Model)]` registers each non-generic model when the program starts (through
    //! the `inventory` crate), so a deploy tool can [`sync_all`](crate::sync::sync_all),
    //! [`check`](crate::check::check_all) or [export](crate::artifacts) every collection the
    //! application declares. A generic model has no single collection spec and is not
    //! registered; pass its instantiations to [`CollectionSpec::of`](crate::sync::CollectionSpec::of) yourself.
    //!
    //! A model is registered when the crate that defines it is linked into the program. A
    //! binary or build script that names nothing from the models' crate must still mention
    //! it (`use my_models as _;`), or the compiler leaves the crate out and its models with
    //! it.
    //!
    //! ```
    //! use docshape::Model;
    //! use serde::{Deserialize, Serialize};
    //!
    //! #[derive(Serialize, Deserialize, Model)]
    //! #[model(collection = "registry_doc_example")]
    //! struct Note {
    //!     text: String,
    //! }
    //!
    //! let specs = docshape::registry::specs().unwrap();
    //! assert!(specs.iter().any(|s| s.name == "registry_doc_example"));
    //! ```

    pub use crate::core::registry::*;
    pub use crate::patterns::keys::registry::{key_families, RegisteredKeyFamily};
}

pub mod bucket {
    //! The bucket pattern: bounded documents holding many items of one series for one
    //! period, appended to in one round trip (`#[bucket(...)]`).
    //!
    //! patterns-en: "one bucket per sensor per day", `_id: "sensor_9:2026-08-05"`;
    //! patrones-es: one per device per hour, `_id: {dispositivoId, hora}`. Both forms are
    //! generated: a model whose `_id` field is a `String` gets string ids, any other `_id`
    //! type gets compound ids.
    //!
    //! ## Ids and overflow
    //!
    //! A period's first bucket has the seed's id exactly. When it is full, the next bucket
    //! of the same period has a sequence number: `"sensor_9:2026-08-05#1"`, or
    //! `{dispositivoId, hora, seq: 1}`. Periods are labelled in UTC with a fixed width per
    //! unit (`2026-08-05T10:07`, `2026-08-05T10`, `2026-08-05`, `2026-W32`, `2026-08`), so
    //! no two (series, period, sequence) triples share an id, whatever the series holds.
    //!
    //! ## One round trip
    //!
    //! An append of `k` items to a bucket is one `update` command:
    //!
    //! ```text
    //! update { _id: <id>, count: { $lte: max - k } }
    //!        { $push: { items: { $each: [...] } }, $inc: { count: k, <sums> },
    //!          $min: {...}, $max: {...}, $setOnInsert: { <series>: s, <period>: p } }
    //!        upsert: true
    //! ```
    //!
    //! The filter matches only a bucket with room, so no bucket ever holds more than
    //! `max`, whatever the number of concurrent writers: the server applies each update
    //! to one document atomically. When the bucket is full the upsert tries to insert a
    //! new document with the same `_id` and fails with a duplicate-key error (11000):
    //! that is the signal to read the bucket's `count` (one `find`) and either retry with
    //! what still fits, or move to the next sequence number. A process-wide hint
    //! remembers the open sequence number per bucket and a lower bound of its count
    //! (counts only grow), so an append that fills a bucket sends the next one straight to
    //! the next bucket: a single writer sends exactly one `update` per append, and with
    //! concurrent writers the extra `find` happens only when another writer filled the
    //! bucket first.
    //!
    //! ## A cap per period
    //!
    //! `#[bucket(cap = N)]` keeps at most `N` items per series per period, across all of the
    //! period's buckets (`max` bounds one bucket document). Each append first reserves its
    //! items' places in a counter document of the series and period, kept in the collection
    //! [`cap_collection_name`] names (`<collection>_caps`), with one conditional update
    //! `{_id, reserved: {$lte: cap - k}}` → `$inc: {reserved: k}` (an upsert for the period's
    //! first item); only the items granted a place are appended, the others are refused with
    //! [`BucketError::Capped`]. The server applies the update atomically, so concurrent
    //! writers never pass the cap: one more `update` per append, one `find` when the
    //! counter is contended or full.
    //!
    //! The counter may overstate what the buckets hold, never understate it: places of items
    //! certainly not stored are given back, those of an update whose outcome is unknown (a
    //! dropped connection, a crash or a dropped future between reserving and appending) are
    //! kept. The cap is never exceeded; a crash can waste a slot, and a [`resume`] after an
    //! update in doubt that was in fact not applied reserves those items' places again.

    use mongodb::Database;

    pub use crate::patterns::bucket::*;
    use crate::SyncReport;

    /// Creates (or brings up to date) `B`'s collection and, when it declares a `cap`,
    /// its counter collection ([`cap_collection_spec`]): one report each.
    /// [`crate::sync()`] does both too (the counters' report in
    /// [`SyncReport::owned`]), and so does [`crate::sync_all`], with every other
    /// registered collection.
    pub async fn sync<B: Bucket>(db: &Database) -> crate::Result<Vec<SyncReport>> {
        let mut report = crate::sync::<B>(db).await?;
        let owned = std::mem::take(&mut report.owned);
        Ok(std::iter::once(report).chain(owned).collect())
    }
}

pub mod outlier {
    //! The outlier pattern: an array embedded up to a threshold, with the rare documents
    //! that need more (patrones-es: users with millions of followers) spilling into
    //! bounded overflow documents and raising a flag (`#[outlier(...)]` on the field).
    //!
    //! patrones-es:
    //!
    //! ```text
    //! { _id: "celebridad_id", seguidores: [id1, id2, ...],   // lista parcial
    //!   tiene_extras: true }                                  // bandera → colección overflow
    //! ```
    //!
    //! Pushing to a normal document is one `update`:
    //! `{_id: p, "<field>.<threshold - k>": {$exists: false}}` with `$push` (and `$inc` of
    //! the count): the filter matches only while the array has room for the `k` new items,
    //! so it never holds more than the threshold, even with concurrent writers. When it
    //! does not match, the flag is set first (so readers never miss overflow items), the
    //! items go to overflow documents `{_id: {parent: p, seq: n}, parent: p, count, items}`
    //! filled by the same guarded upsert as buckets ([`crate::bucket`]), and then the
    //! count is incremented. Reads merge the embedded items and, unless the flag is
    //! stored as `false`, the overflow documents in sequence order.

    use mongodb::Database;

    pub use crate::patterns::outlier::*;
    use crate::{SyncOptions, SyncReport};

    /// Creates (or brings up to date) every overflow collection of `T`. [`crate::sync_all`]
    /// does it too, with every other registered collection.
    pub async fn sync<T: Outliers>(db: &Database) -> Result<Vec<SyncReport>, OutlierError> {
        let mut reports = Vec::new();
        for spec in crate::patterns::outlier::overflow_specs::<T>() {
            reports.push(
                crate::ops::sync::sync_spec(db, &spec, SyncOptions::default())
                    .await
                    .map_err(OutlierError::Sync)?,
            );
        }
        Ok(reports)
    }

    // Outlier documents are filled by the same guarded append as buckets, so a
    // caller may `?` a bucket's error into an outlier's. Defined here because the
    // two patterns do not import each other.
    impl From<crate::bucket::BucketError> for OutlierError {
        fn from(e: crate::bucket::BucketError) -> Self {
            use crate::bucket::BucketError;
            match e {
                BucketError::Mongo(e) => Self::Mongo(e),
                BucketError::Serialize(e) => Self::Serialize(e),
                BucketError::Decode(e) => Self::Decode(e),
                BucketError::Contention { id } => Self::Contention(id),
                BucketError::CorruptBucket { id, detail } => Self::Corrupt { id, detail },
                BucketError::Incomplete(i) => Self::from(i.cause),
                other => Self::Contention(bson::Bson::String(other.to_string())),
            }
        }
    }
}

/// What generated code calls. Not part of the public API: it may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::core::access::find::{
        decode_model, decode_raw, decode_upgraded, decode_variant, FilterBuilder, NamedFields,
    };
    pub use crate::core::access::update::UpdateBuilder;
    pub use crate::core::access::{
        AccessPattern, Consistency, DocsPerCall, Find, FindError, Load, Projection, PushBound, Rate,
        RateKind, RowKind, Update, Upsert,
    };
    pub use crate::core::bson_compat::from_bson as bson_from_bson;
    pub use crate::core::bson_compat::from_document as bson_from_document;
    pub use crate::core::soft_delete::SoftDelete;
    // Every generated parameter is written by the literal encoder: a map shaped as
    // extended JSON stays a document.
    pub use crate::core::access::literal::literal as to_bson;
    pub use crate::core::bson_compat::SerError as BsonSerError;
    pub use crate::core::denormalized::{nested_vias_indexed, Cleared, CopySpec, OnDelete, Refresh};
    // For `docshape-cli`: whether a program links anything its commands work on.
    pub use crate::core::hooks::generated_files;
    pub use crate::core::index::{Index, IndexKey};
    pub use crate::core::model::eq as eq_filter;
    pub use crate::core::model::NoTenant;
    pub use crate::core::model::{Model, ValidationAction, ValidationLevel};
    pub use crate::core::path::{
        At, Choose, Field, FieldLookup, FieldTable, HasField, If, OldField, Open, OpenFields, StoredNames,
        VariantFields, VariantLookup, VariantShape, VariantTable, Variants,
    };
    pub use crate::core::registry::{RegisteredCollection, RegisteredModel};
    pub use crate::core::relation::{
        EmbeddedRelations, Nested, Relation, RelationKind, RelationsFallback, RelationsOf, Split, Variant,
    };
    pub use crate::core::size as sz;
    pub use crate::core::size::{MaxBsonSize, Probe, ProbeFallback};
    pub use crate::core::stamps::Stamps;
    pub use crate::core::validator::{
        adjacent, any_of, array_of, assert_array, assert_number, assert_string, bound, bson_type, constrain,
        constrained, nullable, object, single_key, string_enum, tagged, tuple, with_tag, Base, Constraint,
        Lit, ObjectSchema, Schema, Step,
    };
    pub use crate::core::version::{StepFailure, VersionError};
    pub use crate::patterns::bucket as bk;
    pub use crate::patterns::bucket::{
        Aggregate, AggregateField, AggregateOp, AggregateType, Bucket, BucketError, BucketSpec, IdForm, Per,
        PeriodField, SumField, TimeField, VersionStamp,
    };
    #[cfg(feature = "redis")]
    pub use crate::patterns::keys::cache::{
        cache_in, cache_of, copies_invalidated, keys_for_written, keys_in_written, CacheIn, CacheOf,
        CachedFamily, CachedFind, CachedModel, CachedUpdate, WrittenKeys,
    };
    pub use crate::patterns::keys::generated::{parse_placeholder, placeholder_text, placeholder_texts};
    pub use crate::patterns::keys::registry::RegisteredKeyFamily;
    pub use crate::patterns::keys::{
        CachesId, CachesTenantId, CounterFamily, HashFamily, Json, KeyError, KeyFamily, KeyKind, KeySpec,
        ListFamily, Segment, SetFamily, ShardedCounterFamily, SortedSetFamily, Staleness, Stored,
        StringFamily, Text, Ttl,
    };
    pub use crate::patterns::outlier as ol;
    pub use crate::patterns::outlier::overflow_collection_spec;
    pub use crate::patterns::outlier::{OutlierError, OutlierSpec, Outliers, Pushed};
    pub use crate::patterns::paginate::{Paginator, DEFAULT_PAGE_SIZE};
    pub use crate::patterns::relation::checks::{
        assert_copy_type, assert_model, assert_reference_id, assert_via, CopyType, ReferenceId, ViaSource,
    };
    pub use crate::patterns::relation::refs::{IdOf, Identified, Ref};
    pub use crate::patterns::summary::{
        summary_avg, summary_groups_by_tenant, summary_reads_outlier, GroupKey, GroupPart, Summable,
        SummaryField, SummaryOp, SummaryPeriod, SummaryRefresh, SummarySpec, SummaryTime,
    };
    pub use crate::patterns::timeseries::{Granularity, SeriesTime, TimeSeries};
    pub use crate::patterns::versioning::{
        decode as versioned_decode, upgrade_in_place, validator as versioned_validator,
        variants_validator as versioned_variants_validator, ReadCounter, Versioned,
    };
    pub use ::core::ops::{Bound, RangeBounds};
    pub use ::core::time::Duration;
    pub use bson::oid::ObjectId;
    pub use bson::RawDocumentBuf;
    pub use bson::{Bson, DateTime, Document};
    pub use inventory;
    pub use mongodb::Database;
    pub use serde;
    pub use std::string::String;
    pub use std::vec::Vec;
}
