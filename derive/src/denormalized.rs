//! Denormalized copies: `#[denormalized(from = "User::name", via = "author_id",
//! refresh = ...)]`.
//!
//! The rules: a copy states its refresh policy, copies a field that exists with its
//! exact type, through a reference to the source model, and a refreshed copy's `via`
//! field leads an index (`unindexed_via`); an access pattern that needs another
//! collection's field is served by a copy or waived (`lookup`). The expansion lists the
//! copies (`Model::COPIES`, rows of `Model::RELATIONS`, and one registry entry each, so
//! the source's update API finds them).

use darling::error::Accumulator;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, Ident, LitStr, Meta, Type};

use crate::ast::{Body, Container, Field};
use crate::attr::reference;
use crate::common::duration::parse_duration;
use crate::common::expansion::{Expansion, VariantPart};
use crate::common::fields::Lookup;
use crate::common::message::{did_you_mean, rule};
use crate::common::paths;
use crate::common::respan::{bound_check, respan};
use crate::common::types::is_option;
use crate::facts::Facts;
use crate::index::IndexDef;

/// `#[denormalized(...)]`.
#[derive(FromMeta)]
struct CopyOpts {
    from: Option<LitStr>,
    via: Option<LitStr>,
    refresh: Option<LitStr>,
    max_stale: Option<LitStr>,
    reason: Option<LitStr>,
    on_delete: Option<LitStr>,
}

enum Refresh {
    Never,
    Sync,
    Async(u64),
}

/// `on_delete`: what the copy holds once its source is deleted.
enum OnDelete {
    Keep,
    /// `true`: by `$unset` (the field may be absent); `false`: by `null`.
    Clear {
        unset: bool,
    },
    Report,
}

const ON_DELETE_WORDS: &[&str] = &["keep", "clear", "report"];

const ON_DELETE_HELP: &str = "`on_delete = \"keep\"` (the last value copied stays; the default), `on_delete = \"clear\"` (the copy is emptied; it must be an `Option`) or `on_delete = \"report\"` (the copy stays and its refresh job fails, naming the deleted source)";

/// A denormalized copy, checked as far as the spelling allows.
struct CopyDef {
    /// The copy's stored name.
    pub field: String,
    pub field_ty: Type,
    pub source: syn::Path,
    /// The copied path in the source, stored names.
    pub source_path: String,
    pub from_span: Span,
    pub via: String,
    pub via_span: Span,
    /// The model the `via` field references.
    pub via_target: Option<Type>,
    pub refresh: Refresh,
    pub reason: Option<String>,
    pub on_delete: OnDelete,
    /// The copy's field has `skip_serializing_if`: a null source value is `$unset`.
    pub unset_null: bool,
}

/// The model's (or embedded type's) checked copies.
pub(crate) struct Parsed {
    copies: Vec<CopyDef>,
    /// An embedded type's copies: registered by the models that hold it, under their
    /// collection and the field's path.
    embedded: bool,
    /// The first key of each full index of the model: a refreshed copy inside an
    /// embedded type needs one that is its `via`'s path.
    leading_keys: Vec<String>,
    /// A polymorphic model's variants, each read as a struct: their copies sit at the
    /// top level of that variant's documents.
    variants: Vec<VariantCopies>,
}

/// The copies of one variant of a polymorphic model.
struct VariantCopies {
    ident: Ident,
    /// The discriminator value.
    value: String,
    copies: Vec<CopyDef>,
    /// The first key of each index that holds every document of the variant (on the
    /// enum with no partial filter, or partial to the variant and nothing else).
    leading_keys: Vec<String>,
}

/// Reads `#[denormalized]` on the struct's fields: the source, the `via` reference
/// and the refresh policy.
pub(crate) fn parse(cx: &Facts, errors: &mut Accumulator) -> Parsed {
    let c = &cx.container;
    let mut out = Parsed {
        copies: Vec::new(),
        embedded: !cx.is_model(),
        leading_keys: Vec::new(),
        variants: Vec::new(),
    };
    if let Some(p) = &cx.polymorphic {
        for v in &p.variants {
            let copies = read_copies(&v.container, Some(&v.ident), errors);
            let (ident, value) = (v.ident.clone(), v.value.clone());
            out.variants.push(VariantCopies { ident, value, copies, leading_keys: Vec::new() });
        }
        return out;
    }
    match &c.body {
        Body::Struct(..) => out.copies = read_copies(c, None, errors),
        Body::Enum(variants) => {
            for a in variants.iter().flat_map(|v| &v.fields).flat_map(|f| attrs(f, "denormalized")) {
                errors.push(
                    Error::custom("`#[denormalized]` goes on the fields of a struct, not of an enum variant")
                        .with_span(a.path()),
                );
            }
        }
    }
    out
}

