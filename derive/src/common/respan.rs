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
