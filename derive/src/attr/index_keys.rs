//! Index key lists: stored paths, as in `keys(author_id, created_at = -1, "address.city")`,
//! `sort(created_at = -1)` and `allow(unserved, reason = "...")`.

use darling::{Error, FromMeta, Result};
use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::{Ident, LitInt, LitStr, Token};

use crate::common::message::did_you_mean;

/// What follows a path: `= 1`, `= -1`, `= "text"`, `= desc`, or `(flag)`.
#[derive(Debug, Clone)]
pub(crate) enum KeyValue {
    Int(i64),
    Str(String),
    Word(String),
}

/// One path of a list, with what follows it.
#[derive(Debug, Clone)]
pub(crate) struct KeyItem {
    pub path: String,
    pub span: Span,
    pub value: Option<(KeyValue, Span)>,
}

impl Parse for KeyItem {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let (path, span) = if input.peek(LitStr) {
            let lit: LitStr = input.parse()?;
            (lit.value(), lit.span())
        } else {
            let ident = Ident::parse_any(input)?;
            let mut path = ident.unraw().to_string();
            // `User::name`: another model's field (the `lookup` rule reads it).
            while input.peek(Token![::]) {
                input.parse::<Token![::]>()?;
                path.push_str("::");
                path.push_str(&Ident::parse_any(input)?.unraw().to_string());
            }
            (path, ident.span())
        };
        let value = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            Some(if input.peek(Token![-]) {
                let minus: Token![-] = input.parse()?;
                let int: LitInt = input.parse()?;
                let value = int
                    .base10_parse::<i64>()?
                    .checked_neg()
                    .ok_or_else(|| syn::Error::new(int.span(), "number out of range"))?;
                (KeyValue::Int(value), minus.span)
            } else if input.peek(LitInt) {
                let int: LitInt = input.parse()?;
                (KeyValue::Int(int.base10_parse()?), int.span())
            } else if input.peek(LitStr) {
                let s: LitStr = input.parse()?;
                (KeyValue::Str(s.value()), s.span())
            } else {
                let word = Ident::parse_any(input)?;
                (KeyValue::Word(word.to_string()), word.span())
            })
        } else if input.peek(syn::token::Paren) {
            let inner;
            syn::parenthesized!(inner in input);
            let word = Ident::parse_any(&inner)?;
            if !inner.is_empty() {
                return Err(inner.error("expected one word, like `(desc)`"));
            }
            Some((KeyValue::Word(word.to_string()), word.span()))
        } else {
            None
        };
        Ok(Self { path, span, value })
    }
}

/// A parenthesised list of [`KeyItem`]s.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyList {
    pub items: Vec<KeyItem>,
    pub span: Option<Span>,
}

impl FromMeta for KeyList {
    fn from_meta(item: &syn::Meta) -> Result<Self> {
        match item {
            syn::Meta::List(list) => {
                let items = list
                    .parse_args_with(Punctuated::<KeyItem, Token![,]>::parse_terminated)
                    .map_err(Error::from)?;
                Ok(Self { items: items.into_iter().collect(), span: Some(list.path.span()) })
            }
            other => {
                Err(Error::custom("expected a list of stored fields, like `(author_id, created_at = -1)`")
                    .with_span(other))
            }
        }
    }
}

/// The design rules a pattern or index may waive.
pub(crate) const RULES: &[&str] = &[
    "unserved",
    "esr_order",
    "redundant_index",
    "index_budget",
    "unique_in_array",
    "collation_mismatch",
    "scatter_gather",
    "nullable_sort",
    "array_sort",
    "float_sort",
    "mutable_sort",
    "old_version_field",
    "lookup",
    "unbounded_array",
    "upsert_without_unique",
    "cross_tenant",
];

/// `allow(rule, ..., reason = "...")`: waived rules, with the reason the waiver is
/// legitimate (required, and shown in the access-pattern table).
#[derive(Debug, Clone, Default)]
pub(crate) struct Allow {
    pub rules: Vec<(String, Span)>,
    /// The reason of the first `allow(...)`.
    pub reason: String,
    /// Each rule's reason, in the order of `rules`: rows and indexes may say
    /// `allow(...)` more than once, each with its own reason.
    pub reasons: Vec<String>,
}

impl Allow {
    pub(crate) fn waives(&self, rule: &str) -> bool {
        self.rules.iter().any(|(r, _)| r == rule)
    }

    /// Several `allow(...)` of one row or index as one waiver, each rule with the
    /// reason it was given with (a rule waived twice keeps its first reason).
    pub(crate) fn merged(allows: Vec<Allow>) -> Allow {
        let mut out = Allow::default();
        for allow in allows {
            if out.reason.is_empty() {
                out.reason = allow.reason.clone();
            }
            for (rule, reason) in allow.rules.into_iter().zip(allow.reasons) {
                if !out.waives(&rule.0) {
                    out.rules.push(rule);
                    out.reasons.push(reason);
                }
            }
        }
        out
    }
}

impl FromMeta for Allow {
    fn from_meta(item: &syn::Meta) -> Result<Self> {
        let list = KeyList::from_meta(item)?;
        let mut errors = Error::accumulator();
        let mut out = Allow::default();
        for key in list.items {
            match (&key.path[..], &key.value) {
                ("reason", Some((KeyValue::Str(reason), span))) => {
                    if reason.trim().is_empty() {
                        errors.push(
                            Error::custom("a waiver needs a reason: say why this design is right")
                                .with_span(span),
                        );
                    }
                    out.reason = reason.clone();
                }
                (rule, None) if RULES.contains(&rule) => out.rules.push((rule.to_owned(), key.span)),
                (rule, _) => {
                    let hint = did_you_mean(rule, RULES)
                        .map(|r| format!("; did you mean `{r}`?"))
                        .unwrap_or_else(|| format!("; the rules are {}", RULES.join(", ")));
                    errors.push(
                        Error::custom(format!("`{rule}` is not a design rule docshape can waive{hint}"))
                            .with_span(&key.span),
                    );
                }
            }
        }
        out.reasons = vec![out.reason.clone(); out.rules.len()];
        if out.reason.is_empty() && !out.rules.is_empty() {
            errors.push(
                Error::custom("a waiver needs `reason = \"...\"`: say why this design is right")
                    .with_span(&item.path().span()),
            );
        }
        errors.finish_with(out)
    }
}
