//! The floor of the core: the plain data a model's descriptor is made of (validation
//! levels, indexes, access patterns, relations, copies, stamps, collection specs, and
//! the errors they describe), as the derive writes it in constants. It imports no
//! other module of the core; the behaviour on these types (their `impl` blocks, the
//! registry, the write pipeline) sits above it, in the modules that re-export them
//! under their usual paths.

use std::time::Duration;

use bson::{Bson, Document};

use crate::core::access::consistency::Consistency;
use crate::core::access::load::{DocsPerCall, Load};
use crate::core::bson_compat;
use crate::core::size::Unsized;

/// How strictly the server applies a collection's validator (`validationLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ValidationLevel {
    /// Every insert and update is validated (the server's default).
    #[default]
    Strict,
    /// Updates to documents that already fail validation are not validated.
    Moderate,
    /// No validation.
    Off,
}

/// What the server does with a document that fails validation (`validationAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ValidationAction {
    /// Reject the write (the server's default).
    #[default]
    Error,
    /// Accept the write and log a warning.
    Warn,
}

/// An index of a model's collection, as `#[index(...)]` declares it.
///
/// ```
/// use docshape::index::{Index, IndexKey};
/// use docshape::bson::doc;
///
/// const BY_AUTHOR: Index = Index {
///     name: "author_id_1_created_at_-1",
///     keys: &[("author_id", IndexKey::Asc), ("created_at", IndexKey::Desc)],
///     ..Index::DEFAULT
/// };
/// assert_eq!(BY_AUTHOR.key_document(), doc! { "author_id": 1, "created_at": -1 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Index {
    /// The index's name: MongoDB's default (`author_id_1_created_at_-1`) unless
    /// `name = "..."` overrides it.
    pub name: &'static str,
    /// The keys, in order, by stored path.
    pub keys: &'static [(&'static str, IndexKey)],
    /// `unique: true`.
    pub unique: bool,
    /// `sparse: true`.
    pub sparse: bool,
    /// `expireAfterSeconds` of a TTL index.
    pub expire_after_secs: Option<u64>,
    /// A case-insensitive collation (`{locale, strength: 2}`); the locale, `"en"` unless set.
    pub case_insensitive: Option<&'static str>,
    /// `partialFilterExpression`, as extended JSON text.
    pub partial_filter: Option<&'static str>,
}

/// One key of an index, or one sort key of an access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexKey {
    /// Ascending (`1`).
    Asc,
    /// Descending (`-1`).
    Desc,
    /// A text index key (`"text"`).
    Text,
    /// A hashed key (`"hashed"`), for hashed shard keys.
    Hashed,
    /// A geospatial key (`"2dsphere"`).
    Sphere2d,
}

/// One row of a model's access-pattern table (`#[access(...)]`): a query the
/// application runs, and the index that serves it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccessPattern {
    /// The pattern's name, an identifier (`posts_by_author`).
    pub name: &'static str,
    /// What the application does, in words (the seed's "Operation" column).
    pub operation: &'static str,
    /// Fields matched by equality.
    pub filter: &'static [&'static str],
    /// Whether the equality matches ignore case (a case-insensitive collation).
    pub case_insensitive: bool,
    /// Sort keys, in order.
    pub sort: &'static [(&'static str, IndexKey)],
    /// Fields matched by a range (`$gt`, `$lt`, ...).
    pub range: &'static [&'static str],
    /// Fields the operation reads ("Fields needed").
    pub fields: &'static [&'static str],
    /// How often it runs ("500 r/s").
    pub freq: &'static str,
    /// The consistency it needs, in the author's words ("read-your-writes").
    pub consistency: &'static str,
    /// The same, parsed: what its queries send to the server.
    pub guarantee: Consistency,
    /// Its load estimate: the parsed `freq`, documents and bytes per call.
    pub load: Load,
    /// The index that serves it, found at compile time; `None` when waived.
    pub index: Option<&'static str>,
    /// Design rules waived for this pattern, each with its reason.
    pub waivers: &'static [(&'static str, &'static str)],
    /// Whether a keyset paginator is generated for it (`paginate`).
    pub paginate: bool,
    /// A read, a write row (`update(...)`), or a write row that creates the document
    /// it finds missing (`upsert`).
    pub kind: RowKind,
}

/// What an access-pattern row does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowKind {
    /// It reads (a finder, a count, a paginator).
    Read,
    /// It updates the documents it finds (`update(...)`).
    Write,
    /// It updates the document it finds, or inserts one when none matches (`upsert`).
    Upsert,
}

