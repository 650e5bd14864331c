//! Helpers every pattern may use. Nothing here imports a pattern: the layer sits
//! between the parsed type ([`crate::ast`]) and the pattern modules.
//!
//! - [`message`]: "did you mean" suggestions and design-rule messages;
//! - [`types`]: what a field's type is stored as, from its spelling;
//! - [`respan`]: generated tokens placed under the user's tokens;
//! - [`fields`]: stored field names written in attributes, their lookup, and the
//!   fields a pattern maintains ([`fields::Kept`]);
//! - [`old_field`]: whether an older version's shape stores a field as the current
//!   type does;
//! - [`nested`]: the relations and copies inside a type's fields' embedded types;
//! - [`paths`]: stored paths (`address.city`) and the `HasField` impls;
//! - [`size`]: compile-time BSON size bounds;
//! - [`shared`]: entries several variants repeat, as one constant each;
//! - [`bounds`]: bounds a pattern adds to a field's validator;
//! - [`duration`]: `"30d"`-style durations;
//! - [`expansion`]: what one pattern adds to the generated code;
//! - [`dummy`] and [`fallback`]: the `const _` wrapper, and stub impls when the derive
//!   fails (or its expansion without checks, when it reports errors).

pub(crate) mod bounds;
pub(crate) mod dummy;
pub(crate) mod duration;
pub(crate) mod expansion;
pub(crate) mod fallback;
pub(crate) mod fields;
pub(crate) mod message;
pub(crate) mod nested;
pub(crate) mod old_field;
pub(crate) mod paths;
pub(crate) mod respan;
pub(crate) mod shared;
pub(crate) mod size;
pub(crate) mod types;
