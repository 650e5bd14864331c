//! The patterns layer: one module per schema-design pattern, each named with the same
//! word as its attribute and its derive module.
//!
//! **Rule:** a pattern imports the core only, never another pattern. When one pattern
//! must react to another (a versioned write keeps denormalized copies in line), the
//! acting one calls a hook in [`crate::core::hooks`] and the reacting one registers
//! itself there; a public path that gathers several patterns is put together in the
//! crate root, which may import everything.

pub mod bucket;
pub mod denormalized;
pub mod keys;
pub mod outlier;
pub mod paginate;
pub mod relation;
pub mod summary;
pub mod timeseries;
pub mod versioning;
