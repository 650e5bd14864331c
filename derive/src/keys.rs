//! `#[derive(KeyFamily)]`: a Redis key family, one row of the key catalog. Parse the
//! `#[key(...)]` row and the pattern, check the TTL decision and the pattern against
//! the struct's fields, expand into `docshape::keys::KeyFamily` and the kind's trait
//! (whose operations live in `runtime/src/keys/`).

use darling::error::Accumulator;
use darling::util::Ignored;
use darling::{Error, FromDeriveInput, FromField, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Expr, Fields, Ident, Lit, LitStr, Type};

use crate::attr::Flag;
use crate::common::dummy::dummy;
use crate::common::duration::parse_duration;
use crate::common::message::{did_you_mean, rule};

/// What the keys hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Hash,
    Counter,
    List,
    Set,
    SortedSet,
    ShardedCounter,
}

const KINDS: &[&str] = &["string", "hash", "counter", "list", "set", "sorted_set", "sharded_counter"];

impl Kind {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "string" => Self::String,
            "hash" => Self::Hash,
            "counter" => Self::Counter,
            "list" => Self::List,
            "set" => Self::Set,
            "sorted_set" => Self::SortedSet,
            "sharded_counter" => Self::ShardedCounter,
            _ => return None,
        })
    }

    fn stores_values(self) -> bool {
        !matches!(self, Self::Counter | Self::ShardedCounter)
    }

    fn runtime_variant(self) -> TokenStream {
        match self {
            Self::String => quote!(String),
            Self::Hash => quote!(Hash),
            Self::Counter => quote!(Counter),
            Self::List => quote!(List),
            Self::Set => quote!(Set),
            Self::SortedSet => quote!(SortedSet),
            Self::ShardedCounter => quote!(ShardedCounter),
        }
    }

    fn family_trait(self) -> TokenStream {
        match self {
            Self::String => quote!(StringFamily),
            Self::Hash => quote!(HashFamily),
            Self::Counter => quote!(CounterFamily),
            Self::List => quote!(ListFamily),
            Self::Set => quote!(SetFamily),
            Self::SortedSet => quote!(SortedSetFamily),
            Self::ShardedCounter => quote!(ShardedCounterFamily),
        }
    }
}

/// `kind = hash` or `kind = "hash"`.
struct KindLit(Kind);

impl FromMeta for KindLit {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        let (name, span) = match expr {
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                let ident = p.path.get_ident().map(|i| i.unraw().to_string()).unwrap_or_default();
                (ident, p.span())
            }
            Expr::Lit(l) => match &l.lit {
                Lit::Str(s) => (s.value(), s.span()),
                other => return Err(kind_list_error(other.span(), None)),
            },
            Expr::Group(g) => return Self::from_expr(&g.expr),
            other => return Err(kind_list_error(other.span(), None)),
        };
        match Kind::from_name(&name) {
            Some(kind) => Ok(Self(kind)),
            None => Err(kind_list_error(span, Some(&name))),
        }
    }
}

fn kind_list_error(span: Span, name: Option<&str>) -> Error {
    let hint = match name {
        Some("json") => "; JSON values are `kind = string, value = YourType`".to_owned(),
        Some("zset") => "; did you mean `sorted_set`?".to_owned(),
        Some("int" | "integer" | "incr") => "; did you mean `counter`?".to_owned(),
        Some("queue") => "; a queue is `kind = list`".to_owned(),
        Some(name) => did_you_mean(name, KINDS).map(|k| format!("; did you mean `{k}`?")).unwrap_or_default(),
        None => String::new(),
    };
    let what = name.map_or_else(|| "this".to_owned(), |n| format!("`{n}`"));
    Error::custom(format!("{what} is not a kind of key: the kinds are {}{hint}", KINDS.join(", ")))
        .with_span(&span)
}

/// `value = Product` or `value = "Vec<Product>"`.
struct ValueType(Type);

