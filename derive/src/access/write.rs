//! Write rows: `#[access(..., update(push(items), set(status), inc(total), pull(tags)))]`
//! is a typed single-command update of the one document the row's filter names
//! (`docshape::access::Update` runs it). A `push` into an array with a bound carries
//! the bound into the command's filter.

use darling::error::Accumulator;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::access::find::{equality, param_name, param_type, ranges};
use crate::access::Access;
use crate::ast::Container;
use crate::attr::index_keys::KeyList;
use crate::common::message::did_you_mean;
use crate::common::paths;
use crate::common::respan::respan;
use crate::common::types::element;

/// `update(...)` as written: each operation with its fields, in the order written
/// (the generated method's parameters follow it).
#[derive(Default)]
pub(crate) struct UpdateOpts {
    items: Vec<(Op, KeyList)>,
}

/// The operations a write row can apply.
const OPS: &[&str] = &["push", "set", "inc", "pull"];

impl FromMeta for UpdateOpts {
    fn from_list(items: &[darling::ast::NestedMeta]) -> darling::Result<Self> {
        let mut errors = Error::accumulator();
        let mut out = UpdateOpts::default();
        for item in items {
            let darling::ast::NestedMeta::Meta(meta) = item else {
                errors.push(
                    Error::custom("expected `push(field)`, `set(field)`, `inc(field)` or `pull(field)`")
                        .with_span(item),
                );
                continue;
            };
            let word = meta.path().get_ident().map(ToString::to_string).unwrap_or_default();
            let op = match word.as_str() {
                "push" => Op::Push,
                "set" => Op::Set,
                "inc" => Op::Inc,
                "pull" => Op::Pull,
                other => {
                    let hint = did_you_mean(other, OPS)
                        .map(|s| format!("; did you mean `{s}`?"))
                        .unwrap_or_else(|| "; the operations are push, set, inc and pull".to_owned());
                    errors.push(
                        Error::custom(format!("`{other}` is not an update operation{hint}"))
                            .with_span(meta.path()),
                    );
                    continue;
                }
            };
            if let Some(list) = errors.handle(KeyList::from_meta(meta)) {
                out.items.push((op, list));
            }
        }
        errors.finish_with(out)
    }
}

/// What an update does to one field.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Op {
    Set,
    Inc,
    Push,
    Pull,
}

impl Op {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Op::Set => "set",
            Op::Inc => "inc",
            Op::Push => "push",
            Op::Pull => "pull",
        }
    }
}

/// A checked write row's update.
pub(crate) struct WriteRow {
    pub span: Span,
    /// Each field the update writes: what it does, its stored path and where it was written.
    pub ops: Vec<(Op, String, Span)>,
}

/// Reads `update(...)`; the row's other keys are checked in [`check`].
pub(crate) fn read(opts: Option<(UpdateOpts, Span)>, errors: &mut Accumulator) -> Option<WriteRow> {
    let (opts, span) = opts?;
    let mut ops = Vec::new();
    for (op, list) in &opts.items {
        let op = *op;
        for item in &list.items {
            if let Some((_, vspan)) = &item.value {
                errors.push(
                    Error::custom(format!(
                        "`{}({})` names a stored field; its value is the generated method's parameter",
                        op.word(),
                        item.path
                    ))
                    .with_span(vspan),
                );
            }
            if ops.iter().any(|(_, p, _)| *p == item.path) {
                errors.push(
                    Error::custom(format!("`{}` is written twice by one update: keep one", item.path))
                        .with_span(&item.span),
                );
            }
            ops.push((op, item.path.clone(), item.span));
        }
    }
    if ops.is_empty() {
        errors.push(
            Error::custom("`update(...)` is empty: name what it writes, like `update(push(items))` or `update(set(status), inc(total_cents))`")
                .with_span(&span),
        );
    }
    Some(WriteRow { span, ops })
}

/// Numbers as their type is spelt: the types `$inc` can add to.
const NUMBERS: &[&str] =
    &["i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize", "f32", "f64"];

