//! # docshape
//!
//! NoSQL data models written as annotated serde structs, turned into what MongoDB and
//! the application need, and checked before any data exists.
//!
//! Derive [`Model`] on a struct stored in a collection and [`Embedded`] on the types it
//! contains. docshape reads serde's own attributes (`rename`, `rename_all`, `skip`,
//! `skip_serializing_if`, `default`, `flatten`, `transparent`, `into`, enum tagging) so
//! that every name in a validator is the name actually stored, and generates a
//! `$jsonSchema` validator with this guarantee: **every value the Rust type can
//! serialize passes its validator, and the validator rejects what the attributes
//! forbid.**
//!
//! ```
//! use docshape::{Model, Embedded, validator::Schema};
//! use docshape::bson::oid::ObjectId;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Model)]
//! #[model(collection = "usuarios", validation_action = "error")]
//! struct Usuario {
//!     #[serde(rename = "_id")]
//!     id: ObjectId,
//!     #[validate(min_length = 2, max_length = 100)]
//!     nombre: String,
//!     #[validate(pattern = r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$")]
//!     email: String,
//!     #[serde(skip_serializing_if = "Option::is_none")]
//!     #[validate(minimum = 0, maximum = 150)]
//!     edad: Option<i32>,
//!     direccion: Direccion,
//! }
//!
//! #[derive(Serialize, Deserialize, Embedded)]
//! struct Direccion {
//!     calle: String,
//!     ciudad: String,
//!     #[validate(pattern = "^[0-9]{5}$")]
//!     cp: String,
//! }
//!
//! let json = Usuario::validator_json();
//! assert!(json.contains(r#""minLength": 2"#));
//! ```
//!
//! Then `docshape::sync::<Usuario>(&db).await?` creates the collection with that
//! validator, or `collMod`s an existing one, and reports what changed.
//! [`sync_all`] does it for every model linked into the program ([`registry`]),
//! [`check`](check::check_all) reports how a live database differs from the code, and
//! [`artifacts`] writes validators and indexes as files without a database; the crate `docshape-cli`
//! turns all of it into a deploy tool's `main`, and `docshape-testkit` gives tests a
//! real server.
//!
//! ## Attributes
//!
//! On the container:
//!
//! | attribute | meaning |
//! |---|---|
//! | `#[model(collection = "name")]` | required on a `Model`: the collection |
//! | `#[model(validation_level = "strict" \| "moderate" \| "off")]` | the `validationLevel` (default `strict`) |
//! | `#[model(validation_action = "error" \| "warn")]` | the `validationAction` (default `error`) |
//! | `#[model(strict)]`, `#[embedded(strict)]` | `additionalProperties: false`: only what serde writes (and `_id`) is admitted |
//! | `#[model(version = N, migrate(v1 = OldType, v2(document = upgrade_fn)))]` | the current schema version and one upgrade step per older version ([`versioning`]) |
//! | `#[schema_version]`, `#[schema_version(missing = N)]` on an integer field | the field that stores the version; documents without it are version 1 (or `N`) |
//!
//! On a field, `#[validate(...)]`:
//!
//! | key | applies to | schema keyword |
//! |---|---|---|
//! | `min_length = N`, `max_length = N` | strings | `minLength`, `maxLength` (code points) |
//! | `pattern = "regex"` | strings | `pattern` (checked to parse at compile time) |
//! | `minimum = N`, `maximum = N` | numbers | `minimum`, `maximum` |
//! | `exclusive_minimum = N`, `exclusive_maximum = N` | numbers | `minimum`/`maximum` with `exclusiveMinimum`/`exclusiveMaximum` |
//! | `min_items = N`, `max_items = N`, `unique_items` | arrays | `minItems`, `maxItems`, `uniqueItems` |
//! | `allowed = [v, ...]` | strings, numbers | `enum` |
//! | `bson_type = "date"` | any | replaces the inferred `bsonType`, for fields whose `serialize_with`/`with` writes another type |
//!
//! Contradictions (`min_length` above `max_length`, an empty range, a pattern that does
//! not parse, a constraint on a type it cannot apply to) are compile errors under the
//! offending tokens, and every bad attribute is reported at once.
//!
//! ## The access-pattern table is the API
//!
//! Each `#[access(...)]` row is a row of the seed's access-pattern table, checked at
//! compile time to be served by an index, and a generated method named after it: a
//! typed finder for a read row ([`access::Find`]: `.one`, `.first(n)`, `.stream`,
//! `.count`, `.all`), a keyset paginator for a `paginate` row ([`paginate`]), a typed
//! single-command update for an `update(...)` row ([`access::Update`]), and a read
//! through Redis for a `cache = Family` row ([`keys::CachedFind`]). Each call sends
//! one command with exactly the row's filter and sort, every value under `$eq` (or a
//! comparison operator, for a range), and `fields(...)` is the projection: the finder
//! returns a generated view holding exactly those fields.
//!
//! ```no_run
//! use docshape::Model;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Model)]
//! #[model(collection = "orders")]
//! #[index(keys(customer_id, created_at = -1))]
//! #[access(name = "load_order", filter(_id), fields(status, lines))]
//! #[access(name = "orders_of_customer", filter(customer_id), sort(created_at = -1))]
//! #[access(name = "add_line", filter(_id), update(push(lines)))]
//! struct Order {
//!     #[serde(rename = "_id")]
//!     id: String,
//!     customer_id: String,
//!     created_at: docshape::bson::DateTime,
//!     status: String,
//!     #[embed(max = 50, reason = "a few lines, read with the order")]
//!     lines: Vec<String>,
//! }
//!
//! # async fn run(db: &docshape::mongodb::Database) -> Result<(), Box<dyn std::error::Error>> {
//! let page: Option<LoadOrderView> = Order::load_order("o1").one(db).await?;
//! let latest: Vec<Order> = Order::orders_of_customer("c1").first(10, db).await?;
//! Order::add_line("o1", "A-1").run(db).await?; // UpdateError::Full at 50 lines
//! # Ok(()) }
//! ```
//!
//! [`Model::collection`] is the escape hatch: the driver's typed collection, for
//! inserts and for anything the table does not declare (and so does not check).
//!
//! ## Embed, reference, copy
//!
//! Every relation is a stated decision ([`relation`]): a sub-document or a bounded
//! array of them (`#[embed]`, `#[embed(max = N)]`: an array of sub-documents or of
//! references with no bound does not compile), a typed reference ([`refs::Ref<T>`],
//! or `#[reference(T)]` on a raw id; loaded many at a time in one query with
//! [`refs::load_many`]), or a denormalized copy with its refresh policy
//! ([`denormalized`]):
//!
//! | attribute | meaning |
//! |---|---|
//! | `#[embed(max = N, reason = "...")]` | embedded, at most `N` elements (`maxItems`) |
//! | `#[reference(reason = "...")]` on a `Ref<T>`, `#[reference(T, max = N)]` | a reference, with its reason and, for an array, its bound |
//! | `#[denormalized(from = "User::name", via = "author_id", refresh = "never")]` | a snapshot taken at write time |
//! | `... refresh = "sync"` | rewritten in the source's update call ([`denormalized::update_one`]) |
//! | `... refresh = "async", max_stale = "5m"` | queued by the source's update and rewritten by a [`denormalized::Worker`] |
//! | `... on_delete = "keep" \| "clear" \| "report"` | what the copy holds once its source is deleted ([`denormalized::OnDelete`]) |
//!
//! Writes made by other programs reach the copies through a [`denormalized::Watcher`] (change
//! streams: a replica set or a sharded cluster), which queues their refresh jobs.
//!
//! An access pattern that names another model's field (`fields(title, User::name)`)
//! must be served by a copy of it, or waive the `lookup` rule with a reason.
//! `DESIGN_DECISIONS.md`, among the [`artifacts`], lists every relation, outlier array
//! and bucket, with its bound and its declared reason.
//!
//! ## Access patterns: consistency and load
//!
//! Each `#[access(...)]` row's `consistency` is one of a closed set of words
//! (`strong`, `strong (same doc)`, `read-your-writes`, `eventual ok`, `eventual (≤ 90s)`),
//! each mapped to the read preference, read concern and write concern its queries carry
//! ([`access::Consistency`]); its `freq` (`500 r/s`, `2 w/h`) becomes a load estimate,
//! documents and bytes per call and per second ([`access::Load`]), shown in
//! `Model::access_table()` and `ACCESS_PATTERNS.md`. Either, malformed, is a compile error.
//!
//! ## Redis key families
//!
//! Derive [`KeyFamily`] on a struct whose fields fill the placeholders of a Redis key
//! pattern: a row of the seed's key catalog, with a TTL decision the compiler insists on.
//!
//! | attribute | meaning |
//! |---|---|
//! | `#[key(pattern = "user:{id}:session")]` | the keys: literal segments and `{field}` placeholders between `:`s; `{0..15}` shards a `sharded_counter` |
//! | `#[key(kind = string \| hash \| counter \| list \| set \| sorted_set \| sharded_counter)]` | what the keys hold, and so the operations |
//! | `#[key(value = Product)]` | values stored as JSON of this type (text without it) |
//! | `#[key(ttl = "300s")]`, `#[key(ttl = "30d", sliding)]` | required: the expiry, fixed from creation or extended by every read and write |
//! | `#[key(ttl = "none", reason = "...")]` | never expires, for a stated reason (not under `cache:`) |
//! | `#[key(note = "...")]` | the catalog's notes |
//!
//! ```
//! use docshape::KeyFamily;
//!
//! #[derive(KeyFamily)]
//! #[key(pattern = "rate:{ip}:{minute}", kind = counter, ttl = "120s", note = "rate limiting window")]
//! struct RateWindow { ip: std::net::IpAddr, minute: u64 }
//!
//! let window = RateWindow { ip: "203.0.113.7".parse().unwrap(), minute: 202608051211 };
//! assert_eq!(window.key(), "rate:203.0.113.7:202608051211");
//! ```
//!
//! With the `redis` feature, `window.incr(&mut conn, 1).await?` runs `INCR` and sets
//! the 120 s expiry only if the key has none, in one round trip. See [`keys`] for the kinds, the escaping of
//! placeholder values, `SCAN`, and the catalog.
//!
//! ## Layout
//!
//! The crate is three layers, and imports point one way, towards the core:
//!
//! | layer | modules (public path) | may import |
//! |---|---|---|
//! | core | [`Model`], [`validator`], [`index`], [`access`], [`size`], [`registry`], [`Error`], paths, the collection spec, the guarded append, hooks | nothing above it |
//! | ops | [`sync`](mod@sync), [`check`](mod@check), [`artifacts`] | the core |
//! | patterns | [`paginate`], [`versioning`], [`bucket`], [`outlier`], [`relation`] and [`refs`], [`denormalized`] (its former name `copies` is a deprecated alias), [`keys`] | the core, never another pattern |
//!
//! A descriptor that the `Model` trait or the registry names (a relation, a copy, the
//! error of decoding a stored version) lives in the core and is re-exported by its
//! pattern. A pattern that reacts to another registers a hook in the core: the
//! versioned writers refresh denormalized copies through one, and the key catalog and
//! the design-decision table join the artifacts through another. A public module that
//! gathers items of several layers ([`registry`], [`outlier`]) is put together here,
//! in the crate root, the one place that imports everything.

