//! Attribute parsing: serde's attributes as serde reads them, and the parts of
//! docshape's own that more than one module reads (index key lists, `#[validate]`
//! values, `migrate(...)` steps, `#[reference(...)]`, `timeseries(...)`).

pub(crate) mod case;
pub(crate) mod index_keys;
pub(crate) mod migrate;
pub(crate) mod reference;
pub(crate) mod serde;
pub(crate) mod timeseries;
pub(crate) mod validate;

use darling::{Error, FromMeta};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, Lit};

/// A key that takes no value (`strict`, `unique_items`).
///
/// darling's own `Flag` panics on some malformed inputs (`strict {}`); this one always
/// answers with an error under the tokens.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Flag(Option<Span>);

impl Flag {
    pub(crate) fn is_present(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn span(&self) -> Span {
        self.0.unwrap_or_else(Span::call_site)
    }
}

impl FromMeta for Flag {
    fn from_none() -> Option<Self> {
        Some(Self(None))
    }

    fn from_meta(item: &syn::Meta) -> darling::Result<Self> {
        match item {
            syn::Meta::Path(p) => Ok(Self(Some(syn::spanned::Spanned::span(p)))),
            other => {
                let name = other.path().get_ident().map(|i| i.to_string()).unwrap_or_default();
                Err(darling::Error::custom(format!("`{name}` takes no value: write `{name}` alone"))
                    .with_span(other))
            }
        }
    }
}

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