/// The copies declared on a struct-like container's fields; `variant` when they are
/// a polymorphic model's variant's.
fn read_copies(c: &Container, variant: Option<&Ident>, errors: &mut Accumulator) -> Vec<CopyDef> {
    let mut copies: Vec<CopyDef> = Vec::new();
    let Body::Struct(_, fields) = &c.body else { return copies };
    for f in fields {
        let Some(name) = f.name.clone() else { continue };
        for attr in attrs(f, "denormalized") {
            if let Some(def) = copy(c, variant, f, &name, attr, errors) {
                if copies.iter().any(|d| d.field == def.field) {
                    errors.push(Error::custom("one `#[denormalized]` per field").with_span(attr.path()));
                    continue;
                }
                copies.push(def);
            }
        }
    }
    copies
}

/// A polymorphic model's copies, per variant: a refreshed copy's `via` leads an index
/// that holds every document of its variant ([`IndexDef::holds`]: one on the enum, or
/// one partial to that variant with no other filter), since its refresh's
/// `update_many` filters on the variant and the `via`.
pub(crate) fn check_polymorphic(
    parsed: &mut Parsed,
    cx: &Facts,
    index: &crate::index::Parsed,
    errors: &mut Accumulator,
) {
    let Some(p) = &cx.polymorphic else { return };
    let ident = &cx.container.ident;
    for v in &mut parsed.variants {
        let only_variant = crate::polymorphic::partial_filter(&p.tag, &v.value, None).ok();
        let holding: Vec<&IndexDef> = index
            .indexes
            .iter()
            .filter(|i| i.holds(Some(&v.value)) && (i.partial.is_none() || i.partial == only_variant))
            .collect();
        for d in v.copies.iter().filter(|d| !matches!(d.refresh, Refresh::Never)) {
            if !holding.iter().any(|i| i.keys.first().is_some_and(|k| k.path == d.via)) {
                errors.push(
                    Error::custom(rule(
                        "unindexed_via",
                        format!(
                            "refreshing `{}` updates every `{}` document of variant `{}` whose `{}` is the source's `_id`; no index holding that variant's documents (one on the enum, or one on the variant with no other partial filter) starts with `{}`, so each refresh scans the collection: add `#[index(keys({}))]` on variant `{}`",
                            d.field, ident, v.ident, d.via, d.via, d.via, v.ident
                        ),
                    ))
                    .with_span(&d.via_span),
                );
            }
        }
        v.leading_keys = holding.iter().filter_map(|i| i.keys.first().map(|k| k.path.clone())).collect();
    }
}

/// A model with copies is one stored type; a refreshed copy's `via` leads an index;
/// the copies serve the access patterns' paths into other collections (`lookup`).
pub(crate) fn check(parsed: &mut Parsed, cx: &Facts, index: &crate::index::Parsed, errors: &mut Accumulator) {
    let c = &cx.container;
    if let (false, Some(param)) = (parsed.copies.is_empty(), c.generics.params.first()) {
        errors.push(
            Error::custom("a model with denormalized copies is one stored type; it cannot be generic")
                .with_span(param),
        );
    }
    check_via_indexes(c, parsed, &index.indexes, errors);
    parsed.leading_keys = index
        .indexes
        .iter()
        .filter(|i| i.partial.is_none())
        .filter_map(|i| i.keys.first().map(|k| k.path.clone()))
        .collect();
}

/// An embedded type's copies: one stored type, as a model's. Their `via` indexes are
/// the models' to check, which know their paths.
pub(crate) fn check_embedded(parsed: &Parsed, cx: &Facts, errors: &mut Accumulator) {
    if let (false, Some(param)) = (parsed.copies.is_empty(), cx.container.generics.params.first()) {
        errors.push(
            Error::custom(
                "an embedded type with denormalized copies is one stored type; it cannot be generic",
            )
            .with_span(param),
        );
    }
}

