//! Relations between models: `#[embed]` (a sub-document or a bounded array of them)
//! and references (`Ref<T>` or `#[reference(T)]`).
//!
//! The rule: every array of sub-documents or references has a bound
//! (`unbounded_array`). The expansion lists the relations in `Model::RELATIONS` (the
//! design-decision table), checks that a raw id has the referenced model's `_id` type,
//! and implements `Identified` (the type of `_id`, for `Ref<T>`).

use darling::error::Accumulator;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, GenericArgument, Ident, LitStr, Meta, PathArguments, Type};

use crate::ast::{Body, Container, Field};
use crate::attr::index_keys::Allow;
use crate::attr::reference;
use crate::common::bounds::{bounds_items, Bound};
use crate::common::expansion::{Expansion, VariantPart};
use crate::common::message::rule;
use crate::common::paths;
use crate::common::respan::{bound_check, respan};
use crate::common::types::{element, is_option, ref_target};
use crate::facts::Facts;
use crate::polymorphic::Polymorphic;

/// `#[embed]` / `#[embed(max = N, reason = "...", allow(unbounded_array, reason = "..."))]`.
#[derive(FromMeta, Default)]
struct EmbedOpts {
    max: Option<darling::util::SpannedValue<u64>>,
    reason: Option<LitStr>,
    allow: Option<Allow>,
}

/// One row of the design-decision table.
struct RelationDef {
    field: String,
    kind: &'static str,
    /// Embed: the element type; reference: the referenced model.
    target: Option<Type>,
    many: bool,
    reason: Option<String>,
    /// `#[reference(T)]` on a raw id: the field's element type must be `T`'s `_id` type.
    id_check: Option<(Type, Span)>,
}

/// The type's embeds and references.
#[derive(Default)]
pub(crate) struct Parsed {
    relations: Vec<RelationDef>,
    /// `#[embed(max = N)]` and `#[reference(max = N)]` bounds, for the validator.
    bounds: Vec<Bound>,
    /// Fields whose `#[embed]` waives `unbounded_array`.
    waived: Vec<String>,
    /// A polymorphic model's variants, each read as a struct: their fields' relations
    /// and bounds hold in that variant's documents only.
    variants: Vec<VariantRelations>,
}

/// The relations of one variant of a polymorphic model.
struct VariantRelations {
    ident: Ident,
    /// The discriminator value.
    value: String,
    parsed: Parsed,
}

/// Reads `#[embed]` and `#[reference]` on the struct's fields, or on each variant's of
/// a polymorphic model.
pub(crate) fn parse(cx: &Facts, errors: &mut Accumulator) -> Parsed {
    let mut out = Parsed::default();
    if let Some(p) = &cx.polymorphic {
        for v in &p.variants {
            let mut parsed = Parsed::default();
            if let Body::Struct(_, fields) = &v.container.body {
                for f in fields {
                    field(f, &mut parsed, errors);
                }
            }
            out.variants.push(VariantRelations { ident: v.ident.clone(), value: v.value.clone(), parsed });
        }
        return out;
    }
    match &cx.container.body {
        Body::Struct(_, fields) => {
            for f in fields {
                field(f, &mut out, errors);
            }
        }
        Body::Enum(variants) => {
            for f in variants.iter().flat_map(|v| &v.fields) {
                for name in ["embed", "reference"] {
                    for a in attrs(f, name) {
                        errors.push(
                            Error::custom(format!(
                                "`#[{name}]` goes on the fields of a struct, not of an enum variant"
                            ))
                            .with_span(a.path()),
                        );
                    }
                }
            }
        }
    }
    out
}

