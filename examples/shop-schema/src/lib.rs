//! The shop's artifacts, generated at build time by `build.rs` from the models in
//! `shop-models`: each collection's validator and indexes as canonical extended JSON,
//! and the access-pattern table. A binary that links this crate carries its schema.
//!
//! The same files are committed in `schema/` for review; `tests/artifacts.rs` fails
//! when they drift from the code. Refresh them with
//! `cargo run -p shop-schema --bin shopctl -- export examples/shop-schema/schema`.

include!(concat!(env!("OUT_DIR"), "/docshape/artifacts.rs"));

/// The directory, in this package, where the artifacts are committed.
pub const COMMITTED_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schema");
