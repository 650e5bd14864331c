//! The descriptor of one relation between models ([`Relation`]), as the derive
//! declares it in [`Model::RELATIONS`](crate::Model::RELATIONS); what is done with
//! it (the design-decision table, filling copies) is the relation pattern's
//! ([`crate::relation`]).

use crate::core::denormalized::{CopySpec, Refresh};

/// The design-decision table's file name, among the artifacts.
pub const DESIGN_DECISIONS_FILE: &str = "DESIGN_DECISIONS.md";

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

impl RelationKind {
    /// `"embed"`, `"reference"`, `"copy"`, `"outlier"`, `"bucket"` or `"timeseries"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Embed => "embed",
            Self::Reference => "reference",
            Self::Copy => "copy",
            Self::Outlier => "outlier",
            Self::Bucket => "bucket",
            Self::TimeSeries => "timeseries",
        }
    }

    /// The attribute whose `reason = "..."` states why, for the kinds whose attribute
    /// takes one; an outlier or a bucket states no reason.
    pub fn reason_attribute(self) -> Option<&'static str> {
        match self {
            Self::Embed => Some("#[embed]"),
            Self::Reference => Some("#[reference]"),
            Self::Copy => Some("#[denormalized]"),
            Self::Outlier | Self::Bucket | Self::TimeSeries => None,
        }
    }
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

/// The relations an `Embedded` type declares, for the design-decision table of the
/// models that hold it. `#[derive(Embedded)]` implements it.
pub trait EmbeddedRelations {
    /// Its `#[embed]` and reference rows.
    const RELATIONS: &'static [Relation] = &[];
    /// The relations inside its fields' embedded types.
    const NESTED: &'static [Nested] = &[];
    /// Its `#[denormalized]` copies, relative to it (see [`Nested::copies`]).
    const COPIES: &'static [CopySpec] = &[];
}

/// Looks up [`EmbeddedRelations`] for a field's type that may not implement it: the
/// inherent consts win when it does, [`RelationsFallback`]'s (none) otherwise, so that
/// derived code can ask every field without knowing which types are embedded.
#[doc(hidden)]
pub struct RelationsOf<T: ?Sized>(std::marker::PhantomData<T>);

impl<T: EmbeddedRelations + ?Sized> RelationsOf<T> {
    /// `T::RELATIONS`.
    pub const RELATIONS: &'static [Relation] = T::RELATIONS;
    /// `T::NESTED`.
    pub const NESTED: &'static [Nested] = T::NESTED;
    /// `T::COPIES`.
    pub const COPIES: &'static [CopySpec] = T::COPIES;
}

/// See [`RelationsOf`].
#[doc(hidden)]
pub trait RelationsFallback {
    /// None.
    const RELATIONS: &'static [Relation] = &[];
    /// None.
    const NESTED: &'static [Nested] = &[];
    /// None.
    const COPIES: &'static [CopySpec] = &[];
}

impl<T: ?Sized> RelationsFallback for RelationsOf<T> {}
