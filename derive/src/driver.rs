//! The pipeline of `#[derive(Model)]` and `#[derive(Embedded)]`: one sequence for the
//! three shapes ([`Shape`]), in phases. Read the type into [`Facts`]; parse every
//! pattern the shape can hold; find the [`Links`] (what a pattern gives the core or
//! another pattern, as plain data); check every pattern against those; one `finish()`
//! of one accumulator; expand every pattern. A pattern module has a `parse` where it
//! reads attributes of its own, a `check` where it has rules beyond single keys, and
//! an `expand`; what a rule needs from another module (the indexes, the access rows)
//! is passed in by name.
//!
//! The expansion runs even when the checks found errors, so that one mistake is one
//! error: the generated methods and types keep their signatures, and the uses of the
//! type raise no second error (a missing method at every call). The errors are emitted
//! beside the code, so the build still fails on them. A parse or check that finds a
//! mistake leaves a neutral value in its place (no consistency, no rate, no serving
//! index, no method for a row whose name cannot be one), and the expansion leaves out
//! its compile-time checks ([`fallback::without_checks`]), which could rest on such a
//! value. The checks that rest only on what parsed (the rule `old_version_field`, a
//! row against an older version's type) are emitted beside the views instead, so their
//! errors arrive in the same build as the others, not once those are fixed. A type whose attributes darling refuses (an unknown key in `#[validate]`)
//! is read again without the refused items ([`fallback::without_refused_items`]),
//! and expands beside the refusal. Only a type whose shape cannot be read at all
//! gets the stub impls of [`fallback::expand`].

use darling::FromDeriveInput;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput};

use crate::ast::{EmbeddedReceiver, ModelReceiver};
use crate::common::dummy::dummy;
use crate::common::fallback;
use crate::facts::{Facts, Links, Shape};
use crate::{
    access, bucket, denormalized, index, model, outlier, paginate, polymorphic, relation, stamps, tenant,
    timeseries, validator, versioning,
};
// Summaries: a model maintained from another model's writes.
use crate::summary;

