//! Derive macros for [docshape](https://docs.rs/docshape): `Model`, `Embedded` and
//! `KeyFamily`.
//!
//! Use them through the `docshape` crate, which re-exports them and holds the runtime
//! the generated code calls. The pipeline is visible in the modules: [`ast`] parses
//! attributes (darling receivers plus serde's own attributes), [`check`] applies the
//! design rules and collects every error under its tokens, and [`validator`] and
//! [`model`] expand into code that reaches the runtime only through
//! `::docshape::__private`, inside `const _: () = { ... };`.

mod access;
mod ast;
mod attr;
mod bucket;
mod case;
mod check;
mod fallback;
mod index;
mod keys;
mod model;
mod outlier;
mod paginate;
mod paths;
mod relations;
mod size;
mod validator;
mod versioning;

use darling::FromDeriveInput;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput};

/// Derives `docshape::Model` (and `docshape::validator::Schema`) for a struct with
/// named fields stored in a collection. See the `docshape` crate for the attributes.
#[proc_macro_derive(
    Model,
    attributes(
        model,
        validate,
        index,
        access,
        schema_version,
        bucket,
        outlier,
        embed,
        reference,
        denormalized
    )
)]
pub fn derive_model(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    expand_model(input.into()).into()
}

/// Derives `docshape::validator::Schema` for a sub-document type (struct or enum) that
/// has no collection of its own. See the `docshape` crate for the attributes.
#[proc_macro_derive(Embedded, attributes(embedded, validate, embed, reference))]
pub fn derive_embedded(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    expand_embedded(input.into()).into()
}

/// Derives `docshape::keys::KeyFamily` for a struct whose fields are the placeholders
/// of a Redis key pattern: `#[key(pattern = "cache:product:{id}", kind = string,
/// ttl = "300s")]`. See `docshape::keys` for the attribute.
#[proc_macro_derive(KeyFamily, attributes(key))]
pub fn derive_key_family(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    keys::expand(input.into()).into()
}

/// Wraps generated items so they leak no names into the user's module.
pub(crate) fn dummy(body: TokenStream) -> TokenStream {
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_qualifications, clippy::all)]
        const _: () = {
            use ::docshape::__private as __ds;
            #body
        };
    }
}

/// `#[derive(Model)]` on a token stream: the generated code, or the errors (with stub
/// impls). Never panics, whatever the input.
pub(crate) fn expand_model(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    match model(&input) {
        Ok(tokens) => tokens,
        Err(errors) => fallback::expand(&input, errors, true),
    }
}

/// `#[derive(Embedded)]` on a token stream, as [`expand_model`].
pub(crate) fn expand_embedded(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    match embedded(&input) {
        Ok(tokens) => tokens,
        Err(errors) => fallback::expand(&input, errors, false),
    }
}

fn unsupported(span: Span, msg: &str) -> darling::Error {
    darling::Error::custom(msg).with_span(&span)
}

