//! The `Nested` entries of a type's fields: per stored field whose type may be an
//! embedded type, the relations and copies inside it, which the model holding it
//! lists in its design-decision table and registers (copies under its own
//! collection). The relation pattern writes them into `Model::NESTED` and
//! `EmbeddedRelations::NESTED`; the denormalized pattern checks, per entry, that each
//! refreshed copy inside has an index; the outlier pattern describes its overflow
//! documents' items with one.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::Type;

use crate::ast::{Body, Container, Field};
use crate::common::respan::respan;
use crate::common::types::{element, plain_scalar, ref_target};

/// One `Nested` entry as a constant expression: `item`'s relations and copies under
/// the stored name `field` (empty for a flattened field), an array of them when `many`.
pub(crate) fn entry(field: &str, many: bool, item: &TokenStream) -> TokenStream {
    quote!({
        #[allow(unused_imports)]
        use __ds::RelationsFallback as _;
        __ds::Nested::of(#field, #many, __ds::RelationsOf::<#item>::ALL)
    })
}

/// The entries of `c`'s fields (not plainly a scalar, not a reference), each with its
/// stored field name (empty for a flattened one) and the span of its type; looked up
/// through `RelationsOf`, so that a type that declares none costs nothing and needs no
/// trait. None for a generic type.
pub(crate) fn entries(c: &Container) -> Vec<(String, Span, TokenStream)> {
    if !c.generics.params.is_empty() {
        return Vec::new();
    }
    let fields: Vec<&Field> = match &c.body {
        Body::Struct(darling::ast::Style::Struct, fields) => {
            fields.iter().filter(|f| !f.serde.skip).collect()
        }
        _ => return Vec::new(),
    };
    fields
        .into_iter()
        .filter_map(|f| {
            let (Some(item), many) = element(&f.recv.ty) else { return None };
            if plain_scalar(&item) || ref_target(&f.recv.ty).is_some() || f.serde.with.is_some() {
                return None;
            }
            // A flattened sub-document's fields sit beside the parent's.
            let field = if f.serde.flatten.is_some() { String::new() } else { f.name.clone()? };
            let item = respan(quote!(#item), f.recv.ty.span());
            Some((field.clone(), f.recv.ty.span(), entry(&field, many, &item)))
        })
        .collect()
}

/// The name of the constant holding the `i`-th of [`entries`] of a struct or embedded
/// type (`variant` `None`) or of a variant of a polymorphic model.
pub(crate) fn entry_name(variant: Option<&Ident>, i: usize) -> Ident {
    match variant {
        Some(v) => format_ident!("__DS_NESTED_{}_{}", v, i),
        None => format_ident!("__DS_NESTED_{}", i),
    }
}

/// [`entries`] written once each, as constants named by [`entry_name`]: their
/// definitions, and the names, which `Model::NESTED` (or `EmbeddedRelations::NESTED`)
/// lists and the `unindexed_via` checks read, so that no entry is built twice.
pub(crate) fn entry_consts(c: &Container, variant: Option<&Ident>) -> (TokenStream, Vec<TokenStream>) {
    let mut defs = TokenStream::new();
    let mut names = Vec::new();
    for (i, (_, _, entry)) in entries(c).into_iter().enumerate() {
        let name = entry_name(variant, i);
        defs.extend(quote! {
            #[allow(non_upper_case_globals)]
            const #name: __ds::Nested = #entry;
        });
        names.push(quote!(#name));
    }
    (defs, names)
}

/// An outlier's items as its overflow documents hold them, at `items`.
pub(crate) fn items(item_ty: &Type) -> TokenStream {
    entry("items", true, &quote!(#item_ty))
}
