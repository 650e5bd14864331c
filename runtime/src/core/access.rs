//! The access-pattern table a model declares with `#[access(...)]`: each row a query
//! the application runs, served by an index found at compile time (the prefix rule,
//! equality → sort → range), rendered in the seed's format with its load estimate, and
//! checked on a live server with `explain`. Each row's consistency is a closed
//! vocabulary mapped to the read preference, read concern and write concern its
//! queries carry ([`Consistency`]).

// Separate files so that the descriptor, which the `Model` trait names, does not import
// the check, which names the `Model` trait.
pub mod command;
pub(crate) mod consistency;
pub(crate) mod explain;
pub mod find;
pub mod literal;
pub(crate) mod load;
pub(crate) mod table;
pub mod update;
pub mod upsert;

pub use consistency::{Consistency, MIN_MAX_STALENESS};
pub use explain::{explain_access_patterns, ExplainOutcome};
pub use find::{Find, FindError, NoSession, Projection, SessionSlot};
pub use literal::{in_filter, literal, not_in_filter, Literal};
pub use load::{DocsPerCall, Load, Rate, RateKind};
pub use table::{
    access_table, access_tables, access_tables_with_variants, AccessPattern, CollectionRows, RowKind,
};
pub use update::{PushBound, Update, UpdateError, Updated};
pub use upsert::{Upsert, Upserted};
