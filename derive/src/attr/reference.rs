//! `#[reference(User, max = 50, reason = "...")]` on a field: the referenced model,
//! the bound of an array of references, the reason. Read by the relation pattern,
//! and by a denormalized copy to learn which model its `via` field follows.

use darling::error::Accumulator;
use darling::Error;
use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::{Attribute, Meta, Token, Type};

use crate::common::types::ref_target;

/// `#[reference(User, max = 50, reason = "...")]`: the model, the bound of an array of
/// references, the reason.
pub(crate) struct ReferenceOpts {
    pub target: Option<syn::Path>,
    pub max: Option<(u64, Span)>,
    pub reason: Option<String>,
}

/// Reads one `#[reference]`, pushing its problems.
pub(crate) fn parse(attr: &Attribute, errors: &mut Accumulator) -> ReferenceOpts {
    let mut out = ReferenceOpts { target: None, max: None, reason: None };
    let Meta::List(list) = &attr.meta else {
        errors.push(
            Error::custom(
                "write the referenced model: `#[reference(User)]`, optionally with `reason = \"...\"`",
            )
            .with_span(attr),
        );
        return out;
    };
    let items = match list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
        Ok(items) => items,
        Err(e) => {
            errors.push(e.into());
            return out;
        }
    };
    for item in items {
        match item {
            Meta::Path(p) if out.target.is_none() && !p.is_ident("reason") && !p.is_ident("max") => {
                out.target = Some(p)
            }
            Meta::NameValue(nv) if nv.path.is_ident("reason") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => out.reason = Some(s.value()),
                other => errors.push(Error::custom("`reason` takes a string").with_span(other)),
            },
            Meta::NameValue(nv) if nv.path.is_ident("max") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => match i.base10_parse::<u64>() {
                    Ok(0) => errors.push(Error::custom("an array bounded at 0 is always empty").with_span(i)),
                    Ok(n) => out.max = Some((n, i.span())),
                    Err(e) => errors.push(e.into()),
                },
                other => errors.push(Error::custom("`max` takes a whole number").with_span(other)),
            },
            other => errors.push(
                Error::custom(
                    "`#[reference]` takes the referenced model, `max = N` for an array, and `reason = \"...\"`",
                )
                .with_span(&other),
            ),
        }
    }
    out
}

/// A referenced model's path as a type.
pub(crate) fn path_type(path: syn::Path) -> Type {
    Type::Path(syn::TypePath { attrs: Vec::new(), qself: None, path })
}

/// The model a field references: `T` of a `Ref<T>`, or the model its `#[reference]`
/// names. The attribute's own problems are reported where the field is read.
pub(crate) fn referenced_model(ty: &Type, attrs: &[Attribute]) -> Option<Type> {
    let declared = attrs.iter().filter(|a| a.path().is_ident("reference")).find_map(|a| {
        let mut quiet = Error::accumulator();
        let target = parse(a, &mut quiet).target;
        let _ = quiet.finish();
        target.map(path_type)
    });
    ref_target(ty).or(declared)
}

/// For a field that holds the `_id` of the model its `#[reference(T)]` names (not a
/// `Ref<T>`, which carries it already): `T`, and the field's type with the id replaced
/// by `Ref<T>`, through `Option` and `Vec`. The two are stored alike (the derive checks
/// that the field's type is `T`'s id), and `Ref<T>` carries the id's bounds, so the
/// field is sized and validated as `T._id` is. `None` for another shape.
pub(crate) fn as_ref_type(ty: &Type, attrs: &[Attribute]) -> Option<(Type, Type)> {
    if ref_target(ty).is_some() {
        return None;
    }
    let target = referenced_model(ty, attrs)?;
    fn replace(ty: &Type, target: &Type) -> Option<Type> {
        if let Type::Path(p) = ty {
            let last = p.path.segments.last()?;
            if last.ident == "Option" || last.ident == "Vec" {
                let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
                let [syn::GenericArgument::Type(inner)] = args.args.iter().collect::<Vec<_>>()[..] else {
                    return None;
                };
                let inner = replace(inner, target)?;
                return Some(if last.ident == "Option" {
                    syn::parse_quote!(::core::option::Option<#inner>)
                } else {
                    syn::parse_quote!(__ds::Vec<#inner>)
                });
            }
        }
        // A scalar id (a string, a number, an ObjectId): anything else is left alone.
        match crate::common::types::classify(ty) {
            crate::common::types::Kind::Array | crate::common::types::Kind::Other => None,
            _ => Some(syn::parse_quote!(__ds::Ref<#target>)),
        }
    }
    let replaced = replace(ty, &target)?;
    Some((target, replaced))
}
