//! Attribute parsing: serde's attributes as serde reads them, and docshape's own.

pub(crate) mod serde;
pub(crate) mod validate;
