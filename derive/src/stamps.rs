//! `#[created_at]`, `#[updated_at]` and `#[revision]` on a model's fields: declared
//! once, applied by every docshape writer in the write's own command (the runtime's
//! `docshape::stamps`). Parse finds the fields and checks their types (a `DateTime`
//! for the times, an `i32` or `i64` for the revision), one field per stamp, on a
//! struct `Model` only; expand states `Model::STAMPS`.

use darling::error::Accumulator;
use darling::Error;
use quote::quote;

use crate::ast::{Body, Field};
use crate::common::expansion::Expansion;
use crate::common::fields::stamp_of;
use crate::common::types::is_option;
use crate::facts::Facts;

/// The fields carrying each stamp, with the revision's width (`true` for `i64`).
#[derive(Default)]
pub(crate) struct Parsed {
    created: Option<String>,
    updated: Option<String>,
    revision: Option<(String, bool)>,
}

/// `T` in `Option<T>`, else the type.
fn inner(ty: &syn::Type) -> &syn::Type {
    if is_option(ty) {
        if let syn::Type::Path(p) = ty {
            if let Some(syn::PathArguments::AngleBracketed(args)) =
                p.path.segments.last().map(|s| &s.arguments)
            {
                if let Some(syn::GenericArgument::Type(t)) = args.args.first() {
                    return t;
                }
            }
        }
    }
    ty
}

/// The last segment of a type's path.
fn last(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
        _ => String::new(),
    }
}

/// Reads the stamp attributes; each mistake is one error under the attribute.
pub(crate) fn parse(cx: &Facts, errors: &mut Accumulator) -> Parsed {
    let mut out = Parsed::default();
    let (fields, on_variant): (Vec<&Field>, bool) = match &cx.container.body {
        Body::Struct(_, fields) => (fields.iter().collect(), false),
        Body::Enum(variants) => (variants.iter().flat_map(|v| &v.fields).collect(), true),
    };
    for f in fields {
        let Some((stamp, attr)) = stamp_of(f) else { continue };
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            errors.push(
                Error::custom(format!("`#[{stamp}]` takes no arguments: write `#[{stamp}]` alone"))
                    .with_span(attr),
            );
            continue;
        }
        if !cx.is_model() {
            errors.push(Error::custom(format!("`#[{stamp}]` is on an embedded type, which no writer stamps: docshape stamps whole documents; put it on a field of the `Model` that holds this type")).with_span(attr.path()));
            continue;
        }
        if on_variant {
            errors.push(Error::custom(format!("`#[{stamp}]` is on a variant's field: the stamps are declared on a struct model's fields, which every document holds")).with_span(attr.path()));
            continue;
        }
        let Some(name) = f.name.clone() else { continue };
        let ty = &f.recv.ty;
        let spelt = quote!(#ty).to_string().replace(' ', "");
        let ok = match stamp {
            "revision" => matches!(last(ty).as_str(), "i32" | "i64"),
            _ => last(inner(ty)) == "DateTime",
        };
        if !ok {
            let want = match stamp {
                "revision" => "an `i32` or `i64`, which `$inc` adds one to",
                _ => "a `bson::DateTime` (or `Option<bson::DateTime>`), which the server's clock sets",
            };
            errors.push(
                Error::custom(format!("`#[{stamp}]` is on `{name}: {spelt}`; the field must be {want}"))
                    .with_span(attr.path()),
            );
            continue;
        }
        if f.serde.with.is_some() {
            errors.push(Error::custom(format!("`#[{stamp}]` is on `{name}`, stored by its `serialize_with`: the writers store the stamp as BSON does; drop the serde attribute")).with_span(attr.path()));
            continue;
        }
        let taken = match stamp {
            "created_at" => out.created.is_some(),
            "updated_at" => out.updated.is_some(),
            _ => out.revision.is_some(),
        };
        if taken {
            errors.push(
                Error::custom(format!(
                    "`#[{stamp}]` is on two fields: a document has one; keep it on one field"
                ))
                .with_span(attr.path()),
            );
            continue;
        }
        match stamp {
            "created_at" => out.created = Some(name),
            "updated_at" => out.updated = Some(name),
            _ => out.revision = Some((name, last(ty) == "i64")),
        }
    }
    out
}

/// `Model::STAMPS`, when the model declares a stamp.
pub(crate) fn expand(parsed: &Parsed) -> Expansion {
    if parsed.created.is_none() && parsed.updated.is_none() && parsed.revision.is_none() {
        return Expansion::default();
    }
    let opt = |s: Option<&str>| match s {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    };
    let created = opt(parsed.created.as_deref());
    let updated = opt(parsed.updated.as_deref());
    let revision = opt(parsed.revision.as_ref().map(|(r, _)| r.as_str()));
    let wide = parsed.revision.as_ref().is_some_and(|(_, w)| *w);
    let model = quote! {
        const STAMPS: __ds::Stamps = __ds::Stamps {
            created: #created, updated: #updated, revision: #revision, wide_revision: #wide,
        };
    };
    Expansion { model, ..Expansion::default() }
}
