//! The summary pattern: a model whose documents are maintained from another model's
//! writes (`#[summary(of = Order, group(items.seller_id), refresh = "async",
//! max_stale = "5m")]`), with `#[summary(count)]`, `#[summary(sum = "items.qty")]`,
//! `#[summary(min = "...")]` and `#[summary(max = "...")]` fields. A polymorphic
//! source is summarized over one variant (`of = Event, variant = Purchase`), whose
//! fields the paths are checked against through the enum's `VariantFields` impls.
//!
//! `parse` reads the attributes, `check` the rules that need only this type, and
//! `expand` the type-level checks against the source model (the paths exist, the
//! summed ones are numbers, the `_id` has the group key's type), the registry entry
//! the runtime maintains the summary from, and the `avg_*` accessors.

use darling::Error;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Attribute, LitStr};

use crate::common::duration::parse_duration;
use crate::common::paths::{self, Walk};
use crate::common::respan::{bound_check, respan};
use crate::facts::Facts as Context;

/// A summary model's declaration, when it has one.
#[derive(Default)]
pub(crate) struct Parsed {
    def: Option<SummaryDef>,
}

struct SummaryDef {
    source: syn::Path,
    source_span: Span,
    /// The source's variant (`variant = Click`), when the source is polymorphic.
    variant: Option<syn::Ident>,
    group: Vec<GroupPart>,
    group_span: Span,
    refresh: Option<u64>,
    refresh_span: Span,
    fields: Vec<OpDef>,
    id_ty: Option<syn::Type>,
}

enum GroupPart {
    Field { path: String, span: Span },
    Period { path: String, per: String, span: Span },
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Count,
    Sum,
    Min,
    Max,
}

struct OpDef {
    ident: syn::Ident,
    stored: String,
    op: Op,
    path: Option<(String, Span)>,
    ty: syn::Type,
}

const HELP: &str = "`#[summary(of = Order, group(items.seller_id), refresh = \"sync\")]` or `refresh = \"async\", max_stale = \"5m\"`";
const PERIODS: &[&str] = &["minute", "hour", "day", "week", "month", "year"];

fn is_summary(a: &Attribute) -> bool {
    a.path().is_ident("summary")
}

/// Reads `#[summary(...)]` on the type and its fields.
pub(crate) fn parse(cx: &Context, errors: &mut darling::error::Accumulator) -> Parsed {
    let c = &cx.container;
    let fields = paths::stored_fields(c);
    let Some(attr) = c.attrs.iter().find(|a| is_summary(a)) else {
        // One error: the first such field says what is missing.
        if let Some(a) = fields.iter().find_map(|f| f.recv.attrs.iter().find(|a| is_summary(a))) {
            errors.push(
                Error::custom(format!(
                    "a `#[summary(...)]` field belongs to a summary model: declare the type's summary with {HELP}"
                ))
                .with_span(a),
            );
        }
        return Parsed::default();
    };
    let Some(def) = container(attr, errors) else { return Parsed::default() };
    let mut def = def;
    for f in &fields {
        let name = f.name.clone().unwrap_or_default();
        if name == "_id" {
            def.id_ty = Some(f.recv.ty.clone());
        }
        for a in f.recv.attrs.iter().filter(|a| is_summary(a)) {
            if let Some((op, path)) = field_op(a, errors) {
                let Some(ident) = f.recv.ident.clone() else { continue };
                def.fields.push(OpDef { ident, stored: name.clone(), op, path, ty: f.recv.ty.clone() });
            }
        }
    }
    Parsed { def: Some(def) }
}

