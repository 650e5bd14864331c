//! Relations between models: `#[embed]` (a sub-document or a bounded array of them),
//! references (`Ref<T>` or `#[reference(T)]`), and denormalized copies
//! (`#[denormalized(from = "User::name", via = "author_id", refresh = ...)]`).
//!
//! The rules: every array of sub-documents or references has a bound
//! (`unbounded_array`); a copy states its refresh policy, copies a field that exists
//! with its exact type, through a reference to the source model; an access pattern
//! that needs another collection's field is served by a copy or waived (`lookup`).
//! The expansion lists the relations (`Model::RELATIONS`, the design-decision table),
//! the copies (`Model::COPIES`, and one registry entry each, so the source's update
//! API finds them), and `Identified` (the type of `_id`, for `Ref<T>`).

use darling::error::Accumulator;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, GenericArgument, LitStr, Meta, PathArguments, Token, Type};

use crate::access::Access;
use crate::ast::{Body, Container, Field};
use crate::attr::keys::Allow;
use crate::check::{did_you_mean, rule};
use crate::paths;
use crate::validator::respan;

/// `#[embed]` / `#[embed(max = N, reason = "...", allow(unbounded_array, reason = "..."))]`.
#[derive(FromMeta, Default)]
struct EmbedOpts {
    max: Option<darling::util::SpannedValue<u64>>,
    reason: Option<LitStr>,
    allow: Option<Allow>,
}

/// `#[denormalized(...)]`.
#[derive(FromMeta)]
struct CopyOpts {
    from: Option<LitStr>,
    via: Option<LitStr>,
    refresh: Option<LitStr>,
    max_stale: Option<LitStr>,
    reason: Option<LitStr>,
}

pub(crate) enum Refresh {
    Never,
    Sync,
    Async(u64),
}

/// A denormalized copy, checked as far as the spelling allows.
pub(crate) struct CopyDef {
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

pub(crate) struct Relations {
    relations: Vec<RelationDef>,
    pub copies: Vec<CopyDef>,
    /// `#[embed(max = N)]` bounds, for the validator.
    bounds: Vec<crate::bucket::Bound>,
    /// Fields whose `#[embed]` waives `unbounded_array`.
    waived: Vec<String>,
}

fn attrs<'a>(f: &'a Field, name: &'a str) -> impl Iterator<Item = &'a Attribute> + 'a {
    f.recv.attrs.iter().filter(move |a| a.path().is_ident(name))
}

