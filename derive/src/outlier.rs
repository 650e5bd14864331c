//! `#[outlier(...)]` on an array field: the outlier pattern. Parse, check (an array,
//! a flag field that is a `bool`, an overflow collection with a valid name, a parent
//! `_id`, bounded sizes), and expand into `impl Outliers` and the typed
//! `push_<field>`/`load_<field>` methods (`runtime/src/patterns/outlier.rs` executes them).

use darling::error::Accumulator;
use darling::util::SpannedValue;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{LitStr, Type};

use crate::ast::{Container, Field};
use crate::common::bounds::Bound;
use crate::common::expansion::Expansion;
use crate::common::fields::{field, Kept, Name};
use crate::common::paths;
use crate::common::respan::respan;
use crate::common::size::LIMIT;
use crate::common::types::{classify, is_option, Kind};
use crate::facts::Facts;
use crate::model::collection_problem;

/// The model's checked `#[outlier]` arrays.
pub(crate) struct Parsed<'a>(Vec<OutlierDef<'a>>);

/// Reads and checks every `#[outlier]` of the model: an array, a `bool` flag, an
/// overflow collection with a valid name, a parent `_id`.
pub(crate) fn parse<'a>(cx: &'a Facts, errors: &mut Accumulator) -> Parsed<'a> {
    let Some(m) = &cx.model else { return Parsed(Vec::new()) };
    Parsed(read(&cx.container, m.collection.as_ref(), errors))
}

// An outlier's rules concern its own attribute and fields, found while parsing: no
// check of its own.

/// `impl Outliers`, the `push_`/`load_` methods and the size assertions, and a row of
/// `Model::RELATIONS` per outlier array. The arrays are sized from the fields as
/// written: `cx` is the context they were parsed from.
pub(crate) fn expand(parsed: &Parsed, cx: &Facts) -> Expansion {
    Expansion { relations: rows(&parsed.0), ..Expansion::items(outliers(&cx.container, &parsed.0)) }
}

