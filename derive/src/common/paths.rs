//! Stored paths (`author_id`, `address.city`): resolving them against the model at
//! compile time, and the `HasField` impls that let another type's derive check the
//! segments past the first (a cross-type check that is still a compile error).

use darling::Error;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Type;

use crate::ast::{Body, Container, Field};
use crate::common::message::did_you_mean;
use crate::common::respan::respan;
use crate::common::types::{element, is_option};

/// What a path's first segment names.
pub(crate) struct Resolved<'a> {
    /// The field, or `None` for the implicit `_id` or a path through a flattened field.
    pub field: Option<&'a Field>,
    /// Whether the first segment holds an array (so the rest is per element).
    pub array: bool,
    /// The type the second segment is looked up in.
    pub element: Option<Type>,
    /// The segments after the first.
    pub rest: Vec<String>,
}

/// The stored fields of a struct with named fields (empty for other shapes).
pub(crate) fn stored_fields(c: &Container) -> Vec<&Field> {
    match &c.body {
        Body::Struct(_, fields) => fields.iter().filter(|f| !f.serde.skip && f.name.is_some()).collect(),
        Body::Enum(_) => Vec::new(),
    }
}

fn has_flatten(c: &Container) -> bool {
    matches!(&c.body, Body::Struct(_, fields) if fields.iter().any(|f| f.serde.flatten.is_some() && !f.serde.skip))
}

/// Resolves `path`'s first segment against the model's stored names.
pub(crate) fn resolve<'a>(c: &'a Container, path: &str, span: Span) -> Result<Resolved<'a>, Error> {
    let mut segments = path.split('.');
    let first = segments.next().unwrap_or_default();
    let rest: Vec<String> = segments.map(str::to_owned).collect();
    if rest.iter().any(String::is_empty) || first.is_empty() {
        return Err(Error::custom(format!(
            "`{path}` is not a stored path: segments are separated by single dots"
        ))
        .with_span(&span));
    }
    let fields = stored_fields(c);
    let direct =
        fields.iter().filter(|f| f.serde.flatten.is_none()).find(|f| f.name.as_deref() == Some(first));
    if let Some(field) = direct {
        let (element, array) = element(&field.recv.ty);
        return Ok(Resolved { field: Some(field), array, element, rest });
    }
    if let Some(inner) = c.wraps.as_ref().filter(|_| first != "_id") {
        // A newtype variant: every segment is looked up through the wrapped type, by
        // the checks and parameter types that walk `rest` from `element`.
        let rest = path.split('.').map(str::to_owned).collect();
        return Ok(Resolved { field: None, array: false, element: Some(inner.clone()), rest });
    }
    if first == "_id" || has_flatten(c) {
        // `_id` exists on every document; a flattened type's keys are its own derive's
        // business.
        return Ok(Resolved { field: None, array: false, element: None, rest });
    }
    let names: Vec<&str> = fields.iter().filter_map(|f| f.name.as_deref()).collect();
    let renamed = fields.iter().find(|f| f.recv.ident.as_ref().is_some_and(|i| i == first));
    let hint = match (renamed, did_you_mean(first, &names)) {
        (Some(f), _) => {
            format!("; the field `{first}` is stored as `{}`", f.name.as_deref().unwrap_or_default())
        }
        (None, Some(s)) => format!("; did you mean `{s}`?"),
        (None, None) => format!("; the stored fields are {}", names.join(", ")),
    };
    Err(Error::custom(format!("no stored field `{first}` in `{}`{hint}", c.ident)).with_span(&span))
}

/// A path's segments looked up type by type, as items of a `const _` block.
pub(crate) struct Walk {
    /// One constant per segment (its index among the stored names, or a panic under
    /// the path that names the segment and the closest stored name) and one alias per
    /// type reached, so the tokens grow with the path, not with its square.
    pub items: TokenStream,
    /// Per segment, the `<Type as HasField<{ index }>>` it resolves through.
    pub steps: Vec<TokenStream>,
    /// The type the last segment leads to.
    pub value: TokenStream,
}

