//! `impl MaxBsonSize` (the largest BSON a value can encode to, field names
//! included), computed at compile time from the fields' own sizes
//! (`runtime/src/core/size.rs` holds the trait and the arithmetic). Why a size is
//! unknown is an `Unsized` value that leads from the type down to the field with no
//! bound: each document type lists its elements with their keys, and the message is
//! rendered from that path where it is shown.
//!
//! Sizes of field types are looked up through `Probe`, which answers "unknown" for a
//! type without the trait instead of failing to compile: a model that never needs
//! its size keeps compiling whatever its fields are.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Type;

use crate::ast::{Body, Container, Field, Variant};
use crate::common::types::{self, classify, Kind};

/// MongoDB's document limit: 16 MiB.
pub(crate) const LIMIT: u64 = 16 * 1024 * 1024;

/// `(Option<usize>, Unsized)` tokens: the size of `ty`'s value and, when unknown, why.
pub(crate) fn probe_part(ty: &Type) -> TokenStream {
    quote!(__ds::Probe::<#ty>::PART)
}

fn is_char(ty: &Type) -> bool {
    let (Some(inner), _) = types::element(ty) else { return false };
    types::is_named(&inner, &["char"])
}

/// A value's size as the derive writes it: when the attributes alone fix it (a
/// `String` with `max_length`, an array with no `max_items`, a value docshape cannot
/// see), the bytes themselves, so that the element is plain data; otherwise a
/// constant expression the compiler evaluates (`Probe::<T>::PART`, which looks the
/// type up). A constant expression costs the compiler about twice what a literal
/// does, per element of every model, so the data form is used wherever it can be.
enum ValuePart {
    /// The bytes (`None`: unbounded) and the `Unsized` reason tokens.
    Data(Option<usize>, TokenStream),
    /// A `(Option<usize>, Unsized)` constant expression.
    Expr(TokenStream),
}

impl ValuePart {
    fn unknown(why: TokenStream) -> Self {
        Self::Data(None, why)
    }

    fn known(size: usize) -> Self {
        Self::Data(Some(size), quote!(__ds::sz::Unsized::Known))
    }

    /// A string of at most `chars` code points (`runtime::size::string`).
    fn string(chars: u64) -> Self {
        match string_size(chars) {
            Some(size) => Self::known(size),
            None => {
                let chars = chars as usize;
                Self::Expr(quote!((__ds::sz::string(#chars), __ds::sz::Unsized::Known)))
            }
        }
    }

    /// An array of at most `n` of these values (`runtime::size::array_of`): unbounded
    /// with the item's reason when the item is.
    fn array(self, n: u64) -> Self {
        let expr = |item: TokenStream| {
            let n = n as usize;
            Self::Expr(quote!(__ds::sz::array_of(#n, #item)))
        };
        match self {
            Self::Data(Some(item), why) => match array_size(n, item) {
                Some(size) => Self::known(size),
                None => expr(Self::Data(Some(item), why).tokens()),
            },
            unbounded @ Self::Data(None, _) => unbounded,
            Self::Expr(item) => expr(item),
        }
    }

    /// `(Option<usize>, Unsized)` tokens.
    fn tokens(self) -> TokenStream {
        match self {
            Self::Data(size, why) => {
                let size = size_tokens(size);
                quote!((#size, #why))
            }
            Self::Expr(part) => part,
        }
    }
}

/// `Some(n)` / `None` as an `Option<usize>` expression.
fn size_tokens(size: Option<usize>) -> TokenStream {
    match size {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::<usize>::None),
    }
}

/// The largest value size the derive computes itself: far enough below a 32-bit
/// `usize`'s limit that the runtime's arithmetic (`checked_*`, `None` on overflow),
/// the element's key included, gives the same result on every target.
const DATA_MAX: u128 = (u32::MAX / 2) as u128;

/// `runtime::size::string`: a string of at most `chars` code points (length, UTF-8
/// bytes, NUL), when it stays under [`DATA_MAX`].
fn string_size(chars: u64) -> Option<usize> {
    let n = chars as u128 * 4 + 5;
    (n <= DATA_MAX).then_some(n as usize)
}

/// `runtime::size::array`: at most `n` values of `value` bytes, keyed by index, when
/// it stays under [`DATA_MAX`].
fn array_size(n: u64, value: usize) -> Option<usize> {
    let (n, value) = (n as u128, value as u128);
    let mut digits = 0u128;
    let (mut low, mut high, mut width) = (0u128, 10u128, 1u128);
    while low < n {
        digits += (high.min(n) - low) * width;
        (low, high, width) = (high, high * 10, width + 1);
    }
    let total = (value + 2) * n + 5 + digits;
    (total <= DATA_MAX).then_some(total as usize)
}

/// The size of one field's value and why it is unknown, as one `(Option<usize>,
/// Unsized)` constant expression: a type's size is looked up once
/// (`Probe::<T>::PART`), not once for the size and again for the reason, which halves
/// what the compiler resolves per field. The reason names no field: the element that
/// holds the value does ([`element_part`]), so that a path through embedded types is
/// written once, where a message is rendered.
pub(crate) fn value_part(f: &Field) -> TokenStream {
    value_data(f).tokens()
}

/// [`value_part`], as data where the attributes fix the size.
fn value_data(f: &Field) -> ValuePart {
    let r = &f.recv;
    let ty = &r.ty;
    let unknown =
        |what: String| ValuePart::unknown(quote!(__ds::sz::Unsized::Value { what: #what, fix: false }));
    if let Some(with) = &f.serde.with {
        return unknown(format!("written by `{}`, whose output size docshape cannot see", with.value()));
    }
    if r.bson_type.is_some() {
        return unknown("given its own `bson_type`, whose size docshape cannot see".to_owned());
    }
    // A raw `#[reference(T)]` without a bound of its own is as large as `T._id`, as a
    // `Ref<T>` is (and validated so).
    let own_bound = r.max_length.is_some() || r.items.as_ref().is_some_and(|i| i.max_length.is_some());
    if let (false, Some((_, as_ref))) = (own_bound, crate::attr::reference::as_ref_type(ty, &r.attrs)) {
        return match (classify(ty), &r.max_items) {
            (Kind::Array, Some(n)) => {
                let (elem, _) = types::element(&as_ref);
                ValuePart::Expr(quote!(__ds::Probe::<#elem>::PART)).array(**n)
            }
            (Kind::Array, None) => ValuePart::unknown(quote!(__ds::sz::NO_MAX_ITEMS)),
            _ => ValuePart::Expr(quote!(__ds::Probe::<#as_ref>::PART)),
        };
    }
    if let Some(size) = fixed_size(ty) {
        return ValuePart::known(size);
    }
    match classify(ty) {
        Kind::String if !is_char(ty) => match &r.max_length {
            Some(n) => ValuePart::string(**n),
            None => ValuePart::unknown(quote!(__ds::sz::NO_MAX_LENGTH)),
        },
        Kind::Array if !matches!(peel_array(ty), Some(Type::Array(_))) => {
            let (elem, _) = types::element(ty);
            let string_items = elem.as_ref().is_some_and(|e| classify(e) == Kind::String && !is_char(ty));
            match (&r.max_items, elem) {
                (Some(n), Some(_)) if string_items => string_item(f).array(**n),
                (Some(n), Some(elem)) => match fixed_size(&elem) {
                    Some(size) => ValuePart::known(size).array(**n),
                    None => ValuePart::Expr(quote!(__ds::Probe::<#elem>::PART)).array(**n),
                },
                (Some(_), None) => unknown("an array of values whose size docshape cannot see".to_owned()),
                (None, _) => ValuePart::unknown(quote!(__ds::sz::NO_MAX_ITEMS)),
            }
        }
        _ => ValuePart::Expr(quote!(__ds::Probe::<#ty>::PART)),
    }
}

/// The bytes of a scalar whose size its spelling tells (`i32`, `Option<f64>`, ...), as
/// `runtime::size`'s `fixed!` table states them, with the wrappers whose size is their
/// content's (`Option`, `Box`, `Rc`, `Arc`, `&`). Written as a number, the compiler
/// need not look the size up by type for each such field.
fn fixed_size(ty: &Type) -> Option<usize> {
    match ty {
        Type::Reference(r) => fixed_size(&r.elem),
        Type::Paren(p) => fixed_size(&p.elem),
        Type::Group(g) => fixed_size(&g.elem),
        Type::Path(p) if p.qself.is_none() && p.path.leading_colon.is_none() => {
            let [segment] = p.path.segments.iter().collect::<Vec<_>>()[..] else {
                return None;
            };
            let name = segment.ident.to_string();
            match (&segment.arguments, name.as_str()) {
                (syn::PathArguments::None, "bool") => Some(1),
                (syn::PathArguments::None, "i8" | "i16" | "i32" | "u8" | "u16") => Some(4),
                (syn::PathArguments::None, "i64" | "isize" | "u32" | "u64" | "usize" | "f32" | "f64") => {
                    Some(8)
                }
                (syn::PathArguments::AngleBracketed(args), "Option" | "Box" | "Rc" | "Arc")
                    if args.args.len() == 1 =>
                {
                    match args.args.first() {
                        Some(syn::GenericArgument::Type(inner)) => fixed_size(inner),
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The size of one element of array field `f` whose element type is `item`: a string
/// as long as the field's `items(max_length = N)` lets it be (the bound a string
/// element carries), any other type as its own size says.
pub(crate) fn item_part(f: &Field, item: &Type) -> TokenStream {
    if classify(item) != Kind::String || is_char(item) {
        return probe_part(item);
    }
    string_item(f).tokens()
}

/// A string item of array field `f`: as long as its `items(max_length = N)` lets it
/// be, unbounded without one.
fn string_item(f: &Field) -> ValuePart {
    match f.recv.items.as_ref().and_then(|i| i.max_length.as_ref()) {
        Some(m) => ValuePart::string(**m),
        None => ValuePart::unknown(quote!(__ds::sz::Unsized::Value {
            what: "an array of Strings with no `#[validate(items(max_length = N))]`",
            fix: true
        })),
    }
}

/// [`value_part`] as separate `(size, reason)` tokens.
pub(crate) fn value_size(f: &Field) -> (TokenStream, TokenStream) {
    let part = value_part(f);
    (quote!((#part).0), quote!((#part).1))
}

/// Whether a field's value is an array (so that a path into its items reads `key[]`).
pub(crate) fn is_many(f: &Field) -> bool {
    matches!(types::element(&f.recv.ty), (Some(_), true))
}

/// The type inside `Option`s, to tell a fixed-size `[T; N]` from a `Vec`.
fn peel_array(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if last.ident != "Option" {
                return Some(ty);
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
                    syn::GenericArgument::Type(t) => peel_array(t),
                    _ => None,
                }),
                _ => Some(ty),
            }
        }
        Type::Group(g) => peel_array(&g.elem),
        Type::Paren(p) => peel_array(&p.elem),
        other => Some(other),
    }
}

/// One element of a document as an `Element` constant expression (its key, size and
/// why that is unknown), or the merged elements of a flattened field. An element whose
/// size the attributes fix is a struct literal, with its bytes counted here as
/// `runtime::size::element` counts them (type byte, key, NUL, value).
pub(crate) fn element_part(f: &Field) -> TokenStream {
    match piece(f) {
        Piece::Known(size) => {
            let key = f.name.as_deref().unwrap_or_default();
            let many = is_many(f);
            let size = size_tokens(Some(size));
            quote!(__ds::sz::Element { key: #key, many: #many, size: #size, why: __ds::sz::Unsized::Known })
        }
        Piece::Unbounded(tokens) | Piece::Looked(tokens) => tokens,
    }
}

/// One element of a document, by what it can change in the document's size and its
/// reason (`runtime::size`: the sizes are added up, and the first element with no
/// bound is the one a message names).
enum Piece {
    /// A size the attributes fix, the element's bytes (type byte, key, NUL, value):
    /// such an element only adds to the total, it is never named.
    Known(usize),
    /// No bound, from the attributes alone: the document has none either, and no
    /// element after this one can be named.
    Unbounded(TokenStream),
    /// A size the compiler looks up, or a flattened document's elements.
    Looked(TokenStream),
}

/// [`element_part`], as the [`Piece`] it is.
fn piece(f: &Field) -> Piece {
    let part = value_data(f);
    if f.serde.flatten.is_some() {
        let part = part.tokens();
        return Piece::Looked(quote!(__ds::sz::flattened_of(#part)));
    }
    let key = f.name.as_deref().unwrap_or_default();
    let many = is_many(f);
    match part {
        ValuePart::Data(Some(size), _) => Piece::Known(size + key.len() + 2),
        ValuePart::Data(None, why) => Piece::Unbounded(
            quote!(__ds::sz::Element { key: #key, many: #many, size: ::core::option::Option::<usize>::None, why: #why }),
        ),
        ValuePart::Expr(part) => Piece::Looked(quote!(__ds::sz::element_of(#key, #many, #part))),
    }
}

/// A document's size list (`Unsized::Fields`) from its elements in order, `known`
/// bytes (a tag's element, say) besides them: only what can change the size or the
/// element a message names is written. The runtime adds the sizes up and names the
/// first element with no bound, so
/// - the sizes the attributes fix are added up here, into one element (or a few,
///   each under [`DATA_MAX`]) placed last: they are never named;
/// - the list ends at the first element that has no bound by its attributes alone:
///   the total is then unknown, and nothing after it can be named first.
///
/// The elements in between (sizes the compiler looks up) stay, in order. The size
/// and the reason read from the list are the ones the whole list gives.
fn size_list(pieces: impl IntoIterator<Item = Piece>, known: usize) -> Vec<TokenStream> {
    let mut out = Vec::new();
    let mut sums = Vec::new();
    let mut sum = known;
    for p in pieces {
        match p {
            Piece::Known(n) if sum as u128 + n as u128 > DATA_MAX && sum > 0 => {
                sums.push(sum);
                sum = n;
            }
            Piece::Known(n) => sum += n,
            Piece::Looked(tokens) => out.push(tokens),
            Piece::Unbounded(tokens) => {
                out.push(tokens);
                return out;
            }
        }
    }
    sums.push(sum);
    out.extend(sums.into_iter().filter(|n| *n > 0).map(|n| {
        let size = size_tokens(Some(n));
        quote!(__ds::sz::Element { key: "", many: false, size: #size, why: __ds::sz::Unsized::Known })
    }));
    out
}

/// The name of the constant holding a model's `_id` element ([`id_element`]), which
/// both `Identified::ID_SIZE` and the model's own size list name.
pub(crate) fn id_ident() -> syn::Ident {
    syn::Ident::new("__DS_ID_ELEMENT", proc_macro2::Span::call_site())
}

/// A model's `_id` as an `Element` constant expression, with its field's bounds
/// (`max_length`): what a `Ref<Self>` weighs. An implicit `_id` is an ObjectId.
pub(crate) fn id_element(c: &Container) -> TokenStream {
    let id_field = crate::common::paths::stored_fields(c)
        .into_iter()
        .find(|f| f.name.as_deref() == Some("_id") && f.serde.flatten.is_none());
    match id_field {
        Some(f) => element_part(f),
        None => quote!(__ds::sz::element_of("_id", false, __ds::Probe::<__ds::ObjectId>::PART)),
    }
}

/// The size list of a document of `fields` ([`size_list`]), `known` bytes besides
/// them, each element spelled as `id` (the model's `_id` element) naming its constant
/// instead, so that the compiler checks that expression once.
fn id_named<'a>(
    fields: impl IntoIterator<Item = &'a Field>,
    id: Option<&str>,
    known: usize,
) -> Vec<TokenStream> {
    let name = id_ident();
    let pieces = fields.into_iter().map(|f| {
        // Only a field stored as `_id` can spell the id's element: printing the
        // others to compare them would ask the compiler once each, for nothing.
        let stored_as_id = f.name.as_deref() == Some("_id") && f.serde.flatten.is_none();
        match (piece(f), id) {
            (Piece::Looked(part), Some(id)) if stored_as_id && part.to_string() == id => {
                Piece::Looked(quote!(#name))
            }
            (Piece::Unbounded(part), Some(id)) if stored_as_id && part.to_string() == id => {
                Piece::Unbounded(quote!(#name))
            }
            (piece, _) => piece,
        }
    });
    size_list(pieces, known)
}

/// A document of some of `owner`'s fields (a projection's view): `(size, reason)`
/// tokens.
pub(crate) fn fields_size(owner: &str, fields: &[&Field]) -> (TokenStream, TokenStream) {
    let parts: Vec<_> = fields.iter().map(|f| element_part(f)).collect();
    (
        quote!(__ds::sz::document_of(&[#(#parts),*])),
        quote!(__ds::sz::Unsized::Fields { owner: #owner, elements: &[#(#parts),*] }),
    )
}

/// The whole value's size and why it is unknown.
enum Size {
    /// `(size, reason)` tokens.
    Pair(TokenStream, TokenStream),
    /// A `&[Element]` of a document's elements: the size and the reason are both
    /// read from this one list.
    Parts(TokenStream),
    /// An internally tagged enum: the items declaring each variant's elements, and the
    /// `&[VariantSize]` naming them, from which the size and the reason are read.
    Variants((TokenStream, TokenStream)),
}

/// An internally tagged enum (`#[serde(tag = "kind")]`, no `content`) writes each
/// variant as a document of its fields plus the tag, one more string element whose
/// value is the discriminator: each variant is sized as a struct of those elements.
/// `None` for another enum (or one with no stored variant), sized as before.
fn tagged_variants(
    c: &Container,
    variants: &[Variant],
    id: Option<&str>,
) -> Option<(TokenStream, TokenStream)> {
    let tag = c.serde.tag.as_ref()?.value();
    if c.serde.content.is_some() || c.serde.untagged.is_some() {
        return None;
    }
    let stored: Vec<&Variant> = variants.iter().filter(|v| !v.serde.skip).collect();
    if stored.is_empty() {
        return None;
    }
    let owner = c.ident.to_string();
    let (mut lists, mut sizes) = (Vec::new(), Vec::new());
    for (i, v) in stored.iter().enumerate() {
        let value = &v.name;
        let name = format!("{owner}::{}", v.ident);
        let unknown = |what: String| quote!(__ds::sz::VariantSize::unknown(#value, __ds::sz::Unsized::Value { what: #what, fix: false }));
        let size = match v.style {
            _ if v.serde.untagged => {
                unknown(format!("`{name}`, an untagged variant, whose size docshape does not estimate"))
            }
            _ if v.serde.with.is_some() => {
                unknown(format!("`{name}`, written by its own `with`, whose output size docshape cannot see"))
            }
            darling::ast::Style::Tuple if v.fields.len() != 1 => {
                unknown(format!("`{name}`, a tuple variant, whose size docshape does not estimate"))
            }
            style => {
                // The tag's element as `runtime::size::tag_of` counts it: type byte,
                // key, NUL, and the string value (length, bytes, NUL).
                let tag_size = tag.len() + 2 + value.len() + 5;
                let parts: Vec<TokenStream> = match style {
                    // A newtype variant: its inner document's elements, merged with the
                    // tag (serde writes no other newtype under an internal tag). None of
                    // them is the `_id` element.
                    darling::ast::Style::Tuple => size_list(
                        v.fields.iter().map(|f| {
                            let part = value_part(f);
                            Piece::Looked(quote!(__ds::sz::flattened_of(#part)))
                        }),
                        tag_size,
                    ),
                    _ => id_named(v.fields.iter().filter(|f| !f.serde.skip), id, tag_size),
                };
                let elements = quote::format_ident!("__DS_VARIANT_{}", i);
                lists.push((elements.clone(), value, parts));
                quote!(__ds::sz::VariantSize::of(#value, #name, #elements))
            }
        };
        sizes.push(size);
    }
    // The fields several variants store alike: one constant element each.
    let (idents, rest): (Vec<_>, Vec<_>) = lists.into_iter().map(|(e, v, p)| ((e, v), p)).unzip();
    let (mut items, parts) = crate::common::shared::share("ELEMENT", &quote!(__ds::sz::Element), rest);
    for ((elements, _), parts) in idents.into_iter().zip(parts) {
        items.extend(quote! {
            const #elements: &[__ds::sz::Element] = &[#(#parts),*];
        });
    }
    Some((items, quote!(&[#(#sizes),*])))
}

/// The whole value's size tokens.
fn container_size(c: &Container, id: Option<&str>) -> Size {
    let owner = c.ident.to_string();
    let unknown = |what: String| {
        Size::Pair(
            quote!(::core::option::Option::None),
            quote!(__ds::sz::Unsized::Value { what: #what, fix: false }),
        )
    };
    if c.serde.into.is_some() {
        return unknown(format!("`{owner}`, stored as another type (`serde(into)`)"));
    }
    match &c.body {
        Body::Struct(_, fields) if c.serde.transparent => {
            match fields.iter().filter(|f| !f.serde.skip).collect::<Vec<_>>().as_slice() {
                [only] => {
                    let (size, why) = value_size(only);
                    Size::Pair(size, why)
                }
                _ => unknown(format!("`{owner}`, transparent over no single field")),
            }
        }
        Body::Struct(darling::ast::Style::Struct, fields) => {
            if c.serde.tag.is_some() {
                return unknown(format!("`{owner}`, written with a tag docshape does not size"));
            }
            let parts = id_named(fields.iter().filter(|f| !f.serde.skip), id, 0);
            Size::Parts(quote!(&[#(#parts),*]))
        }
        Body::Struct(darling::ast::Style::Tuple, fields) => {
            let stored: Vec<&Field> = fields.iter().filter(|f| !f.serde.skip).collect();
            if let ([only], 1) = (stored.as_slice(), fields.len()) {
                let (size, why) = value_size(only);
                return Size::Pair(size, why);
            }
            // A tuple is an array: keyed "0", "1", ...
            let parts: Vec<_> = stored
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let part = value_part(f);
                    let key = i.to_string();
                    let many = is_many(f);
                    quote!(__ds::sz::element_of(#key, #many, #part))
                })
                .collect();
            Size::Parts(quote!(&[#(#parts),*]))
        }
        Body::Struct(darling::ast::Style::Unit, _) => {
            Size::Pair(quote!(::core::option::Option::Some(0usize)), quote!(__ds::sz::Unsized::Known))
        }
        Body::Enum(variants) => {
            if let Some(sizes) = tagged_variants(c, variants, id) {
                return Size::Variants(sizes);
            }
            let plain = c.serde.tag.is_none() && c.serde.untagged.is_none();
            let stored: Vec<_> = variants.iter().filter(|v| !v.serde.skip).collect();
            if plain && stored.iter().all(|v| v.style == darling::ast::Style::Unit && !v.serde.untagged) {
                // A unit variant is written as its name.
                let longest = stored.iter().map(|v| v.name.len()).max().unwrap_or(0) + 5;
                Size::Pair(quote!(::core::option::Option::Some(#longest)), quote!(__ds::sz::Unsized::Known))
            } else {
                unknown(format!("`{owner}`, an enum with data, whose size docshape does not estimate"))
            }
        }
    }
}

/// `impl MaxBsonSize` for a non-generic type; nothing for generic ones, whose sizes
/// depend on their parameters. `id`: a model's `_id` element ([`id_element`]),
/// declared here as the constant `Identified::ID_SIZE` names, and named by the
/// entries of the size lists that spell it alike.
pub(crate) fn impl_for(c: &Container, id: Option<TokenStream>) -> TokenStream {
    if !c.generics.params.is_empty() {
        return TokenStream::new();
    }
    let ident = &c.ident;
    let mut variants = None;
    let id_text = id.as_ref().map(ToString::to_string);
    let id = id.map(|id| {
        let name = id_ident();
        quote!(const #name: __ds::sz::Element = #id;)
    });
    let (size, why, parts) = match container_size(c, id_text.as_deref()) {
        Size::Pair(size, why) => (size, why, None),
        // One list per variant, and one of the variants, read for each constant.
        Size::Variants((items, sizes)) => {
            variants = Some(quote!(
                const VARIANT_SIZES: &'static [__ds::sz::VariantSize] = __DS_VARIANT_SIZES;
            ));
            (
                quote!(__ds::sz::largest(__DS_VARIANT_SIZES)),
                quote!(__ds::sz::first_unsized(__DS_VARIANT_SIZES)),
                Some(quote! {
                    #items
                    const __DS_VARIANT_SIZES: &[__ds::sz::VariantSize] = #sizes;
                }),
            )
        }
        // One list of the elements, the reason when the size is unknown; the trait's
        // default `MAX_BSON_SIZE` adds them up, so each field's size is computed once.
        Size::Parts(parts) => {
            let owner = ident.to_string();
            (TokenStream::new(), quote!(__ds::sz::Unsized::Fields { owner: #owner, elements: #parts }), None)
        }
    };
    let size =
        (!size.is_empty()).then(|| quote!(const MAX_BSON_SIZE: ::core::option::Option<usize> = #size;));
    quote! {
        #[allow(unused_imports)]
        use __ds::ProbeFallback as _;
        #id
        #parts
        #[automatically_derived]
        impl __ds::MaxBsonSize for #ident {
            #size
            const UNSIZED: __ds::sz::Unsized = #why;
            #variants
        }
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use proc_macro2::TokenStream;

    use crate::driver::{expand_embedded, expand_model};

    #[test]
    fn counted_sizes_stop_where_a_32_bit_target_could_overflow() {
        use super::{array_size, string_size, DATA_MAX};
        assert_eq!(string_size(40), Some(165));
        // Keys "0".."9" and "10".."11": 14 digits.
        assert_eq!(array_size(12, 125), Some(127 * 12 + 5 + 14));
        assert_eq!(array_size(0, 125), Some(5));
        let chars = (DATA_MAX as u64 - 5) / 4;
        assert_eq!(string_size(chars), Some(chars as usize * 4 + 5));
        assert_eq!(string_size(chars + 1), None, "left to the compiler's arithmetic");
        assert_eq!(string_size(u64::MAX), None);
        assert_eq!(array_size(u64::MAX, 1), None);
        assert_eq!(array_size(2, DATA_MAX as usize), None);
    }

    fn expanded(model: bool, src: &str) -> String {
        let input = TokenStream::from_str(src).unwrap();
        let out = if model { expand_model(input) } else { expand_embedded(input) };
        let text = out.to_string();
        assert!(!text.contains("compile_error"), "{text}");
        text
    }

    #[test]
    fn each_variant_of_a_tagged_enum_is_a_document_of_its_fields_and_the_tag() {
        let text = expanded(
            true,
            r#"#[serde(tag = "kind", rename_all = "snake_case")] #[model(collection = "events")]
            enum Event {
                Click { #[serde(rename = "_id")] id: i64, #[validate(max_length = 8)] user: String },
                #[serde(rename = "buy")]
                Purchase { #[serde(rename = "_id")] id: i64, #[serde(skip)] cached: u8, order: String },
            }"#,
        );
        // One list per variant. The `_id` both variants store alike is the model's one
        // constant element, named by `Identified::ID_SIZE`; an `i64` is 8 bytes, written
        // as a number: key, type byte and NUL make 13.
        assert_eq!(text.matches(r#"key : "_id""#).count(), 1, "{text}");
        assert!(
            text.contains(
                r#"const __DS_ID_ELEMENT : __ds :: sz :: Element = __ds :: sz :: Element { key : "_id" , many : false , size : :: core :: option :: Option :: Some (13usize)"#
            ),
            "{text}"
        );
        assert!(text.contains(r#"__ds :: sz :: id_of ("Event" , & [__DS_ID_ELEMENT])"#), "{text}");
        // Every size of `Click` is fixed by its attributes: one element of their sum,
        // the tag's (1 + "kind" + 1, then 4 + "click" + 1: 16), the `_id` (13) and
        // `user` (a String of at most 8 code points, 37, under its key: 43).
        assert!(
            text.contains(r#"const __DS_VARIANT_0 : & [__ds :: sz :: Element] = & [__ds :: sz :: Element { key : "" , many : false , size : :: core :: option :: Option :: Some (72usize) , why : __ds :: sz :: Unsized :: Known }] ;"#),
            "{text}"
        );
        // `order` has no bound: `Purchase` has none, `order` is the field to blame, and
        // nothing else is listed.
        assert!(
            text.contains(r#"const __DS_VARIANT_1 : & [__ds :: sz :: Element] = & [__ds :: sz :: Element { key : "order" , many : false , size : :: core :: option :: Option :: < usize > :: None , why : __ds :: sz :: NO_MAX_LENGTH }] ;"#),
            "{text}"
        );
        // Skipped fields are not stored, so not sized.
        assert!(!text.contains(r#""cached""#), "{text}");
        // Each variant named for the reasons, and the enum as the largest of them.
        assert!(text.contains(r#"VariantSize :: of ("click" , "Event::Click" , __DS_VARIANT_0)"#), "{text}");
        assert!(text.contains(r#"VariantSize :: of ("buy" , "Event::Purchase" , __DS_VARIANT_1)"#), "{text}");
        assert!(text.contains("const MAX_BSON_SIZE : :: core :: option :: Option < usize > = __ds :: sz :: largest (__DS_VARIANT_SIZES)"), "{text}");
        assert!(
            text.contains(
                "const UNSIZED : __ds :: sz :: Unsized = __ds :: sz :: first_unsized (__DS_VARIANT_SIZES)"
            ),
            "{text}"
        );
        assert!(
            text.contains("const VARIANT_SIZES : & 'static [__ds :: sz :: VariantSize] = __DS_VARIANT_SIZES"),
            "{text}"
        );
    }

    #[test]
    fn an_embedded_tagged_enum_sizes_unit_and_newtype_variants_but_not_tuples() {
        let text = expanded(
            false,
            r#"#[serde(tag = "t")] enum Shape { Dot, Circle { r: f64 }, Wrapped(Inner), Pair(i32, i32) }"#,
        );
        // The tag's element, counted as `tag_of` counts it: 1 + "t" + 1, then 4 + "Dot" + 1.
        assert!(text.contains(r#"const __DS_VARIANT_0 : & [__ds :: sz :: Element] = & [__ds :: sz :: Element { key : "" , many : false , size : :: core :: option :: Option :: Some (11usize) , why : __ds :: sz :: Unsized :: Known }] ;"#), "{text}");
        // The tag (14) and `r`, an f64 under its key (11), added up.
        assert!(text.contains(r#"const __DS_VARIANT_1 : & [__ds :: sz :: Element] = & [__ds :: sz :: Element { key : "" , many : false , size : :: core :: option :: Option :: Some (25usize) , why : __ds :: sz :: Unsized :: Known }] ;"#), "{text}");
        // A newtype variant: its inner document's elements beside the tag.
        assert!(text.contains(r#"& [__ds :: sz :: flattened_of (__ds :: Probe :: < Inner > :: PART) , __ds :: sz :: Element { key : "" , many : false , size : :: core :: option :: Option :: Some (15usize) , why : __ds :: sz :: Unsized :: Known }]"#), "{text}");
        assert!(text.contains(r#"VariantSize :: unknown ("Pair" , __ds :: sz :: Unsized :: Value { what : "`Shape::Pair`, a tuple variant, whose size docshape does not estimate""#), "{text}");
    }

    #[test]
    fn other_enums_keep_their_sizes() {
        // Externally and adjacently tagged enums with data: unknown, as before.
        for src in [
            r#"enum E { A { n: i32 } }"#,
            r#"#[serde(tag = "t", content = "c")] enum E { A { n: i32 } }"#,
            r#"#[serde(untagged)] enum E { A { n: i32 } }"#,
        ] {
            let text = expanded(false, src);
            assert!(
                text.contains("an enum with data, whose size docshape does not estimate"),
                "{src}: {text}"
            );
            assert!(!text.contains("VARIANT_SIZES"), "{src}: {text}");
        }
        // A plain enum of unit variants: its longest name.
        let text = expanded(false, r#"enum E { Short, Longest }"#);
        assert!(text.contains("Some (12usize)"), "{text}");
    }
}