/// `#[derive(Model)]` on a token stream: the generated code, with the errors the checks
/// found, or, when the type cannot be read, the errors with stub impls. Never panics,
/// whatever the input.
pub(crate) fn expand_model(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    match model_derive(&input) {
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
    match embedded_derive(&input) {
        Ok(tokens) => tokens,
        Err(errors) => fallback::expand(&input, errors, false),
    }
}

fn unsupported(span: Span, msg: &str) -> darling::Error {
    darling::Error::custom(msg).with_span(&span)
}

/// A Model is a struct with named fields.
fn model_shape(input: &DeriveInput) -> darling::Result<()> {
    match &input.data {
        Data::Union(u) => {
            Err(unsupported(u.union_token.span, "a Model is a document with named fields; a union has no stored shape"))
        }
        // A polymorphic collection: one document shape per variant.
        Data::Enum(e) => crate::polymorphic::shape(input, e),
        Data::Struct(s) if !matches!(s.fields, syn::Fields::Named(_)) => Err(unsupported(
            s.fields.span().join(input.ident.span()).unwrap_or_else(|| input.ident.span()),
            "a Model needs named fields: a collection stores documents, whose keys are the field names; use `struct Name { field: Type }`",
        )),
        Data::Struct(_) => Ok(()),
    }
}

/// The generated code and the errors found on the way.
struct Expanded {
    errors: Option<darling::Error>,
    /// Items beside the `const _` (the view types the application names).
    views: TokenStream,
    /// Items inside it.
    items: TokenStream,
}

impl Expanded {
    /// The code with `errors` beside it: an expansion with errors leaves out its checks.
    fn emit(errors: Option<darling::Error>, views: TokenStream, items: TokenStream) -> TokenStream {
        match errors {
            None => {
                let items = dummy(items);
                quote!(#views #items)
            }
            Some(errors) => {
                let (errors, items) = (errors.write_errors(), dummy(fallback::without_checks(items)));
                quote!(#errors #views #items)
            }
        }
    }
}

/// The expansion of a type whose receiver darling refused: the refusal's errors, and
/// the code of the type read without the refused items, whose own errors wait until
/// the refusal is fixed (leaving an item out may raise one, such as a `max_length`
/// that a bucket needs). The refusal alone when the type cannot be read even so.
fn without_refused<R>(
    input: &DeriveInput,
    container: &str,
    refused: darling::Error,
    read: impl Fn(&DeriveInput) -> darling::Result<R>,
    expand: impl FnOnce(R) -> Expanded,
) -> darling::Result<TokenStream> {
    let cleaned = fallback::without_refused_items(input, container, |i| read(i).is_ok());
    match read(&cleaned) {
        Ok(recv) => {
            let e = expand(recv);
            Ok(Expanded::emit(Some(refused), e.views, e.items))
        }
        Err(_) => Err(refused),
    }
}

fn model_derive(input: &DeriveInput) -> darling::Result<TokenStream> {
    model_shape(input)?;
    match ModelReceiver::from_derive_input(input) {
        Ok(recv) => {
            let e = model_expansion(recv);
            Ok(Expanded::emit(e.errors, e.views, e.items))
        }
        Err(refused) => {
            without_refused(input, "model", refused, ModelReceiver::from_derive_input, model_expansion)
        }
    }
}

fn model_expansion(recv: ModelReceiver) -> Expanded {
    let mut errors = darling::Error::accumulator();
    let cx = Facts::model(recv, &mut errors);
    expansion(cx, errors)
}

/// The one sequence of every shape ([`Shape`]): parse every pattern the shape can hold,
/// find what patterns hand one another ([`Links`]), check every pattern against the
/// facts, one `finish()`, expand every pattern. A pattern its shape cannot hold is
/// not parsed (an enum's variants are no bucket; an embedded type has no indexes),
/// or parsed only for its refusal.
fn expansion(cx: Facts, mut errors: darling::error::Accumulator) -> Expanded {
    let shape = cx.shape();
    let (is_struct, is_model) = (shape == Shape::Struct, shape != Shape::Embedded);
    let on = |yes: bool| yes.then_some(());

    // Phase: parse every pattern.
    let model = on(is_model).map(|()| model::parse(&cx, &mut errors));
    let mut versioning = on(is_model).map(|()| versioning::parse(&cx, &mut errors));
    let mut relation = relation::parse(&cx, &mut errors);
    let mut denormalized = denormalized::parse(&cx, &mut errors);
    let mut index = on(is_model).map(|()| index::parse(&cx, &mut errors));
    let mut bucket = on(is_struct).map(|()| bucket::parse(&cx, &mut errors));
    let outlier = on(is_struct).map(|()| outlier::parse(&cx, &mut errors));
    let mut access = on(is_model).map(|()| access::parse(&cx, &mut errors));
    // Refused on an enum and on an embedded type, with its error: no part of it expands.
    let timeseries = on(is_model).map(|()| timeseries::parse(&cx, &mut errors)).filter(|_| is_struct);
    let stamps = stamps::parse(&cx, &mut errors);
    // A polymorphic model's summary is parsed for its refusal.
    let mut summary = on(is_model).map(|()| summary::parse(&cx, &mut errors));
    let tenant = on(is_model).map(|()| tenant::parse(&cx, &mut errors));

    // Phase: what patterns give the core and one another, as plain facts. A bucket's
    // range index and a time-series collection's meta/time index join the declared
    // ones; the bounds the validator learns from buckets, outliers and
    // `#[embed(max = N)]`; the fields a bucket or outlier keeps; the version stamp; the
    // copies an access row's foreign path resolves to.
    if let Some(index) = &mut index {
        bucket.iter().for_each(|b| bucket::add_index(b, index));
        timeseries.iter().for_each(|t| timeseries::add_index(t, index));
    }
    let links = Links {
        bounds: match shape {
            Shape::Struct => [bucket.as_ref().map(bucket::bounds), outlier.as_ref().map(outlier::bounds)]
                .into_iter()
                .flatten()
                .flatten()
                .chain(relation::bounds(&relation))
                .collect(),
            Shape::Polymorphic => Vec::new(),
            Shape::Embedded => relation::bounds(&relation),
        },
        kept: [outlier.as_ref().map(outlier::kept), bucket.as_ref().map(bucket::kept)]
            .into_iter()
            .flatten()
            .flatten()
            .collect(),
        stamp: versioning.as_ref().and_then(versioning::stamp).map(|(f, v, wide)| (f.to_owned(), v, wide)),
        lookups: on(is_struct).map(|()| denormalized::lookups(&denormalized)),
    };

    // Phase: check every pattern against the facts.
    if let Some(p) = &cx.polymorphic {
        polymorphic::check(
            &cx.container,
            cx.model.as_ref().expect("a polymorphic type is a model"),
            p,
            &mut errors,
        );
    }
    validator::check(&cx, &mut errors);
    if let Some(versioning) = &mut versioning {
        versioning::check(versioning, &cx, &links.kept, &mut errors);
    }
    if let (Some(b), Some(v)) = (&mut bucket, &versioning) {
        bucket::check(b, &cx, versioning::field(v), &mut errors);
    }
    if let Some(index) = &mut index {
        index::check(index, &cx, &mut errors);
    }
    match (&index, shape) {
        (Some(index), Shape::Struct) => denormalized::check(&mut denormalized, &cx, index, &mut errors),
        (Some(index), Shape::Polymorphic) => {
            denormalized::check_polymorphic(&mut denormalized, &cx, index, &mut errors)
        }
        _ => {}
    }
    // Before the access check: it marks the rows that read live documents only.
    if let (Some(t), Some(access), Some(index)) = (&tenant, &mut access, &index) {
        tenant::check(t, &cx, index, access, &mut errors);
    }
    if let (Some(access), Some(index)) = (&mut access, &index) {
        access::check(access, &cx, index, links.lookups.as_deref(), &mut errors);
    }
    relation::check(&mut relation, &cx, &links.bounds, &mut errors);
    if shape == Shape::Embedded {
        denormalized::check_embedded(&denormalized, &cx, &mut errors);
    }
    if let (Some(t), Some(index), Some(access)) = (&timeseries, &index, &access) {
        let declared = bucket.as_ref().is_some_and(bucket::declared);
        timeseries::check(t, &cx, index, access, declared, &mut errors);
    }
    if let Some(summary) = &mut summary {
        summary::check(summary, &cx, &mut errors);
    }
    // Emitted with the expansion, never instead of it: see the module's documentation.
    let errors = errors.finish().err();

    // Phase: expand every pattern, errors or not. The bounds reach the validator as if
    // written in `#[validate]` (a polymorphic model's per variant); bucket and outlier
    // size their documents from the fields as written.
    let bounded = match &cx.polymorphic {
        Some(_) => cx.bounded_variants(&relation::variant_bounds(&relation)),
        None => cx.bounded(&links.bounds),
    };
    let stamp = links.stamp.as_ref().map(|(f, v, wide)| (f.as_str(), *v, *wide));
    let validator = validator::expand(&bounded);
    let versioning = versioning.map(|v| versioning::expand(&v, &bounded)).unwrap_or_default();
    let relation = relation::expand(&relation, &bounded);
    let denormalized = denormalized::expand(&denormalized, &bounded);
    let index = index.map(|i| index::expand(&i, &bounded)).unwrap_or_default();
    let bucket = bucket.map(|b| bucket::expand(&b, &cx, stamp)).unwrap_or_default();
    let outlier = outlier.map(|o| outlier::expand(&o, &cx)).unwrap_or_default();
    let timeseries = timeseries.map(|t| timeseries::expand(&t)).unwrap_or_default();
    let stamps = stamps::expand(&stamps);
    let summary = summary.map(|s| summary::expand(&s, &bounded)).unwrap_or_default();
    let tenant = tenant.map(|t| tenant::expand(&t, &bounded)).unwrap_or_default();
    let paginate = access.as_ref().map(|a| paginate::expand(&bounded, a)).unwrap_or_default();
    let (access, views) = access.map(|a| access::expand(&a, &bounded)).unwrap_or_default();
    let c = &bounded.container;
    // A struct's fields are paths (`HasField`); an enum's are its variants'.
    let paths = on(shape != Shape::Polymorphic).map(|()| crate::common::paths::has_field_impls(c));
    // A model's `_id` element, declared once for its size list and `Identified::ID_SIZE`
    // (a polymorphic model's is the one its variants share).
    let id = bounded.is_model().then(|| crate::common::size::id_element(bounded.container_for(None)));
    let size = crate::common::size::impl_for(c, id);
    let (model, registration, variants) = match (&model, &bounded.polymorphic) {
        (Some(m), None) => {
            let parts = [
                &index,
                &access,
                &versioning,
                &relation,
                &denormalized,
                &outlier,
                &bucket,
                &timeseries,
                &stamps,
                &tenant,
            ];
            let (model, registration) = model::expand(m, &bounded, &parts);
            (model, registration, TokenStream::new())
        }
        (Some(m), Some(p)) => {
            // Each variant's rows and copies, in its entry of `Model::NESTED`, and the
            // variants themselves, for what describes the collection.
            let mut variants = relation::variant_entries(p, &[&relation, &denormalized]);
            variants.model = polymorphic::variants_const(p);
            let (model, registration) = model::expand(
                m,
                &bounded,
                &[&index, &access, &versioning, &relation, &denormalized, &variants, &tenant],
            );
            let mut checks = polymorphic::wrapped_checks(p);
            checks.extend(polymorphic::variant_shapes(p));
            // The variants' `Nested` entries, as constants (see `variant_entries`).
            checks.extend(variants.items);
            (model, registration, checks)
        }
        // An embedded type's relations and copies reach the models that hold it.
        (None, _) => (
            relation::embedded_relations(c, &[&relation, &denormalized]),
            TokenStream::new(),
            TokenStream::new(),
        ),
    };
    let items = quote! {
        #variants
        #validator
        #relation
        #denormalized
        #paths
        #model
        #versioning
        #registration
        #paginate
        #index
        #access
        #size
        #bucket
        #outlier
        #timeseries
        #summary
    };
    let tenant = &tenant.items;
    let items = quote!(#items #tenant);
    Expanded { errors, views, items }
}

fn embedded_derive(input: &DeriveInput) -> darling::Result<TokenStream> {
    if let Data::Union(u) = &input.data {
        return Err(unsupported(
            u.union_token.span,
            "a union has no stored shape serde can write; use a struct or an enum",
        ));
    }
    match EmbeddedReceiver::from_derive_input(input) {
        Ok(recv) => {
            let e = embedded_expansion(recv);
            Ok(Expanded::emit(e.errors, e.views, e.items))
        }
        Err(refused) => without_refused(
            input,
            "embedded",
            refused,
            EmbeddedReceiver::from_derive_input,
            embedded_expansion,
        ),
    }
}

fn embedded_expansion(recv: EmbeddedReceiver) -> Expanded {
    let mut errors = darling::Error::accumulator();
    let cx = Facts::embedded(recv, &mut errors);
    expansion(cx, errors)
}