impl FromMeta for ValueType {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        match expr {
            Expr::Path(p) => Ok(Self(Type::Path(syn::TypePath { attrs: Vec::new(), qself: p.qself.clone(), path: p.path.clone() }))),
            Expr::Lit(l) => match &l.lit {
                Lit::Str(s) => s.parse::<Type>().map(Self).map_err(|_| {
                    Error::custom(format!("`{}` is not a type", s.value())).with_span(s)
                }),
                other => Err(Error::custom("expected a type, like `value = Product`").with_span(other)),
            },
            Expr::Group(g) => Self::from_expr(&g.expr),
            other => Err(Error::custom(
                "expected a type, like `value = Product`; write a generic type in quotes: `value = \"Vec<Product>\"`",
            )
            .with_span(other)),
        }
    }
}

#[derive(FromField)]
#[darling(forward_attrs(key))]
struct KeyField {
    ident: Option<Ident>,
    ty: Type,
    attrs: Vec<Attribute>,
}

#[derive(FromDeriveInput)]
#[darling(attributes(key))]
struct KeyReceiver {
    ident: Ident,
    generics: syn::Generics,
    data: darling::ast::Data<Ignored, KeyField>,
    pattern: Option<LitStr>,
    kind: Option<KindLit>,
    value: Option<ValueType>,
    ttl: Option<LitStr>,
    sliding: Flag,
    reason: Option<LitStr>,
    note: Option<LitStr>,
    staleness: Option<LitStr>,
}

/// A segment of a well-formed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Literal(String),
    Placeholder(String),
    Shards(u32, u32),
}

/// Characters a literal segment cannot hold, and why.
fn literal_char_problem(c: char) -> Option<&'static str> {
    Some(match c {
        '*' | '?' | '[' | ']' | '\\' => {
            "a glob character of `SCAN MATCH`, so the family's scan would match other keys"
        }
        '%' => "the escape character of placeholder values, so a value could forge it",
        '|' | '`' => "a character that breaks the Markdown catalog",
        c if c.is_whitespace() || c.is_control() => {
            "whitespace or a control character, which `redis-cli` and logs mangle"
        }
        c if !c.is_ascii() => "not ASCII: keys are printable ASCII (placeholder values are escaped to it)",
        _ => return None,
    })
}

fn is_field_name(s: &str) -> bool {
    syn::parse::Parser::parse_str(Ident::parse_any, s).is_ok()
}

/// The most shards a counter may have: `sum` reads them all in one `MGET`.
pub(crate) const MAX_SHARDS: u64 = 1024;

