//! Entries that several variants of an enum repeat (the fields every variant stores,
//! with the same type and constraints), named once: a constant each, which every list
//! that holds the entry names. The compiler then checks each such expression once per
//! model instead of once per variant.

use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote};

/// `lists` with each entry that occurs more than once (by its tokens) replaced by a
/// constant of type `ty`, and the constants' items, named `__DS_<prefix>_<n>`. An entry
/// that occurs once stays where it is.
pub(crate) fn share(
    prefix: &str,
    ty: &TokenStream,
    lists: Vec<Vec<TokenStream>>,
) -> (TokenStream, Vec<Vec<TokenStream>>) {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for entry in lists.iter().flatten() {
        let text = entry.to_string();
        match seen.iter_mut().find(|(t, _)| *t == text) {
            Some((_, n)) => *n += 1,
            None => seen.push((text, 1)),
        }
    }
    let mut items = TokenStream::new();
    let mut named: Vec<(String, syn::Ident)> = Vec::new();
    let lists = lists
        .into_iter()
        .map(|list| {
            list.into_iter()
                .map(|entry| {
                    let text = entry.to_string();
                    // A constant cannot name the impl's `Self` (a `Box<Self>` field); an
                    // entry that already names a constant stays as it is.
                    if !seen.iter().any(|(t, n)| *t == text && *n > 1)
                        || names_self(&entry)
                        || is_ident(&entry)
                    {
                        return entry;
                    }
                    if let Some((_, ident)) = named.iter().find(|(t, _)| *t == text) {
                        return quote!(#ident);
                    }
                    let ident = format_ident!("__DS_{}_{}", prefix, named.len());
                    items.extend(quote!(const #ident: #ty = #entry;));
                    named.push((text, ident.clone()));
                    quote!(#ident)
                })
                .collect()
        })
        .collect();
    (items, lists)
}

/// Whether `tokens` are one identifier (a constant's name).
fn is_ident(tokens: &TokenStream) -> bool {
    let mut it = tokens.clone().into_iter();
    matches!((it.next(), it.next()), (Some(TokenTree::Ident(_)), None))
}

/// Whether `tokens` name `Self` anywhere.
fn names_self(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == "Self",
        TokenTree::Group(g) => names_self(&g.stream()),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_entries_become_one_constant_and_single_ones_stay() {
        let lists =
            vec![vec![quote!(a(1)), quote!(b(2))], vec![quote!(a(1)), quote!(c(3))], vec![quote!(a(1))]];
        let (items, lists) = share("X", &quote!(T), lists);
        assert_eq!(
            items.to_string(),
            quote!(
                const __DS_X_0: T = a(1);
            )
            .to_string()
        );
        let text: Vec<Vec<String>> =
            lists.iter().map(|l| l.iter().map(ToString::to_string).collect()).collect();
        assert_eq!(text, [vec!["__DS_X_0", "b (2)"], vec!["__DS_X_0", "c (3)"], vec!["__DS_X_0"]]);
    }

    #[test]
    fn an_entry_naming_self_stays_in_every_list() {
        let entry = quote!(a(<Box<Self> as S>::f));
        let (items, lists) = share("X", &quote!(T), vec![vec![entry.clone()], vec![entry.clone()]]);
        assert!(items.is_empty());
        assert_eq!(lists[1][0].to_string(), entry.to_string());
    }

    #[test]
    fn an_entry_already_naming_a_constant_is_not_named_again() {
        let (items, lists) = share("X", &quote!(T), vec![vec![quote!(ID)], vec![quote!(ID)]]);
        assert!(items.is_empty());
        assert_eq!(lists[0][0].to_string(), "ID");
        assert_eq!(lists[1][0].to_string(), "ID");
    }
}
