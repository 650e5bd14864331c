//! The validator (`#[validate]`, `#[model(strict, validation_*)]`, `#[embedded]`):
//! check the rules of [`rules`], and expand into the `Schema` impl, whose `schema()`
//! builds the type's `$jsonSchema` at run time from its fields' own schemas
//! (`docshape::validator` executes it).

mod rules;

use darling::ast::Style;
use darling::error::Accumulator;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use crate::ast::{Body, Container, Field, Variant};
use crate::attr::validate::{AllowedValue, Num, NumValue};
use crate::common::expansion::Expansion;
use crate::common::respan::respan;
use crate::common::types::{classify, is_option, known_helper, Kind};
use crate::facts::Facts;

// The validator has nothing of its own to parse: `#[validate]` is read with the fields
// ([`crate::ast`]), and the patterns' bounds join it before expansion.

/// Every `#[validate]` key against its field's type, and the stored names.
pub(crate) fn check(cx: &Facts, errors: &mut Accumulator) {
    rules::container(&cx.container, errors);
}

/// `impl Schema`; a `Model`'s schema admits `_id`.
pub(crate) fn expand(cx: &Facts) -> Expansion {
    Expansion::items(schema_impl(&cx.container, cx.is_model()))
}

/// A number as a `__ds::Lit`: an int when it fits in 32 bits, as the server stores it.
fn num(n: &NumValue) -> TokenStream {
    match *n {
        NumValue::Int(i) => match i32::try_from(i) {
            Ok(small) => quote!(__ds::Lit::Int32(#small)),
            Err(_) => quote!(__ds::Lit::Int64(#i)),
        },
        NumValue::Float(f) => quote!(__ds::Lit::Double(#f)),
    }
}

fn count(n: u64) -> TokenStream {
    let n = n as i64;
    quote!(__ds::Lit::Int64(#n))
}

/// The schema of one field's value, with its `#[validate]` constraints.
pub(crate) fn field_schema(f: &Field) -> TokenStream {
    let FieldParts { checks, base, constraints } = field_parts(f);
    let base = match base {
        BaseOf::Type(ty, some) if some => quote!(<#ty as __ds::Schema>::schema_some()),
        BaseOf::Type(ty, _) => quote!(<#ty as __ds::Schema>::schema()),
        BaseOf::Bson(t, false) => quote!(__ds::bson_type(#t)),
        BaseOf::Bson(t, true) => quote!(__ds::nullable(__ds::bson_type(#t))),
    };
    let schema =
        if constraints.is_empty() { base } else { quote!(__ds::constrained(#base, &[#(#constraints),*])) };
    if checks.is_empty() {
        schema
    } else {
        quote!({
            #(#checks)*
            #schema
        })
    }
}

/// Where a field's schema starts: its type's own (`schema_some` when serde skips
/// `None`), or a stated BSON type (nullable for an `Option` serde writes as null).
enum BaseOf {
    Type(TokenStream, bool),
    Bson(String, bool),
}

/// A field's schema in parts: the compile-time checks of its constraints' kinds (for
/// a type whose spelling decides nothing), where it starts, and its constraints.
struct FieldParts {
    checks: Vec<TokenStream>,
    base: BaseOf,
    constraints: Vec<TokenStream>,
}

fn field_parts(f: &Field) -> FieldParts {
    let r = &f.recv;
    let ty = &r.ty;
    let stated = r
        .bson_type
        .as_ref()
        .map(|b| b.value())
        .or_else(|| f.serde.with.as_ref().and_then(|w| known_helper(&w.value())).map(str::to_owned));
    let base = match stated {
        Some(t) => BaseOf::Bson(t, is_option(ty) && !f.serde.skips_none()),
        None => {
            // A raw `#[reference(T)]` is validated as `T._id` is, bounds included, as a
            // `Ref<T>` would be: the size the derive computes for it relies on them.
            let as_ref = crate::attr::reference::as_ref_type(ty, &r.attrs).map(|(_, t)| t);
            let ty = as_ref.as_ref().unwrap_or(ty);
            BaseOf::Type(quote!(#ty), f.serde.skips_none())
        }
    };

    let mut body = Vec::new();
    // The spelling of the type decided nothing: let the compiler check the kind, with
    // the error under the constraint.
    let unknown = classify(ty) == Kind::Other && r.bson_type.is_none();
    let mut assert = |span: proc_macro2::Span, which: &str| {
        if unknown {
            let f = syn::Ident::new(which, span);
            let ty = respan(quote!(#ty), span);
            body.push(quote_spanned!(span=> let _ = __ds::#f::<#ty>;));
        }
    };
    if let Some(v) = &r.min_length {
        assert(v.span(), "assert_string");
    }
    if let Some(v) = &r.max_length {
        assert(v.span(), "assert_string");
    }
    if let Some(v) = &r.pattern {
        assert(v.span(), "assert_string");
    }
    for n in [&r.minimum, &r.maximum, &r.exclusive_minimum, &r.exclusive_maximum].into_iter().flatten() {
        assert(n.span, "assert_number");
    }
    if let Some(v) = &r.min_items {
        assert(v.span(), "assert_array");
    }
    if let Some(v) = &r.max_items {
        assert(v.span(), "assert_array");
    }
    if r.unique_items.is_present() {
        assert(r.unique_items.span(), "assert_array");
    }

    // The constraints as one constant slice, applied in this order by `constrained`.
    let mut constraints = Vec::new();
    let mut set =
        |key: &str, value: TokenStream| constraints.push(quote!(__ds::Constraint::Set(#key, #value)));
    if let Some(v) = &r.min_length {
        set("minLength", count(**v));
    }
    if let Some(v) = &r.max_length {
        set("maxLength", count(**v));
    }
    if let Some(p) = &r.pattern {
        set("pattern", quote!(__ds::Lit::Str(#p)));
    }
    if let Some(v) = &r.min_items {
        set("minItems", count(**v));
    }
    if let Some(v) = &r.max_items {
        set("maxItems", count(**v));
    }
    if r.unique_items.is_present() {
        set("uniqueItems", quote!(__ds::Lit::Bool(true)));
    }
    if let Some(items) = &r.items {
        let mut each = Vec::new();
        if let Some(v) = &items.min_length {
            let v = count(**v);
            each.push(quote!(__ds::Constraint::Set("minLength", #v)));
        }
        if let Some(v) = &items.max_length {
            let v = count(**v);
            each.push(quote!(__ds::Constraint::Set("maxLength", #v)));
        }
        if let Some(p) = &items.pattern {
            each.push(quote!(__ds::Constraint::Set("pattern", __ds::Lit::Str(#p))));
        }
        constraints.push(quote!(__ds::Constraint::Items(&[#(#each),*])));
    }
    if let Some(allowed) = &r.allowed {
        let values = allowed.values.iter().map(|v| match v {
            AllowedValue::Str(s, _) => quote!(__ds::Lit::Str(#s)),
            AllowedValue::Bool(b, _) => quote!(__ds::Lit::Bool(#b)),
            AllowedValue::Num(n) => num(&n.value),
        });
        constraints.push(quote!(__ds::Constraint::Enum(&[#(#values),*])));
    }
    let mut bound = |n: &Option<Num>, lower: bool, exclusive: bool| {
        if let Some(n) = n {
            let value = num(&n.value);
            constraints.push(
                quote!(__ds::Constraint::Bound { lower: #lower, value: #value, exclusive: #exclusive }),
            );
        }
    };
    bound(&r.minimum, true, false);
    bound(&r.exclusive_minimum, true, true);
    bound(&r.maximum, false, false);
    bound(&r.exclusive_maximum, false, true);
    FieldParts { checks: body, base, constraints }
}

/// An object schema from named fields; `admit_id` for collections.
///
/// The properties are one array of `Step`s (data: a name, where the schema starts,
/// constant constraints) that `__ds::object` walks, rather than a call per field:
/// less for the compiler to check in every model's crate.
fn object(fields: &[Field], strict: bool, admit_id: bool) -> TokenStream {
    let (checks, steps, strict) = object_parts(fields, strict, admit_id);
    quote!({
        #(#checks)*
        __ds::object(&[#(#steps),*], #strict)
    })
}

/// An object schema's parts: the compile-time checks of its fields' constraints, its
/// steps and its `strict` argument.
type ObjectParts = (Vec<TokenStream>, Vec<TokenStream>, TokenStream);

fn object_parts(fields: &[Field], strict: bool, admit_id: bool) -> ObjectParts {
    let mut checks = Vec::new();
    let steps: Vec<TokenStream> = fields
        .iter()
        .filter(|f| !f.serde.skip)
        .map(|f| {
            let ty = &f.recv.ty;
            if f.serde.flatten.is_some() {
                return quote!(__ds::Step::Flatten(<#ty as __ds::Schema>::schema));
            }
            let name = f.name.as_deref().unwrap_or_default();
            let parts = field_parts(f);
            checks.extend(parts.checks);
            let constraints = parts.constraints;
            let required = f.serde.skip_serializing_if.is_none();
            // The type's own schema, the common case, in the positional `Step::Of`.
            let base = match parts.base {
                BaseOf::Type(ty, some) => {
                    let schema = if some { quote!(schema_some) } else { quote!(schema) };
                    return quote!(__ds::Step::Of(#name, <#ty as __ds::Schema>::#schema, &[#(#constraints),*], #required));
                }
                BaseOf::Bson(t, false) => quote!(__ds::Base::Stated(#t)),
                BaseOf::Bson(t, true) => quote!(__ds::Base::StatedOrNull(#t)),
            };
            quote!(__ds::Step::Property { name: #name, base: #base, constraints: &[#(#constraints),*], required: #required })
        })
        .collect();
    let strict = if strict {
        quote!(::core::option::Option::Some(#admit_id))
    } else {
        quote!(::core::option::Option::None)
    };
    (checks, steps, strict)
}

/// The schema of unnamed fields: a newtype is its field, a tuple an array.
fn unnamed(fields: &[Field]) -> TokenStream {
    let stored: Vec<&Field> = fields.iter().filter(|f| !f.serde.skip).collect();
    match stored.as_slice() {
        [only] if fields.len() == 1 => field_schema(only),
        _ => {
            let items = stored.iter().map(|f| field_schema(f));
            quote!(__ds::tuple(::std::vec![#(#items),*]))
        }
    }
}

/// The value a variant writes without its tag; `None` for unit variants.
fn variant_content(v: &Variant, strict: bool) -> Option<TokenStream> {
    if let Some(with) = &v.serde.with {
        return Some(match known_helper(&with.value()) {
            Some(t) => quote!(__ds::bson_type(#t)),
            None => quote!(__ds::Document::new()),
        });
    }
    match v.style {
        Style::Unit => None,
        Style::Tuple => Some(unnamed(&v.fields)),
        Style::Struct => Some(object(&v.fields, strict, false)),
    }
}

fn enum_schema(c: &Container, variants: &[Variant]) -> TokenStream {
    if let Some(tagged) = tagged_objects(c, variants) {
        return tagged;
    }
    let alternatives = variants.iter().filter(|v| !v.serde.skip).map(|v| {
        let name = &v.name;
        let content = variant_content(v, c.strict);
        if v.serde.untagged || c.serde.untagged.is_some() {
            return content.unwrap_or_else(|| quote!(__ds::bson_type("null")));
        }
        match (&c.serde.tag, &c.serde.content) {
            (Some(tag), Some(content_key)) => {
                let content = match content {
                    Some(c) => quote!(::std::option::Option::Some(#c)),
                    None => quote!(::std::option::Option::None),
                };
                quote!(__ds::adjacent(#tag, #name, #content_key, #content))
            }
            (Some(tag), None) => {
                let object = match (v.style, v.fields.as_slice()) {
                    // A newtype variant under an internal tag: its struct's fields beside
                    // the tag, as serde writes them, so `strict` refuses any other key
                    // whatever the wrapped type's own `strict`.
                    (Style::Tuple, [only]) if v.serde.with.is_none() => {
                        let mut flattened = only.clone();
                        flattened.serde.flatten = Some(only.span);
                        object(&[flattened], c.strict, false)
                    }
                    _ => content.unwrap_or_else(|| object(&[], c.strict, false)),
                };
                quote!(__ds::with_tag(#object, #tag, #name))
            }
            _ => match content {
                None => quote!(__ds::string_enum(&[#name])),
                Some(content) => quote!(__ds::single_key(#name, #content)),
            },
        }
    });
    quote!(__ds::any_of(::std::vec![#(#alternatives),*]))
}

/// An internally tagged enum whose every variant is an object (named fields, a newtype
/// over a struct, or a unit variant, each beside the tag): one `__ds::tagged` call over a
/// constant list of each variant's steps, what `enum_schema`'s general form builds with
/// an `object` and a `with_tag` call per variant. `None` for any other enum.
fn tagged_objects(c: &Container, variants: &[Variant]) -> Option<TokenStream> {
    let (Some(tag), None, None) = (&c.serde.tag, &c.serde.content, &c.serde.untagged) else {
        return None;
    };
    let mut checks = Vec::new();
    let (mut names, mut lists) = (Vec::new(), Vec::new());
    for v in variants.iter().filter(|v| !v.serde.skip) {
        if v.serde.untagged || v.serde.with.is_some() {
            return None;
        }
        let (parts, steps, _) = match (v.style, v.fields.as_slice()) {
            // As in `enum_schema`: a newtype's struct fields beside the tag.
            (Style::Tuple, [only]) => {
                let mut flattened = only.clone();
                flattened.serde.flatten = Some(only.span);
                object_parts(&[flattened], c.strict, false)
            }
            (Style::Struct, fields) => object_parts(fields, c.strict, false),
            (Style::Unit, _) => object_parts(&[], c.strict, false),
            // A tuple variant is an array, not an object.
            (Style::Tuple, _) => return None,
        };
        checks.extend(parts);
        names.push(&v.name);
        lists.push(steps);
    }
    // The fields several variants store alike (`_id`, say): one constant step each. Not
    // in a generic enum: a constant in `schema`'s body cannot name the impl's parameters.
    let (shared, lists) = if c.generics.params.is_empty() {
        crate::common::shared::share("STEP", &quote!(__ds::Step), lists)
    } else {
        (TokenStream::new(), lists)
    };
    let rows = names.iter().zip(lists).map(|(name, steps)| quote!((#name, &[#(#steps),*])));
    let (.., strict) = object_parts(&[], c.strict, false);
    Some(quote!({
        #shared
        #(#checks)*
        __ds::tagged(#tag, &[#(#rows),*], #strict)
    }))
}

/// The expression building the container's schema.
fn schema_expr(c: &Container, admit_id: bool) -> TokenStream {
    if let Some(into) = &c.serde.into {
        return quote!(<#into as __ds::Schema>::schema());
    }
    match &c.body {
        // serde writes a newtype struct as its one field, like a transparent one.
        Body::Struct(style, fields)
            if c.serde.transparent || (*style == Style::Tuple && fields.len() == 1) =>
        {
            let stored: Vec<&Field> = fields.iter().filter(|f| !f.serde.skip).collect();
            match stored.as_slice() {
                [only] => field_schema(only),
                _ => quote!(__ds::Document::new()),
            }
        }
        Body::Struct(Style::Struct, fields) => {
            let obj = object(fields, c.strict, admit_id);
            match &c.serde.tag {
                Some(tag) => {
                    let name = c.stored_name();
                    quote!(__ds::with_tag(#obj, #tag, #name))
                }
                None => obj,
            }
        }
        Body::Struct(Style::Tuple, fields) => unnamed(fields),
        Body::Struct(Style::Unit, _) => quote!(__ds::bson_type("null")),
        Body::Enum(variants) => enum_schema(c, variants),
    }
}

/// `impl Schema for T`, with `Schema` bounds on the type parameters.
fn schema_impl(c: &Container, admit_id: bool) -> TokenStream {
    let ident = &c.ident;
    let generics = c.bounded_generics();
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let expr = schema_expr(c, admit_id);
    let document = stored_as_document(c);
    quote! {
        #[automatically_derived]
        impl #impl_generics __ds::Schema for #ident #ty_generics #where_clause {
            const DOCUMENT: bool = #document;
            #[inline]
            fn schema() -> __ds::Document {
                #expr
            }
        }
    }
}

/// `Schema::DOCUMENT`: whether the type is stored as a sub-document. A transparent
/// struct is what its one field is; an enum is a document as soon as one variant
/// carries data or the tag is a key of its own.
fn stored_as_document(c: &Container) -> TokenStream {
    match &c.body {
        Body::Struct(_, fields) if c.serde.transparent => match fields.iter().find(|f| !f.serde.skip) {
            Some(f) => {
                let ty = &f.recv.ty;
                quote!(<#ty as __ds::Schema>::DOCUMENT)
            }
            None => quote!(false),
        },
        Body::Struct(..) if c.serde.into.is_some() => quote!(false),
        Body::Struct(style, _) => {
            let named = *style == Style::Struct;
            quote!(#named)
        }
        Body::Enum(variants) => {
            let document =
                c.serde.tag.is_some() || variants.iter().any(|v| v.style != Style::Unit && !v.serde.skip);
            quote!(#document)
        }
    }
}
