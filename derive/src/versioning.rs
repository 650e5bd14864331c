//! Schema versioning: `#[model(version = N, migrate(...))]` and `#[schema_version]`.
//!
//! Parse the steps, check that every version from the oldest readable one up to the
//! current one has a step and that the steps chain, and expand into `impl Versioned`
//! (the upgrade chain) plus the validator that admits every declared version. A
//! polymorphic model is versioned as a whole: every variant stores the one version
//! field, the steps work on the tagged document, and each variant's validator branch
//! is pinned to the version.

use darling::error::Accumulator;
use darling::Error;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, LitInt, Type};

use crate::ast::{Body, Container, Field};
use crate::attr::migrate::{Migrate, Step, StepKind};
use crate::common::expansion::Expansion;
use crate::common::fields::Kept;
use crate::common::old_field;
use crate::common::types::{classify, Kind};
use crate::facts::Facts;
use crate::polymorphic::{Polymorphic, VariantModel};

/// A checked versioning declaration; `None` when the model is not versioned (or the
/// declaration is malformed, with its errors pushed).
pub(crate) struct Parsed(Option<Versioning>, Vec<KeptField>);

/// A field a bucket or outlier writer maintains (see [`Kept`]), as the expansion needs it.
struct KeptField {
    ident: Ident,
    name: String,
    ty: Type,
    what: &'static str,
    /// Whether the stored value decodes with the field's own type (no serde `with`).
    restore: bool,
}

/// Reads `version`, `migrate(...)` and `#[schema_version]`, and checks that the steps
/// chain from the oldest readable version to the current one.
pub(crate) fn parse(cx: &Facts, errors: &mut Accumulator) -> Parsed {
    let Some(m) = &cx.model else { return Parsed(None, Vec::new()) };
    let declared = match &cx.polymorphic {
        Some(p) => polymorphic_declaration(p, m.version.as_ref(), m.migrate.as_ref(), errors),
        None => declaration(&cx.container, m.version.as_ref(), m.migrate.as_ref(), errors),
    };
    Parsed(declared, Vec::new())
}

/// What versioning cannot be combined with, and what it must keep: `kept` are the
/// fields bucket and outlier writers maintain on the model's documents.
pub(crate) fn check(parsed: &mut Parsed, cx: &Facts, kept: &[Kept], errors: &mut Accumulator) {
    let c = &cx.container;
    if let (Some(_), Some(param)) = (&parsed.0, c.generics.params.first()) {
        errors.push(
            Error::custom("a versioned model is one stored type; it cannot be generic").with_span(param),
        );
    }
    let Some(v) = &parsed.0 else { return };
    let Some(first) = kept.first() else { return };
    // Bucket and outlier writers append to a stored document whatever its version, and
    // their reads do not upgrade: each older shape must store those fields as the
    // current one does, which only a typed step lets the derive check.
    for step in &v.steps {
        if let StepKind::Document(_) = &step.kind {
            errors.push(
                Error::custom(format!(
                    "`v{n}` is a document step, so the derive cannot check that version {n} stores {what} `{name}` as the current version does; the pattern's writers append to documents of every version and its reads do not upgrade them: make `v{n}` a typed step (`v{n} = ShapeV{n}`, the old shape with `From` into the next)",
                    n = step.version,
                    what = first.what,
                    name = first.field.name.as_deref().unwrap_or_default(),
                ))
                .with_span(&step.span),
            );
        }
    }
    parsed.1 = kept
        .iter()
        .filter_map(|k| {
            Some(KeptField {
                ident: k.field.recv.ident.clone()?,
                name: k.field.name.clone()?,
                ty: k.field.recv.ty.clone(),
                what: k.what,
                restore: k.field.serde.with.is_none(),
            })
        })
        .collect();
}

/// The stored name of a versioned model's version field.
pub(crate) fn field(parsed: &Parsed) -> Option<&str> {
    parsed.0.as_ref().map(|v| v.field_name.as_str())
}

/// The version field, the current version and whether the field is a BSON long, which
/// a pattern that creates documents of its own (a bucket) writes into them.
pub(crate) fn stamp(parsed: &Parsed) -> Option<(&str, i64, bool)> {
    parsed.0.as_ref().map(|v| (v.field_name.as_str(), v.current, v.field_int64))
}