/// The design-decision rows: the item type, the threshold kept embedded, and where the
/// rest goes. The attribute takes no reason.
fn rows(outliers: &[OutlierDef]) -> Vec<TokenStream> {
    outliers
        .iter()
        .map(|o| {
            let field = o.field.name.as_deref().unwrap_or_default();
            let item_ty = &o.item_ty;
            let target = quote!(#item_ty).to_string().replace(' ', "");
            let (threshold, per_doc, overflow) = (o.threshold, o.per_doc, &o.overflow);
            quote! {
                __ds::Relation {
                    field: #field, kind: __ds::RelationKind::Outlier, target: #target, many: true,
                    bound: ::core::option::Option::Some(#threshold), refresh: ::core::option::Option::None,
                    via: ::core::option::Option::None, reason: ::core::option::Option::None,
                    split: ::core::option::Option::Some(__ds::Split::Outlier { overflow: #overflow, per_doc: #per_doc }),
                }
            }
        })
        .collect()
}

#[derive(FromMeta)]
struct OutlierOpts {
    threshold: SpannedValue<u64>,
    overflow: LitStr,
    flag: Name,
    count: Option<Name>,
    per_doc: Option<SpannedValue<u64>>,
}

/// A checked `#[outlier]`.
struct OutlierDef<'a> {
    field: &'a Field,
    item_ty: Type,
    threshold: u64,
    threshold_span: Span,
    per_doc: u64,
    overflow: String,
    flag: &'a Field,
    count: Option<&'a Field>,
}

fn read<'a>(c: &'a Container, collection: Option<&LitStr>, errors: &mut Accumulator) -> Vec<OutlierDef<'a>> {
    for attr in c.attrs.iter().filter(|a| a.path().is_ident("outlier")) {
        errors.push(
            Error::custom("`#[outlier(...)]` goes on the array field it bounds")
                .with_span(&attr.path().span()),
        );
    }
    let mut out = Vec::new();
    for f in paths::stored_fields(c) {
        let attrs: Vec<_> = f.recv.attrs.iter().filter(|a| a.path().is_ident("outlier")).collect();
        let Some(attr) = attrs.first() else { continue };
        for extra in &attrs[1..] {
            errors.push(Error::custom("one `#[outlier(...)]` per field").with_span(&extra.path().span()));
        }
        let Some(opts) = errors.handle(OutlierOpts::from_meta(&attr.meta)) else { continue };
        if !c.generics.params.is_empty() {
            errors.push(Error::custom("a model with outliers cannot be generic: the item type must be known where it is declared").with_span(&attr.path().span()));
            continue;
        }
        let threshold = *opts.threshold;
        if threshold == 0 || threshold > i32::MAX as u64 {
            errors.push(
                Error::custom("`threshold` is how many items stay embedded: between 1 and 2147483647")
                    .with_span(&opts.threshold.span()),
            );
        }
        let per_doc = opts.per_doc.as_ref().map_or(threshold, |p| **p);
        if let Some(p) = &opts.per_doc {
            if **p == 0 || **p > i32::MAX as u64 {
                errors.push(
                    Error::custom(
                        "`per_doc` is how many items one overflow document holds: between 1 and 2147483647",
                    )
                    .with_span(&p.span()),
                );
            }
        }
        let overflow = opts.overflow.value();
        if let Some(problem) = collection_problem(&overflow) {
            errors.push(Error::custom(problem).with_span(&opts.overflow));
        }
        if collection.is_some_and(|c| c.value() == overflow) {
            errors.push(
                Error::custom("the overflow collection must be another collection than the model's own")
                    .with_span(&opts.overflow),
            );
        }
        let (elem, _) = crate::common::types::element(&f.recv.ty);
        let is_vec = classify(&f.recv.ty) == Kind::Array && !matches!(&f.recv.ty, Type::Array(_));
        let item_ty = match (is_vec && f.serde.with.is_none(), elem) {
            (true, Some(elem)) => Some(elem),
            _ => {
                let ty = &f.recv.ty;
                errors.push(
                    Error::custom(format!(
                        "`#[outlier]` bounds a growable array, like `Vec<ObjectId>`; `{}` is `{}`",
                        f.name.as_deref().unwrap_or_default(),
                        quote!(#ty).to_string().replace(' ', "")
                    ))
                    .with_span(&attr.path().span()),
                );
                None
            }
        };
        if let Some(m) = &f.recv.max_items {
            if **m != threshold {
                errors.push(
                    Error::custom(format!(
                        "the embedded array is bounded by `threshold = {threshold}`; remove this `max_items`"
                    ))
                    .with_span(&m.span()),
                );
            }
        }
        let flag = errors.handle(field(c, &opts.flag, "outlier flag"));
        if let Some(flag) = flag {
            let ty = &flag.recv.ty;
            let spelled = quote!(#ty).to_string().replace(' ', "");
            if spelled != "bool" {
                errors.push(
                    Error::custom(format!("the outlier flag `{}` must be a `bool` (false until the document overflows); it is `{spelled}`", opts.flag.value))
                        .with_span(&opts.flag.span),
                );
            }
        }
        let count = opts.count.as_ref().and_then(|n| errors.handle(field(c, n, "outlier count")));
        if let (Some(count), Some(n)) = (count, &opts.count) {
            if !matches!(classify(&count.recv.ty), Kind::Int { .. }) || is_option(&count.recv.ty) {
                errors.push(
                    Error::custom(format!(
                        "the outlier count `{}` must be an integer field, like `followers_count: i64`",
                        n.value
                    ))
                    .with_span(&n.span),
                );
            }
        }
        if !paths::stored_fields(c).iter().any(|f| f.name.as_deref() == Some("_id")) {
            errors.push(
                Error::custom(format!("overflow documents point at their parent by `_id`: give `{}` a field stored as `_id` (`#[serde(rename = \"_id\")] id: ObjectId`)", c.ident))
                    .with_span(&attr.path().span()),
            );
            continue;
        }
        let (Some(item_ty), Some(flag)) = (item_ty, flag) else { continue };
        out.push(OutlierDef {
            field: f,
            item_ty,
            threshold,
            threshold_span: opts.threshold.span(),
            per_doc,
            overflow,
            flag,
            count,
        });
    }
    out
}

/// The fields the outlier writers maintain on the parent itself: the array, the flag
/// and the count (the overflow documents live in a collection of their own).
pub(crate) fn kept<'a>(parsed: &Parsed<'a>) -> Vec<Kept<'a>> {
    let mut out = Vec::new();
    for o in &parsed.0 {
        out.push(Kept { field: o.field, what: "the outlier array" });
        out.push(Kept { field: o.flag, what: "the outlier flag" });
        if let Some(count) = o.count {
            out.push(Kept { field: count, what: "the outlier count" });
        }
    }
    out
}

/// The validator learns the embedded bound (`maxItems`) and that counts are not
/// negative.
pub(crate) fn bounds(parsed: &Parsed) -> Vec<Bound> {
    let mut out = Vec::new();
    for o in &parsed.0 {
        out.push(Bound {
            field: o.field.name.clone(),
            span: o.threshold_span,
            max_items: Some(o.threshold),
            minimum: None,
            maximum: None,
        });
        if let Some(count) = o.count {
            out.push(Bound {
                field: count.name.clone(),
                span: o.threshold_span,
                max_items: None,
                minimum: Some(0),
                maximum: None,
            });
        }
    }
    out
}

fn outliers(c: &Container, outliers: &[OutlierDef]) -> TokenStream {
    if outliers.is_empty() {
        return TokenStream::new();
    }
    let ident = &c.ident;
    let owner = ident.to_string();
    let vis = &c.vis;
    let Some(id_field) = paths::stored_fields(c).into_iter().find(|f| f.name.as_deref() == Some("_id"))
    else {
        return TokenStream::new();
    };
    let specs = outliers.iter().map(|o| {
        let field = o.field.name.as_deref().unwrap_or_default();
        let flag = o.flag.name.as_deref().unwrap_or_default();
        let (threshold, per_doc, overflow) = (o.threshold as u32, o.per_doc as u32, &o.overflow);
        let count = match o.count.and_then(|f| f.name.as_deref()) {
            Some(n) => quote!(::core::option::Option::Some(#n)),
            None => quote!(::core::option::Option::None),
        };
        let items = crate::common::nested::items(&o.item_ty);
        quote!(__ds::OutlierSpec { field: #field, threshold: #threshold, overflow: #overflow, flag: #flag, count: #count, per_doc: #per_doc, items: #items })
    });
    let schemas = outliers.iter().map(|o| {
        let ty = &o.item_ty;
        quote!(<#ty as __ds::Schema>::schema())
    });
    let mut methods = Vec::new();
    let mut asserts = Vec::new();
    for (i, o) in outliers.iter().enumerate() {
        let rust_name =
            o.field.recv.ident.as_ref().map(|i| syn::ext::IdentExt::unraw(i).to_string()).unwrap_or_default();
        let push = format_ident!("push_{}", rust_name);
        let load = format_ident!("load_{}", rust_name);
        let item_ty = &o.item_ty;
        let field = o.field.name.as_deref().unwrap_or_default();
        let doc_push = format!(
            "Pushes items onto `{field}`: embedded while it holds at most {} (one `update`), otherwise into `{}` documents, setting `{}`.",
            o.threshold,
            o.overflow,
            o.flag.name.as_deref().unwrap_or_default()
        );
        let doc_load = format!("Every item of `{field}`: the embedded ones, then those in `{}`.", o.overflow);
        methods.push(quote! {
            #[doc = #doc_push]
            #vis async fn #push(
                db: &__ds::Database,
                id: &(impl __ds::IdOf<Self> + ?::core::marker::Sized),
                items: &[#item_ty],
            ) -> ::core::result::Result<__ds::Pushed, __ds::OutlierError> {
                let id = __ds::IdOf::<Self>::id_bson(id)?;
                __ds::ol::push(db, <Self as __ds::Model>::COLLECTION, &<Self as __ds::Outliers>::OUTLIERS[#i], &id, items).await
            }

            #[doc = #doc_load]
            #vis async fn #load(
                db: &__ds::Database,
                id: &(impl __ds::IdOf<Self> + ?::core::marker::Sized),
            ) -> ::core::result::Result<__ds::Vec<#item_ty>, __ds::OutlierError> {
                let id = __ds::IdOf::<Self>::id_bson(id)?;
                __ds::ol::load(db, <Self as __ds::Model>::COLLECTION, &<Self as __ds::Outliers>::OUTLIERS[#i], &id).await
            }
        });
        // The embedded array and each overflow document must fit in a document.
        let item = crate::common::size::item_part(o.field, item_ty);
        let limit = LIMIT as usize;
        let fix = "lower `threshold` or `per_doc`, or make the items smaller";
        let parent = crate::common::size::value_part(id_field);
        let (threshold, per_doc) = (o.threshold as usize, o.per_doc as usize);
        // The embedded array alone (the rest of the parent is the application's); an
        // overflow document whole: `{_id: {parent, seq}, parent, count, items}`. Why a
        // size is unknown starts at the model: `Model.field[]...`.
        let embedded = quote!(__ds::sz::element_of(#field, true, __ds::sz::array_of(#threshold, #item)).size);
        let why = quote!(__ds::sz::Unsized::Fields { owner: #owner, elements: &[__ds::sz::element_of(#field, true, #item)] });
        let overflow_doc = quote!(__ds::sz::document(&[
            __ds::sz::element(3, __ds::sz::document(&[__ds::sz::element(6, (#parent).0), __ds::sz::element(3, ::core::option::Option::Some(8usize))])),
            __ds::sz::element(6, (#parent).0),
            __ds::sz::element(5, ::core::option::Option::Some(4usize)),
            __ds::sz::element(5, __ds::sz::array(#per_doc, (#item).0)),
        ]));
        let id_key = id_field.name.as_deref().unwrap_or("_id");
        let overflow_why = quote!(__ds::sz::Unsized::Fields { owner: #owner, elements: &[
            __ds::sz::element_of(#id_key, false, #parent),
            __ds::sz::element_of(#field, true, #item),
        ] });
        for (estimate, why, what) in [
            (
                embedded,
                why.clone(),
                format!("`{owner}.{field}` embedded array (threshold = {})", o.threshold),
            ),
            (
                overflow_doc,
                overflow_why,
                format!("`{}` overflow document (per_doc = {})", o.overflow, o.per_doc),
            ),
        ] {
            asserts.push(respan(
                quote! {
                    const _: () = {
                        const __VERDICT: __ds::sz::ConstMessage =
                            __ds::sz::verdict("outlier_size", #what, #estimate, #limit, #why, #fix);
                        if !__VERDICT.is_empty() {
                            ::core::panic!("{}", __VERDICT.as_str())
                        }
                    };
                },
                o.threshold_span,
            ));
        }
    }
    // Each overflow collection joins the registry, so `sync_all`, `check` and the
    // artifacts cover it with the model that owns it.
    // Its items' copies (`#[denormalized]` inside the item type) are registered
    // under it too, at `items`, so a rename reaches the items in overflow documents.
    let registrations = outliers.iter().enumerate().map(|(i, o)| {
        let items = crate::common::nested::items(&o.item_ty);
        quote! {
            __ds::inventory::submit! {
                __ds::RegisteredCollection {
                    owner: ::core::any::type_name::<#ident>,
                    spec: __ds::overflow_collection_spec::<#ident, #i>,
                    nested: &[#items],
                }
            }
        }
    });
    quote! {
        #(#registrations)*
        #[automatically_derived]
        impl __ds::Outliers for #ident {
            const OUTLIERS: &'static [__ds::OutlierSpec] = &[#(#specs),*];
            #[inline]
            fn item_schemas() -> __ds::Vec<__ds::Document> {
                ::std::vec![#(#schemas),*]
            }
        }
        #(#asserts)*
        #[automatically_derived]
        impl #ident {
            #(#methods)*
        }
    }
}