fn container(attr: &Attribute, errors: &mut darling::error::Accumulator) -> Option<SummaryDef> {
    let mut source = None;
    let mut variant = None;
    let mut group = None;
    let mut group_span = Span::call_site();
    let mut refresh: Option<LitStr> = None;
    let mut max_stale: Option<LitStr> = None;
    let parsed = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("of") {
            source = Some(meta.value()?.parse::<syn::Path>()?);
        } else if meta.path.is_ident("variant") {
            variant = Some(meta.value()?.parse::<syn::Ident>().map_err(|e| {
                syn::Error::new(e.span(), "`variant` names one variant of the polymorphic source as in Rust: `variant = Purchase`")
            })?);
        } else if meta.path.is_ident("group") {
            group_span = meta.path.span();
            let content;
            syn::parenthesized!(content in meta.input);
            let mut parts = Vec::new();
            while !content.is_empty() {
                parts.push(group_part(&content)?);
                if content.is_empty() {
                    break;
                }
                content.parse::<syn::Token![,]>()?;
            }
            group = Some(parts);
        } else if meta.path.is_ident("refresh") {
            refresh = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("max_stale") {
            max_stale = Some(meta.value()?.parse()?);
        } else {
            return Err(meta.error(format!(
                "unknown key in `#[summary]`: a summary takes `of`, `variant` (of a polymorphic source), `group(...)`, `refresh` and `max_stale`, as in {HELP}"
            )));
        }
        Ok(())
    });
    if let Err(e) = parsed {
        errors.push(e.into());
        return None;
    }
    let Some(source) = source else {
        errors.push(
            Error::custom(format!("say which model the summary is kept from: `of = Order`, as in {HELP}"))
                .with_span(attr.path()),
        );
        return None;
    };
    let Some(group) = group else {
        errors.push(
            Error::custom("say how the source's documents are grouped: `group(seller_id)`, `group(items.seller_id)` (by an array's elements), `group(seller_id, period(created_at, \"day\"))`, or `group()` for one document over the whole collection")
                .with_span(attr.path()),
        );
        return None;
    };
    let refresh_span = refresh.as_ref().map_or_else(|| attr.path().span(), LitStr::span);
    let refresh = match (refresh.as_ref().map(|l| (l.value(), l)), &max_stale) {
        (None, _) => {
            errors.push(
                Error::custom(format!(
                    "a summary needs a refresh policy, a product decision that is never implicit: {HELP}"
                ))
                .with_span(attr.path()),
            );
            return None;
        }
        (Some((r, _)), None) if r == "sync" => None,
        (Some((r, _)), Some(stale)) if r == "sync" => {
            errors.push(
                Error::custom("`max_stale` is the bound of an `async` refresh; this summary is kept in sync")
                    .with_span(stale),
            );
            return None;
        }
        (Some((r, lit)), None) if r == "async" => {
            errors.push(
                Error::custom("an `async` summary lags its source: state how much with `max_stale = \"5m\"`")
                    .with_span(lit),
            );
            return None;
        }
        (Some((r, _)), Some(stale)) if r == "async" => match parse_duration(stale) {
            Ok(0) => {
                errors.push(
                    Error::custom(
                        "`max_stale = 0` is a summary that is never stale: use `refresh = \"sync\"`",
                    )
                    .with_span(stale),
                );
                return None;
            }
            Ok(secs) => Some(secs),
            Err(e) => {
                errors.push(e);
                return None;
            }
        },
        (Some((r, lit)), _) => {
            errors.push(Error::custom(format!("`{r}` is not a refresh policy: {HELP}")).with_span(lit));
            return None;
        }
    };
    let source_span = source.span();
    Some(SummaryDef {
        source,
        source_span,
        variant,
        group,
        group_span,
        refresh,
        refresh_span,
        fields: Vec::new(),
        id_ty: None,
    })
}

/// A dotted path of identifiers (`items.seller_id`), or a string literal.
fn dotted(input: syn::parse::ParseStream) -> syn::Result<(String, Span)> {
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        return Ok((lit.value(), lit.span()));
    }
    let first: syn::Ident = input.call(syn::ext::IdentExt::parse_any)?;
    let mut span = first.span();
    let mut path = first.to_string();
    while input.peek(syn::Token![.]) {
        input.parse::<syn::Token![.]>()?;
        let next: syn::Ident = input.call(syn::ext::IdentExt::parse_any)?;
        span = span.join(next.span()).unwrap_or(span);
        path.push('.');
        path.push_str(&next.to_string());
    }
    Ok((path, span))
}

