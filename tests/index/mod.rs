//! Indexes and access patterns on a real server: sync, dry runs, explain.

// clippy's `duplicated_attributes` misreads repeated keys across derive helper
// attributes (`#[access(filter(tenant))]` twice) as duplicates: rust-clippy#13238.
#![allow(clippy::duplicated_attributes)]

mod consistency;
mod explain;
mod load;
mod rollout;
mod sync;
