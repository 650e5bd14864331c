//! Integration tests against a real server, in one binary: one link of the driver
//! instead of one per pattern. A module per pattern (its models, and the tests of its
//! runtime), plus the spans, TLS, and the compile-pass cases (the layering
//! rules are a binary of their own, layering.rs: they need no server).
//!
//! The versioning, relation and outlier tests are binaries of their own: they check
//! what `sync_all`, `check_all` and the artifacts make of every model in the program,
//! which is theirs alone only in a program of their own. The soak (soak.rs) is one too,
//! so that it runs alone.

mod access;
mod bucket;
mod denormalized;
mod index;
mod infer;
mod keys;
mod paginate;
mod polymorphic;
mod spans;
mod stamps;
mod summary;
mod tenant;
mod timeseries;
mod tls;
mod validator;
mod writes;