#![warn(missing_docs)]
// Some docs link to items of optional features (`redis`, `redis-cluster`), which
// exist only when those are on. The documentation is built with
// every feature (`package.metadata.docs.rs`), where every link resolves and is checked
// (`RUSTDOCFLAGS="-D warnings" cargo doc -p docshape --no-deps --all-features`); in a
// build without them, those links are left as text instead of warning.
#![cfg_attr(not(feature = "redis-cluster"), allow(rustdoc::broken_intra_doc_links))]

// Lets the derives' `::docshape::...` paths resolve inside this crate's own tests.
extern crate self as docshape;

pub use docshape_derive::{Embedded, KeyFamily, Model};

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

// The three layers (see "Layout" above). Private: the paths below are the public ones.
mod core;
mod ops;
mod patterns;

// core
pub use crate::core::{access, index, size, stamps, validator};
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
pub use crate::patterns::{keys, paginate, relation, timeseries, versioning};

pub use crate::core::error::{Error, Result};
pub use crate::core::model::{IdOf, Identified, Model, ValidationAction, ValidationLevel};
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
    use crate::{SyncOptions, SyncReport};

    /// Creates (or brings up to date) `B`'s collection and, when it declares a `cap`,
    /// its counter collection ([`cap_collection_spec`]). [`crate::sync_all`] does both
    /// too, with every other registered collection; [`crate::sync()`] covers the bucket
    /// collection only.
    pub async fn sync<B: Bucket>(db: &Database) -> crate::Result<Vec<SyncReport>> {
        let mut reports = vec![crate::sync::<B>(db).await?];
        if B::BUCKET.cap.is_some() {
            reports.push(
                crate::ops::sync::sync_spec(db, &cap_collection_spec::<B>(), SyncOptions::default()).await?,
            );
        }
        Ok(reports)
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
        decode_model, decode_raw, decode_upgraded, decode_variant, FilterBuilder,
    };
    pub use crate::core::access::update::UpdateBuilder;
    pub use crate::core::access::{
        AccessPattern, Consistency, DocsPerCall, Find, FindError, Load, Projection, PushBound, Rate,
        RateKind, RowKind, Update, Upsert,
    };
    pub use crate::core::bson_compat::from_bson as bson_from_bson;
    pub use crate::core::bson_compat::from_document as bson_from_document;
    // Every generated parameter is written by the literal encoder: a map shaped as
    // extended JSON stays a document.
    pub use crate::core::access::literal::literal as to_bson;
    pub use crate::core::bson_compat::SerError as BsonSerError;
    pub use crate::core::denormalized::{nested_vias_indexed, Cleared, CopySpec, OnDelete, Refresh};
    // For `docshape-cli`: whether a program links anything its commands work on.
    pub use crate::core::hooks::generated_files;
    pub use crate::core::index::{Index, IndexKey};
    pub use crate::core::model::eq as eq_filter;
    pub use crate::core::model::{Model, ValidationAction, ValidationLevel};
    pub use crate::core::path::{Choose, FieldLookup, HasField, If, OldField, Open, StoredNames};
    pub use crate::core::registry::{RegisteredCollection, RegisteredModel};
    pub use crate::core::relation::{
        EmbeddedRelations, Nested, Relation, RelationKind, RelationsFallback, RelationsOf, Split, Variant,
    };
    pub use crate::core::size as sz;
    pub use crate::core::size::{MaxBsonSize, Probe, ProbeFallback};
    pub use crate::core::stamps::Stamps;
    pub use crate::core::validator::{
        adjacent, any_of, array_of, assert_array, assert_number, assert_string, bound, bson_type, constrain,
        constrained, nullable, object, single_key, string_enum, tuple, with_tag, Base, Constraint, Lit,
        ObjectSchema, Schema, Step,
    };
    pub use crate::core::version::{StepFailure, VersionError};
    pub use crate::patterns::bucket as bk;
    pub use crate::patterns::bucket::{
        Aggregate, AggregateField, AggregateOp, AggregateType, Bucket, BucketError, BucketSpec, IdForm, Per,
        PeriodField, SumField, TimeField, VersionStamp,
    };
    #[cfg(feature = "redis")]
    pub use crate::patterns::keys::cache::{
        cache_of, keys_for_written, CacheOf, CachedFamily, CachedFind, CachedModel, CachedUpdate, WrittenKeys,
    };
    pub use crate::patterns::keys::generated::{parse_placeholder, placeholder_text, placeholder_texts};
    pub use crate::patterns::keys::registry::RegisteredKeyFamily;
    pub use crate::patterns::keys::{
        CachesId, CounterFamily, HashFamily, Json, KeyError, KeyFamily, KeyKind, KeySpec, ListFamily,
        Segment, SetFamily, ShardedCounterFamily, SortedSetFamily, Staleness, Stored, StringFamily, Text,
        Ttl,
    };
    pub use crate::patterns::outlier as ol;
    pub use crate::patterns::outlier::overflow_collection_spec;
    pub use crate::patterns::outlier::{OutlierError, OutlierSpec, Outliers, Pushed};
    pub use crate::patterns::paginate::{Paginator, DEFAULT_PAGE_SIZE};
    pub use crate::patterns::relation::checks::{
        assert_copy_type, assert_model, assert_reference_id, assert_via, CopyType, ReferenceId, ViaSource,
    };
    pub use crate::patterns::relation::refs::{IdOf, Identified, Ref};
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
