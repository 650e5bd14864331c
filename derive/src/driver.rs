//! The pipeline of `#[derive(Model)]` and `#[derive(Embedded)]`, in one function
//! each: parse every pattern, check every pattern, one `finish()` of one accumulator,
//! expand every pattern. Every pattern module has the same three functions:
//! `parse(&Context, &mut Accumulator) -> Parsed`, `check(&mut Parsed, &Context, ...,
//! &mut Accumulator)` and `expand(&Parsed, &Context, ...) -> Expansion`; where a rule
//! needs what a core module found (the indexes, the access patterns), it is passed
//! in by name.
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

use crate::ast::{Context, EmbeddedReceiver, ModelReceiver};
use crate::common::bounds;
use crate::common::dummy::dummy;
use crate::common::fallback;
use crate::{
    access, bucket, denormalized, index, model, outlier, paginate, polymorphic, relation, stamps, tenant,
    timeseries, validator, versioning,
};

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
    let cx = Context::model(recv, &mut errors);
    if let Some(p) = &cx.polymorphic {
        let p = p.clone();
        return polymorphic_expansion(cx, &p, errors);
    }

    // Parse every pattern.
    let mut model = model::parse(&cx, &mut errors);
    let mut validator = validator::parse(&cx, &mut errors);
    let mut versioning = versioning::parse(&cx, &mut errors);
    let mut relation = relation::parse(&cx, &mut errors);
    let mut denormalized = denormalized::parse(&cx, &mut errors);
    let mut index = index::parse(&cx, &mut errors);
    let mut bucket = bucket::parse(&cx, &mut errors);
    let mut outlier = outlier::parse(&cx, &mut errors);
    let mut access = access::parse(&cx, &mut errors);
    let mut paginate = paginate::parse(&cx, &mut errors);
    let timeseries = timeseries::parse(&cx, &mut errors);
    let stamps = stamps::parse(&cx, &mut errors);
    let tenant = tenant::parse(&cx, &mut errors);
    // What patterns give the core: a bucket's range index, a time-series collection's
    // meta/time index, and the bounds the
    // validator learns from buckets, outliers and `#[embed(max = N)]`.
    bucket::add_index(&bucket, &mut index);
    timeseries::add_index(&timeseries, &mut index);
    let bounds: Vec<_> = [bucket::bounds(&bucket), outlier::bounds(&outlier), relation::bounds(&relation)]
        .into_iter()
        .flatten()
        .collect();

    // Check every pattern.
    model::check(&mut model, &cx, &mut errors);
    validator::check(&mut validator, &cx, &mut errors);
    let kept: Vec<_> = [outlier::kept(&outlier), bucket::kept(&bucket)].into_iter().flatten().collect();
    versioning::check(&mut versioning, &cx, &kept, &mut errors);
    bucket::check(&mut bucket, &cx, versioning::field(&versioning), &mut errors);
    outlier::check(&mut outlier, &cx, &mut errors);
    index::check(&mut index, &cx, &mut errors);
    denormalized::check(&mut denormalized, &cx, &index, &mut access, &mut errors);
    tenant::check(&tenant, &cx, &index, &mut access, &mut errors);
    access::check(&mut access, &cx, &index, &mut errors);
    paginate::check(&mut paginate, &cx, &mut errors);
    relation::check(&mut relation, &cx, &bounds, &mut errors);
    timeseries::check(&timeseries, &cx, &index, &access, bucket::declared(&bucket), &mut errors);
    // Emitted with the expansion, never instead of it: see the module's documentation.
    let errors = errors.finish().err();

    // Expand every pattern. The bounds reach the validator as if written in
    // `#[validate]`; bucket and outlier size their documents from the fields as written.
    let bounded = bounds::bounded(&cx, &bounds);
    let stamp = versioning::stamp(&versioning).map(|(f, v, wide)| (f.to_owned(), v, wide));
    let stamp = stamp.as_ref().map(|(f, v, wide)| (f.as_str(), *v, *wide));
    let validator = validator::expand(&validator, &bounded);
    let versioning = versioning::expand(&versioning, &bounded);
    let relation = relation::expand(&relation, &bounded);
    let denormalized = denormalized::expand(&denormalized, &bounded);
    let index = index::expand(&index, &bounded);
    let bucket = bucket::expand(&bucket, &cx, stamp);
    let outlier = outlier::expand(&outlier, &cx);
    let timeseries = timeseries::expand(&timeseries);
    let stamps = stamps::expand(&stamps);
    let tenant = tenant::expand(&tenant, &bounded);
    let paginate = paginate::expand(&paginate, &bounded, &access);
    let (access, views) = access::expand(&access, &bounded);
    let (model, registration) = model::expand(
        &model,
        &bounded,
        &[
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
        ],
    );
    let c = &bounded.container;
    let (paths, size) = (crate::common::paths::has_field_impls(c), crate::common::size::impl_for(c));
    let items = quote! {
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
    };
    let tenant = &tenant.items;
    let items = quote!(#items #tenant);
    Expanded { errors, views, items }
}