/// Splits a pattern into segments, or says everything wrong with it.
pub(crate) fn parse_pattern(pattern: &str) -> Result<Vec<Seg>, Vec<String>> {
    if pattern.is_empty() {
        return Err(vec!["the key pattern is empty; write one like \"cache:product:{id}\"".to_owned()]);
    }
    let mut problems = Vec::new();
    let mut segments = Vec::new();
    let parts: Vec<&str> = pattern.split(':').collect();
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() {
            let place = if i == 0 {
                "the pattern starts with `:`"
            } else if i == parts.len() - 1 {
                "the pattern ends with `:`"
            } else {
                "`::` leaves a segment empty"
            };
            problems.push(format!("{place}; every segment between `:`s has text or a placeholder"));
            continue;
        }
        if !part.contains(['{', '}']) {
            match part.chars().find_map(|c| literal_char_problem(c).map(|p| (c, p))) {
                Some((c, why)) => problems.push(format!("`{}` in `{part}` is {why}", c.escape_debug())),
                None => segments.push(Seg::Literal((*part).to_owned())),
            }
            continue;
        }
        let inner = part.strip_prefix('{').and_then(|p| p.strip_suffix('}'));
        match inner {
            Some(inner) if !inner.contains(['{', '}']) => {
                if let Some((a, b)) = inner.split_once("..") {
                    let b = b.strip_prefix('=').unwrap_or(b);
                    match (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                        (Ok(first), Ok(last)) if first > last => problems.push(format!(
                            "`{part}`: the shard range is empty; write it low to high, like `{{0..15}}`"
                        )),
                        (Ok(first), Ok(last)) if u64::from(last - first) + 1 > MAX_SHARDS => problems.push(format!(
                            "`{part}` has {} shards; at most {MAX_SHARDS}, as `sum` reads them all in one `MGET`",
                            u64::from(last - first) + 1
                        )),
                        (Ok(first), Ok(last)) if first == last => problems.push(format!(
                            "`{part}` is one shard: a sharded counter spreads over two or more, like `{{0..15}}`"
                        )),
                        (Ok(first), Ok(last)) => segments.push(Seg::Shards(first, last)),
                        _ => problems.push(format!(
                            "`{part}` is not a shard range: write two numbers, like `{{0..15}}` (both included)"
                        )),
                    }
                } else if inner.is_empty() {
                    problems.push("`{}` names no field; write the field, like `{id}`".to_owned());
                } else if is_field_name(inner) {
                    // `{r#type}` and `{type}` both name the field `r#type`.
                    segments.push(Seg::Placeholder(inner.trim_start_matches("r#").to_owned()));
                } else {
                    problems.push(format!("`{part}`: `{inner}` is not a field name"));
                }
            }
            _ => {
                let (opens, closes) = (part.matches('{').count(), part.matches('}').count());
                let balanced = opens == closes && {
                    let mut depth = 0i32;
                    part.chars().all(|c| {
                        depth += i32::from(c == '{') - i32::from(c == '}');
                        (0..=1).contains(&depth)
                    })
                };
                if !balanced {
                    problems.push(format!("`{part}` has unbalanced braces; a placeholder is `{{field}}`"));
                } else if part.contains("}{") {
                    problems.push(format!(
                        "`{part}` has two placeholders with no separator, so a key could not be split back into their values; put `:` between them"
                    ));
                } else {
                    let fixed = part.replace('{', ":{").replace('}', "}:");
                    let fixed = fixed.trim_matches(':');
                    problems.push(format!(
                        "`{part}`: a placeholder fills a whole segment between `:`s, so a key splits back into its values unambiguously; write `{fixed}`"
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(segments)
    } else {
        Err(problems)
    }
}

/// The TTL decision as parsed.
enum TtlDecision {
    After { seconds: u64, spelled: String },
    Never,
}

/// `"300s"`, `"5m"`, `"2h"`, `"30d"`, `"300"` (seconds), or `"none"`.
fn parse_ttl(lit: &LitStr) -> darling::Result<TtlDecision> {
    let text = lit.value();
    if text.trim() == "none" {
        return Ok(TtlDecision::Never);
    }
    let seconds = parse_duration(lit).map_err(|_| {
        Error::custom(format!(
            "`{}` is not a TTL: write a number with `s`, `m`, `h` or `d`, like \"300s\" or \"30d\", or \"none\" with a reason",
            text.trim()
        ))
        .with_span(lit)
    })?;
    if seconds == 0 {
        return Err(Error::custom("a TTL of 0 deletes a key as soon as it is written; give a period, or `ttl = \"none\"` with a reason").with_span(lit));
    }
    // Redis refuses an expiry whose milliseconds overflow a 64-bit integer.
    if seconds > (i64::MAX / 1000) as u64 {
        return Err(Error::custom("this TTL is longer than Redis can hold").with_span(lit));
    }
    let trimmed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let spelled = if trimmed.bytes().all(|b| b.is_ascii_digit()) { format!("{trimmed}s") } else { trimmed };
    Ok(TtlDecision::After { seconds, spelled })
}

/// `#[derive(KeyFamily)]` on a token stream: the generated code, or the errors with
/// stub impls. Never panics, whatever the input.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let mut partial = Partial::default();
    match family(&input, &mut partial) {
        Ok(tokens) => tokens,
        Err(errors) => {
            let errors = errors.write_errors();
            let stubs = stubs(&input, partial);
            quote!(#errors #stubs)
        }
    }
}

/// What is known of a family that did not check out: enough for stub impls that
/// spare the user a cascade of "no method named `incr`" errors.
#[derive(Default)]
struct Partial {
    kind: Option<Kind>,
    value: Option<Type>,
}

fn shape_error(input: &DeriveInput) -> Option<Error> {
    const SHAPE: &str = "a key family is a struct whose fields are its pattern's placeholders, like `struct ProductCache { id: String }`, or a unit struct for a fixed key";
    match &input.data {
        Data::Union(u) => Some(Error::custom(SHAPE).with_span(&u.union_token)),
        Data::Enum(e) => Some(Error::custom(SHAPE).with_span(&e.enum_token)),
        Data::Struct(s) if matches!(s.fields, Fields::Unnamed(_)) => Some(
            Error::custom(format!("{SHAPE}; placeholders name fields, so a tuple struct has none"))
                .with_span(&s.fields),
        ),
        Data::Struct(_) => None,
    }
}

/// The family's code, or its errors; `partial` is filled in with what checked out.
fn family(input: &DeriveInput, partial: &mut Partial) -> darling::Result<TokenStream> {
    if let Some(e) = shape_error(input) {
        return Err(e);
    }
    let recv = KeyReceiver::from_derive_input(input)?;
    if !input.attrs.iter().any(|a| a.path().is_ident("key")) {
        return Err(Error::custom(
            "a key family is a row of the key catalog: add `#[key(pattern = \"...\", kind = ..., ttl = \"...\")]`",
        )
        .with_span(&recv.ident));
    }
    let mut errors = Error::accumulator();
    // Problems with the row as a whole sit under the attribute's name.
    let attr_span =
        input.attrs.iter().find(|a| a.path().is_ident("key")).map_or(recv.ident.span(), |a| a.path().span());
    let name = recv.ident.unraw().to_string();

    let fields: Vec<&KeyField> = match &recv.data {
        darling::ast::Data::Struct(f) => f.fields.iter().collect(),
        darling::ast::Data::Enum(_) => Vec::new(),
    };
    for f in &fields {
        for attr in f.attrs.iter().filter(|a| a.path().is_ident("key")) {
            errors.push(
                Error::custom(
                    "`#[key]` goes on the type, not on a field: every field is a placeholder of the pattern",
                )
                .with_span(&attr.path().span()),
            );
        }
    }

    let kind = match &recv.kind {
        Some(k) => Some(k.0),
        None => {
            errors.push(
                Error::custom(format!(
                    "name what the keys hold with `kind = ...`: one of {}",
                    KINDS.join(", ")
                ))
                .with_span(&attr_span),
            );
            None
        }
    };
    let value = recv.value.as_ref().map(|v| v.0.clone());
    if let (Some(kind), Some(v)) = (kind, &recv.value) {
        if !kind.stores_values() {
            errors.push(
                Error::custom("a counter holds an integer; `value = Type` is for string, hash, list, set and sorted_set families")
                    .with_span(&v.0),
            );
        }
    }

    let segments = match &recv.pattern {
        None => {
            errors.push(
                Error::custom("missing `pattern = \"...\"`: the family's keys, like \"cache:product:{id}\"")
                    .with_span(&attr_span),
            );
            None
        }
        Some(lit) => match parse_pattern(&lit.value()) {
            Ok(segments) => Some(segments),
            Err(problems) => {
                for p in problems {
                    errors.push(Error::custom(p).with_span(lit));
                }
                None
            }
        },
    };
    if let (Some(segments), Some(lit)) = (&segments, &recv.pattern) {
        check_placeholders(segments, lit, &fields, kind, &mut errors);
    }

    let ttl = check_ttl(&recv, attr_span, &name, &mut errors);
    check_staleness(&recv, ttl.as_ref(), &mut errors);
    *partial = Partial { kind, value: value.clone() };
    errors.finish()?;
    // Every `None` above pushed an error, so these are all present now.
    let (Some(kind), Some(segments), Some(pattern), Some(ttl)) = (kind, segments, &recv.pattern, ttl) else {
        return Err(Error::custom("incomplete key family").with_span(&attr_span));
    };
    Ok(dummy(expand_family(&recv, kind, &segments, pattern, &ttl, &fields, value.as_ref())))
}

fn check_placeholders(
    segments: &[Seg],
    lit: &LitStr,
    fields: &[&KeyField],
    kind: Option<Kind>,
    errors: &mut Accumulator,
) {
    let names: Vec<String> =
        fields.iter().filter_map(|f| f.ident.as_ref().map(|i| i.unraw().to_string())).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut seen: Vec<&str> = Vec::new();
    let mut shard_ranges = 0;
    for seg in segments {
        match seg {
            Seg::Placeholder(p) => {
                if seen.contains(&p.as_str()) {
                    errors.push(
                        Error::custom(format!(
                            "`{{{p}}}` appears twice in the pattern; a field fills one placeholder"
                        ))
                        .with_span(lit),
                    );
                }
                seen.push(p);
                if !names.contains(p) {
                    let hint = if names.is_empty() {
                        "; the struct has no fields".to_owned()
                    } else {
                        did_you_mean(p, &name_refs).map_or_else(
                            || format!("; the fields are {}", names.join(", ")),
                            |n| format!("; did you mean `{{{n}}}`?"),
                        )
                    };
                    errors.push(
                        Error::custom(format!("placeholder `{{{p}}}` names no field of the struct{hint}"))
                            .with_span(lit),
                    );
                }
            }
            Seg::Shards(..) => shard_ranges += 1,
            Seg::Literal(_) => {}
        }
    }
    for f in fields {
        let Some(ident) = &f.ident else { continue };
        let n = ident.unraw().to_string();
        if !seen.contains(&n.as_str()) {
            errors.push(
                Error::custom(format!(
                    "field `{n}` is not in the key pattern `{}`: a key is built from the pattern's placeholders, so parsing a key could not give this field back; add `{{{n}}}` to the pattern, or keep the field out of the key type",
                    lit.value()
                ))
                .with_span(ident),
            );
        }
    }
    match (kind, shard_ranges) {
        (Some(Kind::ShardedCounter), 0) => errors.push(
            Error::custom("a sharded counter's pattern has a shard range segment, like \"counter:orders:{0..15}\"")
                .with_span(lit),
        ),
        (Some(Kind::ShardedCounter), 1) | (_, 0) => {}
        (Some(Kind::ShardedCounter), _) => {
            errors.push(Error::custom("a sharded counter has one shard range; this pattern has several").with_span(lit))
        }
        (_, _) => errors.push(
            Error::custom("a shard range like `{0..15}` belongs to `kind = sharded_counter`; name a field instead, like `{id}`")
                .with_span(lit),
        ),
    }
}

fn check_ttl(
    recv: &KeyReceiver,
    attr_span: Span,
    name: &str,
    errors: &mut Accumulator,
) -> Option<TtlDecision> {
    let Some(lit) = &recv.ttl else {
        errors.push(
            Error::custom(rule(
                "key_ttl",
                format!("the key family `{name}` has no TTL decision, and every cache key has a TTL (patterns-en); write `ttl = \"300s\"` (or \"5m\", \"2h\", \"30d\"), add `sliding` to extend it on every read, or write `ttl = \"none\", reason = \"...\"` for keys that must never expire"),
            ))
            .with_span(&attr_span),
        );
        return None;
    };
    let ttl = errors.handle(parse_ttl(lit))?;
    let reason = recv.reason.as_ref().filter(|r| !r.value().trim().is_empty());
    match &ttl {
        TtlDecision::Never => {
            if reason.is_none() {
                errors.push(
                    Error::custom(rule(
                        "ttl_reason",
                        "`ttl = \"none\"` needs `reason = \"...\"`: say why these keys must never expire (a queue whose durable store is elsewhere, a running total)".to_owned(),
                    ))
                    .with_span(&recv.reason.as_ref().map_or(lit.span(), LitStr::span)),
                );
            }
            if recv.sliding.is_present() {
                errors.push(
                    Error::custom(
                        "`sliding` extends a TTL on every read; `ttl = \"none\"` has none to extend",
                    )
                    .with_span(&recv.sliding.span()),
                );
            }
            // From the text, so a pattern with other mistakes is still held to this rule.
            let pattern = recv.pattern.as_ref().map(LitStr::value).unwrap_or_default();
            if pattern.split(':').next() == Some("cache") {
                errors.push(
                    Error::custom(rule(
                        "cache_ttl",
                        "a family under `cache:` is a cache, and every cache key has a TTL (patterns-en); give it one, like `ttl = \"300s\"`, or move it out of `cache:` if it is not a cache".to_owned(),
                    ))
                    .with_span(lit),
                );
            }
        }
        TtlDecision::After { .. } => {
            if let Some(r) = &recv.reason {
                errors.push(
                    Error::custom("`reason` explains `ttl = \"none\"`; this family expires, so say what else matters in `note = \"...\"`")
                        .with_span(r),
                );
            }
        }
    }
    Some(ttl)
}

/// `staleness = "ttl" | "invalidated"`: whether docshape's writers may leave a cached
/// value stale up to the TTL. Only a family that expires can accept that.
fn check_staleness(recv: &KeyReceiver, ttl: Option<&TtlDecision>, errors: &mut Accumulator) {
    let Some(lit) = &recv.staleness else { return };
    match lit.value().as_str() {
        "invalidated" => {}
        "ttl" => {
            if matches!(ttl, Some(TtlDecision::Never)) {
                errors.push(
                    Error::custom("`staleness = \"ttl\"` accepts cached values stale for up to the TTL, and this family never expires; give it a TTL, or leave `staleness` out so that writers must delete its keys")
                        .with_span(lit),
                );
            }
        }
        other => errors.push(
            Error::custom(format!("unknown staleness `{other}`: write `staleness = \"ttl\"` to accept cached values stale for up to the TTL after a write, or leave it out (`\"invalidated\"`, the default: docshape's writers delete the keys)"))
                .with_span(lit),
        ),
    }
}

fn expand_family(
    recv: &KeyReceiver,
    kind: Kind,
    segments: &[Seg],
    pattern: &LitStr,
    ttl: &TtlDecision,
    fields: &[&KeyField],
    value: Option<&Type>,
) -> TokenStream {
    let ident = &recv.ident;
    let (impl_generics, ty_generics, where_clause) = recv.generics.split_for_impl();
    let type_name = ident.unraw().to_string();
    let segs = segments.iter().map(|s| match s {
        Seg::Literal(text) => quote!(__ds::Segment::Literal(#text)),
        Seg::Placeholder(name) => quote!(__ds::Segment::Placeholder(#name)),
        Seg::Shards(first, last) => quote!(__ds::Segment::Shards { first: #first, last: #last }),
    });
    let kind_variant = kind.runtime_variant();
    let json = value.is_some();
    let ttl = match ttl {
        TtlDecision::After { seconds, spelled } => {
            let sliding = recv.sliding.is_present();
            quote!(__ds::Ttl::After { seconds: #seconds, sliding: #sliding, spelled: #spelled })
        }
        TtlDecision::Never => {
            let reason = recv.reason.as_ref().map(LitStr::value).unwrap_or_default();
            quote!(__ds::Ttl::Never { reason: #reason })
        }
    };
    let note = recv.note.as_ref().map(LitStr::value).unwrap_or_default();
    // Checked by `check_staleness`: "ttl" or "invalidated".
    let staleness = match recv.staleness.as_ref().map(LitStr::value).as_deref() {
        Some("ttl") => format_ident!("Ttl"),
        _ => format_ident!("Invalidated"),
    };
    // Into `docshape::registry`, for the program's catalog; a generic family has no one
    // type to name (its spec is the same for every instantiation: list it by hand).
    let registration = recv.generics.params.is_empty().then(|| {
        quote! {
            __ds::inventory::submit! {
                __ds::RegisteredKeyFamily { spec: &<#ident as __ds::KeyFamily>::SPEC }
            }
        }
    });

    // Placeholders in the pattern's order, each with its field.
    let placeholders: Vec<(&String, &KeyField)> = segments
        .iter()
        .filter_map(|s| match s {
            Seg::Placeholder(p) => fields
                .iter()
                .find(|f| f.ident.as_ref().is_some_and(|i| i.unraw() == p.as_str()))
                .map(|f| (p, *f)),
            _ => None,
        })
        .collect();
    let count = placeholders.len();
    let texts = placeholders.iter().map(|(_, f)| {
        let (field, ty) = (&f.ident, &f.ty);
        // Under the field's type: that is where a missing `Display` is the user's to fix.
        quote_spanned!(ty.span()=> __ds::placeholder_text::<#ty>(&self.#field))
    });
    let vars: Vec<Ident> = placeholders.iter().map(|(p, _)| format_ident!("__ds_{}", p)).collect();
    let inits = placeholders.iter().zip(&vars).map(|((p, f), var)| {
        let (field, ty) = (&f.ident, &f.ty);
        let parse = quote_spanned!(ty.span()=> __ds::parse_placeholder::<#ty>(#p, #var));
        quote!(#field: #parse?)
    });
    let construct = match &recv.data {
        darling::ast::Data::Struct(f) if f.style == darling::ast::Style::Unit => quote!(Self),
        _ => quote!(Self { #(#inits,)* }),
    };
    // A family with one placeholder caches documents whose `_id` has its type: the key
    // is built from the id value itself (see `CachesId`).
    let caches_id = match (placeholders.as_slice(), fields.len()) {
        ([(_, f)], 1) => {
            let (field, ty) = (&f.ident, &f.ty);
            Some(quote! {
                #[automatically_derived]
                impl #impl_generics __ds::CachesId<#ty> for #ident #ty_generics #where_clause {
                    fn for_id(id: #ty) -> Self {
                        Self { #field: id }
                    }
                }
            })
        }
        _ => None,
    };
    let family_trait = kind.family_trait();
    let stored = kind.stores_values().then(|| {
        let encoding = match value {
            Some(ty) => quote_spanned!(ty.span()=> __ds::Json<#ty>),
            None => quote!(__ds::Text),
        };
        quote! {
            #[automatically_derived]
            impl #impl_generics __ds::Stored for #ident #ty_generics #where_clause {
                type Encoding = #encoding;
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics __ds::KeyFamily for #ident #ty_generics #where_clause {
            const SPEC: __ds::KeySpec = __ds::KeySpec {
                name: ::core::concat!(::core::module_path!(), "::", #type_name),
                pattern: #pattern,
                segments: &[#(#segs),*],
                kind: __ds::KeyKind::#kind_variant,
                json: #json,
                ttl: #ttl,
                note: #note,
                staleness: __ds::Staleness::#staleness,
            };

            fn placeholder_values(&self) -> __ds::Vec<__ds::String> {
                let mut values = __ds::Vec::with_capacity(#count);
                #(values.push(#texts);)*
                values
            }

            fn from_placeholder_values(
                values: __ds::Vec<__ds::String>,
            ) -> ::core::result::Result<Self, __ds::KeyError> {
                let [#(#vars),*] = __ds::placeholder_texts::<#count>(&<Self as __ds::KeyFamily>::SPEC, values)?;
                ::core::result::Result::Ok(#construct)
            }
        }
        #stored
        #caches_id
        #[automatically_derived]
        impl #impl_generics __ds::#family_trait for #ident #ty_generics #where_clause {}
        #registration
    }
}

/// Stub impls for a family with errors: the errors are the user's to read, not a
/// cascade of missing traits at every use of the type.
fn stubs(input: &DeriveInput, partial: Partial) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let kind_impls = partial.kind.map(|kind| {
        let family_trait = kind.family_trait();
        let stored = kind.stores_values().then(|| {
            let encoding = match &partial.value {
                Some(ty) => quote_spanned!(ty.span()=> __ds::Json<#ty>),
                None => quote!(__ds::Text),
            };
            quote! {
                impl #impl_generics __ds::Stored for #ident #ty_generics #where_clause {
                    type Encoding = #encoding;
                }
            }
        });
        quote! {
            #stored
            impl #impl_generics __ds::#family_trait for #ident #ty_generics #where_clause {}
        }
    });
    // A `cache = ...` row naming this family then reports no second error.
    let caches_id = input.generics.params.is_empty().then(|| {
        quote! {
            impl<__DsId> __ds::CachesId<__DsId> for #ident {
                fn for_id(_: __DsId) -> Self {
                    ::core::unreachable!()
                }
            }
        }
    });
    dummy(quote! {
        impl #impl_generics __ds::KeyFamily for #ident #ty_generics #where_clause {
            const SPEC: __ds::KeySpec = __ds::KeySpec {
                name: "",
                pattern: "",
                segments: &[],
                kind: __ds::KeyKind::String,
                json: false,
                ttl: __ds::Ttl::Never { reason: "" },
                note: "",
                staleness: __ds::Staleness::Invalidated,
            };
            fn placeholder_values(&self) -> __ds::Vec<__ds::String> {
                __ds::Vec::new()
            }
            fn from_placeholder_values(
                _: __ds::Vec<__ds::String>,
            ) -> ::core::result::Result<Self, __ds::KeyError> {
                ::core::result::Result::Err(__ds::KeyError::WrongValueCount { pattern: "", expected: 0, got: 0 })
            }
        }
        #kind_impls
        #caches_id
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_patterns_parse() {
        assert_eq!(
            parse_pattern("user:{id}:session").unwrap(),
            [Seg::Literal("user".into()), Seg::Placeholder("id".into()), Seg::Literal("session".into())]
        );
        assert_eq!(
            parse_pattern("counter:orders:{0..15}").unwrap(),
            [Seg::Literal("counter".into()), Seg::Literal("orders".into()), Seg::Shards(0, 15)]
        );
        assert_eq!(parse_pattern("queue:emails").unwrap().len(), 2);
    }

    #[test]
    fn malformed_patterns_say_what_is_wrong() {
        let first = |p: &str| parse_pattern(p).unwrap_err().remove(0);
        assert!(first("").contains("empty"));
        assert!(first(":a").contains("starts with"));
        assert!(first("a:").contains("ends with"));
        assert!(first("a::b").contains("`::`"));
        assert!(first("a:{id").contains("unbalanced"));
        assert!(first("a:id}").contains("unbalanced"));
        assert!(first("a:{{id}}").contains("unbalanced"));
        assert!(first("a:{x}{y}").contains("no separator"));
        assert!(first("a:v{x}").contains("write `v:{x}`"));
        assert!(first("a:{}").contains("names no field"));
        assert!(first("a:{1x}").contains("not a field name"));
        assert!(first("a*:{x}").contains("glob"));
        assert!(first("a b").contains("whitespace"));
        assert!(first("a%b").contains("escape"));
        assert!(first("ñ").contains("ASCII"));
        assert!(first("c:{15..0}").contains("empty"));
        assert!(first("c:{0..0}").contains("one shard"));
        assert!(first("c:{0..5000}").contains("at most"));
        assert!(first("c:{a..b}").contains("not a shard range"));
        // Every problem is reported, not just the first.
        assert_eq!(parse_pattern(":a*::{x}{y}").unwrap_err().len(), 4);
    }
}
