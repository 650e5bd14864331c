//! Generated tokens placed under the user's tokens.

use proc_macro2::{Group, Span, TokenStream, TokenTree};

/// `tokens` with every span set to `span`, so the compiler's error for them lands
/// under the attribute that asked for the check.
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = TokenTree::Group(group);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}

/// A check that `ty: bound<arg>` (or `ty: bound` without `arg`), as a call to a
/// `const fn` generated in place: rustc reports an unmet bound under `ty`'s tokens and
/// its "required by a bound" note under `bound_at`, the user's tokens both, where a
/// helper in docshape would point its note into docshape's sources.
pub(crate) fn bound_check(
    name: &str,
    ty: TokenStream,
    bound: TokenStream,
    arg: Option<TokenStream>,
    bound_at: Span,
) -> TokenStream {
    let name = proc_macro2::Ident::new(name, bound_at);
    let (def, call) = match arg {
        Some(arg) => (
            respan(quote::quote!(const fn #name<__T: ?Sized + #bound<__A>, __A: ?Sized>() {}), bound_at),
            quote::quote_spanned!(bound_at=> #name::<#ty, #arg>();),
        ),
        None => (
            respan(quote::quote!(const fn #name<__T: ?Sized + #bound>() {}), bound_at),
            quote::quote_spanned!(bound_at=> #name::<#ty>();),
        ),
    };
    quote::quote! { #def #call }
}