/// The copies' rows of `Model::RELATIONS`, `Model::COPIES`, their type checks and
/// registry entries.
pub(crate) fn expand(parsed: &Parsed, cx: &Facts) -> Expansion {
    let c = &cx.container;
    if let Some(p) = &cx.polymorphic {
        // A variant's copies are registered as an embedded type's, through the
        // variant's `Nested` entry, which places them and names their variant.
        let mut out = Expansion::default();
        for v in &parsed.variants {
            let Some(variant) = p.variant(&v.ident) else { continue };
            let vc = &variant.container;
            let items = items(vc, &v.copies, true);
            let nested = nested_via_checks(vc, &v.leading_keys, Some(&v.ident));
            out.items.extend(quote!(#items #nested));
            let copies = v.copies.iter().map(|d| copy_spec(&c.ident, d, true)).collect();
            out.variants.push((v.value.clone(), VariantPart { relations: rows(&v.copies), copies }));
        }
        return out;
    }
    let nested =
        if parsed.embedded { TokenStream::new() } else { nested_via_checks(c, &parsed.leading_keys, None) };
    let items = items(c, &parsed.copies, parsed.embedded);
    Expansion {
        relations: rows(&parsed.copies),
        copies: parsed.copies.iter().map(|d| copy_spec(&c.ident, d, parsed.embedded)).collect(),
        items: quote!(#items #nested),
        ..Expansion::default()
    }
}

/// The `unindexed_via` rule for the copies inside the model's embedded types: per field
/// that may hold one, a constant that walks the embedded type's copies (and those of
/// its own embedded types) and asks for a full index leading with each refreshed
/// copy's `via` path.
/// `variant`: the fields are that variant's of a polymorphic model, whose documents
/// only the enum's indexes and the variant's own hold.
fn nested_via_checks(c: &Container, keys: &[String], variant: Option<&Ident>) -> TokenStream {
    let ident = &c.ident;
    let (holding, on) = match variant {
        Some(v) => (format!(" holding variant `{v}`'s documents"), format!(" on variant `{v}`")),
        None => (String::new(), String::new()),
    };
    let mut out = TokenStream::new();
    // Each entry is the constant the relation pattern lists in `NESTED`.
    for (i, (field, span, _)) in crate::common::nested::entries(c).into_iter().enumerate() {
        let entry = crate::common::nested::entry_name(variant, i);
        let shown = if field.is_empty() { "a flattened field".to_owned() } else { format!("`{field}`") };
        let at = if field.is_empty() { String::new() } else { format!("{field}.") };
        let message = rule(
            "unindexed_via",
            format!(
                "{shown} holds refreshed `#[denormalized]` copies, each rewritten by an `update_many` on its `via` path (`{at}<via>`); no index of `{ident}`{holding} starts with that path, so each refresh scans the collection: add `#[index(keys(\"{at}<via>\"))]`{on} for the copy's `via` field"
            ),
        );
        out.extend(quote::quote_spanned! {span=>
            const _: () = ::core::assert!(__ds::nested_vias_indexed(&#entry, &[#(#keys),*]), #message);
        });
    }
    out
}

fn attrs<'a>(f: &'a Field, name: &'a str) -> impl Iterator<Item = &'a Attribute> + 'a {
    f.recv.attrs.iter().filter(move |a| a.path().is_ident(name))
}

const REFRESH_HELP: &str = "`refresh = \"never\"` (a snapshot taken at write time, right for history), `refresh = \"sync\"` (updated in the same call as the source) or `refresh = \"async\", max_stale = \"5m\"` (a worker refreshes it; say how stale it may be)";

fn copy(
    c: &Container,
    variant: Option<&Ident>,
    f: &Field,
    name: &str,
    attr: &Attribute,
    errors: &mut Accumulator,
) -> Option<CopyDef> {
    let opts = match &attr.meta {
        Meta::List(_) => errors.handle(CopyOpts::from_meta(&attr.meta))?,
        _ => {
            errors.push(
                Error::custom(format!(
                    "a denormalized copy says where it comes from and how it is refreshed: `#[denormalized(from = \"User::name\", via = \"author_id\", ...)]` with {REFRESH_HELP}"
                ))
                .with_span(attr),
            );
            return None;
        }
    };
    let mut ok = true;
    let refresh = match &opts.refresh {
        None => {
            errors.push(
                Error::custom(format!(
                    "a denormalized copy needs a refresh policy, a product decision that is never implicit: {REFRESH_HELP}"
                ))
                .with_span(attr.path()),
            );
            ok = false;
            Refresh::Never
        }
        Some(lit) => match (lit.value().as_str(), &opts.max_stale) {
            ("never", None) => Refresh::Never,
            ("sync", None) => Refresh::Sync,
            ("never" | "sync", Some(stale)) => {
                errors.push(
                    Error::custom("`max_stale` is the bound of an `async` refresh; this copy is not refreshed asynchronously")
                        .with_span(stale),
                );
                ok = false;
                Refresh::Never
            }
            ("async", None) => {
                errors.push(
                    Error::custom("an `async` copy lags its source: state how much with `max_stale = \"5m\"` (the product decision \"the name may be stale ≤ 5 min\")")
                        .with_span(lit),
                );
                ok = false;
                Refresh::Never
            }
            ("async", Some(stale)) => match parse_duration(stale) {
                Ok(0) => {
                    errors.push(
                        Error::custom(
                            "`max_stale = 0` is a copy that is never stale: use `refresh = \"sync\"`",
                        )
                        .with_span(stale),
                    );
                    ok = false;
                    Refresh::Never
                }
                Ok(secs) => Refresh::Async(secs),
                Err(e) => {
                    errors.push(e);
                    ok = false;
                    Refresh::Never
                }
            },
            (other, _) => {
                errors.push(
                    Error::custom(format!("`{other}` is not a refresh policy: {REFRESH_HELP}"))
                        .with_span(lit),
                );
                ok = false;
                Refresh::Never
            }
        },
    };
    let Some(from) = &opts.from else {
        errors.push(
            Error::custom(
                "say what is copied: `from = \"User::name\"`, the source model and its stored field",
            )
            .with_span(attr.path()),
        );
        return None;
    };
    let text = from.value();
    let Some((ty, path)) = text.rsplit_once("::").filter(|(t, p)| !t.is_empty() && !p.is_empty()) else {
        errors.push(
            Error::custom(format!("`{text}` does not name a model's field: write `from = \"User::name\"` (a dotted path after `::` reaches into sub-documents)"))
                .with_span(from),
        );
        return None;
    };
    let source: syn::Path = match syn::parse_str(ty) {
        Ok(p) => p,
        Err(_) => {
            errors.push(Error::custom(format!("`{ty}` is not a type path")).with_span(from));
            return None;
        }
    };
    if path.split('.').any(str::is_empty) || path.contains(char::is_whitespace) {
        errors.push(Error::custom(format!("`{path}` is not a stored path")).with_span(from));
        return None;
    }
    let Some(via) = &opts.via else {
        errors.push(
            Error::custom(format!(
                "say which field references the source: `via = \"...\"`, a `Ref<{ty}>` (or `#[reference({ty})]`) field of this model"
            ))
            .with_span(attr.path()),
        );
        return None;
    };
    let via_name = via.value();
    let fields = paths::stored_fields(c);
    let via_field =
        fields.iter().find(|g| g.name.as_deref() == Some(via_name.as_str()) && g.serde.flatten.is_none());
    let via_target = match via_field {
        None => {
            let names: Vec<&str> = fields.iter().filter_map(|g| g.name.as_deref()).collect();
            let hint =
                did_you_mean(&via_name, &names).map(|s| format!("; did you mean `{s}`?")).unwrap_or_default();
            errors.push(
                match variant {
                    // A copy and its reference sit in one document, so in one variant.
                    Some(v) => Error::custom(format!(
                        "no stored field `{via_name}` in variant `{v}` of `{}`{hint}: a copy follows a reference stored beside it, in the same variant's documents",
                        c.ident
                    )),
                    None => Error::custom(format!("no stored field `{via_name}` in `{}`{hint}", c.ident)),
                }
                .with_span(via),
            );
            return None;
        }
        Some(g) => {
            // Its own problems are reported where the field is read; here only the
            // model it names matters.
            match reference::referenced_model(&g.recv.ty, &g.recv.attrs) {
                Some(t) => Some(t),
                None => {
                    errors.push(
                        Error::custom(format!(
                            "`{via_name}` is not a reference: make it a `Ref<{ty}>`, or mark it `#[reference({ty})]`, so the copy knows which `{ty}` it follows"
                        ))
                        .with_span(via),
                    );
                    return None;
                }
            }
        }
    };
    if via_name == name {
        errors.push(Error::custom("`via` is the reference field, not the copy itself").with_span(via));
        return None;
    }
    let on_delete = match &opts.on_delete {
        None => OnDelete::Keep,
        Some(lit) if matches!(refresh, Refresh::Never) && ok => {
            errors.push(
                Error::custom("a `refresh = \"never\"` copy is a snapshot: nothing follows its source, so `on_delete` has nothing to do; remove it, or refresh the copy")
                    .with_span(lit),
            );
            return None;
        }
        Some(lit) => match lit.value().as_str() {
            "keep" => OnDelete::Keep,
            "report" => OnDelete::Report,
            "clear" => {
                let skips = f.serde.skip_serializing_if.is_some();
                if !skips && !is_option(&f.recv.ty) {
                    errors.push(
                        Error::custom(format!(
                            "`on_delete = \"clear\"` empties `{name}`, and its type has no empty value the validator accepts: make it an `Option<...>` (with `#[serde(default, skip_serializing_if = \"Option::is_none\")]` to clear by removing the field), or keep the last value with `on_delete = \"keep\"`"
                        ))
                        .with_span(lit),
                    );
                    return None;
                }
                OnDelete::Clear { unset: skips }
            }
            other => {
                let hint = did_you_mean(other, ON_DELETE_WORDS)
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                errors.push(
                    Error::custom(format!("`{other}` is not an `on_delete` policy: {hint}{ON_DELETE_HELP}"))
                        .with_span(lit),
                );
                return None;
            }
        },
    };
    ok.then(|| CopyDef {
        field: name.to_owned(),
        field_ty: f.recv.ty.clone(),
        source,
        source_path: path.to_owned(),
        from_span: from.span(),
        via: via_name,
        via_span: via.span(),
        via_target,
        refresh,
        reason: opts.reason.map(|r| r.value()),
        on_delete,
        unset_null: f.serde.skip_serializing_if.is_some(),
    })
}

/// A refreshed copy is rewritten with an `update_many` on its `via` field: without an
/// index starting with it, every refresh scans the collection.
fn check_via_indexes(c: &Container, r: &Parsed, indexes: &[IndexDef], errors: &mut Accumulator) {
    for d in r.copies.iter().filter(|d| !matches!(d.refresh, Refresh::Never)) {
        let served =
            indexes.iter().any(|i| i.partial.is_none() && i.keys.first().is_some_and(|k| k.path == d.via));
        if !served {
            errors.push(
                Error::custom(rule(
                    "unindexed_via",
                    format!(
                        "refreshing `{}` updates every `{}` document whose `{}` is the source's `_id`; without an index starting with `{}` each refresh scans the collection: add `#[index(keys({}))]` (or put `{}` first in an existing index)",
                        d.field, c.ident, d.via, d.via, d.via, d.via
                    ),
                ))
                .with_span(&d.via_span),
            );
        }
    }
}

/// The copies an access row's path of another collection resolves to (`Order::total`
/// read through a copy of it), for the access rows' checks.
pub(crate) fn lookups(parsed: &Parsed) -> Vec<Lookup> {
    parsed
        .copies
        .iter()
        .map(|c| Lookup {
            source: quote::ToTokens::to_token_stream(&c.source).to_string().replace(' ', ""),
            source_last: c.source.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
            source_path: c.source_path.clone(),
            field: c.field.clone(),
        })
        .collect()
}

fn refresh_tokens(r: &Refresh) -> TokenStream {
    match r {
        Refresh::Never => quote!(__ds::Refresh::Never),
        Refresh::Sync => quote!(__ds::Refresh::Sync),
        Refresh::Async(secs) => quote!(__ds::Refresh::Async { max_stale: __ds::Duration::from_secs(#secs) }),
    }
}

fn on_delete_tokens(o: &OnDelete) -> TokenStream {
    match o {
        OnDelete::Keep => quote!(__ds::OnDelete::Keep),
        OnDelete::Clear { unset: true } => quote!(__ds::OnDelete::Clear(__ds::Cleared::Unset)),
        OnDelete::Clear { unset: false } => quote!(__ds::OnDelete::Clear(__ds::Cleared::Null)),
        OnDelete::Report => quote!(__ds::OnDelete::Report),
    }
}

fn opt_str(s: &Option<String>) -> TokenStream {
    match s {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

/// A copy's `CopySpec`, as a constant expression.
fn copy_spec(ident: &syn::Ident, d: &CopyDef, embedded: bool) -> TokenStream {
    let (field, via, path) = (&d.field, &d.via, &d.source_path);
    let source = &d.source;
    let source = respan(quote!(#source), d.from_span);
    let refresh = refresh_tokens(&d.refresh);
    let reason = opt_str(&d.reason);
    let on_delete = on_delete_tokens(&d.on_delete);
    let null = if d.unset_null { quote!(__ds::Cleared::Unset) } else { quote!(__ds::Cleared::Null) };
    // An embedded type's copy has no collection of its own: the models holding it
    // register it under theirs.
    let collection = if embedded { quote!("") } else { quote!(<#ident as __ds::Model>::COLLECTION) };
    quote! {
        __ds::CopySpec {
            collection: #collection, field: #field, via: #via,
            source: <#source as __ds::Model>::COLLECTION, source_field: #path,
            source_tenant: <#source as __ds::Model>::TENANT,
            refresh: #refresh, reason: #reason, on_delete: #on_delete, null: #null,
            arrays: &[], variant: ::core::option::Option::None,
        }
    }
}

/// The rows of `Model::RELATIONS` for copies.
fn rows(copies: &[CopyDef]) -> Vec<TokenStream> {
    let mut rows = Vec::new();
    for d in copies {
        let (field, via, path) = (&d.field, &d.via, &d.source_path);
        let target =
            format!("{}::{path}", quote::ToTokens::to_token_stream(&d.source).to_string().replace(' ', ""));
        let refresh = refresh_tokens(&d.refresh);
        let reason = opt_str(&d.reason);
        rows.push(quote! {
            __ds::Relation {
                field: #field, kind: __ds::RelationKind::Copy, target: #target, many: false,
                bound: ::core::option::Option::None, refresh: ::core::option::Option::Some(#refresh),
                via: ::core::option::Option::Some(#via), reason: #reason,
                split: ::core::option::Option::None,
            }
        });
    }
    rows
}

/// The type-level checks of each copy, and one registry entry per copy, so the
/// source's update API finds every copy that follows it.
fn items(c: &Container, copies: &[CopyDef], embedded: bool) -> TokenStream {
    let ident = &c.ident;
    let mut out = TokenStream::new();
    if !c.generics.params.is_empty() {
        return out;
    }
    for d in copies {
        let source = {
            let s = &d.source;
            respan(quote!(#s), d.from_span)
        };
        // The copied field, segment by segment; its declared type must be the copy's.
        let segments: Vec<&str> = d.source_path.split('.').collect();
        let paths::Walk { items: lookups, steps, .. } =
            paths::walk(source.clone(), &segments, 1, d.from_span);
        let stored = steps.last().map(|s| quote!(#s::Stored)).unwrap_or_default();
        let copy_ty = &d.field_ty;
        // Under the copy's own type, with the note under `from`.
        let same = bound_check(
            "assert_copy_type",
            quote!(#copy_ty),
            quote!(__ds::CopyType),
            Some(stored),
            d.from_span,
        );
        let via = d.via_target.as_ref().map(|t| {
            let t = respan(quote!(#t), d.via_span);
            bound_check("assert_via", t, quote!(__ds::ViaSource), Some(source.clone()), d.via_span)
        });
        let model_check = bound_check("assert_model", source.clone(), quote!(__ds::Model), None, d.from_span);
        out.extend(quote!(const _: () = { #lookups #model_check #same #via };));
        // Registered, so the source's update API finds every copy that follows it; an
        // embedded type's, through the models that hold it.
        if !embedded {
            let spec = copy_spec(ident, d, false);
            out.extend(quote!(__ds::inventory::submit! { #spec }));
        }
    }
    out
}