/// `impl Versioned`, and the validator admitting every declared version (in `impl Model`).
pub(crate) fn expand(parsed: &Parsed, cx: &Facts) -> Expansion {
    let Some(v) = &parsed.0 else { return Expansion::default() };
    let (versioned, validator) = versioned(&cx.container, v, &parsed.1);
    let checks = kept_checks(v, &parsed.1);
    Expansion { model: validator, items: quote!(#versioned #checks), ..Expansion::default() }
}

/// A checked versioning declaration.
struct Versioning {
    pub current: i64,
    pub field_ident: Ident,
    pub field_name: String,
    /// Whether the field is stored as a BSON long (`i64`), not an int.
    pub field_int64: bool,
    pub missing: i64,
    pub steps: Vec<Step>,
    /// On a polymorphic model, each variant and its version field's Rust name (the
    /// stored name is one); empty on a struct.
    pub variants: Vec<(Ident, Ident)>,
}

/// `#[schema_version]` or `#[schema_version(missing = N)]` on a field.
fn schema_version_attr(f: &Field, errors: &mut Accumulator) -> Option<(Span, Option<i64>)> {
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
fn declaration(
    c: &Container,
    version: Option<&LitInt>,
    migrate: Option<&Migrate>,
    errors: &mut Accumulator,
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
        // serde writes integers wider than `i32` as BSON longs.
        field_int64: matches!(classify(ty), Kind::Int { max, .. } if max > i128::from(i32::MAX)),
        missing,
        steps,
        variants: Vec::new(),
    })
}

/// The declaration of a polymorphic model: one version for the whole enum, whose field
/// every variant stores under one name, with one type, so that a document of any
/// variant is read at its version and stamped with the current one. The declaration is
/// read from the first variant that marks a field; every other variant is compared with
/// it, one error under each that differs.
fn polymorphic_declaration(
    p: &Polymorphic,
    version: Option<&LitInt>,
    migrate: Option<&Migrate>,
    errors: &mut Accumulator,
) -> Option<Versioning> {
    let fields = |v: &VariantModel| match &v.container.body {
        Body::Struct(_, fields) => fields.clone(),
        Body::Enum(_) => Vec::new(),
    };
    let marks = |f: &Field| f.recv.attrs.iter().any(|a| a.path().is_ident("schema_version"));
    let Some(reference) = p.variants.iter().find(|v| fields(v).iter().any(marks)) else {
        // No variant stores a version: the struct rules say what `version` or
        // `migrate` lack, under them.
        return declaration(&p.variants.first()?.container, version, migrate, errors);
    };
    let declared = declaration(&reference.container, version, migrate, errors);
    let ref_fields: Vec<Field> = fields(reference);
    let ref_field = ref_fields.iter().find(|f| marks(f))?;
    let (name, ty) = (ref_field.name.clone().unwrap_or_default(), &ref_field.recv.ty);
    let ty_text = quote!(#ty).to_string().replace(' ', "");
    let ref_ident = ref_field.recv.ident.clone()?;
    let ref_variant = &reference.ident;
    let mut ok = true;
    let mut variants = Vec::new();
    for v in &p.variants {
        let ident = &v.ident;
        if v.ident == reference.ident {
            variants.push((ident.clone(), ref_ident.clone()));
            continue;
        }
        if v.container.wraps.is_some() {
            // Refused with its own error: a newtype variant's fields are its type's.
            ok = false;
            continue;
        }
        let mut marked: Vec<(Field, Span, Option<i64>)> = Vec::new();
        for f in fields(v) {
            if let Some((span, missing)) = schema_version_attr(&f, errors) {
                marked.push((f, span, missing));
            }
        }
        for (_, span, _) in marked.iter().skip(1) {
            ok = false;
            errors.push(
                Error::custom("only one field holds the schema version; `#[schema_version]` is already on another field of this variant")
                    .with_span(span),
            );
        }
        // Without `version`, the reference's error says to declare it; the variants
        // are compared once there is a version to compare them under.
        if version.is_none() {
            continue;
        }
        let Some((f, span, missing)) = marked.into_iter().next() else {
            ok = false;
            errors.push(
                Error::custom(format!(
                    "variant `{ident}` stores no schema version: a polymorphic model has one version for every variant, read from and written to each document, whatever its variant; add `#[schema_version] {ref_ident}: {ty_text}` to `{ident}`, as variant `{ref_variant}` declares it"
                ))
                .with_span(ident),
            );
            continue;
        };
        let f_ty = &f.recv.ty;
        let f_ty_text = quote!(#f_ty).to_string().replace(' ', "");
        if f.name.as_deref() != Some(name.as_str()) {
            ok = false;
            errors.push(
                Error::custom(format!(
                    "variant `{ident}` stores its schema version as `{}`, but variant `{ref_variant}` stores it as `{name}`: the version of a polymorphic model is one field, read from every document whatever its variant; store it as `{name}` (`#[serde(rename = \"{name}\")]`)",
                    f.name.as_deref().unwrap_or_default()
                ))
                .with_span(&f.span),
            );
        } else if f_ty_text != ty_text {
            ok = false;
            errors.push(
                Error::custom(format!(
                    "the schema version of variant `{ident}` is `{f_ty_text}`, but variant `{ref_variant}` stores it as `{ty_text}`: the version of a polymorphic model is one field with one type in every variant; use `{ty_text}`"
                ))
                .with_span(f_ty),
            );
        } else if let Some(d) = declared.as_ref().filter(|d| missing.unwrap_or(1) != d.missing) {
            ok = false;
            errors.push(
                Error::custom(format!(
                    "documents of variant `{ident}` without the field would be version {}, but those of variant `{ref_variant}` version {}: a document's version does not depend on its variant; give every variant's `#[schema_version]` the same `missing`",
                    missing.unwrap_or(1),
                    d.missing
                ))
                .with_span(&span),
            );
        }
        if let Some(fi) = f.recv.ident.clone() {
            variants.push((ident.clone(), fi));
        }
    }
    // A typed step's shape is another type, whose variants the derive cannot see to
    // validate or check rows against: the steps of an enum work on the document.
    for step in migrate.map(|m| m.steps.as_slice()).unwrap_or_default() {
        if let StepKind::Typed(old) = &step.kind {
            ok = false;
            errors.push(
                Error::custom(format!(
                    "a polymorphic model upgrades whole documents: make `v{n}` a document step, `v{n}(document = upgrade_v{n})` with `fn upgrade_v{n}(doc: Document) -> Result<Document, E>`, which sees the tag and can migrate each variant, not a typed one (`{}`)",
                    quote!(#old).to_string().replace(' ', ""),
                    n = step.version,
                ))
                .with_span(&step.span),
            );
        }
    }
    let mut declared = declared.filter(|_| ok)?;
    declared.variants = variants;
    Some(declared)
}

/// `impl Versioned` and the `validator()` override for the `Model` impl.
fn versioned(c: &Container, v: &Versioning, kept: &[KeptField]) -> (TokenStream, TokenStream) {
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
                // The pattern's fields as stored, whatever the steps computed: a step
                // that reset an outlier flag would hide the overflow items.
                let (take, put): (Vec<_>, Vec<_>) = kept
                    .iter()
                    .filter(|k| k.restore)
                    .enumerate()
                    .map(|(i, k)| {
                        let (var, name, ident) = (format_ident!("__kept{}", i), &k.name, &k.ident);
                        (
                            quote!(let #var = __doc.get(#name).cloned();),
                            quote! {
                                // A null is left to the step, like a missing field.
                                if let ::core::option::Option::Some(__v) = #var.filter(|v| *v != __ds::Bson::Null) {
                                    __new.#ident = __ds::bson_from_bson(__v).map_err(__ds::StepFailure::decode(#version))?;
                                }
                            },
                        )
                    })
                    .unzip();
                quote_spanned! {step.span=>
                    #version => {
                        #(#take)*
                        let __old: #ty = __ds::bson_from_document(__doc).map_err(__ds::StepFailure::decode(#version))?;
                        let mut __new: Self = #value;
                        #(#put)*
                        __new.#field_ident = #current_lit;
                        return ::core::result::Result::Ok(__new);
                    }
                }
            }
        }
    });
    // A polymorphic model's field is in every variant, under each one's Rust name.
    let stamp = if v.variants.is_empty() {
        quote!(self.#field_ident = #current_lit;)
    } else {
        let arms = v
            .variants
            .iter()
            .map(|(variant, f)| quote!(Self::#variant { #f: __v, .. } => *__v = #current_lit,));
        quote! {
            #[allow(unreachable_patterns)]
            match self {
                #(#arms)*
                // A `#[serde(skip)]` variant is never stored.
                _ => {}
            }
        }
    };
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

            #[inline]
            fn stamp(&mut self) {
                #stamp
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
    // A polymorphic model's schema is one branch per variant, each pinned to the version.
    let validator_fn = if v.variants.is_empty() {
        quote!(__ds::versioned_validator)
    } else {
        quote!(__ds::versioned_variants_validator)
    };
    let validator = quote! {
        const DECODE_STORED: ::core::option::Option<
            fn(__ds::Document) -> ::core::result::Result<Self, __ds::VersionError>,
        > = ::core::option::Option::Some(__ds::versioned_decode::<Self>);

        #[inline]
        fn validator() -> __ds::Document {
            #validator_fn(
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

/// For each field a bucket or outlier maintains and each older shape declared as a
/// type: the shape stores the field under the same name, with the same type (an
/// `Option` of it counts as the same), checked where the shape's fields are known.
fn kept_checks(v: &Versioning, kept: &[KeptField]) -> TokenStream {
    let mut out = TokenStream::new();
    for step in &v.steps {
        let StepKind::Typed(old) = &step.kind else { continue };
        let shape = quote!(#old).to_string().replace(' ', "");
        let version = step.version;
        for k in kept {
            let (name, ty, what) = (&k.name, &k.ty, k.what);
            let fix = format!("the pattern's writers append to documents of every version and its reads do not upgrade them: keep `{name}` with the same name and type in every version");
            let missing = format!("version {version} (`{shape}`) stores no field `{name}`, {what}: {fix}");
            let other = format!(
                "version {version} (`{shape}`) stores `{name}`, {what}, as `{{Self}}`, not `{{T}}`: {fix}"
            );
            let says = old_field::Messages {
                missing: &missing,
                other: &other,
                label: "this version stores the field as another type",
            };
            out.extend(old_field::check(old, name, Some(ty), &says, old.span()));
        }
    }
    out
}
