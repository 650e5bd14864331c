//! The operations layer: what a program does with its models and a database or a
//! directory, for every model at once.
//!
//! [`sync`] makes collections match the models, [`check`] reports how they differ,
//! [`artifacts`] writes validators, indexes and tables as files. The deploy tool over
//! them (`infer`, the workload check and the `docshape` binary) is the crate
//! `docshape-cli`, so that an application links none of it.
//!
//! **Rule:** operations import the core only. What a pattern adds to them (an
//! outlier's overflow collection, the key catalog, the design-decision table) reaches
//! them as core types: the registry's [`CollectionSpec`](crate::core::spec::CollectionSpec)s
//! and the files of [`crate::core::hooks`].

pub mod artifacts;
pub mod check;
pub mod sync;
