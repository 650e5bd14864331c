//! `#[access(..., paginate)]`: the paginate pattern. Expand into one typed keyset
//! paginator per such access pattern, a method named after the pattern taking its
//! equality values (`docshape::paginate` executes it).

use proc_macro2::TokenStream;
use quote::quote;

use crate::access::{equality, result_type, Access};
use crate::ast::Container;
use crate::common::expansion::Expansion;
use crate::facts::Facts;
use crate::index::KeyKind;

// Paginate has nothing of its own to parse or check: `paginate` is a key of
// `#[access]`, read and checked with the access patterns (an `_id` tie-break, sort keys
// that are never null, arrays or floats).

/// One paginator method per `#[access(..., paginate)]` pattern.
pub(crate) fn expand(cx: &Facts, access: &crate::access::Parsed) -> Expansion {
    // A polymorphic model's row pages through its variant's documents, typed by the
    // variant's fields.
    let container = |a: &Access| match &cx.polymorphic {
        Some(p) => p.container(a.discriminator.as_ref().map(|(_, v)| v.as_str())),
        None => &cx.container,
    };
    Expansion::items(paginators(&cx.container, container, &access.patterns))
}

fn paginators<'c>(
    model: &Container,
    container: impl Fn(&Access) -> &'c Container,
    patterns: &[Access],
) -> TokenStream {
    // A row that is also a write row (an error reported by `access::check`) has its
    // write method, not a second method of the same name.
    let rows = patterns.iter().enumerate().filter(|(_, a)| a.paginate.is_some() && a.update.is_none());
    let methods = rows.filter_map(|(i, a)| a.method.as_ref().map(|method| (i, a, method))).map(|(i, a, method)| {
        let c = container(a);
        // The finders' parameters and statements: each value under `$eq` through the
        // literal encoder, and a variant's discriminator.
        let (params, inserts) = equality(c, a, &mut Vec::new());
        let sort: Vec<String> = a
            .sort
            .iter()
            .map(|k| format!("`{}` {}", k.path, if k.kind == KeyKind::Desc { "descending" } else { "ascending" }))
            .collect();
        let doc = format!(
            "Keyset paginator for the access pattern `{}` ({}): equality on {}, sorted by {}. Served by index `{}`.",
            a.name,
            a.operation,
            if a.filter.is_empty() { "nothing".to_owned() } else { a.filter.iter().map(|(p, _)| format!("`{p}`")).collect::<Vec<_>>().join(", ") },
            sort.join(", "),
            a.index.as_deref().unwrap_or("none"),
        );
        let vis = &model.vis;
        let result = result_type(c, a);
        quote! {
            #[doc = #doc]
            #[allow(clippy::too_many_arguments)]
            #vis fn #method(#(#params),*) -> __ds::Paginator<#result> {
                __ds::Paginator::row(#i, __ds::FilterBuilder::new()#(#inserts)*.build())
            }
        }
    });
    let methods: Vec<TokenStream> = methods.collect();
    if methods.is_empty() {
        return TokenStream::new();
    }
    let ident = &model.ident;
    let generics = model.bounded_generics();
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            #(#methods)*
        }
    }
}