/// A write row names one document by a filter, reads nothing, and each field it
/// writes exists with a type its operation can apply to. Returns the type-level checks.
pub(crate) fn check(c: &Container, a: &Access, errors: &mut Accumulator) -> TokenStream {
    let Some(w) = &a.update else { return TokenStream::new() };
    let mut checks = TokenStream::new();
    if a.filter.is_empty() && a.range.is_empty() {
        errors.push(Error::custom(format!(
            "write row `{}` has no filter, so it would update whichever document comes first; name the document with `filter(...)`, like `filter(_id)`",
            a.name
        )).with_span(&w.span));
    }
    if let Some(span) = a.paginate {
        errors.push(
            Error::custom("`paginate` reads pages; a row with `update(...)` writes one document: split them into two rows")
                .with_span(&span),
        );
    }
    if let Some((_, span)) = a.fields.first() {
        errors.push(Error::custom(format!(
            "write row `{}` returns the updated document's `_id`, not fields: drop `fields(...)`, or declare a read row for what is read",
            a.name
        )).with_span(span));
    }
    for (op, path, span) in &w.ops {
        if path == "_id" {
            errors.push(Error::custom("`_id` cannot change: an update never writes it").with_span(span));
            continue;
        }
        let Some(r) = errors.handle(paths::resolve(c, path, *span)) else { continue };
        checks.extend(paths::nested_checks(c, &r, *span, false));
        let Some(field) = r.field else { continue };
        let ty = &field.recv.ty;
        let spelt = quote!(#ty).to_string().replace(' ', "");
        let nested = !r.rest.is_empty();
        match op {
            Op::Push | Op::Pull if nested => errors.push(Error::custom(format!(
                "`{}({path})`: a push or pull writes a top-level array field; `{path}` is a nested path",
                op.word()
            )).with_span(span)),
            Op::Push | Op::Pull if !r.array => errors.push(Error::custom(format!(
                "`{}({path})`: `{path}` is `{spelt}`, not an array, so there is nothing to {} into; use `set({path})` to replace it",
                op.word(),
                op.word()
            )).with_span(span)),
            Op::Inc if !nested => {
                let (inner, array) = element(ty);
                let inner = inner.map(|t| quote!(#t).to_string().replace(' ', "")).unwrap_or_default();
                if array || !NUMBERS.contains(&inner.as_str()) && is_spelt_non_number(&inner) {
                    errors.push(Error::custom(format!(
                        "`inc({path})`: `{path}` is `{spelt}`, not a number, so `$inc` cannot add to it; use `set({path})`"
                    )).with_span(span));
                } else if !NUMBERS.contains(&inner.as_str()) {
                    // A type the derive cannot read by its spelling: the compiler checks it.
                    let assert = respan(quote!(__ds::assert_number::<#ty>), *span);
                    checks.extend(quote! { const _: () = #assert(); });
                }
            }
            _ => {}
        }
    }
    checks
}

/// Types whose spelling says they are not numbers.
fn is_spelt_non_number(ty: &str) -> bool {
    matches!(ty, "String" | "str" | "bool" | "char" | "DateTime" | "ObjectId" | "Document" | "Uuid")
        || ty.ends_with("::String")
        || ty.ends_with("::DateTime")
}

/// The method of every write row.
pub(crate) fn expand(c: &Container, patterns: &[Access], versioned: bool) -> TokenStream {
    let mut methods = Vec::new();
    let model = &c.ident;
    // The families that cache this model's reads: each write deletes the written
    // document's key in all of them.
    // Each under its `cache = Family`, where a family over another type than the `_id`
    // is reported (once: the cached row's finder names the same tokens).
    let caches: Vec<TokenStream> = patterns
        .iter()
        .filter_map(|a| a.cache.as_ref())
        .map(|f| quote_spanned!(f.span()=> __ds::cache_of::<#f, <#model as __ds::Identified>::Id>().written))
        .collect();
    for (i, a) in patterns.iter().enumerate() {
        let (Some(w), Some(method)) = (&a.update, &a.method) else { continue };
        let mut taken = Vec::new();
        let (mut params, filter_inserts) = equality(c, a, &mut taken);
        let (range_params, range_inserts) = ranges(c, a, &mut taken);
        params.extend(range_params);
        let mut updates = Vec::new();
        for (op, path, _) in &w.ops {
            let param = param_name(path, &mut taken);
            let resolved = paths::resolve(c, path, Span::call_site()).ok();
            let field = resolved.as_ref().and_then(|r| r.field);
            let ty = match op {
                Op::Push | Op::Pull => {
                    let elem = field.and_then(|f| element(&f.recv.ty).0);
                    match elem {
                        Some(t) if field.is_some_and(|f| f.serde.with.is_none()) => quote!(#t),
                        _ => quote!(__ds::Bson),
                    }
                }
                _ => param_type(c, path),
            };
            params.push(quote!(#param: impl ::core::convert::Into<#ty>));
            let value = quote!(__ds::to_bson(&::core::convert::Into::<#ty>::into(#param))?);
            updates.push(match op {
                Op::Set => quote!(__u.set(#path, #value);),
                Op::Inc => quote!(__u.inc(#path, #value);),
                Op::Pull => quote!(__u.pull(#path, #value);),
                Op::Push => {
                    let max = field.and_then(|f| f.recv.max_items.as_ref().map(|m| *m.as_ref()));
                    let bound = match max {
                        Some(max) => {
                            quote!(::core::option::Option::Some(__ds::PushBound { field: #path, max: #max }))
                        }
                        None => quote!(::core::option::Option::None),
                    };
                    quote!(__u.push(#path, #value, #bound);)
                }
            });
        }
        // A versioned model's write row writes the current shape: to current documents,
        // after upgrading an older one in place (the seed's lazy migration).
        let version = versioned.then(|| {
            quote! {
                let __update = __update
                    .versioned(<Self as __ds::Versioned>::VERSION_FIELD, <Self as __ds::Versioned>::VERSION)
                    .upgrading(__ds::upgrade_in_place::<Self>);
            }
        });
        let what: Vec<String> = w.ops.iter().map(|(op, p, _)| format!("{} `{p}`", op.word())).collect();
        let doc = format!(
            "The write row `{}` ({}): {} in the one document its filter names, in one command. Served by index `{}`.",
            a.name,
            a.operation,
            what.join(", "),
            a.index.as_deref().unwrap_or("none (waived)"),
        );
        let vis = &c.vis;
        let (ret, wrap) = if caches.is_empty() {
            (quote!(__ds::Update<Self>), quote!(__update))
        } else {
            (
                quote!(__ds::CachedUpdate<Self>),
                quote! {{
                    const __KEYS: &[__ds::CachedFamily] =
                        &[#(#caches),*];
                    __ds::CachedUpdate::new(__update, __KEYS)
                }},
            )
        };
        let doc = if caches.is_empty() {
            doc
        } else {
            format!("{doc} Deletes the document's cached copies after the update (`run(&db, &mut redis)`).")
        };
        methods.push(quote! {
            #[doc = #doc]
            #[allow(clippy::too_many_arguments, clippy::needless_question_mark)]
            #vis fn #method(#(#params),*) -> #ret {
                let __filter = (|| {
                    let mut __f = __ds::FilterBuilder::new();
                    #(#filter_inserts)*
                    #(#range_inserts)*
                    ::core::result::Result::<__ds::Document, __ds::BsonSerError>::Ok(__f.build())
                })();
                let __update = (|| {
                    let mut __u = __ds::UpdateBuilder::new();
                    #(#updates)*
                    ::core::result::Result::<__ds::UpdateBuilder, __ds::BsonSerError>::Ok(__u)
                })();
                let __update = __ds::Update::new(&<Self as __ds::Model>::ACCESS_PATTERNS[#i], __filter, __update);
                #version
                #wrap
            }
        });
    }
    // Every docshape writer of the model (versioned writers, copies' `update_one`)
    // finds the families to invalidate by the collection; a generic model has no one
    // collection to register.
    let registration = (!caches.is_empty() && c.generics.params.is_empty()).then(|| {
        quote! {
            __ds::inventory::submit! {
                __ds::CachedModel {
                    collection: <#model as __ds::Model>::COLLECTION,
                    families: &[#(#caches),*],
                }
            }
        }
    });
    if methods.is_empty() {
        return quote!(#registration);
    }
    let ident = &c.ident;
    let generics = c.bounded_generics();
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    quote! {
        #registration
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            #(#methods)*
        }
    }
}