/// What a relation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RelationKind {
    /// Stored inside the document: read and written with it.
    Embed,
    /// The `_id` of a document of another collection.
    Reference,
    /// A copy of another collection's field, refreshed by a stated policy.
    Copy,
    /// An `#[outlier]` array: embedded up to its threshold, the rest in an overflow
    /// collection ([`Split::Outlier`]).
    Outlier,
    /// A `#[bucket]`'s items: one document per series per period, each holding a
    /// bounded number of them ([`Split::Bucket`]).
    Bucket,
    /// A time-series collection (`#[model(timeseries(...))]`): one document per
    /// reading, which the server groups into buckets itself. Its row names the time
    /// field (`field`) and the meta field (`target`, empty without one).
    TimeSeries,
}

/// How a pattern spreads an array over several documents, beyond the bound kept in one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Split {
    /// `#[outlier]`: past the threshold (the relation's bound), the items go to
    /// documents of the `overflow` collection, `per_doc` in each.
    Outlier {
        /// The overflow collection.
        overflow: &'static str,
        /// How many items one overflow document holds.
        per_doc: u64,
    },
    /// `#[bucket]`: one document per value of `series` per `per` period (UTC), holding
    /// at most the relation's bound; a full one continues in another of the same
    /// period.
    Bucket {
        /// The stored name of the series field.
        series: &'static str,
        /// `"minute"`, `"hour"`, `"day"`, `"week"` or `"month"`.
        per: &'static str,
        /// `cap = N`: the most items one series keeps per period, across its buckets.
        cap: Option<u64>,
    },
}

/// One relation of a model, as its attributes declare it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Relation {
    /// The stored field name.
    pub field: &'static str,
    /// Embed, reference, copy, outlier or bucket.
    pub kind: RelationKind,
    /// What the field holds: the embedded type's name, the referenced collection, for
    /// a copy the source as `Model::field`, for an outlier or a bucket the item type's
    /// name.
    pub target: &'static str,
    /// Whether the field is an array of them.
    pub many: bool,
    /// The array's bound (`#[embed(max = N)]`, `#[validate(max_items = N)]`, a bucket's
    /// or an outlier's bound).
    pub bound: Option<u64>,
    /// A copy's refresh policy.
    pub refresh: Option<Refresh>,
    /// A copy's reference field: the stored name holding the source's `_id`.
    pub via: Option<&'static str>,
    /// Why, as written in the attribute's `reason = "..."`.
    pub reason: Option<&'static str>,
    /// For an outlier or a bucket, where the items beyond the bound go.
    pub split: Option<Split>,
}

/// The relations held inside a field's embedded type (a sub-document, an array or an
/// option of them): its rows and, further down, its own embedded types'. The
/// design-decision table lists them under the field's path (`comments.author`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Nested {
    /// The stored name of the field holding the embedded type (empty for a flattened
    /// one, whose fields sit beside the parent's).
    pub field: &'static str,
    /// Whether the field is an array of them.
    pub many: bool,
    /// The embedded type's relations (`#[embed]`, references, copies).
    pub relations: &'static [Relation],
    /// The embedded type's denormalized copies, their paths relative to it and their
    /// collection empty: the model that holds them registers them under its own
    /// collection and this field's path.
    pub copies: &'static [CopySpec],
    /// The relations inside its own fields' embedded types.
    pub nested: &'static [Nested],
    /// For the fields of one variant of a polymorphic model: which variant. Such an
    /// entry has no field of its own (`field` is empty: the variant's fields are the
    /// document's), and holds only in the documents whose discriminator is the
    /// variant's value.
    pub variant: Option<Variant>,
}

/// One variant of a polymorphic model (`#[derive(Model)]` on a
/// `#[serde(tag = "kind")]` enum): its documents are those whose `tag` holds `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Variant {
    /// The discriminator's stored name (`"kind"`).
    pub tag: &'static str,
    /// The variant's discriminator value (`"purchase"`).
    pub value: &'static str,
}

/// When a denormalized copy is brought back in line with its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refresh {
    /// Never: the copy is a snapshot taken when the document was written (an order's
    /// `user_name` is the name at the time of the order, and should stay so).
    Never,
    /// In the same call that updates the source.
    Sync,
    /// By a worker draining a durable queue; the copy may lag its source by at most
    /// `max_stale`, a product decision stated in the model.
    Async {
        /// How stale the copy may be: the worker serves older jobs first.
        max_stale: Duration,
    },
}

