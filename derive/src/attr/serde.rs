//! serde's attributes, read the way serde reads them for serialization.
//!
//! Only what changes the stored shape is kept; everything else serde accepts is
//! skipped without complaint (serde itself reports its own mistakes).

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, LitStr, Token};

use crate::attr::case::RenameRule;

/// serde's container attributes that shape what is stored.
#[derive(Default, Clone)]
pub(crate) struct SerdeContainer {
    pub rename: Option<String>,
    pub rename_all: Option<RenameRule>,
    pub rename_all_fields: Option<RenameRule>,
    pub tag: Option<LitStr>,
    pub content: Option<LitStr>,
    pub untagged: Option<Span>,
    pub transparent: bool,
    pub into: Option<syn::Type>,
}

/// serde's variant attributes that shape what is stored.
#[derive(Default, Clone)]
pub(crate) struct SerdeVariant {
    pub rename: Option<String>,
    pub rename_all: Option<RenameRule>,
    pub skip: bool,
    pub untagged: bool,
    pub with: Option<LitStr>,
}

/// serde's field attributes that shape what is stored.
#[derive(Default, Clone)]
pub(crate) struct SerdeField {
    pub rename: Option<String>,
    pub rename_span: Option<Span>,
    pub skip: bool,
    pub skip_serializing_if: Option<LitStr>,
    pub flatten: Option<Span>,
    /// `with` or `serialize_with`: serde does not use the type's own `Serialize`.
    pub with: Option<LitStr>,
}

fn serde_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("serde"))
}

/// The serialization name of `rename = "x"` or `rename(serialize = "x")`.
fn ser_name(meta: &ParseNestedMeta) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(Token![=]) {
        return Ok(Some(meta.value()?.parse()?));
    }
    let mut found = None;
    meta.parse_nested_meta(|inner| {
        let value: LitStr = inner.value()?.parse()?;
        if inner.path.is_ident("serialize") {
            found = Some(value);
        }
        Ok(())
    })?;
    Ok(found)
}

fn lit(meta: &ParseNestedMeta) -> syn::Result<LitStr> {
    meta.value()?.parse()
}

/// Consumes whatever follows a key docshape does not need.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}

fn each(
    attrs: &[Attribute],
    errors: &mut darling::error::Accumulator,
    mut f: impl FnMut(&ParseNestedMeta) -> syn::Result<bool>,
) {
    for attr in serde_attrs(attrs) {
        let result = attr.parse_nested_meta(|meta| {
            if !f(&meta)? {
                skip_value(&meta)?;
            }
            Ok(())
        });
        if let Err(e) = result {
            errors.push(darling::Error::from(e));
        }
    }
}

impl SerdeContainer {
    pub(crate) fn parse(attrs: &[Attribute], errors: &mut darling::error::Accumulator) -> Self {
        let mut out = Self::default();
        each(attrs, errors, |meta| {
            let p = &meta.path;
            if p.is_ident("rename") {
                out.rename = ser_name(meta)?.map(|l| l.value());
            } else if p.is_ident("rename_all") {
                out.rename_all = ser_name(meta)?.map(|l| RenameRule::from_lit(&l)).transpose()?;
            } else if p.is_ident("rename_all_fields") {
                out.rename_all_fields = ser_name(meta)?.map(|l| RenameRule::from_lit(&l)).transpose()?;
            } else if p.is_ident("tag") {
                out.tag = Some(lit(meta)?);
            } else if p.is_ident("content") {
                out.content = Some(lit(meta)?);
            } else if p.is_ident("untagged") {
                out.untagged = Some(p.segments[0].ident.span());
            } else if p.is_ident("transparent") {
                out.transparent = true;
            } else if p.is_ident("into") {
                out.into = Some(lit(meta)?.parse()?);
            } else {
                return Ok(false);
            }
            Ok(true)
        });
        out
    }
}

impl SerdeVariant {
    pub(crate) fn parse(attrs: &[Attribute], errors: &mut darling::error::Accumulator) -> Self {
        let mut out = Self::default();
        each(attrs, errors, |meta| {
            let p = &meta.path;
            if p.is_ident("rename") {
                out.rename = ser_name(meta)?.map(|l| l.value());
            } else if p.is_ident("rename_all") {
                out.rename_all = ser_name(meta)?.map(|l| RenameRule::from_lit(&l)).transpose()?;
            } else if p.is_ident("skip") || p.is_ident("skip_serializing") {
                out.skip = true;
            } else if p.is_ident("untagged") {
                out.untagged = true;
            } else if p.is_ident("with") || p.is_ident("serialize_with") {
                out.with = Some(lit(meta)?);
            } else {
                return Ok(false);
            }
            Ok(true)
        });
        out
    }
}

impl SerdeField {
    pub(crate) fn parse(attrs: &[Attribute], errors: &mut darling::error::Accumulator) -> Self {
        let mut out = Self::default();
        each(attrs, errors, |meta| {
            let p = &meta.path;
            if p.is_ident("rename") {
                let lit = ser_name(meta)?;
                out.rename_span = lit.as_ref().map(|l| l.span());
                out.rename = lit.map(|l| l.value());
            } else if p.is_ident("skip") || p.is_ident("skip_serializing") {
                out.skip = true;
            } else if p.is_ident("skip_serializing_if") {
                out.skip_serializing_if = Some(lit(meta)?);
            } else if p.is_ident("flatten") {
                out.flatten = Some(p.segments[0].ident.span());
            } else if p.is_ident("with") || p.is_ident("serialize_with") {
                out.with = Some(lit(meta)?);
            } else {
                return Ok(false);
            }
            Ok(true)
        });
        out
    }

    /// `skip_serializing_if = "Option::is_none"`: `None` is left out, never written as null.
    pub(crate) fn skips_none(&self) -> bool {
        self.skip_serializing_if.as_ref().is_some_and(|p| {
            let path = p.value().replace(' ', "");
            let path = path.trim_start_matches("::");
            matches!(
                path,
                "Option::is_none" | "std::option::Option::is_none" | "core::option::Option::is_none"
            )
        })
    }
}