/// The `unbounded_array` rule for arrays of references, once every bound is known
/// (`max_items`, `#[embed(max)]`, `#[reference(max)]`, buckets, outliers: `bounds`).
pub(crate) fn check(parsed: &mut Parsed, cx: &Facts, bounds: &[Bound], errors: &mut Accumulator) {
    if let Some(p) = &cx.polymorphic {
        // Each variant's arrays, with that variant's bounds only.
        for v in &parsed.variants {
            let Some(variant) = p.variant(&v.ident) else { continue };
            let own = self::bounds(&v.parsed);
            check_references(&variant.container, &v.parsed, &own, None, errors);
        }
        return;
    }
    let collection = cx.model.as_ref().and_then(|m| m.collection.as_ref());
    check_references(&cx.container, parsed, bounds, collection, errors);
}

/// [`check`] on one struct-like container; `collection` names the outlier's overflow
/// collection in the fix, where the outlier pattern applies (a struct model's fields).
fn check_references(
    c: &Container,
    parsed: &Parsed,
    bounds: &[Bound],
    collection: Option<&LitStr>,
    errors: &mut Accumulator,
) {
    for f in unbounded(c, parsed, |f| bounds_items(bounds, f.name.as_deref())) {
        if ref_target(&f.recv.ty).is_some() || attrs(f, "reference").next().is_some() {
            let name = f.name.clone().unwrap_or_else(|| "this field".to_owned());
            // The outlier pattern lives on a model's own fields, where the overflow
            // collection can be named after the model's.
            let outlier = match collection {
                Some(collection) => {
                    let ident = f.recv.ident.as_ref().map_or_else(|| name.clone(), ToString::to_string);
                    format!(
                        "; or, when a few documents hold huge lists and most stay small (the celebrity with millions of followers), make it an outlier array: `#[outlier(threshold = 1000, overflow = \"{}_{name}_overflow\", flag = has_more_{ident})]` on it, with a `has_more_{ident}: bool` field",
                        collection.value()
                    )
                }
                None => String::new(),
            };
            errors.push(
                Error::custom(rule(
                    "unbounded_array",
                    format!("`{name}` is an array of references with no bound: it grows with the data until the document passes MongoDB's 16 MB limit (the \"array sin límite\" anti-pattern); bound it with `#[reference(max = N)]` when the list stays small, or turn it around: store the reference on the other side (each referenced document holds a `Ref` to this one) and query it through an index{outlier}"),
                ))
                .with_span(&f.span),
            );
        }
    }
}

/// The arrays with no bound and no waiver, of any field shape: `bounded` says whether a
/// pattern bounds a field beyond its own `max_items`.
fn unbounded<'a>(
    c: &'a Container,
    r: &'a Parsed,
    bounded: impl Fn(&Field) -> bool + 'a,
) -> impl Iterator<Item = &'a Field> + 'a {
    let fields: Vec<&Field> = match &c.body {
        Body::Struct(_, fields) => fields.iter().collect(),
        Body::Enum(variants) => variants.iter().flat_map(|v| &v.fields).collect(),
    };
    fields.into_iter().filter(move |f| {
        if f.serde.skip || f.recv.max_items.is_some() || f.serde.with.is_some() || bounded(f) {
            return false;
        }
        let name = f.name.clone().unwrap_or_else(|| "this field".to_owned());
        !r.waived.contains(&name) && matches!(element(&f.recv.ty), (Some(_), true))
    })
}

