//! Schema versioning: `#[model(version = N, migrate(...))]` and `#[schema_version]`.
//!
//! Parse the steps, check that every version from the oldest readable one up to the
//! current one has a step and that the steps chain, and expand into `impl Versioned`
//! (the upgrade chain) plus the validator that admits every declared version.

use darling::ast::NestedMeta;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, LitInt, Type};

use crate::ast::{Body, Container, Field};
use crate::check::{classify, Kind};

/// How one older version is upgraded.
#[derive(Clone)]
pub(crate) enum StepKind {
    /// `vN = OldType`: the old shape as a type, `From` it into the next version's type.
    Typed(Type),
    /// `vN(document = path::to::fn)`: `fn(Document) -> Result<Document, E>`.
    Document(syn::Path),
}

#[derive(Clone)]
pub(crate) struct Step {
    pub version: i64,
    pub span: Span,
    pub kind: StepKind,
}

/// `migrate(v1 = UserV1, v2(document = upgrade_v2))`.
#[derive(Clone, Default)]
pub(crate) struct Migrate {
    pub steps: Vec<Step>,
    pub span: Option<Span>,
}

fn version_of(ident: &Ident) -> Option<i64> {
    let text = ident.to_string();
    let digits = text.strip_prefix('v')?;
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

impl FromMeta for Migrate {
    fn from_meta(item: &syn::Meta) -> darling::Result<Self> {
        let syn::Meta::List(list) = item else {
            return Err(Error::custom("write `migrate(v1 = UserV1, ...)`: one step per older version")
                .with_span(item));
        };
        let items = NestedMeta::parse_meta_list(list.tokens.clone())?;
        let mut migrate = Self::from_list(&items)?;
        migrate.span = Some(item.span());
        Ok(migrate)
    }

    fn from_list(items: &[NestedMeta]) -> darling::Result<Self> {
        let mut errors = Error::accumulator();
        let mut steps: Vec<Step> = Vec::new();
        for item in items {
            let NestedMeta::Meta(meta) = item else {
                errors.push(
                    Error::custom("expected `vN = OldType` or `vN(document = upgrade_fn)`").with_span(item),
                );
                continue;
            };
            let path = meta.path();
            let Some(version) = path.get_ident().and_then(version_of) else {
                errors.push(
                    Error::custom(
                        "a step is named after the version it upgrades: `v1 = UserV1` or `v1(document = upgrade_v1)`",
                    )
                    .with_span(path),
                );
                continue;
            };
            let kind = match meta {
                syn::Meta::NameValue(nv) => match &nv.value {
                    syn::Expr::Path(p) if p.qself.is_none() => {
                        StepKind::Typed(Type::Path(syn::TypePath { qself: None, path: p.path.clone() }))
                    }
                    other => {
                        errors.push(
                            Error::custom(format!(
                                "`v{version} = ...` takes the type of the version-{version} shape, e.g. `v{version} = UserV{version}`"
                            ))
                            .with_span(other),
                        );
                        continue;
                    }
                },
                syn::Meta::List(list) => {
                    let mut function = None;
                    let parsed = list.parse_nested_meta(|m| {
                        if m.path.is_ident("document") {
                            function = Some(m.value()?.parse::<syn::Path>()?);
                            Ok(())
                        } else {
                            Err(m.error("expected `document = upgrade_fn`"))
                        }
                    });
                    match (parsed, function) {
                        (Err(e), _) => {
                            errors.push(e.into());
                            continue;
                        }
                        // Called as `path(doc)`: generic arguments there would not parse.
                        (Ok(()), Some(f))
                            if f.segments
                                .iter()
                                .any(|seg| !matches!(seg.arguments, syn::PathArguments::None)) =>
                        {
                            errors.push(
                                Error::custom(format!(
                                    "`document = ...` names a function `fn(Document) -> Result<Document, E>`, such as `upgrade_v{version}`; wrap a generic one in a plain function"
                                ))
                                .with_span(&f),
                            );
                            continue;
                        }
                        (Ok(()), Some(f)) => StepKind::Document(f),
                        (Ok(()), None) => {
                            errors.push(
                                Error::custom(format!(
                                    "name the function: `v{version}(document = upgrade_v{version})`"
                                ))
                                .with_span(list),
                            );
                            continue;
                        }
                    }
                }
                syn::Meta::Path(p) => {
                    errors.push(
                        Error::custom(format!(
                            "`v{version}` needs its step: `v{version} = UserV{version}` or `v{version}(document = upgrade_v{version})`"
                        ))
                        .with_span(p),
                    );
                    continue;
                }
            };
            if steps.iter().any(|s| s.version == version) {
                errors.push(
                    Error::custom(format!("version {version} has two steps; keep one")).with_span(path),
                );
                continue;
            }
            steps.push(Step { version, span: path.span(), kind });
        }
        steps.sort_by_key(|s| s.version);
        errors.finish_with(Self { steps, span: None })
    }
}

/// A checked versioning declaration.
pub(crate) struct Versioning {
    pub current: i64,
    pub field_ident: Ident,
    pub field_name: String,
    pub missing: i64,
    pub steps: Vec<Step>,
}

/// `#[schema_version]` or `#[schema_version(missing = N)]` on a field.
fn schema_version_attr(f: &Field, errors: &mut darling::error::Accumulator) -> Option<(Span, Option<i64>)> {
    let mut found = None;
    for attr in f.recv.attrs.iter().filter(|a| a.path().is_ident("schema_version")) {
        if found.is_some() {
            errors.push(Error::custom("`#[schema_version]` is given twice on this field").with_span(attr));
            continue;
        }
        let mut missing = None;
        if let syn::Meta::List(list) = &attr.meta {
            let parsed = list.parse_nested_meta(|m| {
                if m.path.is_ident("missing") {
                    let lit: LitInt = m.value()?.parse()?;
                    missing = Some(lit.base10_parse::<i64>()?);
                    Ok(())
                } else {
                    Err(m.error("`#[schema_version]` takes only `missing = N`: the version of documents without the field"))
                }
            });
            if let Err(e) = parsed {
                errors.push(e.into());
            }
        } else if let syn::Meta::NameValue(nv) = &attr.meta {
            errors.push(
                Error::custom("write `#[schema_version]` or `#[schema_version(missing = N)]`")
                    .with_span(&nv.value),
            );
        }
        found = Some((attr.path().span(), missing));
    }
    found
}

/// Reads and checks the declaration; `None` when the model is not versioned (or it is
/// malformed, with the errors pushed).
pub(crate) fn parse(
    c: &Container,
    version: Option<&LitInt>,
    migrate: Option<&Migrate>,
    errors: &mut darling::error::Accumulator,
) -> Option<Versioning> {
    let Body::Struct(_, fields) = &c.body else { return None };
    let mut marked: Vec<(&Field, Span, Option<i64>)> = Vec::new();
    for f in fields {
        if let Some((span, missing)) = schema_version_attr(f, errors) {
            marked.push((f, span, missing));
        }
    }
    if marked.len() > 1 {
        for (_, span, _) in &marked[1..] {
            errors.push(
                Error::custom("only one field holds the schema version; `#[schema_version]` is already on another field")
                    .with_span(span),
            );
        }
    }
    let current = match version {
        Some(lit) => match lit.base10_parse::<i64>() {
            Ok(v) if v >= 1 => Some((v, lit.span())),
            Ok(_) => {
                errors.push(Error::custom("versions start at 1").with_span(lit));
                return None;
            }
            Err(e) => {
                errors.push(Error::custom(format!("`version` is an integer: {e}")).with_span(lit));
                return None;
            }
        },
        None => None,
    };
    let (field, attr_span, missing) = match (marked.first(), current) {
        (None, None) => {
            if let Some(span) = migrate.and_then(|m| m.span) {
                errors.push(
                    Error::custom(
                        "`migrate` upgrades older versions to `version = N`: declare the current version",
                    )
                    .with_span(&span),
                );
            }
            return None;
        }
        (Some((_, span, _)), None) => {
            errors.push(
                Error::custom(
                    "a `#[schema_version]` field needs the current version on the model: `#[model(version = N)]`",
                )
                .with_span(span),
            );
            return None;
        }
        (None, Some((_, span))) => {
            errors.push(
                Error::custom(
                    "`version = N` needs the field that stores it: mark an integer field `#[schema_version]` (`schema_version: i32`)",
                )
                .with_span(&span),
            );
            return None;
        }
        (Some(&(f, span, missing)), Some(_)) => (f, span, missing),
    };
    let (current, current_span) = current?;
    let ty = &field.recv.ty;
    let is_option =
        matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Option"));
    let missing = missing.unwrap_or(1);
    match classify(ty) {
        Kind::Int { min, max, .. } if !is_option => {
            for (what, v) in
                [("the current version", current), ("the version of documents without the field", missing)]
            {
                if i128::from(v) < min || i128::from(v) > max {
                    errors.push(
                        Error::custom(format!(
                            "{what}, {v}, does not fit in `{}`: use a wider integer type",
                            quote!(#ty).to_string().replace(' ', "")
                        ))
                        .with_span(ty),
                    );
                    return None;
                }
            }
        }
        _ => {
            errors.push(
                Error::custom(format!(
                    "the schema version is an integer that every document carries: make `{}` an integer type such as `i32`, not `{}`",
                    field.recv.ident.as_ref().map(ToString::to_string).unwrap_or_default(),
                    quote!(#ty).to_string().replace(' ', "")
                ))
                .with_span(ty),
            );
            return None;
        }
    }
    if field.serde.skip || field.serde.skip_serializing_if.is_some() {
        errors.push(
            Error::custom("the schema version must be written with every document; remove the serde skip")
                .with_span(&attr_span),
        );
    }
    if missing < 1 {
        errors.push(Error::custom("versions start at 1").with_span(&attr_span));
        return None;
    }
    if missing > current {
        errors.push(
            Error::custom(format!(
                "documents without the field cannot be version {missing}, newer than the current {current}"
            ))
            .with_span(&attr_span),
        );
    }
    let steps = migrate.map(|m| m.steps.clone()).unwrap_or_default();
    let mut ok = true;
    for s in steps.iter().filter(|s| s.version >= current) {
        ok = false;
        errors.push(
            Error::custom(format!(
                "version {current} is the current one; steps upgrade older versions, so `v{}` has nothing to do",
                s.version
            ))
            .with_span(&s.span),
        );
    }
    // Every version from the oldest readable one to the current one needs a step, or
    // documents stored at it could not be read.
    let oldest = steps.first().map_or(missing, |s| s.version.min(missing));
    // Versions without a step, as ranges: one error, however far apart the numbers.
    let mut gaps: Vec<(i64, i64)> = Vec::new();
    let mut next = oldest;
    for s in steps.iter().filter(|s| s.version < current).chain(std::iter::once(&Step {
        version: current,
        span: current_span,
        kind: StepKind::Document(syn::parse_quote!(current)),
    })) {
        if s.version > next {
            gaps.push((next, s.version - 1));
        }
        next = next.max(s.version + 1);
    }
    if let Some(&(first, _)) = gaps.first() {
        ok = false;
        let listed: Vec<String> =
            gaps.iter().map(|(a, b)| if a == b { format!("{a}") } else { format!("{a} to {b}") }).collect();
        let why = if first == missing {
            format!(
                " (documents without `{}` are version {first})",
                field.name.as_deref().unwrap_or("the field")
            )
        } else {
            String::new()
        };
        let span = migrate.and_then(|m| m.span).unwrap_or(current_span);
        errors.push(
            Error::custom(format!(
                "{} {}{why} {} no path to version {current}: add `v{first} = UserV{first}` (its shape, with `From` into the next) or `v{first}(document = upgrade_v{first})` to `migrate(...)`, one step per version{}",
                if gaps.len() == 1 && gaps[0].0 == gaps[0].1 { "version" } else { "versions" },
                listed.join(", "),
                if gaps.len() == 1 && gaps[0].0 == gaps[0].1 { "has" } else { "have" },
                if first == missing { ", or say `#[schema_version(missing = N)]` if documents without the field are another version" } else { "" }
            ))
            .with_span(&span),
        );
    }
    // A typed step hands a value to the next step; a document step takes a document.
    for pair in steps.windows(2) {
        if let (StepKind::Typed(ty), StepKind::Document(_)) = (&pair[0].kind, &pair[1].kind) {
            ok = false;
            errors.push(
                Error::custom(format!(
                    "steps do not chain: `v{}` is typed (`{}`), so it upgrades into the version-{} type, but `v{}` is a document step; make `v{}` typed too, or `v{}` a document step",
                    pair[0].version,
                    quote!(#ty).to_string().replace(' ', ""),
                    pair[1].version,
                    pair[1].version,
                    pair[1].version,
                    pair[0].version
                ))
                .with_span(&pair[1].span),
            );
        }
    }
    ok.then(|| Versioning {
        current,
        field_ident: field
            .recv
            .ident
            .clone()
            .unwrap_or_else(|| Ident::new("schema_version", Span::call_site())),
        field_name: field.name.clone().unwrap_or_default(),
        missing,
        steps,
    })
}

/// `impl Versioned` and the `validator()` override for the `Model` impl.
pub(crate) fn expand(c: &Container, v: &Versioning) -> (TokenStream, TokenStream) {
    let ident = &c.ident;
    let current = v.current;
    // Unsuffixed, so it fits whatever integer type the field has.
    let current_lit = proc_macro2::Literal::i64_unsuffixed(current);
    let field = &v.field_name;
    let field_ident = &v.field_ident;
    let missing = v.missing;
    let old: Vec<i64> = v.steps.iter().map(|s| s.version).collect();
    let arms = v.steps.iter().enumerate().map(|(i, step)| {
        let version = step.version;
        match &step.kind {
            StepKind::Document(function) => {
                let next = version + 1;
                quote_spanned! {step.span=>
                    #version => {
                        __doc = #function(__doc).map_err(__ds::StepFailure::step(#version))?;
                        __version = #next;
                    }
                }
            }
            StepKind::Typed(ty) => {
                // T_k -> T_k+1 -> ... -> Self; every later step is typed (checked).
                let mut value = quote!(__old);
                let mut from = ty.clone();
                for later in &v.steps[i + 1..] {
                    let StepKind::Typed(next) = &later.kind else { break };
                    value = quote_spanned!(next.span()=> <#next as ::core::convert::From<#from>>::from(#value));
                    from = next.clone();
                }
                let value = quote_spanned!(from.span()=> <Self as ::core::convert::From<#from>>::from(#value));
                quote_spanned! {step.span=>
                    #version => {
                        let __old: #ty = __ds::bson_from_document(__doc).map_err(__ds::StepFailure::decode(#version))?;
                        let mut __new: Self = #value;
                        __new.#field_ident = #current_lit;
                        return ::core::result::Result::Ok(__new);
                    }
                }
            }
        }
    });
    let versioned = quote! {
        #[automatically_derived]
        impl __ds::Versioned for #ident {
            const VERSION: i64 = #current;
            const VERSION_FIELD: &'static str = #field;
            const MISSING_VERSION: i64 = #missing;
            const OLD_VERSIONS: &'static [i64] = &[#(#old),*];

            #[allow(unreachable_code, unused_mut, unused_variables)]
            fn upgrade(
                version: i64,
                document: __ds::Document,
            ) -> ::core::result::Result<Self, __ds::StepFailure> {
                let mut __doc = document;
                let mut __version = version;
                loop {
                    match __version {
                        #(#arms)*
                        #current => {
                            __doc.insert(#field, #current as i64);
                            return __ds::bson_from_document(__doc).map_err(__ds::StepFailure::decode(#current));
                        }
                        other => return ::core::result::Result::Err(__ds::StepFailure::NoPath { version: other }),
                    }
                }
            }

            fn stamp(&mut self) {
                self.#field_ident = #current_lit;
            }

            fn read_counter() -> &'static __ds::ReadCounter {
                static COUNTER: __ds::ReadCounter = __ds::ReadCounter::new();
                &COUNTER
            }
        }
    };
    let branches = v.steps.iter().map(|step| {
        let version = step.version;
        match &step.kind {
            StepKind::Typed(ty) => quote_spanned!(ty.span()=>
                (#version, ::core::option::Option::Some(<#ty as __ds::Schema>::schema()))
            ),
            StepKind::Document(_) => quote!((#version, ::core::option::Option::None)),
        }
    });
    let validator = quote! {
        const DECODE_STORED: ::core::option::Option<
            fn(__ds::Document) -> ::core::result::Result<Self, __ds::VersionError>,
        > = ::core::option::Option::Some(__ds::versioned_decode::<Self>);

        fn validator() -> __ds::Document {
            __ds::versioned_validator(
                <Self as __ds::Schema>::schema(),
                #field,
                #current,
                #missing,
                <__ds::Vec<_>>::from([#(#branches),*]),
            )
        }
    };
    (versioned, validator)
}