/// What a copy holds once its source document is deleted
/// (`#[denormalized(..., on_delete = "keep" | "clear" | "report")]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OnDelete {
    /// The last value copied stays (the default): the copy was true when written, and
    /// removing it destroys what the reader saw.
    #[default]
    Keep,
    /// The copy is emptied, as its type allows (only an `Option` copy, or one with
    /// `skip_serializing_if`, can be).
    Clear(Cleared),
    /// The copy stays, and its refresh job fails with [`CopyError::SourceDeleted`],
    /// recorded on the job and kept in the queue (so [`lag`](crate::denormalized::lag) counts
    /// it) until no document references the deleted source any more.
    Report,
}

/// How a cleared copy is written, so that its model's validator still accepts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cleared {
    /// `$unset`: the field has `skip_serializing_if`, so it may be absent.
    Unset,
    /// `$set: null`: an `Option` field that is always written (required, nullable).
    Null,
}

/// One denormalized copy, as declared on the model that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CopySpec {
    /// The collection holding the copy (`"posts"`).
    pub collection: &'static str,
    /// The copy's stored path (`"author_name"`; `"comments.author_name"` for a copy
    /// inside the embedded documents of `comments`).
    pub field: &'static str,
    /// The stored path of the field that references the source document
    /// (`"author_id"`, `"comments.author_id"`): it holds the source's `_id`. It sits in
    /// the same (sub-)document as the copy.
    pub via: &'static str,
    /// The stored paths of the arrays that hold the copy's sub-documents, outermost
    /// first (`["comments"]`; empty for a copy at the top level or in sub-documents
    /// only): each document's elements that reference the source are the ones
    /// written, through array filters.
    pub arrays: &'static [&'static str],
    /// The source's collection (`"users"`).
    pub source: &'static str,
    /// The stored path of the copied field in the source (`"name"`).
    pub source_field: &'static str,
    /// The source model's tenant field (its `Model::TENANT`), when it declares one: a
    /// holder with a tenant of its own takes copies only from a source document of
    /// the same tenant.
    pub source_tenant: Option<&'static str>,
    /// When the copy is refreshed.
    pub refresh: Refresh,
    /// Why the copy exists, as written in the attribute (`reason = "..."`).
    pub reason: Option<&'static str>,
    /// What the copy holds once its source document is deleted.
    pub on_delete: OnDelete,
    /// How the copy's own type stores a null source value: [`Cleared::Unset`] when the
    /// field has `skip_serializing_if` (serde omits `None`, and the validator forbids
    /// `null`), [`Cleared::Null`] otherwise.
    pub null: Cleared,
    /// For a copy in one variant of a polymorphic model, that variant: only the
    /// documents whose discriminator holds its value hold the copy (another variant
    /// may store a field of the same name with another meaning), and every filter on
    /// `via` says so.
    pub variant: Option<Variant>,
}

/// A copy document the server refused to write (its validator, a duplicate key, a
/// value it cannot store), left as it was while the other documents were written.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The copy's key (`"posts.author_name"`).
    pub copy: String,
    /// The copy document's `_id`.
    pub id: Bson,
    /// What the server said.
    pub reason: String,
}

