//! Denormalized copies: a field of one model that copies a field of another
//! (`#[denormalized(from = "User::name", via = "author_id", refresh = ...)]`), and how
//! the copies are kept as fresh as their declared policy says.
//!
//! Every `#[derive(Model)]` with a `#[denormalized]` field submits one [`CopySpec`]
//! per copy to this module's registry (through the linker, like
//! [`crate::registry::models`]), so that the source's update API knows every copy that
//! depends on it without a list kept by hand.

use std::time::Duration;

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

/// One denormalized copy, as declared on the model that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CopySpec {
    /// The collection holding the copy (`"posts"`).
    pub collection: &'static str,
    /// The copy's stored field name (`"author_name"`).
    pub field: &'static str,
    /// The stored name of the field that references the source document
    /// (`"author_id"`): it holds the source's `_id`.
    pub via: &'static str,
    /// The source's collection (`"users"`).
    pub source: &'static str,
    /// The stored path of the copied field in the source (`"name"`).
    pub source_field: &'static str,
    /// When the copy is refreshed.
    pub refresh: Refresh,
    /// Why the copy exists, as written in the attribute (`reason = "..."`).
    pub reason: Option<&'static str>,
}

impl CopySpec {
    /// `"posts.author_name"`: the copy's name in the refresh queue and in reports.
    pub fn key(&self) -> String {
        format!("{}.{}", self.collection, self.field)
    }
}

inventory::collect!(CopySpec);

/// Every registered copy, in a stable order (by collection, then field).
pub fn copies() -> Vec<&'static CopySpec> {
    let mut all: Vec<&'static CopySpec> = inventory::iter::<CopySpec>.into_iter().collect();
    all.sort_by(|a, b| (a.collection, a.field).cmp(&(b.collection, b.field)));
    all.dedup_by(|a, b| a == b);
    all
}

/// The registered copies whose source is the collection `source`.
pub fn dependents(source: &str) -> Vec<&'static CopySpec> {
    copies().into_iter().filter(|c| c.source == source).collect()
}