fn group_part(input: syn::parse::ParseStream) -> syn::Result<GroupPart> {
    let fork = input.fork();
    if fork.parse::<syn::Ident>().is_ok_and(|i| i == "period") && fork.peek(syn::token::Paren) {
        let _: syn::Ident = input.parse()?;
        let content;
        syn::parenthesized!(content in input);
        let (path, span) = dotted(&content)?;
        content.parse::<syn::Token![,]>()?;
        let per: LitStr = content.parse()?;
        if !PERIODS.contains(&per.value().as_str()) {
            return Err(syn::Error::new(
                per.span(),
                format!("`{}` is not a period: use one of {}", per.value(), PERIODS.join(", ")),
            ));
        }
        return Ok(GroupPart::Period { path, per: per.value(), span });
    }
    let (path, span) = dotted(input)?;
    Ok(GroupPart::Field { path, span })
}

fn field_op(
    attr: &Attribute,
    errors: &mut darling::error::Accumulator,
) -> Option<(Op, Option<(String, Span)>)> {
    let mut found = None;
    let parsed = attr.parse_nested_meta(|meta| {
        let op = if meta.path.is_ident("count") {
            Op::Count
        } else if meta.path.is_ident("sum") {
            Op::Sum
        } else if meta.path.is_ident("min") {
            Op::Min
        } else if meta.path.is_ident("max") {
            Op::Max
        } else {
            return Err(meta.error("a summary field is `#[summary(count)]`, `#[summary(sum = \"items.qty\")]`, `#[summary(min = \"...\")]` or `#[summary(max = \"...\")]`; an average is `avg_<sum field>()`, derived on read"));
        };
        let path = if op == Op::Count {
            None
        } else {
            let lit: LitStr = meta.value()?.parse()?;
            Some((lit.value(), lit.span()))
        };
        if found.is_some() {
            return Err(meta.error("one operator per summary field"));
        }
        found = Some((op, path));
        Ok(())
    });
    match parsed {
        Err(e) => {
            errors.push(e.into());
            None
        }
        Ok(()) if found.is_none() => {
            errors.push(Error::custom("say what the field keeps: `#[summary(count)]`, `#[summary(sum = \"items.qty\")]`, `min` or `max`").with_span(attr));
            None
        }
        Ok(()) => found,
    }
}

/// The rules that need only this type: one count field, an `_id`, no polymorphic
/// summary, paths that are paths.
pub(crate) fn check(parsed: &mut Parsed, cx: &Context, errors: &mut darling::error::Accumulator) {
    let Some(def) = &parsed.def else { return };
    let attr = cx.container.attrs.iter().find(|a| is_summary(a));
    let span = attr.map(|a| a.path().span()).unwrap_or_else(Span::call_site);
    if cx.polymorphic.is_some() || !cx.container.generics.params.is_empty() {
        errors.push(
            Error::custom("a summary is a plain struct model: one document per group, of one shape")
                .with_span(&span),
        );
        parsed.def = None;
        return;
    }
    if def.id_ty.is_none() {
        errors.push(
            Error::custom("a summary's documents are found by their group key: add the `_id` field (`#[serde(rename = \"_id\")] seller_id: String`)")
                .with_span(&span),
        );
        parsed.def = None;
        return;
    }
    let counts = def.fields.iter().filter(|f| f.op == Op::Count).count();
    if counts != 1 {
        errors.push(
            Error::custom("a summary keeps one `#[summary(count)]` field (an `i64`): it counts the group's source documents, and a group whose count reaches 0 is removed")
                .with_span(&span),
        );
        parsed.def = None;
        return;
    }
    for p in def.group.iter().map(|g| match g {
        GroupPart::Field { path, span } | GroupPart::Period { path, span, .. } => (path, span),
    }) {
        if p.0.split('.').any(str::is_empty) || p.0 == "_id" {
            errors.push(
                Error::custom(format!("`{}` is not a stored path of the source to group by", p.0))
                    .with_span(p.1),
            );
            parsed.def = None;
            return;
        }
    }
}