/// What went wrong keeping copies in line. Every variant that concerns one document
/// names its collection or copy and its `_id`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CopyError {
    /// Writing the source document failed; no copy was touched.
    Source {
        /// The source's collection.
        collection: &'static str,
        /// The source document's `_id`.
        id: Bson,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// Writing one copy (a sync copy's `update_many`, or an async copy's job) failed
    /// while updating its source.
    Copy {
        /// The copy's key (`"posts.author_name"`).
        copy: String,
        /// The source document's `_id`.
        id: Bson,
        /// Whether the source was written: `false` when the transaction failed
        /// (nothing was written); `true` otherwise (a sequential update, or a job
        /// enqueued after the commit): the source and the copies before this one are
        /// updated, this one and the ones after it are not (see the
        /// [module docs](crate::denormalized)). Run the update again, or [`repair`](crate::denormalized::repair).
        source_updated: bool,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// The transaction could not commit. Nothing was written, unless the error says
    /// the commit's outcome is unknown (`UnknownTransactionCommitResult`).
    Commit {
        /// The source's collection.
        collection: &'static str,
        /// The source document's `_id`.
        id: Bson,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// [`Atomicity::Transaction`](crate::denormalized::Atomicity::Transaction) was asked for, and the deployment has no transactions
    /// (a standalone server). Nothing was written.
    NoTransactions {
        /// The source's collection.
        collection: &'static str,
    },
    /// Without a transaction, concurrent updates kept changing the source for two
    /// minutes while its sync copy was being written again and again. The source is
    /// updated; the copy may hold an older value: [`repair`](crate::denormalized::repair) once writes calm down.
    Unsettled {
        /// The copy's key.
        copy: String,
        /// The source document's `_id`.
        id: Bson,
        /// How many times the copy was written.
        rounds: u32,
    },
    /// The server refused to write some copy documents of this source (see
    /// [`Refusal`]): they are left as they were, and every other copy document was
    /// written (and settled), and every async copy's job enqueued. Fix the documents
    /// (or the validator), then [`repair`](crate::denormalized::repair). A
    /// [`Worker`](crate::denormalized::Worker) records it as its job's failure.
    Refused {
        /// The source document's `_id`.
        id: Bson,
        /// The refused copy documents, each once.
        documents: Vec<Refusal>,
    },
    /// Documents holding a copy reference a source document of another tenant (both
    /// models declare `#[model(tenant = ...)]`): written around docshape, since its own
    /// writers refuse such a reference (`RefError::CrossTenant`). The refresh left them
    /// as they were, and wrote the source's value into its own tenant's documents only.
    CrossTenant {
        /// The copy (`"quotes.customer_name"`).
        copy: String,
        /// The source document's `_id`.
        id: Bson,
        /// The `_id`s of documents of another tenant referencing it (at most 100).
        holders: Vec<Bson>,
    },
    /// Reading the source or writing its copies failed in a
    /// [`Worker`](crate::denormalized::Worker), [`repair`](crate::denormalized::repair),
    /// after a versioned writer or a write row, or in filling a new document's copies.
    Refresh {
        /// The copy's key.
        copy: String,
        /// The source document's `_id`.
        id: Bson,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// The refresh queue (`docshape_refresh`, `denormalized::QUEUE`) could not be read or written.
    Queue {
        /// What was being done (`"claim"`, `"complete"`, ...).
        operation: &'static str,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// A queued job does not have the documented shape.
    MalformedJob {
        /// The job as stored.
        job: Document,
    },
    /// The copy key names no registered copy that is refreshed (none in this program
    /// has that key, or it is declared `refresh = "never"`).
    UnknownCopy {
        /// The key asked for.
        copy: String,
    },
    /// The id given did not serialize to BSON (an integer beyond `i64`, say); nothing
    /// was sent.
    IdEncode {
        /// The source's collection.
        collection: &'static str,
        /// What the serializer said.
        error: bson_compat::SerError,
    },
    /// [`repair`](crate::denormalized::repair) found no source document with this `_id`.
    SourceNotFound {
        /// The source's collection.
        collection: &'static str,
        /// The `_id` looked for.
        id: Bson,
    },
    /// A copy declared `on_delete = "report"` still has documents referencing a
    /// deleted source: they keep the last value copied. Delete them or point them at
    /// another source; the job completes once none is left.
    SourceDeleted {
        /// The copy's key.
        copy: String,
        /// The deleted source document's `_id`.
        id: Bson,
        /// Documents still referencing it.
        documents: u64,
    },
    /// The deployment has no change streams (a standalone server): a
    /// [`Watcher`](crate::denormalized::Watcher) cannot follow the sources. Run the server
    /// as a replica set (a single-node one will do: `mongod --replSet rs0`, then
    /// `rs.initiate()`), or connect through a sharded cluster's `mongos`.
    NoChangeStreams {
        /// The source collection the watcher tried to follow.
        collection: &'static str,
        /// What the server said.
        error: mongodb::error::Error,
    },
    /// A [`Watcher`](crate::denormalized::Watcher) could not read its change stream or its
    /// stored position.
    Watch {
        /// The source collection.
        collection: &'static str,
        /// What was being done (`"open"`, `"next"`, `"save position"`, ...).
        operation: &'static str,
        /// What the driver or server said.
        error: mongodb::error::Error,
    },
    /// The source document was written, then keeping other data derived from it in
    /// line failed: a read-through cache's keys could not be deleted
    /// ([`keys::invalidate_on_write`](crate::keys::invalidate_on_write)). The document
    /// is updated and its copies are refreshed; the cached value may be stale until its
    /// TTL. Deleting the key again (or the next write) puts it right.
    Derived {
        /// The source's collection.
        collection: &'static str,
        /// The source document's `_id`.
        id: Bson,
        /// What was left out of line (`"cached keys"`).
        what: &'static str,
        /// Why.
        error: std::sync::Arc<dyn std::error::Error + Send + Sync>,
    },
    /// A docshape writer refused to change a document of `collection`, whose reads
    /// are cached by the key family `family`, because no connection is installed to
    /// delete the written document's keys (`keys::invalidate_on_write`) and the family
    /// does not accept values stale up to its TTL (`staleness = "ttl"`). Nothing was
    /// written.
    CacheNotInvalidated {
        /// The model's collection.
        collection: &'static str,
        /// The key family that caches it (its Rust type's path).
        family: &'static str,
    },
}

/// The stored names of a model's stamp fields; `None` where the model declares none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamps {
    /// `#[created_at]`: set once, when the document is created.
    pub created: Option<&'static str>,
    /// `#[updated_at]`: set by every write, from the server's clock.
    pub updated: Option<&'static str>,
    /// `#[revision]`: incremented by one by every write.
    pub revision: Option<&'static str>,
    /// Whether the revision is an `i64` (stored as a BSON long), not an `i32`: the
    /// increment has the field's own BSON type, so the stored type stays the one the
    /// validator requires.
    pub wide_revision: bool,
}

/// Everything [`sync`](fn@crate::sync) makes true of one collection.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionSpec {
    /// The collection's name.
    pub name: String,
    /// The `validator` option.
    pub validator: Document,
    /// The `validationLevel` option.
    pub validation_level: ValidationLevel,
    /// The `validationAction` option.
    pub validation_action: ValidationAction,
    /// The indexes, as `createIndexes` receives them (`{key, name, ...options}`).
    pub indexes: Vec<Document>,
    /// The shard key, when one is declared.
    pub shard_key: Option<Document>,
    /// For a time-series collection (`#[model(timeseries(...))]`), the `timeseries`
    /// and `expireAfterSeconds` options `create` receives ([`TimeSeries::create_options`]);
    /// `None` for a plain collection.
    pub timeseries: Option<Document>,
}

/// How a time-series collection's server buckets span time: the interval between one
/// series' readings, which the server turns into a bucket span (an hour, a day, 30
/// days). It can be made coarser on an existing collection, never finer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Granularity {
    /// Readings seconds apart (buckets of an hour).
    Seconds,
    /// Readings minutes apart (buckets of a day).
    Minutes,
    /// Readings hours apart (buckets of 30 days).
    Hours,
}

/// A time-series collection as `#[model(timeseries(time = t, meta = m, ...))]` declares
/// it: the server buckets its documents (readings) by `meta` and `time` itself
/// (MongoDB 5.0 and newer). Generated as `Model::TIMESERIES`.
///
/// ```
/// use docshape::timeseries::{Granularity, TimeSeries};
///
/// let t = TimeSeries {
///     time: "t", meta: Some("sensor"), granularity: Some(Granularity::Minutes),
///     bucket_span: None, expire_after: Some(30 * 86_400),
/// };
/// let options = t.create_options();
/// assert_eq!(options.get_document("timeseries").unwrap().get_str("metaField").unwrap(), "sensor");
/// assert_eq!(options.get_i64("expireAfterSeconds").unwrap(), 2_592_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeSeries {
    /// The stored name of the reading's time (`timeField`), a `DateTime`.
    pub time: &'static str,
    /// The stored name of the series' key (`metaField`), what stays the same across
    /// one series' readings.
    pub meta: Option<&'static str>,
    /// `granularity`; `None` leaves the server's default (`seconds`) unless
    /// `bucket_span` is set.
    pub granularity: Option<Granularity>,
    /// An exact bucket span in seconds (`bucketMaxSpanSeconds` and
    /// `bucketRoundingSeconds`, MongoDB 6.3 and newer), instead of a granularity.
    pub bucket_span: Option<u64>,
    /// `expireAfterSeconds`: the server deletes a reading this long after its time.
    pub expire_after: Option<u64>,
}

