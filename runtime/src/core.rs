//! The core layer: what every model has, and what the other layers share.
//!
//! The [`Model`](model::Model) and [`Schema`](validator::Schema) traits and the
//! descriptor types a model carries (indexes, access patterns, relations, copies, the
//! error of decoding a stored version), the validator builders, paths and size
//! bounds, the registry of models linked into the program, the collection spec that
//! `sync` applies, the errors, the guarded append that bucket and outlier share, and
//! the hooks through which a pattern reacts to what another one does.
//!
//! **Rule:** nothing here imports `crate::ops` or `crate::patterns`. A descriptor that
//! the `Model` trait or the registry has to name lives here, and the pattern that
//! gives it meaning re-exports it; an effect that crosses patterns (a versioned write
//! refreshing denormalized copies, a pattern's file among the artifacts) goes through
//! [`hooks`], which the pattern fills at link time.

pub mod access;
pub mod append;
pub mod bson_compat;
pub mod denormalized;
pub mod descriptor;
pub mod error;
pub mod hooks;
pub mod index;
pub mod model;
pub mod path;
pub mod queue;
pub mod registry;
pub mod relation;
pub mod size;
pub mod soft_delete;
pub mod spec;
pub mod stamps;
pub(crate) mod trace;
pub mod transaction;
pub mod validator;
pub mod version;
pub mod write;
