//! When the derive fails: the errors, plus stub impls so that the user sees the real
//! error instead of a cascade of "trait not implemented" at every use of the type; and
//! when it found errors but could still expand, the expansion without its checks, or
//! the input without the attribute items darling refused.

use darling::ast::NestedMeta;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Attribute, DeriveInput, Ident};

use crate::common::dummy::dummy;

/// The errors, with stub impls of `Schema` (and `Model` for a model).
pub(crate) fn expand(input: &DeriveInput, errors: darling::Error, model: bool) -> TokenStream {
    let errors = errors.write_errors();
    let stubs = stubs(&input.ident, &input.generics, model);
    quote! {
        #errors
        #stubs
    }
}

fn stubs(ident: &Ident, generics: &syn::Generics, model: bool) -> TokenStream {
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let model = model.then(|| {
        quote! {
            impl #impl_generics __ds::Model for #ident #ty_generics #where_clause {
                const COLLECTION: &'static str = "";
            }
        }
    });
    dummy(quote! {
        impl #impl_generics __ds::Schema for #ident #ty_generics #where_clause {
            fn schema() -> __ds::Document {
                __ds::Document::new()
            }
        }
        #model
    })
}

/// The generated items of a derive that reported errors, without its compile-time
/// checks: every check is an anonymous `const _` item (an assertion, a bound, a path
/// lookup), and none declares anything the type's users name. A check may rest on a
/// value that a reported error replaced by a neutral one (a bucket that did not parse
/// leaves its items' array unbounded), so it could raise a second error for the first
/// mistake; the checks run once the reported errors are fixed. Tokens that do not
/// parse as items are kept whole.
pub(crate) fn without_checks(items: TokenStream) -> TokenStream {
    let Ok(mut file) = syn::parse2::<syn::File>(items.clone()) else { return items };
    file.items.retain(|item| !matches!(item, syn::Item::Const(c) if c.ident == "_"));
    quote!(#file)
}

/// `input` without the items darling refuses in its darling-read attributes (the
/// container's `#[container(...)]` and every field's `#[validate(...)]`): a misspelt
/// `min_lenght`, a `validation_level = "lax"`. `reads` says whether darling reads an
/// input; each item is tried alone, on a probe holding only it. darling refuses a
/// whole type for one such item, which took every generated method with it; the
/// type read without it expands with the methods' signatures, beside the refusal.
pub(crate) fn without_refused_items(
    input: &DeriveInput,
    container: &str,
    reads: impl Fn(&DeriveInput) -> bool,
) -> DeriveInput {
    let probe = |attrs: Vec<Attribute>, fields: syn::Fields| DeriveInput {
        attrs,
        vis: syn::Visibility::Inherited,
        ident: input.ident.clone(),
        generics: syn::Generics::default(),
        data: syn::Data::Struct(syn::DataStruct {
            struct_token: Default::default(),
            fields,
            semi_token: None,
        }),
    };
    let no_fields = || {
        syn::Fields::Named(syn::FieldsNamed { brace_token: Default::default(), named: Default::default() })
    };
    let mut out = input.clone();
    out.attrs = kept_items(&input.attrs, container, |attr| reads(&probe(vec![attr], no_fields())));
    let fields: Vec<&mut syn::Field> = match &mut out.data {
        syn::Data::Struct(s) => s.fields.iter_mut().collect(),
        syn::Data::Enum(e) => e.variants.iter_mut().flat_map(|v| v.fields.iter_mut()).collect(),
        syn::Data::Union(_) => Vec::new(),
    };
    for field in fields {
        let alone = |attr: Attribute| {
            let mut f = field.clone();
            f.attrs = vec![attr];
            f.ident = Some(f.ident.unwrap_or_else(|| format_ident!("field")));
            f.colon_token = Some(Default::default());
            let named =
                syn::FieldsNamed { brace_token: Default::default(), named: [f].into_iter().collect() };
            reads(&probe(Vec::new(), syn::Fields::Named(named)))
        };
        field.attrs = kept_items(&field.attrs, "validate", alone);
    }
    out
}

/// `attrs` with the items of each `#[name(...)]` that `accepts` refuses (given the
/// attribute holding the item alone) left out; an attribute that is not a list, or
/// whose items do not parse, is left out whole when `accepts` refuses it.
fn kept_items(attrs: &[Attribute], name: &str, accepts: impl Fn(Attribute) -> bool) -> Vec<Attribute> {
    let mut out = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident(name) || accepts(attr.clone()) {
            out.push(attr.clone());
            continue;
        }
        let syn::Meta::List(list) = &attr.meta else { continue };
        let Ok(items) = NestedMeta::parse_meta_list(list.tokens.clone()) else { continue };
        let with = |items: &[&NestedMeta]| {
            let mut attr = attr.clone();
            let path = &list.path;
            attr.meta = syn::parse_quote!(#path(#(#items),*));
            attr
        };
        let kept: Vec<&NestedMeta> = items.iter().filter(|item| accepts(with(&[item]))).collect();
        out.push(with(&kept));
    }
    out
}