/// One registered model: what a program needs of it without a database.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct RegisteredModel {
    /// The collection it is stored in.
    pub collection: &'static str,
    /// The Rust type's path, as `std::any::type_name` spells it.
    pub type_name: fn() -> &'static str,
    /// Its collection spec: validator, options, indexes, shard key.
    pub spec: fn() -> CollectionSpec,
    /// Its access-pattern table.
    pub access_patterns: &'static [AccessPattern],
    /// The rows on one variant of a polymorphic model, with the discriminator and the
    /// variant's value their commands add (`Model::POLYMORPHIC_ROWS`).
    pub polymorphic_rows: &'static [(&'static str, &'static str, &'static str)],
    /// Its relations, for the design-decision table.
    pub relations: &'static [Relation],
    /// The relations inside its embedded types.
    pub nested: &'static [Nested],
    /// Its timestamps and revision (`Model::STAMPS`), which every writer of the
    /// collection applies.
    pub stamps: Stamps,
    /// Its own denormalized copies (`Model::COPIES`; those inside its embedded types
    /// are placed under its collection by the denormalized pattern).
    pub copies: &'static [CopySpec],
    /// A polymorphic model's variants (`Model::VARIANTS`); empty for a struct.
    pub variants: &'static [Variant],
    /// Its tenant field (`Model::TENANT`): the copies it holds are refreshed only from
    /// sources of its documents' tenants.
    pub tenant: Option<&'static str>,
    /// Its deletion date (`Model::SOFT_DELETE`).
    pub soft_delete: Option<&'static str>,
}

