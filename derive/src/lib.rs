//! Derive macros for [docshape](https://docs.rs/docshape): `Model`, `Embedded` and
//! `KeyFamily`.
//!
//! Use them through the `docshape` crate, which re-exports them and holds the runtime
//! the generated code calls. The map:
//!
//! - this file: the three entry points, and in their `attributes(...)` the one list of
//!   the attribute names each derive reads (the parser forwards every attribute; each
//!   pattern picks its own by name);
//! - `driver`: the one pipeline of the three shapes (struct model, polymorphic model,
//!   embedded type), read top to bottom in phases: parse every pattern the shape can
//!   hold; find what patterns hand one another; check every pattern; one `finish()` of
//!   one accumulator; expand every pattern (with the errors beside the code, so that
//!   the type's uses raise no second error);
//! - `facts`: what every check and expansion reads, found once: the shape and fields
//!   (`facts::Facts`), then the links between patterns as plain data
//!   (`facts::Links`: bounds, kept fields, the version stamp, the copies an access
//!   row's foreign path resolves to). No check or expansion edits another pattern's
//!   parsed value;
//! - `ast` and `attr`: the type as serde stores it, and the attribute values more
//!   than one module reads;
//! - `common`: helpers every pattern may use (suggestions, rule messages, type
//!   classifiers, respanning, bounds, sizes, paths, fallback stubs); it imports no pattern;
//! - the core modules `model`, `validator`, `index`, `access`, `polymorphic` (an enum
//!   model's variants read as structs, for the other core modules), and the patterns
//!   `paginate`, `versioning`, `bucket`, `outlier`, `relation`, `denormalized`,
//!   `stamps`, `timeseries`, `summary` and `tenant` (tenants and soft deletes). Each
//!   has a `parse` where it reads attributes of its own, a `check` where it has rules
//!   beyond single keys, and an `expand`; the driver
//!   calls them by name, and hands a pattern what another found (an index list, a
//!   version field) through the facts. A pattern reads the core modules' results,
//!   never another pattern's, and no pattern module names another;
//! - `keys`: `#[derive(KeyFamily)]`, a derive of its own (its pattern, TTL and
//!   expansion in `keys/`).
//!
//! Generated code reaches the runtime only through `::docshape::__private`, inside
//! `const _: () = { ... };`.

mod access;
mod ast;
mod attr;
mod bucket;
mod common;
mod denormalized;
mod driver;
mod facts;
mod index;
mod keys;
mod model;
mod outlier;
mod paginate;
mod polymorphic;
mod relation;
mod stamps;
mod summary;
mod tenant;
mod timeseries;
mod validator;
mod versioning;

/// Derives `docshape::Model` (and `docshape::validator::Schema`) for a struct with
/// named fields stored in a collection, or for an internally tagged enum
/// (`#[serde(tag = "kind")]`) whose variants are the shapes of a polymorphic collection.
/// Every attribute it reads, with every key, is listed once, in the attribute reference
/// of the `docshape` crate's guide (`docshape::guide::attributes`).
#[proc_macro_derive(
    Model,
    attributes(
        model,
        validate,
        index,
        access,
        schema_version,
        bucket,
        outlier,
        embed,
        reference,
        denormalized,
        created_at,
        updated_at,
        revision,
        summary
    )
)]
pub fn derive_model(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    driver::expand_model(input.into()).into()
}

/// Derives `docshape::validator::Schema` for a sub-document type (struct or enum) that
/// has no collection of its own. Its attributes are listed in the attribute reference
/// of the `docshape` crate's guide (`docshape::guide::attributes`).
#[proc_macro_derive(
    Embedded,
    attributes(embedded, validate, embed, reference, denormalized, created_at, updated_at, revision)
)]
pub fn derive_embedded(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    driver::expand_embedded(input.into()).into()
}

/// Derives `docshape::keys::KeyFamily` for a struct whose fields are the placeholders
/// of a Redis key pattern: `#[key(pattern = "cache:product:{id}", kind = string,
/// ttl = "300s")]`. Its keys are listed in the attribute reference of the `docshape`
/// crate's guide (`docshape::guide::attributes`).
#[proc_macro_derive(KeyFamily, attributes(key))]
pub fn derive_key_family(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    keys::expand(input.into()).into()
}

#[cfg(test)]
mod tests;
