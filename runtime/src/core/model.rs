//! The [`Model`] trait: a Rust type stored in one collection.

use crate::core::bson_compat;
use std::fmt;

use bson::Document;
use mongodb::{Collection, Database};

use crate::core::descriptor::AccessPattern;
use crate::core::descriptor::CopySpec;
use crate::core::descriptor::Relation;
use crate::core::descriptor::{Index, IndexKey};
pub use crate::core::descriptor::{ValidationAction, ValidationLevel};
use crate::core::validator::Schema;
use crate::core::version::VersionError;

impl ValidationLevel {
    /// The server's spelling: `"strict"`, `"moderate"` or `"off"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Strict => "strict",
            Self::Moderate => "moderate",
            Self::Off => "off",
        }
    }
}

impl ValidationAction {
    /// The server's spelling: `"error"` or `"warn"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
        }
    }
}

impl fmt::Display for ValidationLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ValidationAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A type stored in its own collection, with a validator the server enforces.
///
/// Derive it: `#[derive(Model)]` with `#[model(collection = "...")]` on a struct with
/// named fields that also derives serde's `Serialize` and `Deserialize`, or on an
/// internally tagged enum (`#[serde(tag = "kind")]`) for a polymorphic collection (see
/// [`Model::POLYMORPHIC_ROWS`]).
///
/// ```
/// use docshape::{Model, validator::Schema};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Model)]
/// #[model(collection = "usuarios", validation_action = "error")]
/// struct Usuario {
///     #[validate(min_length = 2, max_length = 100)]
///     nombre: String,
///     #[serde(skip_serializing_if = "Option::is_none")]
///     #[validate(minimum = 0, maximum = 150)]
///     edad: Option<i32>,
/// }
///
/// assert_eq!(Usuario::COLLECTION, "usuarios");
/// let schema = Usuario::validator();
/// let schema = schema.get_document("$jsonSchema").unwrap();
/// assert_eq!(schema.get_array("required").unwrap().len(), 1);
/// ```
pub trait Model: Schema + Sized {
    /// The collection's name.
    const COLLECTION: &'static str;
    /// The `validationLevel` set by [`crate::sync`](fn@crate::sync).
    const VALIDATION_LEVEL: ValidationLevel = ValidationLevel::Strict;
    /// The `validationAction` set by [`crate::sync`](fn@crate::sync).
    const VALIDATION_ACTION: ValidationAction = ValidationAction::Error;
    /// The indexes (`#[index(...)]`) [`crate::sync`](fn@crate::sync) creates, besides `_id`'s.
    const INDEXES: &'static [Index] = &[];
    /// The access-pattern table (`#[access(...)]`), each row with the index serving it.
    const ACCESS_PATTERNS: &'static [AccessPattern] = &[];
    /// The shard key (`#[model(shard_key(...))]`); empty when none is declared.
    const SHARD_KEY: &'static [(&'static str, IndexKey)] = &[];
    /// The relations its attributes declare (`#[embed]`, references, `#[denormalized]`)
    /// and its arrays spread over several documents (`#[outlier]`, `#[bucket]`), for the
    /// design-decision table.
    const RELATIONS: &'static [Relation] = &[];
    /// The relations inside its fields' embedded types (a reference in a sub-document
    /// or in an array's items), listed under the field's path in the design-decision
    /// table.
    const NESTED: &'static [crate::core::descriptor::Nested] = &[];
    /// On a polymorphic model (`#[derive(Model)]` on a `#[serde(tag = "kind")]` enum),
    /// the access patterns on one variant (`variant = Click`: reads, pages, cached reads
    /// and write rows), as `(pattern, tag, value)`: each of their commands carries
    /// `{tag: {"$eq": value}}`, so they read and write that variant's documents only,
    /// and it is also what lets the server use an index partial to that variant. An
    /// upsert on a variant creates a document holding `tag: value`. Empty for a struct.
    ///
    /// ```
    /// use docshape::bson::oid::ObjectId;
    /// use docshape::Model;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Model)]
    /// #[serde(tag = "kind", rename_all = "snake_case")]
    /// #[model(collection = "events")]
    /// #[access(name = "clicks_of", variant = Click, filter(user), allow(unserved, reason = "a sketch"))]
    /// enum Event {
    ///     Click { #[serde(rename = "_id")] id: ObjectId, user: String },
    ///     View { #[serde(rename = "_id")] id: ObjectId, user: String, page: String },
    /// }
    ///
    /// assert_eq!(Event::POLYMORPHIC_ROWS, &[("clicks_of", "kind", "click")]);
    /// // Its variants, as `Model::VARIANTS` lists them.
    /// let values: Vec<(&str, &str)> = Event::VARIANTS.iter().map(|v| (v.tag, v.value)).collect();
    /// assert_eq!(values, [("kind", "click"), ("kind", "view")]);
    /// ```
    const POLYMORPHIC_ROWS: &'static [(&'static str, &'static str, &'static str)] = &[];
    /// On a polymorphic model, its variants in declaration order: the discriminator's
    /// stored name and each variant's value (`[{tag: "kind", value: "click"}, ...]`),
    /// for what describes the collection without reading its validator (the model
    /// diagram among the [artifacts](crate::artifacts)). Empty for a struct.
    const VARIANTS: &'static [crate::core::descriptor::Variant] = &[];
    /// For a time-series collection (`#[model(timeseries(...))]`), its options:
    /// [`sync`](fn@crate::sync) creates the collection with them. `None` for a plain
    /// collection.
    const TIMESERIES: Option<crate::core::descriptor::TimeSeries> = None;
    /// Its denormalized copies (`#[denormalized]`), filled by
    /// [`crate::relation::snapshot`] and refreshed as each one's policy says.
    const COPIES: &'static [CopySpec] = &[];
    /// Its timestamps and revision (`#[created_at]`, `#[updated_at]`, `#[revision]` on
    /// its fields): the stored names every docshape writer stamps
    /// ([`crate::core::stamps`]). None by default.
    const STAMPS: crate::core::descriptor::Stamps = crate::core::descriptor::Stamps::NONE;

    /// `#[model(tenant = ...)]`: the stored name of the field every row filters on
    /// first (see the guide's tenant chapter). None by default.
    const TENANT: Option<&'static str> = None;
    /// `#[model(soft_delete = ...)]`: the stored name of the deletion date every live
    /// row requires `null`. None by default.
    const SOFT_DELETE: Option<&'static str> = None;
    /// `#[model(transactions)]`: the model's writes are made in transactions (in a
    /// [`crate::transaction`]'s body, or a session whose transaction the caller
    /// runs), so that what must commit with them (a `sync` summary) is written in
    /// the same transaction. `false` by default.
    const TRANSACTIONS: bool = false;
    /// The rows of a soft-delete model that read live documents only, each with the
    /// deletion date it requires `null` (every row but those declared
    /// `include_deleted`). None by default.
    const LIVE_ROWS: &'static [(&'static str, &'static str)] = &[];

    /// How generated readers (paginators) decode a stored document: `None` for serde as
    /// is; a versioned model upgrades older versions ([`crate::versioning::decode`]).
    #[doc(hidden)]
    const DECODE_STORED: Option<fn(Document) -> Result<Self, VersionError>> = None;

    /// The collection's `validator` option: `{"$jsonSchema": ...}`.
    fn validator() -> Document {
        // The document is built once, outside this function every model instantiates.
        crate::core::validator::json_schema(Self::schema())
    }

    /// [`Model::validator`] as pretty-printed relaxed extended JSON, the text you would
    /// paste into `db.createCollection(name, {validator: ...})`; needs no database.
    fn validator_json() -> String {
        let value = bson::Bson::Document(Self::validator()).into_relaxed_extjson();
        serde_json::to_string_pretty(&value).unwrap_or_default()
    }

    /// The access-pattern table as Markdown, in the seed's format; a row on one variant
    /// of a polymorphic model says which ([`crate::access::access_tables_with_variants`]).
    fn access_table() -> String {
        crate::core::access::table::access_tables_with_variants(&[(
            Self::COLLECTION,
            Self::ACCESS_PATTERNS,
            Self::POLYMORPHIC_ROWS,
        )])
    }

    /// The typed collection in `db`.
    fn collection(db: &Database) -> Collection<Self>
    where
        Self: Send + Sync,
    {
        db.collection(Self::COLLECTION)
    }
}

