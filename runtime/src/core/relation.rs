//! The descriptor of one relation between models ([`Relation`]), as the derive
//! declares it in [`Model::RELATIONS`](crate::Model::RELATIONS); what is done with
//! it (the design-decision table, filling copies) is the relation pattern's
//! ([`crate::relation`]).

use crate::core::descriptor::CopySpec;
pub use crate::core::descriptor::{Nested, Relation, RelationKind, Split, Variant};

/// The design-decision table's file name, among the artifacts.
pub const DESIGN_DECISIONS_FILE: &str = "DESIGN_DECISIONS.md";

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
    /// All three, as [`Nested::of`] takes them: one lookup in derived code, not three.
    pub const ALL: NestedParts = (T::RELATIONS, T::COPIES, T::NESTED);
}

/// An embedded type's relations, copies and nested entries, as [`Nested::of`] takes them.
#[doc(hidden)]
pub type NestedParts = (&'static [Relation], &'static [CopySpec], &'static [Nested]);

impl Nested {
    /// The entry of the field stored as `field` (an array of them when `many`) whose type
    /// declares `parts` (`RelationsOf::<T>::ALL`), outside any variant.
    #[doc(hidden)]
    pub const fn of(field: &'static str, many: bool, (relations, copies, nested): NestedParts) -> Self {
        Self { field, many, relations, copies, nested, variant: None }
    }

    /// The entry of one variant of a polymorphic model, whose documents hold `tag` =
    /// `value`: its rows, copies and fields' entries (`parts`), under no field of its
    /// own (the variant's fields are the document's).
    #[doc(hidden)]
    pub const fn variant(
        tag: &'static str,
        value: &'static str,
        (relations, copies, nested): NestedParts,
    ) -> Self {
        Self { field: "", many: false, relations, copies, nested, variant: Some(Variant { tag, value }) }
    }
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
    /// None.
    const ALL: NestedParts = (&[], &[], &[]);
}

impl<T: ?Sized> RelationsFallback for RelationsOf<T> {}
