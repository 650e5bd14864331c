//! Bounds a pattern puts on a field's validator, as if written in `#[validate]`: a
//! bucket bounds its items and its count, an outlier its embedded array, an
//! `#[embed(max = N)]` its array.

use darling::util::SpannedValue;
use proc_macro2::Span;

use syn::Ident;

use crate::ast::{Body, Container, Context, Field};
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
fn apply(c: &mut Container, bounds: &[Bound]) {
    let Body::Struct(_, fields) = &mut c.body else { return };
    apply_fields(fields, bounds);
}

fn apply_fields(fields: &mut [Field], bounds: &[Bound]) {
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

/// The same context with the bounds in the fields' validators, as if written in
/// `#[validate]`.
pub(crate) fn bounded(cx: &Context, bounds: &[Bound]) -> Context {
    let mut container = cx.container.clone();
    apply(&mut container, bounds);
    Context { container, model: cx.model.clone(), polymorphic: cx.polymorphic.clone() }
}

/// A polymorphic model's context with each variant's bounds in that variant's fields
/// only (the enum's and its struct-like view's), as if written in `#[validate]`.
pub(crate) fn bounded_variants(cx: &Context, bounds: &[(Ident, Vec<Bound>)]) -> Context {
    let mut container = cx.container.clone();
    let mut polymorphic = cx.polymorphic.clone();
    for (ident, bounds) in bounds.iter().filter(|(_, b)| !b.is_empty()) {
        if let Body::Enum(variants) = &mut container.body {
            if let Some(v) = variants.iter_mut().find(|v| v.ident == *ident) {
                apply_fields(&mut v.fields, bounds);
            }
        }
        if let Some(v) = polymorphic.as_mut().and_then(|p| p.variants.iter_mut().find(|v| v.ident == *ident))
        {
            apply(&mut v.container, bounds);
        }
    }
    Context { container, model: cx.model.clone(), polymorphic }
}