/// A model without a tenant (no `#[model(tenant = ...)]`): its documents may be loaded
/// by `_id` alone ([`Ref::load`](crate::refs::Ref::load),
/// [`refs::load_one`](crate::refs::load_one), [`refs::load_many`](crate::refs::load_many)).
///
/// `#[derive(Model)]` implements it for every model that declares no tenant; a tenant
/// model has none, so a load by `_id` alone of one (which would read across tenants) is
/// a compile error under the call, naming the fix: [`Ref::load_in`](crate::refs::Ref::load_in).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has a tenant (`#[model(tenant = ...)]`): a load by `_id` alone would read across tenants",
    label = "loads `{Self}` by `_id` alone",
    note = "load it within the caller's tenant: `Ref::load_in(&db, &tenant)` filters on the `_id` and the tenant"
)]
pub trait NoTenant {}

/// A model whose documents can be referenced: the Rust type of its `_id`.
///
/// `#[derive(Model)]` implements it: `Id` is the type of the field stored as `_id`
/// (inside its `Option`, when the server assigns it), or `ObjectId` when the struct
/// has no such field and the driver generates one.
pub trait Identified: Model {
    /// The type of the `_id` field.
    type Id: serde::Serialize + serde::de::DeserializeOwned + Send + Sync;

    /// The most BSON bytes the `_id` value takes, with its field's own bounds (a
    /// `String` `_id` with `#[validate(max_length = N)]` is bounded, an `ObjectId` or an
    /// integer has a fixed size), and why it is unknown: what a `Ref<Self>` weighs.
    /// `#[derive(Model)]` computes it from the `_id` field; without it a reference to
    /// the model has no size bound.
    const ID_SIZE: crate::core::size::Part = (
        None,
        crate::core::size::Unsized::Value {
            what: "the `_id` of a model whose `Identified` impl states no `ID_SIZE`",
            fix: false,
        },
    );