impl Index {
    /// No keys and no options: the base the derive's rows complete (`Index { name, keys,
    /// ..Index::PLAIN }`), so that a row spells only what it sets.
    #[doc(hidden)]
    pub const PLAIN: Index = Index {
        name: "",
        keys: &[],
        unique: false,
        sparse: false,
        expire_after_secs: None,
        case_insensitive: None,
        partial_filter: None,
    };

    /// An index of `keys` named `name`, with no options: what the derive writes for
    /// each index, completed by the `with_*` calls below for the options it sets.
    #[doc(hidden)]
    pub const fn of(name: &'static str, keys: &'static [(&'static str, IndexKey)]) -> Index {
        Index { name, keys, ..Self::PLAIN }
    }
}

impl AccessPattern {
    /// A read row with nothing set: the base the derive's rows complete, as
    /// [`Index::PLAIN`].
    #[doc(hidden)]
    pub const PLAIN: AccessPattern = AccessPattern {
        name: "",
        operation: "",
        filter: &[],
        case_insensitive: false,
        sort: &[],
        range: &[],
        fields: &[],
        freq: "",
        consistency: "",
        guarantee: Consistency::Unspecified,
        load: Load {
            rate: None,
            docs_per_call: DocsPerCall::Unbounded,
            doc_bytes: None,
            doc_unsized: Unsized::Known,
        },
        index: None,
        waivers: &[],
        paginate: false,
        kind: RowKind::Read,
    };

    /// A read row named `name`, its operation described by the same words, matching
    /// `filter` by equality, with its load and the index that serves it, and nothing
    /// else set: what the derive writes for each row, completed by the `with_*` calls
    /// below for what else the row sets (a sort, a range, its own `operation`...).
    #[doc(hidden)]
    pub const fn row(
        name: &'static str,
        filter: &'static [&'static str],
        load: Load,
        index: Option<&'static str>,
    ) -> AccessPattern {
        AccessPattern { name, operation: name, filter, load, index, ..Self::PLAIN }
    }
}

/// `const fn with_<field>(self, value) -> Self` for each named field: how the derive
/// completes an [`Index::of`] or an [`AccessPattern::row`]. A call is one statement in
/// the constant's MIR; struct update syntax copies every field of the struct there,
/// in each model's crate (about 5 M instructions for a struct model's row and unique
/// index, counted: the compile-time section of benches/README.md).
macro_rules! setters {
    ($ty:ident { $($method:ident => $field:ident: $value:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("This value with `", stringify!($field), "` set: for the derive.")]
                #[doc(hidden)]
                pub const fn $method(mut self, value: $value) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

setters!(Index {
    with_unique => unique: bool,
    with_sparse => sparse: bool,
    with_expire_after_secs => expire_after_secs: Option<u64>,
    with_case_insensitive => case_insensitive: Option<&'static str>,
    with_partial_filter => partial_filter: Option<&'static str>,
});

setters!(AccessPattern {
    with_operation => operation: &'static str,
    with_case_insensitive => case_insensitive: bool,
    with_sort => sort: &'static [(&'static str, IndexKey)],
    with_range => range: &'static [&'static str],
    with_fields => fields: &'static [&'static str],
    with_freq => freq: &'static str,
    with_consistency => consistency: &'static str,
    with_guarantee => guarantee: Consistency,
    with_waivers => waivers: &'static [(&'static str, &'static str)],
    with_paginate => paginate: bool,
    with_kind => kind: RowKind,
});