/// `Ref<T>` (the last segment `Ref` with one type argument): `T`.
fn ref_target(ty: &Type) -> Option<Type> {
    let (element, _) = paths::element(ty);
    match element? {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if last.ident != "Ref" {
                return None;
            }
            match &last.arguments {
                PathArguments::AngleBracketed(args) if args.args.len() == 1 => match &args.args[0] {
                    GenericArgument::Type(t) => Some(t.clone()),
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// `#[reference(User, max = 50, reason = "...")]`: the model, the bound of an array of
/// references, the reason.
struct ReferenceOpts {
    target: Option<syn::Path>,
    max: Option<(u64, Span)>,
    reason: Option<String>,
}

fn parse_reference(attr: &Attribute, errors: &mut Accumulator) -> ReferenceOpts {
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

/// Reads `#[embed]`, `#[reference]` and `#[denormalized]` on the struct's fields.
pub(crate) fn parse(c: &Container, model: bool, errors: &mut Accumulator) -> Relations {
    let mut out =
        Relations { relations: Vec::new(), copies: Vec::new(), bounds: Vec::new(), waived: Vec::new() };
    match &c.body {
        Body::Struct(_, fields) => {
            for f in fields {
                field(c, f, model, &mut out, errors);
            }
        }
        Body::Enum(variants) => {
            for f in variants.iter().flat_map(|v| &v.fields) {
                for name in ["embed", "reference", "denormalized"] {
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

fn field(c: &Container, f: &Field, model: bool, out: &mut Relations, errors: &mut Accumulator) {
    let Some(name) = f.name.clone() else { return };
    let (element, many) = paths::element(&f.recv.ty);
    let referenced = ref_target(&f.recv.ty);
    let mut reference_reason = None;
    let mut declared_target = None;
    let mut reference_attr = None;
    for attr in attrs(f, "reference") {
        if reference_attr.replace(attr.path().span()).is_some() {
            errors.push(Error::custom("one `#[reference]` per field").with_span(attr.path()));
            continue;
        }
        let opts = parse_reference(attr, errors);
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
                out.bounds.push(crate::bucket::Bound {
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
                out.bounds.push(crate::bucket::Bound {
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
    if let Some(target) = referenced.clone().or_else(|| declared_target.clone().map(path_type)) {
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
    for attr in attrs(f, "denormalized") {
        if !model {
            errors.push(Error::custom("`#[denormalized]` goes on a Model's fields").with_span(attr.path()));
            continue;
        }
        if let Some(def) = copy(c, f, &name, attr, errors) {
            if out.copies.iter().any(|d| d.field == def.field) {
                errors.push(Error::custom("one `#[denormalized]` per field").with_span(attr.path()));
                continue;
            }
            out.copies.push(def);
        }
    }
}

fn path_type(path: syn::Path) -> Type {
    Type::Path(syn::TypePath { qself: None, path })
}

const REFRESH_HELP: &str = "`refresh = \"never\"` (a snapshot taken at write time, right for history), `refresh = \"sync\"` (updated in the same call as the source) or `refresh = \"async\", max_stale = \"5m\"` (a worker refreshes it; say how stale it may be)";

fn copy(c: &Container, f: &Field, name: &str, attr: &Attribute, errors: &mut Accumulator) -> Option<CopyDef> {
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
            ("async", Some(stale)) => match crate::index::parse_duration(stale) {
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
                Error::custom(format!("no stored field `{via_name}` in `{}`{hint}", c.ident)).with_span(via),
            );
            return None;
        }
        Some(g) => {
            // Its own problems are reported where the field is read; here only the
            // model it names matters.
            let declared = attrs(g, "reference").find_map(|a| {
                let mut quiet = Error::accumulator();
                let target = parse_reference(a, &mut quiet).target;
                let _ = quiet.finish();
                target.map(path_type)
            });
            match ref_target(&g.recv.ty).or(declared) {
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
    })
}

/// A refreshed copy is rewritten with an `update_many` on its `via` field: without an
/// index starting with it, every refresh scans the collection.
pub(crate) fn check_via_indexes(
    c: &Container,
    r: &Relations,
    indexes: &[crate::index::IndexDef],
    errors: &mut Accumulator,
) {
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

/// `#[embed(max = N)]` bounds, applied to the validator like `max_items`.
pub(crate) fn bounds(r: &Relations) -> Vec<crate::bucket::Bound> {
    r.bounds
        .iter()
        .map(|b| crate::bucket::Bound {
            field: b.field.clone(),
            span: b.span,
            max_items: b.max_items,
            minimum: None,
            maximum: None,
        })
        .collect()
}

/// The `unbounded_array` rule, after every bound is known (`max_items`, `#[embed(max)]`,
/// buckets, outliers). An array of references is refused here; an array of any other
/// type that is not plainly a scalar is refused at compile time by a constant that
/// asks the element type whether it is stored as a sub-document.
pub(crate) fn unbounded_arrays(c: &Container, r: &Relations, errors: &mut Accumulator) -> TokenStream {
    let fields: Vec<&Field> = match &c.body {
        Body::Struct(_, fields) => fields.iter().collect(),
        Body::Enum(variants) => variants.iter().flat_map(|v| &v.fields).collect(),
    };
    let mut out = TokenStream::new();
    for f in fields {
        if f.serde.skip || f.recv.max_items.is_some() || f.serde.with.is_some() {
            continue;
        }
        let name = f.name.clone().unwrap_or_else(|| "this field".to_owned());
        if r.waived.contains(&name) {
            continue;
        }
        let (element, many) = paths::element(&f.recv.ty);
        let (Some(element), true) = (element, many) else { continue };
        let fixes = "bound it with `#[embed(max = N)]` when it is read with its parent and stays small; or store the children in their own collection, each with a `Ref` to this document (the \"reference from the child side\"), and read them with an indexed query; or make it a `#[bucket]` series, or an `#[outlier]` array for the rare huge one; waive with `#[embed(allow(unbounded_array, reason = \"...\"))]`";
        if ref_target(&f.recv.ty).is_some() || attrs(f, "reference").next().is_some() {
            errors.push(
                Error::custom(rule(
                    "unbounded_array",
                    format!("`{name}` is an array of references with no bound: it grows with the data until the document passes MongoDB's 16 MB limit (the \"array sin límite\" anti-pattern); bound it with `#[reference(max = N)]` when the list stays small, or turn it around: store the reference on the other side (each referenced document holds a `Ref` to this one) and query it through an index"),
                ))
                .with_span(&f.span),
            );
            continue;
        }
        if plain_scalar(&element) || c.generics.type_params().next().is_some() {
            continue;
        }
        let message = rule(
            "unbounded_array",
            format!("`{name}` is an array of sub-documents with no bound: it grows with the data until the document passes MongoDB's 16 MB limit (the \"array sin límite\" anti-pattern); {fixes}"),
        );
        let span = f.recv.ty.span();
        let elem = respan(quote!(#element), span);
        out.extend(quote_spanned! {span=>
            const _: () = ::core::assert!(!<#elem as __ds::Schema>::DOCUMENT, #message);
        });
    }
    out
}

/// Types whose spelling says they are not sub-documents.
fn plain_scalar(ty: &Type) -> bool {
    let Type::Path(p) = ty else { return false };
    let Some(last) = p.path.segments.last() else { return false };
    matches!(
        last.ident.to_string().as_str(),
        "String"
            | "str"
            | "char"
            | "bool"
            | "i8"
            | "i16"
            | "i32"
            | "i64"
            | "isize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "usize"
            | "f32"
            | "f64"
            | "ObjectId"
            | "DateTime"
            | "Decimal128"
            | "Uuid"
            | "Binary"
            | "Timestamp"
            | "Regex"
            | "Bson"
            | "Value"
    )
}

/// The `lookup` rule: an access pattern path written `Model::field` needs another
/// collection's field. A copy of that field serves it (the path becomes the copy's);
/// otherwise it is an error, unless the pattern waives `lookup`, in which case the
/// path is the application's join: listed in the table, not checked against this
/// model's fields and indexes.
pub(crate) fn resolve_lookups(r: &Relations, patterns: &mut [Access], errors: &mut Accumulator) {
    for a in patterns.iter_mut() {
        let waived = a.allow.waives("lookup");
        let name = a.name.clone();
        let mut foreign = Vec::new();
        // `Some(local path)` to keep, `None` to take the path out of the checks.
        let mut fix = |path: &str, span: Span| -> Option<String> {
            let Some((ty, field)) = path.rsplit_once("::") else { return Some(path.to_owned()) };
            let ty = ty.replace(' ', "");
            let copy = r.copies.iter().find(|c| {
                let last = c.source.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                let full = quote::ToTokens::to_token_stream(&c.source).to_string().replace(' ', "");
                c.source_path == field && (ty == full || ty == last)
            });
            if let Some(c) = copy {
                return Some(c.field.clone());
            }
            if !waived {
                errors.push(
                    Error::custom(rule(
                        "lookup",
                        format!(
                            "access pattern `{name}` needs `{path}`, a field of another collection: every read would need a `$lookup` (a join), which runs on unsharded, local paths and gets slow fast. Copy it into this model (`#[denormalized(from = \"{path}\", via = \"<its Ref field>\", refresh = \"async\", max_stale = \"5m\")]` on a field of the same type) or embed it, or waive with `allow(lookup, reason = \"...\")`"
                        ),
                    ))
                    .with_span(&span),
                );
            }
            foreign.push(path.to_owned());
            None
        };
        for list in [&mut a.filter, &mut a.range, &mut a.fields] {
            *list = list.drain(..).filter_map(|(p, s)| fix(&p, s).map(|p| (p, s))).collect();
        }
        a.sort = a
            .sort
            .drain(..)
            .filter_map(|mut k| {
                k.path = fix(&k.path, k.span)?;
                Some(k)
            })
            .collect();
        a.foreign = foreign;
    }
}

fn refresh_tokens(r: &Refresh) -> TokenStream {
    match r {
        Refresh::Never => quote!(__ds::Refresh::Never),
        Refresh::Sync => quote!(__ds::Refresh::Sync),
        Refresh::Async(secs) => quote!(__ds::Refresh::Async { max_stale: __ds::Duration::from_secs(#secs) }),
    }
}

fn opt_str(s: &Option<String>) -> TokenStream {
    match s {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

/// A copy's `CopySpec`, as a constant expression.
fn copy_spec(ident: &syn::Ident, d: &CopyDef) -> TokenStream {
    let (field, via, path) = (&d.field, &d.via, &d.source_path);
    let source = &d.source;
    let source = respan(quote!(#source), d.from_span);
    let refresh = refresh_tokens(&d.refresh);
    let reason = opt_str(&d.reason);
    quote! {
        __ds::CopySpec {
            collection: <#ident as __ds::Model>::COLLECTION, field: #field, via: #via,
            source: <#source as __ds::Model>::COLLECTION, source_field: #path,
            refresh: #refresh, reason: #reason,
        }
    }
}

/// The model's `RELATIONS` and `COPIES` constants.
pub(crate) fn consts(c: &Container, r: &Relations) -> TokenStream {
    if r.relations.is_empty() && r.copies.is_empty() {
        return TokenStream::new();
    }
    let ident = &c.ident;
    let bound_of = |name: &str| -> TokenStream {
        let field = paths::stored_fields(c).into_iter().find(|f| f.name.as_deref() == Some(name));
        match field.and_then(|f| f.recv.max_items.as_ref()).map(|m| **m) {
            Some(m) => quote!(::core::option::Option::Some(#m)),
            None => quote!(::core::option::Option::None),
        }
    };
    let mut rows: Vec<TokenStream> = r
        .relations
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
                }
            }
        })
        .collect();
    let copies: Vec<TokenStream> = r.copies.iter().map(|d| copy_spec(ident, d)).collect();
    for d in &r.copies {
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
            }
        });
    }
    quote! {
        const RELATIONS: &'static [__ds::Relation] = &[#(#rows),*];
        const COPIES: &'static [__ds::CopySpec] = &[#(#copies),*];
    }
}

/// `Identified` (the `_id` type), the type-level checks of references and copies, and
/// one registry entry per copy.
pub(crate) fn items(c: &Container, r: &Relations, model: bool) -> TokenStream {
    let ident = &c.ident;
    let generic = !c.generics.params.is_empty();
    let mut out = TokenStream::new();
    if model && !generic {
        let id = paths::stored_fields(c)
            .into_iter()
            .find(|f| f.name.as_deref() == Some("_id") && f.serde.flatten.is_none())
            .map(|f| {
                let ty = &f.recv.ty;
                match crate::check::is_option(ty) {
                    true => {
                        let (inner, _) = option_inner(ty);
                        quote!(#inner)
                    }
                    false => quote!(#ty),
                }
            })
            .unwrap_or_else(|| quote!(__ds::ObjectId));
        out.extend(quote! {
            #[automatically_derived]
            impl __ds::Identified for #ident {
                type Id = #id;
            }
        });
    }
    if generic {
        return out;
    }
    for rel in &r.relations {
        if let (Some((element, span)), Some(target)) = (&rel.id_check, &rel.target) {
            let check = respan(
                quote!(__ds::assert_reference_id::<#element, <#target as __ds::Identified>::Id>();),
                *span,
            );
            out.extend(quote! { const _: () = { #check }; });
        }
    }
    for d in &r.copies {
        let source = {
            let s = &d.source;
            respan(quote!(#s), d.from_span)
        };
        // The copied field, segment by segment; its declared type must be the copy's.
        let mut ty = source.clone();
        let segments: Vec<&str> = d.source_path.split('.').collect();
        let mut stored = TokenStream::new();
        for (i, segment) in segments.iter().enumerate() {
            let name = paths::name_type(segment, d.from_span);
            let has = respan(quote!(__ds::HasField<#name>), d.from_span);
            if i + 1 == segments.len() {
                stored = quote!(<#ty as #has>::Stored);
            }
            ty = quote!(<#ty as #has>::Value);
        }
        let copy_ty = &d.field_ty;
        let same = respan(quote!(__ds::assert_copy_type::<#copy_ty, #stored>();), d.from_span);
        let via = d.via_target.as_ref().map(|t| {
            let t = respan(quote!(#t), d.via_span);
            respan(quote!(__ds::assert_via::<#t, #source>();), d.via_span)
        });
        let model_check = respan(quote!(__ds::assert_model::<#source>();), d.from_span);
        // Registered, so the source's update API finds every copy that follows it.
        let spec = copy_spec(ident, d);
        out.extend(quote! {
            const _: () = { #model_check #same #via };
            __ds::inventory::submit! { #spec }
        });
    }
    out
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