/// An array of any type that is not plainly a scalar is refused at compile time by a
/// constant that asks the element type whether it is stored as a sub-document.
/// `variant`: the fields are a polymorphic model's variant's, where `#[bucket]` and
/// `#[outlier]` do not apply, so the fix does not offer them.
fn unbounded_documents(c: &Container, r: &Parsed, variant: bool) -> TokenStream {
    let mut out = TokenStream::new();
    let split = if variant {
        ""
    } else {
        "or make it a `#[bucket]` series, or an `#[outlier]` array for the rare huge one; "
    };
    for f in unbounded(c, r, |_| false) {
        let name = f.name.clone().unwrap_or_else(|| "this field".to_owned());
        let (Some(item), _) = element(&f.recv.ty) else { continue };
        let fixes = format!("bound it with `#[embed(max = N)]` when it is read with its parent and stays small; or store the children in their own collection, each with a `Ref` to this document (the \"reference from the child side\"), and read them with an indexed query; {split}waive with `#[embed(allow(unbounded_array, reason = \"...\"))]`");
        if ref_target(&f.recv.ty).is_some() || attrs(f, "reference").next().is_some() {
            continue;
        }
        if crate::common::types::plain_scalar(&item) || c.generics.type_params().next().is_some() {
            continue;
        }
        let message = rule(
            "unbounded_array",
            format!("`{name}` is an array of sub-documents with no bound: it grows with the data until the document passes MongoDB's 16 MB limit (the \"array sin límite\" anti-pattern); {fixes}"),
        );
        let span = f.recv.ty.span();
        let elem = respan(quote!(#item), span);
        out.extend(quote_spanned! {span=>
            const _: () = ::core::assert!(!<#elem as __ds::Schema>::DOCUMENT, #message);
        });
    }
    out
}

/// The unbounded-array assertions, `Identified`, the reference id checks, and the
/// rows of `Model::RELATIONS`.
pub(crate) fn expand(parsed: &Parsed, cx: &Facts) -> Expansion {
    let c = &cx.container;
    // A polymorphic model's `_id` is the one its variants share.
    let id_source = cx.container_for(None);
    let items = items(id_source, parsed, cx.is_model());
    if let Some(p) = &cx.polymorphic {
        let mut unbounded = TokenStream::new();
        let mut variants = Vec::new();
        for v in &parsed.variants {
            let Some(variant) = p.variant(&v.ident) else { continue };
            let vc = &variant.container;
            unbounded.extend(unbounded_documents(vc, &v.parsed, true));
            let relations = rows(vc, &v.parsed);
            variants.push((v.value.clone(), VariantPart { relations, copies: Vec::new() }));
        }
        return Expansion { variants, items: quote!(#unbounded #items), ..Expansion::default() };
    }
    let unbounded = unbounded_documents(c, parsed, false);
    let (relations, (entries, nested)) = (rows(c, parsed), crate::common::nested::entry_consts(c, None));
    // A model's rows go into `impl Model`, an embedded type's into
    // `impl EmbeddedRelations` ([`embedded_relations`]).
    Expansion { relations, nested, items: quote!(#unbounded #items #entries), ..Expansion::default() }
}

/// An embedded type's rows, copies and nested relations, gathered from `parts`: they
/// reach the design-decision table and the copies' registry through the models that
/// hold it. Nothing when it declares none, or is generic (no one set of rows).
pub(crate) fn embedded_relations(c: &Container, parts: &[&Expansion]) -> TokenStream {
    let relations: Vec<&TokenStream> = parts.iter().flat_map(|p| &p.relations).collect();
    let nested: Vec<&TokenStream> = parts.iter().flat_map(|p| &p.nested).collect();
    let copies: Vec<&TokenStream> = parts.iter().flat_map(|p| &p.copies).collect();
    if !c.generics.params.is_empty() || (relations.is_empty() && nested.is_empty() && copies.is_empty()) {
        return TokenStream::new();
    }
    let ident = &c.ident;
    quote! {
        #[automatically_derived]
        impl __ds::EmbeddedRelations for #ident {
            const RELATIONS: &'static [__ds::Relation] = &[#(#relations),*];
            const NESTED: &'static [__ds::Nested] = &[#(#nested),*];
            const COPIES: &'static [__ds::CopySpec] = &[#(#copies),*];
        }
    }
}

/// A polymorphic model's `Nested` entries, one per variant that holds relations,
/// copies or fields that may: the variant's rows and copies gathered from `parts`,
/// and its fields' entries, under no field of its own (its fields are the
/// document's) and tagged with the variant, which the design-decision table shows
/// and the copies' registry filters on.
pub(crate) fn variant_entries(p: &Polymorphic, parts: &[&Expansion]) -> Expansion {
    let tag = &p.tag;
    let mut entries = Vec::new();
    let mut items = TokenStream::new();
    for v in &p.variants {
        let value = &v.value;
        let mine =
            || parts.iter().flat_map(|e| &e.variants).filter(|(w, _)| w == value).map(|(_, part)| part);
        let relations: Vec<&TokenStream> = mine().flat_map(|part| &part.relations).collect();
        let copies: Vec<&TokenStream> = mine().flat_map(|part| &part.copies).collect();
        let (defs, nested) = crate::common::nested::entry_consts(&v.container, Some(&v.ident));
        if relations.is_empty() && copies.is_empty() && nested.is_empty() {
            continue;
        }
        items.extend(defs);
        entries.push(quote!(__ds::Nested::variant(
            #tag, #value, (&[#(#relations),*], &[#(#copies),*], &[#(#nested),*])
        )));
    }
    // The variants' field entries are constants the `unindexed_via` checks read too.
    Expansion { nested: entries, items, ..Expansion::default() }
}

/// A polymorphic model's `#[embed(max = N)]` and `#[reference(max = N)]` bounds, per
/// variant: each bounds its variant's field only.
pub(crate) fn variant_bounds(parsed: &Parsed) -> Vec<(Ident, Vec<Bound>)> {
    parsed.variants.iter().map(|v| (v.ident.clone(), bounds(&v.parsed))).collect()
}

/// `#[embed(max = N)]` and `#[reference(max = N)]` bounds, applied to the validator
/// like `max_items`.
pub(crate) fn bounds(parsed: &Parsed) -> Vec<Bound> {
    parsed
        .bounds
        .iter()
        .map(|b| Bound {
            field: b.field.clone(),
            span: b.span,
            max_items: b.max_items,
            minimum: None,
            maximum: None,
        })
        .collect()
}

fn attrs<'a>(f: &'a Field, name: &'a str) -> impl Iterator<Item = &'a Attribute> + 'a {
    f.recv.attrs.iter().filter(move |a| a.path().is_ident(name))
}

fn field(f: &Field, out: &mut Parsed, errors: &mut Accumulator) {
    let Some(name) = f.name.clone() else { return };
    let (element, many) = crate::common::types::element(&f.recv.ty);
    let referenced = ref_target(&f.recv.ty);
    let mut reference_reason = None;
    let mut declared_target = None;
    let mut reference_attr = None;
    for attr in attrs(f, "reference") {
        if reference_attr.replace(attr.path().span()).is_some() {
            errors.push(Error::custom("one `#[reference]` per field").with_span(attr.path()));
            continue;
        }
        let opts = reference::parse(attr, errors);
        reference_reason = opts.reason;
        declared_target = opts.target;
        if let Some((max, span)) = opts.max {
            if !many {
                errors.push(
                    Error::custom("`max` bounds an array; this field holds one reference").with_span(&span),
                );
            } else if f.recv.max_items.is_some() {
                errors.push(
                    Error::custom("the bound is given twice: keep `max = N` or `#[validate(max_items = N)]`")
                        .with_span(&span),
                );
            } else {
                out.bounds.push(Bound {
                    field: Some(name.clone()),
                    span,
                    max_items: Some(max),
                    minimum: None,
                    maximum: None,
                });
            }
        }
        if declared_target.is_none() && referenced.is_none() {
            errors.push(
                Error::custom(
                    "name the referenced model: `#[reference(User)]` (or make the field a `Ref<User>`)",
                )
                .with_span(attr.path()),
            );
        }
        if let (Some(t), Some(_)) = (&declared_target, &referenced) {
            errors.push(
                Error::custom(
                    "a `Ref<T>` field names its model already; write `#[reference(reason = \"...\")]` only",
                )
                .with_span(t),
            );
        }
    }
    let mut embed_span = None;
    for attr in attrs(f, "embed") {
        if embed_span.replace(attr.path().span()).is_some() {
            errors.push(Error::custom("one `#[embed]` per field").with_span(attr.path()));
            continue;
        }
        let opts = match &attr.meta {
            Meta::Path(_) => EmbedOpts::default(),
            meta => match EmbedOpts::from_meta(meta) {
                Ok(o) => o,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            },
        };
        if let Some(allow) = &opts.allow {
            for (r, span) in &allow.rules {
                if r != "unbounded_array" {
                    errors.push(
                        Error::custom(format!("`#[embed]` can waive `unbounded_array` only, not `{r}`"))
                            .with_span(span),
                    );
                }
            }
            if allow.waives("unbounded_array") {
                out.waived.push(name.clone());
            }
        }
        if let Some(max) = &opts.max {
            if !many {
                errors.push(
                    Error::custom("`max` bounds an array; this field holds one sub-document")
                        .with_span(&max.span()),
                );
            } else if f.recv.max_items.is_some() {
                errors.push(
                    Error::custom(
                        "the bound is given twice: keep `#[embed(max = N)]` or `#[validate(max_items = N)]`",
                    )
                    .with_span(&max.span()),
                );
            } else if **max == 0 {
                errors.push(Error::custom("an array bounded at 0 is always empty").with_span(&max.span()));
            } else {
                out.bounds.push(Bound {
                    field: Some(name.clone()),
                    span: max.span(),
                    max_items: Some(**max),
                    minimum: None,
                    maximum: None,
                });
            }
        }
        if reference_attr.is_some() || referenced.is_some() {
            errors.push(
                Error::custom("a field is embedded or a reference, not both: a reference holds an `_id`, an embedded value the data")
                    .with_span(attr.path()),
            );
        }
        out.relations.push(RelationDef {
            field: name.clone(),
            kind: "embed",
            target: element.clone(),
            many,
            reason: opts.reason.map(|r| r.value()),
            id_check: None,
        });
    }
    if let Some(target) = referenced.clone().or_else(|| declared_target.clone().map(reference::path_type)) {
        let id_check =
            declared_target.as_ref().and(element.clone()).map(|e| (e, reference_attr.unwrap_or(f.span)));
        out.relations.push(RelationDef {
            field: name.clone(),
            kind: "reference",
            target: Some(target),
            many,
            reason: reference_reason,
            id_check,
        });
    }
}

fn opt_str(s: &Option<String>) -> TokenStream {
    match s {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

/// The rows of `Model::RELATIONS` for embeds and references.
fn rows(c: &Container, r: &Parsed) -> Vec<TokenStream> {
    let bound_of = |name: &str| -> TokenStream {
        let field = paths::stored_fields(c).into_iter().find(|f| f.name.as_deref() == Some(name));
        match field.and_then(|f| f.recv.max_items.as_ref()).map(|m| **m) {
            Some(m) => quote!(::core::option::Option::Some(#m)),
            None => quote!(::core::option::Option::None),
        }
    };
    r.relations
        .iter()
        .map(|rel| {
            let field = &rel.field;
            let many = rel.many;
            let bound = bound_of(field);
            let reason = opt_str(&rel.reason);
            let (kind, target) = match rel.kind {
                "reference" => {
                    let t = rel.target.as_ref();
                    (quote!(__ds::RelationKind::Reference), quote!(<#t as __ds::Model>::COLLECTION))
                }
                _ => {
                    let name = rel
                        .target
                        .as_ref()
                        .map(|t| quote!(#t).to_string().replace(' ', ""))
                        .unwrap_or_else(|| "document".to_owned());
                    (quote!(__ds::RelationKind::Embed), quote!(#name))
                }
            };
            quote! {
                __ds::Relation {
                    field: #field, kind: #kind, target: #target, many: #many, bound: #bound,
                    refresh: ::core::option::Option::None, via: ::core::option::Option::None, reason: #reason,
                    split: ::core::option::Option::None,
                }
            }
        })
        .collect()
}

/// `Identified` (the `_id` type) and the type-level checks of references.
fn items(c: &Container, r: &Parsed, model: bool) -> TokenStream {
    let ident = &c.ident;
    let generic = !c.generics.params.is_empty();
    let mut out = TokenStream::new();
    if model && !generic {
        let id_field = paths::stored_fields(c)
            .into_iter()
            .find(|f| f.name.as_deref() == Some("_id") && f.serde.flatten.is_none());
        // The `_id`'s size with its field's bounds (`max_length`), what a `Ref<Self>`
        // weighs: the element `size::impl_for` declares once (`id_element`), which the
        // model's own size list names too.
        let owner = ident.to_string();
        let id_size = crate::common::size::id_ident();
        let id = id_field
            .map(|f| {
                let ty = &f.recv.ty;
                match is_option(ty) {
                    true => {
                        let (inner, _) = option_inner(ty);
                        quote!(#inner)
                    }
                    false => quote!(#ty),
                }
            })
            .unwrap_or_else(|| quote!(__ds::ObjectId));
        // `IdOf` is how an id reaches the write paths: the id type itself, and `str`
        // for a `String` id so that a literal works, but never a `Document` or `Bson`
        // unless that is what `_id` is.
        let string = syn::parse2::<Type>(id.clone()).ok().is_some_and(|t| is_string(&t));
        let borrowed = string.then(|| {
            quote! {
                #[automatically_derived]
                impl __ds::IdOf<#ident> for ::core::primitive::str {
                    #[inline]
                    fn id_bson(&self) -> ::core::result::Result<__ds::Bson, __ds::BsonSerError> {
                        ::core::result::Result::Ok(__ds::Bson::String(::std::string::ToString::to_string(self)))
                    }
                }
            }
        });
        // A constrained `_id` (not an `Option`: the server may assign that one) gives
        // `Ref<Self>` its constraints in the validators that hold one.
        let id_schema =
            id_field.filter(|f| f.recv.validate_span().is_some() && !is_option(&f.recv.ty)).map(|f| {
                let schema = crate::validator::field_schema(f);
                quote!(#[inline] fn id_schema() -> __ds::Document { #schema })
            });
        out.extend(quote! {
            #[automatically_derived]
            impl __ds::Identified for #ident {
                type Id = #id;
                const ID_SIZE: __ds::sz::Part = __ds::sz::id_of(#owner, &[#id_size]);
                #id_schema
            }
            #[automatically_derived]
            impl __ds::IdOf<#ident> for #id {
                #[inline]
                fn id_bson(&self) -> ::core::result::Result<__ds::Bson, __ds::BsonSerError> {
                    __ds::to_bson(self)
                }
            }
            #borrowed
        });
    }
    if generic {
        return out;
    }
    let variants = r.variants.iter().flat_map(|v| &v.parsed.relations);
    for rel in r.relations.iter().chain(variants) {
        if let (Some((element, span)), Some(target)) = (&rel.id_check, &rel.target) {
            let element = respan(quote!(#element), *span);
            let id = respan(quote!(<#target as __ds::Identified>::Id), *span);
            let check =
                bound_check("assert_reference_id", element, quote!(__ds::ReferenceId), Some(id), *span);
            out.extend(quote! { const _: () = { #check }; });
        }
    }
    out
}

/// Whether a type is spelled `String` (or `std::string::String`).
fn is_string(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "String" && s.arguments.is_none()))
}

fn option_inner(ty: &Type) -> (Type, bool) {
    if let Type::Path(p) = ty {
        if let Some(last) = p.path.segments.last() {
            if let PathArguments::AngleBracketed(args) = &last.arguments {
                if let Some(GenericArgument::Type(t)) = args.args.first() {
                    return (t.clone(), true);
                }
            }
        }
    }
    (ty.clone(), false)
}
