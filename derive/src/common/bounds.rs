//! Bounds a pattern puts on a field's validator, as if written in `#[validate]`: a
//! bucket bounds its items and its count, an outlier its embedded array, an
//! `#[embed(max = N)]` its array.

use darling::util::SpannedValue;
use proc_macro2::Span;

use crate::ast::{Body, Container, Field};
use crate::attr::validate::{Num, NumValue};

/// A bound a pattern adds to a field's validator, as if written in `#[validate]`.
pub(crate) struct Bound {
    pub field: Option<String>,
    pub span: Span,
    pub max_items: Option<u64>,
    pub minimum: Option<i64>,
    pub maximum: Option<i64>,
}

/// Whether some bound limits the length of the stored field `name`.
pub(crate) fn bounds_items(bounds: &[Bound], name: Option<&str>) -> bool {
    bounds.iter().any(|b| b.max_items.is_some() && b.field.as_deref() == name)
}

/// Adds the patterns' bounds to the fields, where `#[validate]` did not set them.
pub(crate) fn apply(c: &mut Container, bounds: &[Bound]) {
    let Body::Struct(_, fields) = &mut c.body else { return };
    apply_fields(fields, bounds);
}

pub(crate) fn apply_fields(fields: &mut [Field], bounds: &[Bound]) {
    for b in bounds {
        let Some(f) = fields.iter_mut().find(|f| f.name == b.field && !f.serde.skip) else { continue };
        let num = |n: i64| Num { value: NumValue::Int(n), span: b.span };
        if let Some(m) = b.max_items {
            f.recv.max_items.get_or_insert(SpannedValue::new(m, b.span));
        }
        if let Some(m) = b.minimum {
            f.recv.minimum.get_or_insert_with(|| num(m));
        }
        if let Some(m) = b.maximum {
            f.recv.maximum.get_or_insert_with(|| num(m));
        }
    }
}