/// The type-level checks against the source, the registry entry, the accessors.
pub(crate) fn expand(parsed: &Parsed, cx: &Context) -> TokenStream {
    let Some(def) = &parsed.def else { return TokenStream::new() };
    let ident = &cx.container.ident;
    let source = respan(
        {
            let s = &def.source;
            quote!(#s)
        },
        def.source_span,
    );
    let mut checks = TokenStream::new();
    checks.extend(bound_check("assert_model", source.clone(), quote!(__ds::Model), None, def.source_span));
    let (start, plain) = variant_start(def, &source, &mut checks);
    // Over a source of the other kind than the declaration says (refused above, once),
    // every type check is given its own expected type.
    let guard = |ty: TokenStream, fallback: TokenStream, span: Span| {
        respan(quote!(<__ds::If<#plain> as __ds::Choose<#ty, #fallback>>::Out), span)
    };
    let walk = |path: &str, span: Span| {
        let segments: Vec<&str> = path.split('.').collect();
        let Walk { items, steps, .. } = paths::walk(start.clone(), &segments, 1, span);
        let stored = steps.last().map(|s| respan(quote!(#s::Stored), span)).unwrap_or_default();
        (items, stored)
    };
    let id_ty = def.id_ty.as_ref().map(|t| quote!(#t)).unwrap_or_default();
    let mut parts = Vec::new();
    for g in &def.group {
        match g {
            GroupPart::Field { path, span } => {
                let (items, stored) = walk(path, *span);
                let stored = guard(stored, id_ty.clone(), *span);
                let key = (def.group.len() == 1).then(|| {
                    bound_check(
                        "assert_group_key",
                        id_ty.clone(),
                        quote!(__ds::GroupKey),
                        Some(stored),
                        *span,
                    )
                });
                checks.extend(quote!(const _: () = { #items #key };));
                parts.push(quote!(__ds::GroupPart::Field(#path)));
            }
            GroupPart::Period { path, per, span } => {
                let (items, stored) = walk(path, *span);
                let stored = guard(stored, quote!(__ds::DateTime), *span);
                let time = bound_check("assert_period_time", stored, quote!(__ds::SummaryTime), None, *span);
                let key = (def.group.len() == 1).then(|| {
                    let dt = quote!(__ds::DateTime);
                    bound_check("assert_group_key", id_ty.clone(), quote!(__ds::GroupKey), Some(dt), *span)
                });
                checks.extend(quote!(const _: () = { #items #time #key };));
                let per = format_ident!("{}", capitalize(per));
                parts.push(quote!(__ds::GroupPart::Period(#path, __ds::SummaryPeriod::#per)));
            }
        }
    }
    if def.group.is_empty() {
        let s = quote!(__ds::String);
        let span = def.source_span;
        checks.extend(bound_check("assert_group_key", id_ty.clone(), quote!(__ds::GroupKey), Some(s), span));
    }
    // A summary of a tenant model groups by the tenant first, so that no summary
    // document mixes two tenants' data. The source is another type, whose tenant is
    // known only to the compiler: a constant over its `Model::TENANT`, under `group`.
    let first = match def.group.first() {
        Some(GroupPart::Field { path, .. }) => quote!(::core::option::Option::Some(#path)),
        _ => quote!(::core::option::Option::None),
    };
    let message = "the summary's source is a tenant model (`#[model(tenant = ...)]`): a summary never mixes tenants, so group by the source's tenant field first, as in `group(org_id, ...)`";
    checks.extend(respan(
        quote!(
            const _: () = ::core::assert!(
                __ds::summary_groups_by_tenant(<#source as __ds::Model>::TENANT, #first),
                #message
            );
        ),
        def.group_span,
    ));
    // A summary stays exact because every change of its source reaches it: docshape's
    // writes through the write pipeline, everyone else's through the source's change
    // stream. A time-series collection has no change stream and takes no write in a
    // transaction, and its readings expire without a write (`expire_after`): a
    // summary over one would drift with nothing to tell. Known only to the compiler:
    // a constant over the source's `Model::TIMESERIES`, under `of`.
    let message = "a summary cannot be kept over a time-series model: the server gives no change stream of a time-series collection, so readings another program writes or the server expires (`expire_after`) would never reach it, and it takes no write to one in a transaction; aggregate the readings on read (a `$group` over the row's time range), or keep them in a `#[bucket]` model, whose appends a summary follows";
    checks.extend(respan(
        quote!(
            const _: () = ::core::assert!(<#source as __ds::Model>::TIMESERIES.is_none(), #message);
        ),
        def.source_span,
    ));
    // A path through an `#[outlier]` array reads only the items the document keeps:
    // the rest are in overflow documents, which neither an application (from the
    // source document) nor a recount (over the source collection) reads, so the
    // summary would leave them out with nothing to tell. The source's outliers are
    // known only to the compiler: a constant over its `Model::RELATIONS`, per path.
    let group_paths = def.group.iter().map(|g| match g {
        GroupPart::Field { path, span } | GroupPart::Period { path, span, .. } => (path, *span),
    });
    let field_paths = def.fields.iter().filter_map(|f| f.path.as_ref().map(|(p, span)| (p, *span)));
    for (path, span) in group_paths.chain(field_paths) {
        let message = format!("`{path}` reads through an `#[outlier]` array of the source, which keeps only its first items in the document and the rest in overflow documents that a summary never reads, so the summary would leave them out; summarise the array's items as a model of their own, or keep a total on the source and sum that");
        checks.extend(respan(
            quote!(
                const _: () = ::core::assert!(
                    !__ds::summary_reads_outlier(<#source as __ds::Model>::RELATIONS, #path),
                    #message
                );
            ),
            span,
        ));
    }
    // A sync summary is written in the source write's transaction: one over a source
    // written outside transactions would leave a window between the write and its
    // application (covered only by the watcher). The source's declaration is known
    // only to the compiler: a constant over its `Model::TRANSACTIONS`, under `refresh`.
    if def.refresh.is_none() {
        let message = "a `sync` summary commits with its source's writes only if they are made in transactions: declare it on the source, `#[model(collection = \"...\", transactions)]`, and write it in `docshape::transaction` (or a session's transaction); or keep the summary with `refresh = \"async\", max_stale = \"5m\"`";
        checks.extend(respan(
            quote!(
                const _: () = ::core::assert!(<#source as __ds::Model>::TRANSACTIONS, #message);
            ),
            def.refresh_span,
        ));
    }
    let mut fields = Vec::new();
    let mut accessors = TokenStream::new();
    let count = def.fields.iter().find(|f| f.op == Op::Count).map(|f| f.ident.clone());
    for f in &def.fields {
        let stored = &f.stored;
        let (op, path) = match (&f.op, &f.path) {
            (Op::Count, _) => (quote!(Count), String::new()),
            (Op::Sum, Some(p)) => (quote!(Sum), p.0.clone()),
            (Op::Min, Some(p)) => (quote!(Min), p.0.clone()),
            (Op::Max, Some(p)) => (quote!(Max), p.0.clone()),
            _ => continue,
        };
        if let Some((p, span)) = &f.path {
            let (items, stored_ty) = walk(p, *span);
            let stored_ty = guard(stored_ty, quote!(i64), *span);
            let ty = &f.ty;
            let numeric = (f.op == Op::Sum).then(|| {
                let a = bound_check("assert_summable", stored_ty, quote!(__ds::Summable), None, *span);
                let b =
                    bound_check("assert_summable", quote!(#ty), quote!(__ds::Summable), None, f.ty.span());
                quote!(#a const _: () = { #b };)
            });
            checks.extend(quote!(const _: () = { #items #numeric };));
        }
        if f.op == Op::Sum {
            if let Some(count) = &count {
                let (name, field) = (format_ident!("avg_{}", f.ident), &f.ident);
                let doc = format!("The average of `{}` per source document of the group (`None` for an empty group): `{}` divided by the count, derived on read.", f.stored, f.stored);
                accessors.extend(quote! {
                    #[doc = #doc]
                    #[inline]
                    pub fn #name(&self) -> ::core::option::Option<f64> {
                        __ds::summary_avg(&self.#field, &self.#count)
                    }
                });
            }
        }
        fields.push(quote!(__ds::SummaryField { name: #stored, op: __ds::SummaryOp::#op, path: #path }));
    }
    let refresh = match def.refresh {
        None => quote!(__ds::SummaryRefresh::Sync),
        Some(secs) => {
            quote!(__ds::SummaryRefresh::Async { max_stale: __ds::Duration::from_secs(#secs) })
        }
    };
    let variant = match &def.variant {
        Some(v) => respan(
            quote!(::core::option::Option::Some(<#source as __ds::Model>::VARIANTS[__DS_SUMMARY_VARIANT])),
            v.span(),
        ),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        #checks
        impl #ident { #accessors }
        __ds::inventory::submit! {
            __ds::SummarySpec {
                collection: <#ident as __ds::Model>::COLLECTION,
                source: <#source as __ds::Model>::COLLECTION,
                group: &[#(#parts),*],
                fields: &[#(#fields),*],
                refresh: #refresh,
                soft_delete: <#source as __ds::Model>::SOFT_DELETE,
                variant: #variant,
            }
        }
    }
}

/// The type the summary's paths are looked up in, with its checks added to `checks`,
/// and the constant under which that type is the real one: the named variant's
/// fields (`variant = Click`: its number, or an error under the name that lists the
/// variants) when the source is polymorphic, or the source itself when it is a struct
/// model. A source of the other kind is one error, and its paths are looked up in
/// nothing (`Open`), each type check given its own expected type, so that the error
/// is the only one.
fn variant_start(
    def: &SummaryDef,
    source: &TokenStream,
    checks: &mut TokenStream,
) -> (TokenStream, TokenStream) {
    let Some(v) = &def.variant else {
        let plain = quote!({ <#source as __ds::Model>::VARIANTS.is_empty() });
        let message = "the summary's source is a polymorphic model: a summary is kept over one of its variants, whose fields it reads; name it, as in `#[summary(of = Event, variant = Purchase, ...)]` (one summary per variant to count several)";
        checks.extend(respan(
            quote!(
                const _: () = ::core::assert!(#plain, #message);
            ),
            def.source_span,
        ));
        return (quote!(<__ds::If<#plain> as __ds::Choose<#source, __ds::Open>>::Out), plain);
    };
    let name = v.to_string();
    checks.extend(respan(
        quote! {
            const __DS_SUMMARY_VARIANT: usize = {
                const __L: __ds::VariantLookup = __ds::VariantLookup::find::<#source>(#name);
                if __L.missing() {
                    ::core::panic!("{}", __L.message())
                }
                __L.index()
            };
        },
        v.span(),
    ));
    let poly = quote!({ !<#source as __ds::Model>::VARIANTS.is_empty() });
    let shape = quote!(__ds::VariantShape<#source, __DS_SUMMARY_VARIANT>);
    (respan(quote!(<__ds::If<#poly> as __ds::Choose<#shape, __ds::Open>>::Out), v.span()), poly)
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
}