    /// The `_id` field's schema with that field's own constraints (`maxLength`,
    /// `pattern`, ...): what a `Ref<Self>` stores, so that the validator of a model
    /// holding one enforces the bound its size counts on. `#[derive(Model)]` states it
    /// when the `_id` field has a `#[validate]`; otherwise it is the id type's schema.
    fn id_schema() -> bson::Document
    where
        Self::Id: crate::core::validator::Schema,
    {
        <Self::Id as crate::core::validator::Schema>::schema()
    }
}

/// A value that names one document of `S` by its `_id`: `S::Id` itself (and `str` for
/// a `String` id, so `"u1"` works), or a `Ref<S>`.
///
/// It is the only way to hand an id to docshape's write paths: a `Document` or a
/// `Bson` is not an id of a model whose `_id` is typed, so a request body such as
/// `{"$ne": null}` cannot be passed where an id is expected. `#[derive(Model)]`
/// implements it for the model's id type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the `_id` of `{S}`",
    label = "expected the id type of `{S}`, or a `Ref` to it",
    note = "pass the model's typed id (`&<{S} as Identified>::Id`) or a `&Ref<{S}>`"
)]
pub trait IdOf<S: Identified> {
    /// The id as the stored `_id` spells it.
    fn id_bson(&self) -> Result<bson::Bson, bson_compat::SerError>;
}

/// `{"$eq": value}`: how every caller-supplied value enters a filter, so that an
/// operator document or a regex is compared literally instead of run. It takes a value
/// already written as BSON (a typed id's `to_bson`, a stored value), never a filter.
pub fn eq(value: bson::Bson) -> Document {
    crate::core::access::literal::Literal::stored(value).eq()
}
