//! Entries that several variants of an enum repeat (the fields every variant stores,
//! with the same type and constraints), named once: a constant each, which every list
//! that holds the entry names. The compiler then checks each such expression once per
//! model instead of once per variant.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// `lists` with each entry that occurs more than once (by its tokens) replaced by a
/// constant of type `ty`, and the constants' items, named `__DS_<prefix>_<n>`. An entry
/// that occurs once stays where it is.
pub(crate) fn share(
    prefix: &str,
    ty: &TokenStream,
    lists: Vec<Vec<TokenStream>>,
) -> (TokenStream, Vec<Vec<TokenStream>>) {
    // Each entry is printed once: printing a token stream is a call into the compiler,
    // and the derive's most frequent one on a polymorphic model.
    let lists: Vec<Vec<(String, TokenStream)>> = lists
        .into_iter()
        .map(|list| list.into_iter().map(|entry| (entry.to_string(), entry)).collect())
        .collect();
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for (text, _) in lists.iter().flatten() {
        match seen.iter_mut().find(|(t, _)| *t == text.as_str()) {
            Some((_, n)) => *n += 1,
            None => seen.push((text, 1)),
        }
    }
    let repeated: Vec<String> = seen.into_iter().filter(|(_, n)| *n > 1).map(|(t, _)| t.to_owned()).collect();
    let mut items = TokenStream::new();
    let mut named: Vec<(String, syn::Ident)> = Vec::new();
    let lists = lists
        .into_iter()
        .map(|list| {
            list.into_iter()
                .map(|(text, entry)| {
                    // A constant cannot name the impl's `Self` (a `Box<Self>` field); an
                    // entry that already names a constant stays as it is.
                    if !repeated.contains(&text) || names_self(&text) || is_ident(&text) {
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

/// Whether an entry, as printed, is one identifier (a constant's name). Read from the
/// text: walking the tokens asks the compiler for each one.
fn is_ident(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Whether an entry, as printed, names `Self` anywhere. A string literal holding the
/// word also counts, which only keeps that entry unshared.
fn names_self(text: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|word| word == "Self")
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