/// A polymorphic model: the core modules (model, validator, indexes, read rows) and the
/// relations with each variant read as a struct; the patterns that read a struct's
/// fields and do not know variants refuse it in [`polymorphic::check`].
fn polymorphic_expansion(
    cx: Context,
    p: &polymorphic::Polymorphic,
    mut errors: darling::error::Accumulator,
) -> Expanded {
    // Parse every pattern a polymorphic model can hold.
    let mut model = model::parse(&cx, &mut errors);
    let mut validator = validator::parse(&cx, &mut errors);
    let mut versioning = versioning::parse(&cx, &mut errors);
    let mut relation = relation::parse(&cx, &mut errors);
    let mut denormalized = denormalized::parse(&cx, &mut errors);
    let mut index = index::parse(&cx, &mut errors);
    let mut access = access::parse(&cx, &mut errors);
    let mut paginate = paginate::parse(&cx, &mut errors);
    // Refused on an enum, with its error: no part of it expands.
    let _ = timeseries::parse(&cx, &mut errors);
    let _ = stamps::parse(&cx, &mut errors);
    let tenant = tenant::parse(&cx, &mut errors);

    // Check every pattern.
    polymorphic::check(&cx, p, &mut errors);
    model::check(&mut model, &cx, &mut errors);
    validator::check(&mut validator, &cx, &mut errors);
    versioning::check(&mut versioning, &cx, &[], &mut errors);
    index::check(&mut index, &cx, &mut errors);
    denormalized::check_polymorphic(&mut denormalized, &cx, &index, &mut errors);
    tenant::check(&tenant, &cx, &index, &mut access, &mut errors);
    access::check(&mut access, &cx, &index, &mut errors);
    relation::check(&mut relation, &cx, &[], &mut errors);
    paginate::check(&mut paginate, &cx, &mut errors);
    let errors = errors.finish().err();

    // Expand every pattern, errors or not, as for a struct; a variant's
    // `#[embed(max = N)]` bounds that variant's field in the validator.
    let cx = bounds::bounded_variants(&cx, &relation::variant_bounds(&relation));
    let validator = validator::expand(&validator, &cx);
    let versioning = versioning::expand(&versioning, &cx);
    let relation = relation::expand(&relation, &cx);
    let denormalized = denormalized::expand(&denormalized, &cx);
    // Each variant's rows and copies, in its entry of `Model::NESTED`.
    let variants = cx.polymorphic.as_ref().map(|p| relation::variant_entries(p, &[&relation, &denormalized]));
    let mut variants = variants.unwrap_or_default();
    // And the variants themselves, for what describes the collection.
    variants.model = polymorphic::variants_const(p);
    let index = index::expand(&index, &cx);
    let paginate = paginate::expand(&paginate, &cx, &access);
    let (access, views) = access::expand(&access, &cx);
    let tenant = tenant::expand(&tenant, &cx);
    let (model, registration) = model::expand(
        &model,
        &cx,
        &[&index, &access, &versioning, &relation, &denormalized, &variants, &tenant],
    );
    let size = crate::common::size::impl_for(&cx.container);
    let wrapped = polymorphic::wrapped_checks(p);
    let items = quote! {
        #wrapped
        #validator
        #relation
        #denormalized
        #model
        #versioning
        #registration
        #index
        #access
        #paginate
        #size
    };
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
    let cx = Context::embedded(recv, &mut errors);

    // Parse every pattern an embedded type can hold.
    let mut validator = validator::parse(&cx, &mut errors);
    let mut relation = relation::parse(&cx, &mut errors);
    let mut denormalized = denormalized::parse(&cx, &mut errors);
    // Refused on an embedded type, with its error: no writer stamps a sub-document.
    let _ = stamps::parse(&cx, &mut errors);
    let bounds = relation::bounds(&relation);

    // Check every pattern.
    validator::check(&mut validator, &cx, &mut errors);
    relation::check(&mut relation, &cx, &bounds, &mut errors);
    denormalized::check_embedded(&mut denormalized, &cx, &mut errors);
    let errors = errors.finish().err();

    // Expand every pattern, errors or not, as for a model.
    let bounded = bounds::bounded(&cx, &bounds);
    let validator = validator::expand(&validator, &bounded);
    let relation = relation::expand(&relation, &bounded);
    let denormalized = denormalized::expand(&denormalized, &bounded);
    let c = &bounded.container;
    // Its relations and copies reach the models that hold it.
    let embedded = relation::embedded_relations(c, &[&relation, &denormalized]);
    let (paths, size) = (crate::common::paths::has_field_impls(c), crate::common::size::impl_for(c));
    Expanded {
        errors,
        views: TokenStream::new(),
        items: quote!(#validator #paths #size #relation #denormalized #embedded),
    }
}
