//! Stored field names written in attributes (`series = sensor_id`, `flag = "big"`) and
//! their lookup among the model's fields, with a suggestion when they miss.

use darling::{Error, FromMeta};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, Lit};

use crate::ast::{Container, Field};
use crate::common::message::did_you_mean;
use crate::common::paths;

/// A stored name, written bare (`series = sensor_id`) or quoted (`time = "meta.t"`).
#[derive(Debug, Clone)]
pub(crate) struct Name {
    pub value: String,
    pub span: Span,
}

impl FromMeta for Name {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        match expr {
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                let ident = p.path.get_ident().map(|i| syn::ext::IdentExt::unraw(i).to_string());
                Ok(Self { value: ident.unwrap_or_default(), span: p.span() })
            }
            Expr::Lit(l) => match &l.lit {
                Lit::Str(s) => Ok(Self { value: s.value(), span: s.span() }),
                other => Err(Error::custom("expected a stored field name, like `readings` or `\"meta.t\"`")
                    .with_span(other)),
            },
            Expr::Group(g) => Self::from_expr(&g.expr),
            other => Err(Error::custom("expected a stored field name, like `readings` or `\"meta.t\"`")
                .with_span(other)),
        }
    }
}

/// The stored field named `name`, or an error saying what exists.
pub(crate) fn field<'a>(c: &'a Container, name: &Name, what: &str) -> Result<&'a Field, Error> {
    let fields = paths::stored_fields(c);
    if name.value.contains('.') {
        return Err(Error::custom(format!(
            "`{}`: the {what} is a top-level field of `{}`, not a path",
            name.value, c.ident
        ))
        .with_span(&name.span));
    }
    if let Some(f) =
        fields.iter().find(|f| f.name.as_deref() == Some(&name.value) && f.serde.flatten.is_none())
    {
        return Ok(f);
    }
    let names: Vec<&str> = fields.iter().filter_map(|f| f.name.as_deref()).collect();
    let renamed = fields.iter().find(|f| f.recv.ident.as_ref().is_some_and(|i| *i == name.value));
    let hint = match (renamed, did_you_mean(&name.value, &names)) {
        (Some(f), _) => {
            format!("; the field `{}` is stored as `{}`", name.value, f.name.as_deref().unwrap_or_default())
        }
        (None, Some(s)) => format!("; did you mean `{s}`?"),
        (None, None) => format!("; the stored fields are {}", names.join(", ")),
    };
    Err(Error::custom(format!("no stored field `{}` in `{}` for the {what}{hint}", name.value, c.ident))
        .with_span(&name.span))
}

/// A field a pattern's writers maintain on the stored documents themselves (an
/// outlier's array, flag and count; a bucket's series, period, items, count and
/// aggregates). Those writers append to a document whatever its schema version, so a
/// versioned model must store such a field the same way in every version, and its
/// upgrade keeps the stored value rather than what a step computes.
pub(crate) struct Kept<'a> {
    pub field: &'a Field,
    /// What the field is to its pattern, for messages: "the outlier array".
    pub what: &'static str,
}

/// The stamp attributes a field can carry (`#[created_at]`, `#[updated_at]`,
/// `#[revision]`): the writers set these fields themselves.
pub(crate) const STAMPS: &[&str] = &["created_at", "updated_at", "revision"];

/// The stamp attribute on `field`, by its name, when it carries one.
pub(crate) fn stamp_of(field: &crate::ast::Field) -> Option<(&'static str, &syn::Attribute)> {
    field.recv.attrs.iter().find_map(|a| STAMPS.iter().find(|s| a.path().is_ident(s)).map(|s| (*s, a)))
}