fn model(input: &DeriveInput) -> darling::Result<TokenStream> {
    match &input.data {
        Data::Union(u) => {
            return Err(unsupported(u.union_token.span, "a Model is a document with named fields; a union has no stored shape"))
        }
        Data::Enum(e) => {
            return Err(unsupported(
                e.enum_token.span,
                "a Model is a document with named fields; store an enum inside a struct, and derive `Embedded` on the enum",
            ))
        }
        Data::Struct(s) if !matches!(s.fields, syn::Fields::Named(_)) => {
            return Err(unsupported(
                s.fields.span().join(input.ident.span()).unwrap_or_else(|| input.ident.span()),
                "a Model needs named fields: a collection stores documents, whose keys are the field names; use `struct Name { field: Type }`",
            ))
        }
        Data::Struct(_) => {}
    }
    let recv = ast::ModelReceiver::from_derive_input(input)?;
    let mut errors = darling::Error::accumulator();
    let collection = match &recv.collection {
        Some(lit) => {
            if let Some(problem) = model::collection_problem(&lit.value()) {
                errors.push(darling::Error::custom(problem).with_span(lit));
            }
            Some(lit.clone())
        }
        None => {
            errors.push(
                darling::Error::custom(
                    "missing `#[model(collection = \"...\")]`: a Model is stored in a collection; name it",
                )
                .with_span(&recv.ident),
            );
            None
        }
    };
    let options = collection.map(|collection| model::ModelOptions {
        collection,
        level: recv.validation_level.as_ref().map(|l| **l),
        action: recv.validation_action.as_ref().map(|a| **a),
    });
    let strict = recv.strict.is_present();
    let budget = recv.max_indexes.as_ref().map_or((10, None), |m| (**m, Some(m.span())));
    let allow = recv.allow.clone().unwrap_or_default();
    for (rule, span) in allow.rules.iter().filter(|(r, _)| r != "index_budget") {
        errors.push(
            darling::Error::custom(format!("waive `{rule}` on the `#[index]` or `#[access]` it concerns; the model's own `allow` takes `index_budget`"))
                .with_span(span),
        );
    }
    let (version, migrate) = (recv.version.clone(), recv.migrate.clone());
    let mut c =
        ast::container(recv.ident, recv.vis, recv.generics, recv.data, recv.attrs, strict, &mut errors);
    check::container(&c, &mut errors);
    let versioning = versioning::parse(&c, version.as_ref(), migrate.as_ref(), &mut errors);
    if let (Some(_), Some(param)) = (&versioning, c.generics.params.first()) {
        errors.push(
            darling::Error::custom("a versioned model is one stored type; it cannot be generic")
                .with_span(param),
        );
    }
    // Bucket and outlier writers upsert documents of their own making, without the
    // version field: the two do not mix (yet), and saying so beats a silent v1 document.
    let patterned = c.attrs.iter().any(|a| a.path().is_ident("bucket"))
        || matches!(&c.body, ast::Body::Struct(_, fields)
            if fields.iter().any(|f| f.recv.attrs.iter().any(|a| a.path().is_ident("outlier"))));
    if let (Some(_), true, Some(lit)) = (&versioning, patterned, &version) {
        errors.push(
            darling::Error::custom(
                "a versioned model cannot be a bucket or hold outlier arrays: their writers create documents without the version field; version the model that embeds them instead",
            )
            .with_span(lit),
        );
    }
    let relations = relations::parse(&c, true, &mut errors);
    if let (false, Some(param)) = (relations.copies.is_empty(), c.generics.params.first()) {
        errors.push(
            darling::Error::custom(
                "a model with denormalized copies is one stored type; it cannot be generic",
            )
            .with_span(param),
        );
    }
    let mut indexes = index::parse(&c, &c.attrs, &mut errors);
    let (patterns_code, bounds) = {
        let bucket = bucket::parse(&c, &mut errors);
        let outliers = outlier::parse(&c, options.as_ref().map(|o| &o.collection), &mut errors);
        if let Some(b) = &bucket {
            bucket::add_index(b, &mut indexes);
        }
        let mut bounds = bucket.as_ref().map(bucket::bounds).unwrap_or_default();
        bounds.extend(outlier::bounds(&outliers));
        bounds.extend(relations::bounds(&relations));
        let code = (bucket.as_ref().map(|b| bucket::expand(&c, b)), outlier::expand(&c, &outliers));
        (code, bounds)
    };
    let mut nested = index::check(&c, &indexes, budget, allow.waives("index_budget"), &mut errors);
    relations::check_via_indexes(&c, &relations, &indexes, &mut errors);
    let (shard_key, shard_tokens) = access::shard_key(&c, &recv.shard_key, &mut errors);
    let mut patterns = access::parse(&c.attrs, &mut errors);
    relations::resolve_lookups(&relations, &mut patterns, &mut errors);
    nested.extend(access::check(&c, &mut patterns, &indexes, &shard_key, &mut errors));
    errors.finish()?;
    // The patterns' bounds reach the validator as if written in `#[validate]`.
    bucket::apply_bounds(&mut c, bounds);
    let mut errors = darling::Error::accumulator();
    let unbounded = relations::unbounded_arrays(&c, &relations, &mut errors);
    errors.finish()?;
    let (bucket_code, outlier_code) = patterns_code;
    let size = size::impl_for(&c);
    let schema = validator::schema_impl(&c, true);
    let paths = paths::has_field_impls(&c);
    let tables = quote! {
        #shard_tokens
    };
    let (versioned, validator) = versioning.map(|v| versioning::expand(&c, &v)).unzip();
    let consts = {
        let indexes = index::expand(&indexes);
        let patterns = access::expand(&patterns);
        let relations = relations::consts(&c, &relations);
        quote!(#indexes #patterns #tables #validator #relations)
    };
    let registration = options.as_ref().and_then(|_| model::registration(&c));
    let model = options.map(|o| model::model_impl(&c, &o, consts));
    let paginators = paginate::expand(&c, &patterns);
    let relation_items = relations::items(&c, &relations, true);
    Ok(dummy(quote! {
        #schema
        #unbounded
        #relation_items
        #paths
        #model
        #versioned
        #registration
        #paginators
        #nested
        #size
        #bucket_code
        #outlier_code
    }))
}

fn embedded(input: &DeriveInput) -> darling::Result<TokenStream> {
    if let Data::Union(u) = &input.data {
        return Err(unsupported(
            u.union_token.span,
            "a union has no stored shape serde can write; use a struct or an enum",
        ));
    }
    let recv = ast::EmbeddedReceiver::from_derive_input(input)?;
    let mut errors = darling::Error::accumulator();
    let strict = recv.strict.is_present();
    let mut c =
        ast::container(recv.ident, recv.vis, recv.generics, recv.data, recv.attrs, strict, &mut errors);
    check::container(&c, &mut errors);
    let relations = relations::parse(&c, false, &mut errors);
    errors.finish()?;
    bucket::apply_bounds(&mut c, relations::bounds(&relations));
    let mut errors = darling::Error::accumulator();
    let unbounded = relations::unbounded_arrays(&c, &relations, &mut errors);
    let relation_items = relations::items(&c, &relations, false);
    errors.finish()?;
    let schema = validator::schema_impl(&c, false);
    let paths = paths::has_field_impls(&c);
    let size = size::impl_for(&c);
    Ok(dummy(quote!(#schema #paths #size #unbounded #relation_items)))
}

#[cfg(test)]
mod tests;
