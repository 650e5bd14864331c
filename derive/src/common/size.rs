//! `impl MaxBsonSize` (the largest BSON a value can encode to, field names
//! included), computed at compile time from the fields' own sizes
//! (`runtime/src/size.rs` holds the trait and the arithmetic).
//!
//! Sizes of field types are looked up through `Probe`, which answers "unknown" for a
//! type without the trait instead of failing to compile: a model that never needs
//! its size keeps compiling whatever its fields are.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Type;

use crate::ast::{Body, Container, Field};
use crate::common::types::{self, classify, Kind};

/// MongoDB's document limit: 16 MiB.
pub(crate) const LIMIT: u64 = 16 * 1024 * 1024;

/// `(Option<usize>, &'static str)` tokens: the size of `ty`'s value and, when
/// unknown, why.
pub(crate) fn probe(ty: &Type) -> (TokenStream, TokenStream) {
    (quote!(__ds::Probe::<#ty>::MAX), quote!(__ds::Probe::<#ty>::UNSIZED))
}

fn is_char(ty: &Type) -> bool {
    let (Some(inner), _) = types::element(ty) else { return false };
    quote!(#inner).to_string() == "char"
}

/// The size of one field's value and why it is unknown, as one
/// `(Option<usize>, &'static str)` constant expression: a type's size is looked up
/// once (`Probe::<T>::PART`), not once for the size and again for the reason, which
/// halves what the compiler resolves per field. `owner` names the type in messages.
pub(crate) fn value_part(owner: &str, f: &Field) -> TokenStream {
    let r = &f.recv;
    let ty = &r.ty;
    let name = f.name.as_deref().unwrap_or("0");
    let unknown = |why: String| quote!((::core::option::Option::<usize>::None, #why));
    if let Some(with) = &f.serde.with {
        return unknown(format!(
            "`{owner}.{name}` is written by `{}`, whose output size docshape cannot see",
            with.value()
        ));
    }
    if r.bson_type.is_some() {
        return unknown(format!(
            "`{owner}.{name}` states its own `bson_type`, whose size docshape cannot see"
        ));
    }
    match classify(ty) {
        Kind::String if !is_char(ty) => match &r.max_length {
            Some(n) => {
                let n = **n as usize;
                quote!((__ds::sz::string(#n), ""))
            }
            None => unknown(format!(
                "`{owner}.{name}` is a String with no `#[validate(max_length = N)]`, so its size has no bound"
            )),
        },
        Kind::Array if !matches!(peel_array(ty), Some(Type::Array(_))) => {
            let (elem, _) = types::element(ty);
            match (&r.max_items, elem) {
                (Some(n), Some(elem)) => {
                    let n = **n as usize;
                    quote!(__ds::sz::array_of(#n, __ds::Probe::<#elem>::PART))
                }
                (Some(_), None) => unknown(format!("`{owner}.{name}` holds values whose size docshape cannot see")),
                (None, _) => unknown(format!(
                    "`{owner}.{name}` is an array with no `#[validate(max_items = N)]`, so its size has no bound"
                )),
            }
        }
        _ => quote!(__ds::Probe::<#ty>::PART),
    }
}

/// [`value_part`] as separate `(size, reason)` tokens.
pub(crate) fn value_size(owner: &str, f: &Field) -> (TokenStream, TokenStream) {
    split(value_part(owner, f))
}

fn split(part: TokenStream) -> (TokenStream, TokenStream) {
    (quote!((#part).0), quote!((#part).1))
}

/// The type inside `Option`s, to tell a fixed-size `[T; N]` from a `Vec`.
fn peel_array(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if last.ident != "Option" {
                return Some(ty);
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
                    syn::GenericArgument::Type(t) => peel_array(t),
                    _ => None,
                }),
                _ => Some(ty),
            }
        }
        Type::Group(g) => peel_array(&g.elem),
        Type::Paren(p) => peel_array(&p.elem),
        other => Some(other),
    }
}

/// One element of a document as a `(size, reason)` constant expression, or the
/// merged elements of a flattened field.
pub(crate) fn element_part(owner: &str, f: &Field) -> TokenStream {
    let part = value_part(owner, f);
    if f.serde.flatten.is_some() {
        return quote!(__ds::sz::flattened_of(#part));
    }
    let key_len = f.name.as_deref().unwrap_or_default().len();
    quote!(__ds::sz::element_of(#key_len, #part))
}

/// [`element_part`] as separate `(size, reason)` tokens.
pub(crate) fn element(owner: &str, f: &Field) -> (TokenStream, TokenStream) {
    split(element_part(owner, f))
}

/// A document of some of `owner`'s fields (a projection's view): `(size, reason)`
/// tokens.
pub(crate) fn fields_size(owner: &str, fields: &[&Field]) -> (TokenStream, TokenStream) {
    let parts: Vec<_> = fields.iter().map(|f| element_part(owner, f)).collect();
    (quote!(__ds::sz::document_of(&[#(#parts),*])), quote!(__ds::sz::first_unsized(&[#(#parts),*])))
}

/// The whole value's size and why it is unknown.
enum Size {
    /// `(size, reason)` tokens.
    Pair(TokenStream, TokenStream),
    /// A `&[(Option<usize>, &str)]` of a document's elements: the size and the
    /// reason are both read from this one list.
    Parts(TokenStream),
}

/// The whole value's size tokens.
fn container_size(c: &Container) -> Size {
    let owner = c.ident.to_string();
    let unknown = |why: String| Size::Pair(quote!(::core::option::Option::None), quote!(#why));
    if c.serde.into.is_some() {
        return unknown(format!("`{owner}` is stored as another type (`serde(into)`)"));
    }
    match &c.body {
        Body::Struct(_, fields) if c.serde.transparent => {
            match fields.iter().filter(|f| !f.serde.skip).collect::<Vec<_>>().as_slice() {
                [only] => {
                    let (size, why) = value_size(&owner, only);
                    Size::Pair(size, why)
                }
                _ => unknown(format!("`{owner}` is transparent over no single field")),
            }
        }
        Body::Struct(darling::ast::Style::Struct, fields) => {
            if c.serde.tag.is_some() {
                return unknown(format!("`{owner}` is written with a tag docshape does not size"));
            }
            let parts = fields.iter().filter(|f| !f.serde.skip).map(|f| element_part(&owner, f));
            Size::Parts(quote!(&[#(#parts),*]))
        }
        Body::Struct(darling::ast::Style::Tuple, fields) => {
            let stored: Vec<&Field> = fields.iter().filter(|f| !f.serde.skip).collect();
            if let ([only], 1) = (stored.as_slice(), fields.len()) {
                let (size, why) = value_size(&owner, only);
                return Size::Pair(size, why);
            }
            // A tuple is an array: keyed "0", "1", ...
            let parts: Vec<_> = stored
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let part = value_part(&owner, f);
                    let key_len = i.to_string().len();
                    quote!(__ds::sz::element_of(#key_len, #part))
                })
                .collect();
            Size::Parts(quote!(&[#(#parts),*]))
        }
        Body::Struct(darling::ast::Style::Unit, _) => {
            Size::Pair(quote!(::core::option::Option::Some(0usize)), quote!(""))
        }
        Body::Enum(variants) => {
            let plain = c.serde.tag.is_none() && c.serde.untagged.is_none();
            let stored: Vec<_> = variants.iter().filter(|v| !v.serde.skip).collect();
            if plain && stored.iter().all(|v| v.style == darling::ast::Style::Unit && !v.serde.untagged) {
                // A unit variant is written as its name.
                let longest = stored.iter().map(|v| v.name.len()).max().unwrap_or(0) + 5;
                Size::Pair(quote!(::core::option::Option::Some(#longest)), quote!(""))
            } else {
                unknown(format!("`{owner}` is an enum with data, whose size docshape does not estimate"))
            }
        }
    }
}

/// `impl MaxBsonSize` for a non-generic type; nothing for generic ones, whose sizes
/// depend on their parameters.
pub(crate) fn impl_for(c: &Container) -> TokenStream {
    if !c.generics.params.is_empty() {
        return TokenStream::new();
    }
    let ident = &c.ident;
    let (size, why, parts) = match container_size(c) {
        Size::Pair(size, why) => (size, why, None),
        // One list of the elements, read twice: each field's size is computed once.
        Size::Parts(parts) => (
            quote!(__ds::sz::document_of(__DS_SIZE_PARTS)),
            quote!(__ds::sz::first_unsized(__DS_SIZE_PARTS)),
            Some(quote! {
                const __DS_SIZE_PARTS: &[(::core::option::Option<usize>, &str)] = #parts;
            }),
        ),
    };
    quote! {
        #[allow(unused_imports)]
        use __ds::ProbeFallback as _;
        #parts
        #[automatically_derived]
        impl __ds::MaxBsonSize for #ident {
            const MAX_BSON_SIZE: ::core::option::Option<usize> = #size;
            const UNSIZED: &'static str = #why;
        }
    }
}
