//! The descriptor of one relation between models ([`Relation`]), as the derive
//! declares it in [`Model::RELATIONS`](crate::Model::RELATIONS); what is done with
//! it (the design-decision table, filling copies) is the relation pattern's
//! ([`crate::relation`]).

use crate::core::copy::Refresh;

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
}

impl RelationKind {
    /// `"embed"`, `"reference"` or `"copy"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Embed => "embed",
            Self::Reference => "reference",
            Self::Copy => "copy",
        }
    }
}

/// One relation of a model, as its attributes declare it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Relation {
    /// The stored field name.
    pub field: &'static str,
    /// Embed, reference or copy.
    pub kind: RelationKind,
    /// What the field holds: the embedded type's name, the referenced collection, or
    /// for a copy the source as `collection.field`.
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
}