/// Looks `segments` up from `start`; `first` is the first segment's number in the
/// user's path (`2` for `customer.address.town` past `customer`), naming the constants.
pub(crate) fn walk(start: TokenStream, segments: &[&str], first: usize, span: Span) -> Walk {
    let alias = |i: usize| syn::Ident::new(&format!("__Type{i}"), span);
    let mut items = quote! { #[allow(dead_code)] type __Type0 = #start; };
    let mut steps = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let (ty, next) = (alias(i), alias(i + 1));
        let index = syn::Ident::new(&format!("__SEGMENT_{}", first + i), span);
        items.extend(quote! {
            #[allow(dead_code)]
            const #index: usize = {
                const __L: __ds::FieldLookup = __ds::FieldLookup::find::<#ty>(#segment);
                if __L.missing() {
                    ::core::panic!("{}", __L.message())
                }
                __L.index()
            };
            #[allow(dead_code)]
            type #next = <#ty as __ds::HasField<{ #index }>>::Value;
        });
        steps.push(quote!(<#ty as __ds::HasField<{ #index }>>));
    }
    let last = alias(segments.len());
    Walk {
        items: respan(items, span),
        steps: steps.into_iter().map(|s| respan(s, span)).collect(),
        value: respan(quote!(#last), span),
    }
}

/// Type-level checks that each segment after the first names a stored field of the
/// type before it; `unique` also requires that no segment is an array. Reported under
/// `span`. Nothing for generic models, whose element types are only known at use.
pub(crate) fn nested_checks(c: &Container, r: &Resolved, span: Span, unique: bool) -> TokenStream {
    let Some(element) = &r.element else { return TokenStream::new() };
    if r.rest.is_empty() || c.generics.type_params().next().is_some() {
        return TokenStream::new();
    }
    let segments: Vec<&str> = r.rest.iter().map(String::as_str).take_while(|s| *s != "$**").collect();
    let Walk { items, steps, value } = walk(quote!(#element), &segments, 2, span);
    let arrays: Vec<_> = steps.iter().map(|s| quote!(#s::ARRAY)).collect();
    let unique_check = unique.then(|| {
        let message = "docshape rule `unique_in_array`: a unique index on a path inside an array of sub-documents enforces uniqueness across documents, not between the elements of one array; waive with `allow(unique_in_array, reason = \"...\")` if that is what you want";
        respan(quote!(const _: () = ::core::assert!(!(false #(|| #arrays)*), #message);), span)
    });
    respan(
        quote! {
            const _: () = {
                #items
                #[allow(dead_code)]
                struct __Path(::core::marker::PhantomData<#value>);
                #unique_check
            };
        },
        span,
    )
}

/// Whether a field is at least as visible as its struct, so its type may appear in
/// the struct's impls. Restricted visibilities count only when written the same way.
fn as_visible(field: &syn::Visibility, container: &syn::Visibility) -> bool {
    use syn::Visibility::{Inherited, Public, Restricted};
    match (container, field) {
        (Inherited, _) | (_, Public(_)) => true,
        (Restricted(a), Restricted(b)) => quote!(#a).to_string() == quote!(#b).to_string(),
        _ => false,
    }
}

/// The type of the value at a nested path, for an equality parameter: the last
/// segment's `HasField::Param`. `None` where the derive cannot spell it (a first
/// segment without a known element type, a generic model).
pub(crate) fn param_type(c: &Container, r: &Resolved, span: Span) -> Option<TokenStream> {
    let element = r.element.as_ref()?;
    if r.rest.is_empty()
        || c.generics.type_params().next().is_some()
        || r.rest.iter().any(|s| s.starts_with('$'))
    {
        return None;
    }
    let mut ty = respan(quote!(#element), span);
    let mut param = None;
    for segment in &r.rest {
        // The segment's position, looked up as the path checks look it up; a segment
        // that does not exist is reported by those checks, under the path.
        let index = quote!({ __ds::FieldLookup::find::<#ty>(#segment).index() });
        let has = respan(quote!(__ds::HasField<#index>), span);
        param = Some(quote!(<#ty as #has>::Param));
        ty = quote!(<#ty as #has>::Value);
    }
    param
}

/// Type-level checks that no segment after the first of a paginated sort path can be
/// null or missing, or hold an array, and that the last is not a float; each check
/// only where its rule is not waived (`[nullable, array, float]`).
pub(crate) fn sort_checks(c: &Container, r: &Resolved, span: Span, rules: [bool; 3]) -> TokenStream {
    let Some(element) = &r.element else { return TokenStream::new() };
    if r.rest.is_empty() || c.generics.type_params().next().is_some() {
        return TokenStream::new();
    }
    let segments: Vec<&str> = r.rest.iter().map(String::as_str).collect();
    let Walk { items, steps, .. } = walk(quote!(#element), &segments, 2, span);
    let nullable: Vec<_> = steps.iter().map(|s| quote!(#s::NULLABLE)).collect();
    let array: Vec<_> = steps.iter().map(|s| quote!(#s::ARRAY)).collect();
    let last = steps.last().map_or_else(|| quote!(false), |s| quote!(#s::FLOAT));
    let [check_nullable, check_array, check_float] = rules;
    let mut asserts = Vec::new();
    if check_nullable {
        asserts.push(quote!(::core::assert!(!(false #(|| #nullable)*), "docshape rule `nullable_sort`: this paginated sort path can be null or missing; sort on another field, or waive with `allow(nullable_sort, reason = \"...\")`");));
    }
    if check_array {
        asserts.push(quote!(::core::assert!(!(false #(|| #array)*), "docshape rule `array_sort`: this paginated sort path goes through an array; sort on another field, or waive with `allow(array_sort, reason = \"...\")`");));
    }
    if check_float {
        asserts.push(quote!(::core::assert!(!#last, "docshape rule `float_sort`: this paginated sort path ends in a float; sort on another field, or waive with `allow(float_sort, reason = \"...\")`");));
    }
    respan(quote!(const _: () = { #items #(#asserts)* };), span)
}

/// The largest field table the runtime reads (`__ds::MAX_TABLE_FIELDS`): a type with
/// more stored fields gets one `HasField` impl per field.
const MAX_TABLE_FIELDS: usize = 64;

/// What a stored field's `HasField` impl says: its value, stored and parameter types,
/// and its flags (`__ds::Field`'s bits: array 1, nullable 2, float 4).
struct Entry {
    value: TokenStream,
    stored: TokenStream,
    param: TokenStream,
    flags: u8,
}

fn entry(c: &Container, f: &Field) -> Entry {
    let (element, array) = element(&f.recv.ty);
    // An associated type may not be less visible than the impl (E0446, a hard error):
    // a field less visible than its struct may have a private type, so paths continue
    // through it unchecked.
    let visible = as_visible(&f.recv.vis, &c.vis);
    let element = element.filter(|_| visible);
    let stored = if visible {
        let ty = &f.recv.ty;
        quote!(#ty)
    } else {
        quote!(__ds::Open)
    };
    let param = if visible && f.serde.with.is_none() && f.recv.bson_type.is_none() {
        stored.clone()
    } else {
        quote!(__ds::Bson)
    };
    let float =
        !array && element.as_ref().is_some_and(|t| crate::common::types::is_named(t, &["f64", "f32"]));
    let nullable = is_option(&f.recv.ty) || f.serde.skip_serializing_if.is_some();
    let value = element.map_or_else(|| quote!(__ds::Open), |t| quote!(#t));
    let flags = u8::from(array) | (u8::from(nullable) << 1) | (u8::from(float) << 2);
    Entry { value, stored, param, flags }
}

/// The field table of `entries` (`StoredNames::Fields`): chunks of eight, the last
/// padded with `()`, nested from the last.
fn table(entries: &[Entry]) -> TokenStream {
    let mut table = quote!(());
    let chunks: Vec<Vec<TokenStream>> = entries
        .chunks(8)
        .map(|chunk| {
            let mut chunk: Vec<TokenStream> = chunk
                .iter()
                .map(|Entry { value, stored, param, flags }| {
                    let flags = proc_macro2::Literal::u8_unsuffixed(*flags);
                    quote!(__ds::Field<#value, #stored, #param, #flags>)
                })
                .collect();
            chunk.resize_with(8, || quote!(()));
            chunk
        })
        .collect();
    for chunk in chunks.into_iter().rev() {
        table = quote!(((#(#chunk),*), #table));
    }
    table
}

/// The stored names and field table of a struct-like container whose fields are all
/// its own (a polymorphic model's variant of named fields, its tag among them), for
/// `VariantFields`; `None` when it flattens a type or has more fields than a table
/// holds.
pub(crate) fn field_table(c: &Container) -> Option<(Vec<String>, TokenStream)> {
    let fields = stored_fields(c);
    if has_flatten(c) || fields.len() > MAX_TABLE_FIELDS {
        return None;
    }
    let names = fields.iter().map(|f| f.name.clone().unwrap_or_default()).collect();
    let entries: Vec<Entry> = fields.into_iter().map(|f| entry(c, f)).collect();
    Some((names, table(&entries)))
}

/// `StoredNames` and the `HasField` impls (by each field's position in the names), so
/// paths from other models can be checked through the type: a table of the fields (one
/// `__ds::Field` type each) marked `__ds::FieldTable`, which the runtime's one generic
/// `HasField` impl reads, or one impl per field past the table's size. Open (any key
/// accepted, `__ds::OpenFields`) for enums and flattened structs.
pub(crate) fn has_field_impls(c: &Container) -> TokenStream {
    let ident = &c.ident;
    let type_name = ident.to_string();
    let generics = c.bounded_generics();
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let names = |names: &[String], open: bool, fields: TokenStream, id: TokenStream| {
        // `OPEN` defaults to `false`: only an open type states it.
        let open = open.then(|| {
            quote!(
                const OPEN: bool = true;
            )
        });
        quote! {
            impl #impl_generics __ds::StoredNames for #ident #ty_generics #where_clause {
                const NAME: &'static str = #type_name;
                const NAMES: &'static [&'static str] = &[#(#names),*];
                #open
                type Fields = #fields;
                type Id = #id;
            }
        }
    };
    match &c.body {
        Body::Struct(darling::ast::Style::Struct, _)
            if !has_flatten(c) && !c.serde.transparent && c.serde.into.is_none() =>
        {
            let fields = stored_fields(c);
            let mut stored_names: Vec<String> =
                fields.iter().map(|f| f.name.clone().unwrap_or_default()).collect();
            let mut entries: Vec<Entry> = fields.into_iter().map(|f| entry(c, f)).collect();
            if let Some(t) = &c.serde.tag {
                stored_names.push(t.value());
                let s = quote!(::std::string::String);
                entries.push(Entry { value: s.clone(), stored: s.clone(), param: s, flags: 0 });
            }
            let id = stored_names
                .iter()
                .position(|n| n == "_id")
                .map_or_else(|| quote!(__ds::Open), |i| entries[i].stored.clone());
            if entries.len() > MAX_TABLE_FIELDS {
                let impls = entries.iter().enumerate().map(|(i, e)| {
                    let Entry { value, stored, param, flags } = e;
                    // The trait's flags default to `false`: only the true ones are written.
                    let array = (flags & 1 != 0).then(|| {
                        quote!(
                            const ARRAY: bool = true;
                        )
                    });
                    let nullable = (flags & 2 != 0).then(|| {
                        quote!(
                            const NULLABLE: bool = true;
                        )
                    });
                    let float = (flags & 4 != 0).then(|| {
                        quote!(
                            const FLOAT: bool = true;
                        )
                    });
                    quote! {
                        impl #impl_generics __ds::HasField<#i> for #ident #ty_generics #where_clause {
                            type Value = #value;
                            type Stored = #stored;
                            type Param = #param;
                            #array #nullable #float
                        }
                    }
                });
                let names = names(&stored_names, false, quote!(()), id);
                return quote!(#names #(#impls)*);
            }
            // The runtime's one generic impl reads the table (`__ds::FieldTable`).
            let names = names(&stored_names, false, table(&entries), id);
            quote! {
                #names
                impl #impl_generics __ds::FieldTable for #ident #ty_generics #where_clause {}
            }
        }
        _ => {
            let names = names(&[], true, quote!(__ds::OpenFields), quote!(__ds::Open));
            quote! {
                #names
                impl #impl_generics __ds::FieldTable for #ident #ty_generics #where_clause {}
            }
        }
    }
}
