//! `#[derive(KeyFamily)]`: a Redis key family, one row of the key catalog. Parse the
//! `#[key(...)]` row and the pattern, check the TTL decision and the pattern against
//! the struct's fields, expand into `docshape::keys::KeyFamily` and the kind's trait
//! (whose operations live in `runtime/src/patterns/keys/`).

mod expand;
mod pattern;
mod ttl;

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
use expand::expand_family;
use pattern::check_placeholders;
pub(crate) use pattern::{parse_pattern, Seg};
use ttl::{check_staleness, check_ttl, TtlDecision};

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
            impl<__DsTenant, __DsId> __ds::CachesTenantId<__DsTenant, __DsId> for #ident {
                fn for_tenant_id(_: __DsTenant, _: __DsId) -> Self {
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
