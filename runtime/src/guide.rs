//! The guide: docshape taught one pattern and one operation at a time.
//!
//! Each chapter is a module holding documentation only; every Rust example in it is
//! compiled by `cargo test` (those that need a server are compiled, not run). Read them
//! in this order the first time; each chapter links the [attribute
//! reference](attributes), which lists every attribute and key once.
//!
//! **Modelling**
//!
//! 1. [`validator`]: a struct, and the `$jsonSchema` validator docshape derives from it.
//! 2. [`indexes`]: indexes, the access-pattern table, and the design rules the compiler
//!    enforces; consistency and load estimates.
//! 3. [`access`]: the access table as the application's query and update API (finders,
//!    write rows, upserts, transactions, cached rows).
//! 4. [`writes`]: what every write does besides itself (stamps, revisions, copies,
//!    cached keys) and in what order.
//! 5. [`relation`]: embed, reference or copy.
//! 6. [`denormalized`]: copies and their refresh (worker, watcher, reconcile).
//! 7. [`summary`]: documents maintained from another model's writes (totals, counts,
//!    extremes per group), exact under concurrency, crashes and foreign writes.
//! 8. [`paginate`]: keyset pagination with tamper-evident cursors.
//! 9. [`versioning`]: schema versions, lazy migration and backfill.
//! 10. [`polymorphic`]: one collection, several document shapes.
//! 11. [`bucket`]: many items of one series per document, appended in one round trip.
//! 12. [`timeseries`]: collections the server buckets itself.
//! 13. [`outlier`]: an array embedded up to a threshold, with overflow documents.
//! 14. [`keys`]: the Redis key catalog.
//! 15. [`tenant`]: tenants and soft deletes, predicates every row carries.
//!
//! **Operating**
//!
//! 15. [`application`]: connecting, the generated API in an application, and a worked
//!     example (a Q&A site).
//! 16. [`artifacts`]: `sync` for every model, artifacts as files, drift checks and the
//!     command line.
//! 17. [`upgrades`]: rolling deploys and rollbacks of a changed model.
//! 18. [`infer`]: adopting docshape over an existing database, and checking the
//!     workload against the access table.
//! 19. [`tracing`]: the spans and events docshape records.
//! 20. [`testing`]: testing your own models against a real server.
//!
//! **Reference**
//!
//! 21. [`types`]: how Rust types are stored and validated.
//! 22. [`features`]: the crate's features: bson 2 or 3, TLS backends, DNS.
//! 23. [`attributes`]: every attribute the derives read, with its keys.

// Each chapter is a Markdown file beside this one, so that it reads as text in the
// repository and compiles as doctests here.

pub mod validator {
    #![doc = include_str!("guide/validator.md")]
}
pub mod indexes {
    #![doc = include_str!("guide/indexes.md")]
}
pub mod access {
    #![doc = include_str!("guide/access.md")]
}
pub mod writes {
    #![doc = include_str!("guide/writes.md")]
}
pub mod relation {
    #![doc = include_str!("guide/relation.md")]
}
pub mod denormalized {
    #![doc = include_str!("guide/denormalized.md")]
}
pub mod summary {
    #![doc = include_str!("guide/summary.md")]
}
pub mod paginate {
    #![doc = include_str!("guide/paginate.md")]
}
pub mod versioning {
    #![doc = include_str!("guide/versioning.md")]
}
pub mod polymorphic {
    #![doc = include_str!("guide/polymorphic.md")]
}
pub mod bucket {
    #![doc = include_str!("guide/bucket.md")]
}
pub mod timeseries {
    #![doc = include_str!("guide/timeseries.md")]
}
pub mod outlier {
    #![doc = include_str!("guide/outlier.md")]
}
pub mod keys {
    #![doc = include_str!("guide/keys.md")]
}
pub mod tenant {
    #![doc = include_str!("guide/tenant.md")]
}
pub mod application {
    #![doc = include_str!("guide/application.md")]
}
pub mod artifacts {
    #![doc = include_str!("guide/artifacts.md")]
}
pub mod upgrades {
    #![doc = include_str!("guide/upgrades.md")]
}
pub mod infer {
    #![doc = include_str!("guide/infer.md")]
}
pub mod tracing {
    #![doc = include_str!("guide/tracing.md")]
}
pub mod testing {
    #![doc = include_str!("guide/testing.md")]
}
pub mod types {
    #![doc = include_str!("guide/types.md")]
}
pub mod features {
    #![doc = include_str!("guide/features.md")]
}
pub mod attributes {
    #![doc = include_str!("guide/attributes.md")]
}
