//! The largest BSON a value can encode to, known at compile time: what lets a bucket
//! or an outlier refuse to compile when a full document could pass MongoDB's 16 MB
//! limit.
//!
//! patterns-en: "MongoDB's 16MB limit includes field names". Every size here counts
//! them: a document is 4 bytes of length, then per field a type byte, the key and its
//! NUL, the value, and a final NUL; an array is a document keyed `"0"`, `"1"`, ...
//!
//! [`MaxBsonSize`] is implemented for the scalar types and derived for `Embedded` and
//! `Model` structs and internally tagged enums (each variant a document of its fields
//! and the tag, [`MaxBsonSize::VARIANT_SIZES`]; the enum as large as the largest). A `String` has no bound unless its field says
//! `#[validate(max_length = N)]` (N code points, up to 4 bytes each), and a `Vec` none
//! unless its field says `#[validate(max_items = N)]`; then the size is unknown
//! (`None`) and [`MaxBsonSize::UNSIZED`] says which field is to blame: an [`Unsized`]
//! that leads from the type through its embedded types (and a `Ref<T>`'s model's `_id`)
//! down to the field with no bound, and names the attribute that would bound it.
//! A `Ref<T>` is as large as `T`'s `_id` ([`crate::refs::Identified::ID_SIZE`]): a
//! `String` `_id` with `#[validate(max_length = N)]` bounds every reference to `T`.
//!
//! ```
//! use docshape::size::MaxBsonSize;
//! use docshape::{bson, bson_compat, Embedded};
//! use serde::Serialize;
//!
//! #[derive(Serialize, Embedded)]
//! struct Reading {
//!     t: bson::DateTime,
//!     v: f64,
//! }
//! // 4 (length) + [1 + "t\0" + 8] + [1 + "v\0" + 8] + 1 (end)
//! assert_eq!(Reading::MAX_BSON_SIZE, Some(27));
//! let real = bson_compat::to_vec(&Reading { t: bson::DateTime::now(), v: 1.5 }).unwrap();
//! assert_eq!(real.len(), 27);
//! ```

use std::marker::PhantomData;

/// MongoDB's limit on one document: 16 MiB.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// A type whose serialized BSON has a largest size, known at compile time.
pub trait MaxBsonSize {
    /// The most bytes the value takes as an element's value (without the element's
    /// type byte and key), or `None` when nothing bounds it. By default, the size of
    /// the document whose elements [`MaxBsonSize::UNSIZED`] lists
    /// ([`Unsized::Fields`]), and `None` for any other reason: a derived struct states
    /// only its elements, one constant fewer for the compiler in every model's crate.
    const MAX_BSON_SIZE: Option<usize> = fields_size(Self::UNSIZED);
    /// When [`MaxBsonSize::MAX_BSON_SIZE`] is `None`: which field or type leaves the
    /// size unbounded, and how to bound it (meaningless when the size is known).
    const UNSIZED: Unsized = Unsized::Known;
    /// For an internally tagged enum (`#[serde(tag = "kind")]`, a polymorphic `Model`
    /// or an `Embedded` enum), each variant's largest document, the tag included, by
    /// discriminator value in declaration order; empty for any other type. The enum's
    /// own [`MaxBsonSize::MAX_BSON_SIZE`] is the largest of them (unknown when any is),
    /// and its [`MaxBsonSize::UNSIZED`] the reason of the first variant with no bound.
    ///
    /// ```
    /// use docshape::size::MaxBsonSize;
    /// use docshape::Embedded;
    /// use serde::Serialize;
    ///
    /// #[derive(Serialize, Embedded)]
    /// #[serde(tag = "kind", rename_all = "snake_case")]
    /// enum Shape {
    ///     Circle { r: f64 },
    ///     Label { #[validate(max_length = 10)] text: String },
    /// }
    /// // 4 + [1 + "kind\0" + (4 + "circle\0")] + [1 + "r\0" + 8] + 1
    /// assert_eq!(Shape::VARIANT_SIZES[0].value, "circle");
    /// assert_eq!(Shape::VARIANT_SIZES[0].size, Some(33));
    /// // The label: its tag, and 10 code points of up to 4 bytes.
    /// assert_eq!(Shape::VARIANT_SIZES[1].size, Some(72));
    /// assert_eq!(Shape::MAX_BSON_SIZE, Some(72));
    /// ```
    const VARIANT_SIZES: &'static [VariantSize] = &[];
}

/// One variant of an internally tagged enum, as sized ([`MaxBsonSize::VARIANT_SIZES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VariantSize {
    /// The discriminator value serde writes in the tag (after `rename`/`rename_all`).
    pub value: &'static str,
    /// The most bytes of the variant's document, its tag included; `None` when unbounded.
    pub size: Option<usize>,
    /// Why `size` is `None`: the path from the variant (`Event::Click`) down to the
    /// field with no bound.
    pub why: Unsized,
}

impl VariantSize {
    /// The variant of an enum whose elements (fields and tag) are `elements`; `owner`
    /// names it in a reason (`Event::Click`).
    pub const fn of(value: &'static str, owner: &'static str, elements: &'static [Element]) -> Self {
        Self { value, size: document_of(elements), why: Unsized::Fields { owner, elements } }
    }

    /// A variant whose size docshape does not estimate, and why.
    pub const fn unknown(value: &'static str, why: Unsized) -> Self {
        Self { value, size: None, why }
    }
}

/// The largest of the variants' sizes: unknown when any is (or there is none).
pub const fn largest(variants: &[VariantSize]) -> Option<usize> {
    if variants.is_empty() {
        return None;
    }
    let mut max = 0usize;
    let mut i = 0;
    while i < variants.len() {
        match variants[i].size {
            Some(n) if n > max => max = n,
            Some(_) => {}
            None => return None,
        }
        i += 1;
    }
    Some(max)
}

/// Why [`largest`] is unknown: the reason of the first variant with no bound.
pub const fn first_unsized(variants: &[VariantSize]) -> Unsized {
    let mut i = 0;
    while i < variants.len() {
        if variants[i].size.is_none() {
            return variants[i].why;
        }
        i += 1;
    }
    Unsized::Known
}

/// The size of a discriminator value's element: type byte, `tag`, NUL, and the string
/// `value` (its length, bytes and NUL), exactly.
pub const fn tag_of(tag: &'static str, value: &'static str) -> Element {
    element_of(tag, false, (Some(value.len() + 5), Unsized::Known))
}

/// Why a size has no bound: the path from a type down to the value that leaves it
/// open, and whether a `#[validate]` on the field holding that value would bound it.
/// Its [`Display`](std::fmt::Display) (and [`ConstMessage::why`] at compile time)
/// reads, for a comment whose author is a `Ref<User>` over an unbounded `String` id:
///
/// ```text
/// `Comment.author` (a `Ref<User>`): `User._id` is a String with no `#[validate(max_length = N)]`; add it to `User._id`
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsized {
    /// Nothing to say: the size is known.
    Known,
    /// A value with no bound of its own.
    Value {
        /// What it is, after "is": "a String with no `#[validate(max_length = N)]`".
        what: &'static str,
        /// Whether the attribute `what` names goes on the field that holds the value
        /// (then the message says "add it to `Owner.field`").
        fix: bool,
    },
    /// A document type's fields: the first of them with no bound is to blame.
    Fields {
        /// The type's name, where the path starts.
        owner: &'static str,
        /// Its stored elements, in order, as far as they decide the size and the
        /// element to blame: a derived type's list adds the sizes its attributes fix
        /// into one element with no key (never named), and ends at the first element
        /// whose attributes leave it with no bound.
        elements: &'static [Element],
    },
    /// A `Ref<T>`: as large as `T`'s `_id`, which is `id` (a [`Unsized::Fields`] of the
    /// model, naming it).
    Ref {
        /// Why the referenced model's `_id` has no bound.
        id: &'static Unsized,
    },
}

impl Unsized {
    /// Whether there is nothing to say ([`Unsized::Known`]).
    pub const fn is_known(self) -> bool {
        matches!(self, Self::Known)
    }
}

impl std::fmt::Display for Unsized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(ConstMessage::new().why(*self).as_str())
    }
}

/// One stored element of a document, as sized: its key (`""` for the merged fields of
/// a `#[serde(flatten)]`, and for the fields whose sizes a derived type's list adds up
/// into one), whether it is an array (so that a path into its items reads `key[]`),
/// its size with the type byte and key, and why that is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Element {
    /// The stored key.
    pub key: &'static str,
    /// Whether the value is an array of what [`Element::why`] describes.
    pub many: bool,
    /// The element's bytes, or `None` when unbounded.
    pub size: Option<usize>,
    /// Why `size` is `None`.
    pub why: Unsized,
}

/// A `String` with no `max_length`.
pub const NO_MAX_LENGTH: Unsized =
    Unsized::Value { what: "a String with no `#[validate(max_length = N)]`", fix: true };
/// An array with no `max_items`.
pub const NO_MAX_ITEMS: Unsized =
    Unsized::Value { what: "an array with no `#[validate(max_items = N)]`", fix: true };

macro_rules! fixed {
    ($($ty:ty => $n:expr),* $(,)?) => {$(
        impl MaxBsonSize for $ty {
            const MAX_BSON_SIZE: Option<usize> = Some($n);
        }
    )*};
}

// bson writes u32 and u64 as int64, the small integers as int32.
fixed! {
    bool => 1, i8 => 4, i16 => 4, i32 => 4, u8 => 4, u16 => 4,
    i64 => 8, isize => 8, u32 => 8, u64 => 8, usize => 8, f32 => 8, f64 => 8,
    // A one-code-point string: length, up to 4 bytes, NUL.
    char => 9,
    () => 0,
    bson::oid::ObjectId => 12,
    bson::DateTime => 8,
    bson::Timestamp => 8,
    bson::Decimal128 => 16,
    // Binary: length, subtype, 16 bytes.
    bson::Uuid => 21,
}

macro_rules! unbounded {
    ($($ty:ty => $why:expr),* $(,)?) => {$(
        impl MaxBsonSize for $ty {
            const MAX_BSON_SIZE: Option<usize> = None;
            const UNSIZED: Unsized = $why;
        }
    )*};
}

const fn opaque(what: &'static str) -> Unsized {
    Unsized::Value { what, fix: false }
}

unbounded! {
    String => NO_MAX_LENGTH,
    str => Unsized::Value { what: "a `str` with no `#[validate(max_length = N)]`", fix: true },
    bson::Binary => opaque("a `Binary`, which has no length bound"),
    bson::Document => opaque("a `Document`, which has no size bound"),
    bson::Bson => opaque("a `Bson` value, which has no size bound"),
    bson::RawDocumentBuf => opaque("a raw document, which has no size bound"),
    bson::Regex => opaque("a `Regex`, which has no length bound"),
    serde_json::Value => opaque("a JSON value, which has no size bound"),
}

impl<T: MaxBsonSize> MaxBsonSize for Option<T> {
    // `None` is written as null, which has no value bytes.
    const MAX_BSON_SIZE: Option<usize> = T::MAX_BSON_SIZE;
    const UNSIZED: Unsized = T::UNSIZED;
}

macro_rules! through {
    ($($ty:ty),*) => {$(
        impl<T: MaxBsonSize + ?Sized> MaxBsonSize for $ty {
            const MAX_BSON_SIZE: Option<usize> = T::MAX_BSON_SIZE;
            const UNSIZED: Unsized = T::UNSIZED;
        }
    )*};
}
through!(Box<T>, std::rc::Rc<T>, std::sync::Arc<T>, &T);

impl<T: MaxBsonSize, const N: usize> MaxBsonSize for [T; N] {
    const MAX_BSON_SIZE: Option<usize> = array(N, T::MAX_BSON_SIZE);
    const UNSIZED: Unsized = T::UNSIZED;
}

macro_rules! sequences {
    ($($ty:ty),*) => {$(
        impl<T> MaxBsonSize for $ty {
            const MAX_BSON_SIZE: Option<usize> = None;
            const UNSIZED: Unsized = NO_MAX_ITEMS;
        }
    )*};
}
sequences!(Vec<T>, std::collections::VecDeque<T>, [T], std::collections::BTreeSet<T>);

impl<T, S> MaxBsonSize for std::collections::HashSet<T, S> {
    const MAX_BSON_SIZE: Option<usize> = None;
    const UNSIZED: Unsized = NO_MAX_ITEMS;
}

impl<K, V, S> MaxBsonSize for std::collections::HashMap<K, V, S> {
    const MAX_BSON_SIZE: Option<usize> = None;
    const UNSIZED: Unsized = opaque("a map, whose keys have no bound");
}

impl<K, V> MaxBsonSize for std::collections::BTreeMap<K, V> {
    const MAX_BSON_SIZE: Option<usize> = None;
    const UNSIZED: Unsized = opaque("a map, whose keys have no bound");
}

/// Looks up [`MaxBsonSize`] for a type that may not implement it: the inherent consts
/// win when `T: MaxBsonSize`, the [`ProbeFallback`] trait's (unknown) otherwise. Derived
/// code uses it so that a field of a type without the trait makes the size unknown
/// instead of failing to compile.
#[doc(hidden)]
pub struct Probe<T: ?Sized>(PhantomData<T>);

impl<T: MaxBsonSize + ?Sized> Probe<T> {
    /// `T::MAX_BSON_SIZE`.
    pub const MAX: Option<usize> = T::MAX_BSON_SIZE;
    /// `T::UNSIZED`.
    pub const UNSIZED: Unsized = T::UNSIZED;
    /// Both at once, for the `*_of` functions.
    pub const PART: Part = (T::MAX_BSON_SIZE, T::UNSIZED);
}

/// See [`Probe`].
#[doc(hidden)]
pub trait ProbeFallback {
    /// Unknown.
    const MAX: Option<usize> = None;
    /// Why.
    const UNSIZED: Unsized = opaque(
        "of a type that does not implement `docshape::size::MaxBsonSize` (derive `Embedded` on it, or implement the trait)",
    );
    /// Both.
    const PART: Part = (None, Self::UNSIZED);
}

impl<T: ?Sized> ProbeFallback for Probe<T> {}

/// Bytes of a string of at most `chars` code points: length, UTF-8 bytes, NUL.
pub const fn string(chars: usize) -> Option<usize> {
    match chars.checked_mul(4) {
        Some(n) => add(Some(5), Some(n)),
        None => None,
    }
}

/// `a + b`, unknown when either is or on overflow.
pub const fn add(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) => a.checked_add(b),
        _ => None,
    }
}

/// One element of a document: type byte, key, NUL, value.
pub const fn element(key_len: usize, value: Option<usize>) -> Option<usize> {
    add(Some(key_len + 2), value)
}

/// A document of these elements: length, elements, NUL.
pub const fn document(elements: &[Option<usize>]) -> Option<usize> {
    let mut total = 5usize;
    let mut i = 0;
    while i < elements.len() {
        total = match add(Some(total), elements[i]) {
            Some(t) => t,
            None => return None,
        };
        i += 1;
    }
    Some(total)
}

/// The elements of a `#[serde(flatten)]`ed document, merged into their parent: its
/// size without its own length and NUL.
pub const fn flattened(document: Option<usize>) -> Option<usize> {
    match document {
        Some(n) if n >= 5 => Some(n - 5),
        _ => None,
    }
}

/// Total digits of the keys `"0"` to `"n-1"`.
const fn index_key_digits(n: usize) -> usize {
    let mut total = 0usize;
    let mut digits = 1usize;
    let mut low = 0usize;
    let mut high = 10usize;
    while low < n {
        let top = if high < n { high } else { n };
        total += (top - low) * digits;
        low = high;
        digits += 1;
        high = match high.checked_mul(10) {
            Some(h) => h,
            None => usize::MAX,
        };
    }
    total
}

/// An array of at most `n` values of at most `value` bytes: a document keyed by index.
pub const fn array(n: usize, value: Option<usize>) -> Option<usize> {
    let Some(value) = value else { return None };
    // Per element: type byte, key digits, NUL, value.
    let per = match value.checked_add(2) {
        Some(p) => p,
        None => return None,
    };
    match per.checked_mul(n) {
        Some(body) => add(Some(body + 5), Some(index_key_digits(n))),
        None => None,
    }
}

/// A size and why it is unknown: what the `*_of` functions take and give, so that
/// derived code looks each field's type up once.
pub type Part = (Option<usize>, Unsized);

/// The element `key` of a document holding `value` (`many`: an array of what
/// `value`'s reason describes): type byte, key, NUL, value.
pub const fn element_of(key: &'static str, many: bool, value: Part) -> Element {
    Element { key, many, size: element(key.len(), value.0), why: value.1 }
}

/// [`array()`] of a [`Part`].
pub const fn array_of(n: usize, value: Part) -> Part {
    let why = if value.0.is_some() { Unsized::Known } else { value.1 };
    (array(n, value.0), why)
}

/// [`flattened`] of a [`Part`]: an element with no key of its own.
pub const fn flattened_of(document: Part) -> Element {
    Element { key: "", many: false, size: flattened(document.0), why: document.1 }
}

/// [`document_of`] the elements of an [`Unsized::Fields`]; `None` for any other reason.
pub const fn fields_size(why: Unsized) -> Option<usize> {
    match why {
        Unsized::Fields { elements, .. } => document_of(elements),
        _ => None,
    }
}

/// [`document`] of [`Element`]s.
pub const fn document_of(elements: &[Element]) -> Option<usize> {
    let mut total = 5usize;
    let mut i = 0;
    while i < elements.len() {
        total = match add(Some(total), elements[i].size) {
            Some(t) => t,
            None => return None,
        };
        i += 1;
    }
    Some(total)
}

/// Whether every element's size is known.
pub const fn all_sized(elements: &[Element]) -> bool {
    let mut i = 0;
    while i < elements.len() {
        if elements[i].size.is_none() {
            return false;
        }
        i += 1;
    }
    true
}

/// A model's `_id` as [`crate::refs::Identified::ID_SIZE`] states it: the size of the
/// one element's value, and why it is unknown, naming the model and the field.
pub const fn id_of(owner: &'static str, id: &'static [Element; 1]) -> Part {
    let size = match id[0].size {
        // The element's type byte, key and NUL were counted; the value is what is left.
        Some(n) => Some(n - id[0].key.len() - 2),
        None => None,
    };
    (size, Unsized::Fields { owner, elements: id })
}

/// A message built at compile time, for a `const` assertion's panic.
#[doc(hidden)]
pub struct ConstMessage {
    buf: [u8; 1024],
    len: usize,
}

impl ConstMessage {
    /// An empty message.
    pub const fn new() -> Self {
        Self { buf: [0; 1024], len: 0 }
    }

    /// Appends text (cut at the buffer's end, on a character boundary).
    pub const fn text(mut self, s: &str) -> Self {
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() && self.len < self.buf.len() {
            self.buf[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    /// Appends a number with thousands separators.
    pub const fn number(mut self, n: usize) -> Self {
        let mut digits = [0u8; 40];
        let mut count = 0;
        let mut rest = n;
        loop {
            if count > 0 && count % 4 == 3 {
                digits[count] = b',';
                count += 1;
            }
            digits[count] = b'0' + (rest % 10) as u8;
            count += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        while count > 0 && self.len < self.buf.len() {
            count -= 1;
            self.buf[self.len] = digits[count];
            self.len += 1;
        }
        self
    }

    /// Appends why a size is unknown: the path from the outermost type down to the
    /// value with no bound (`Thread.comments[].meta.note`; a `Ref<T>` continues at
    /// `T._id`), what that value is, and where the attribute that bounds it goes.
    pub const fn why(mut self, mut why: Unsized) -> Self {
        // The path being written is open (a "`" written, not yet closed).
        let mut open = false;
        // Where the last element was declared: where a fix goes.
        let mut at: (&str, &str) = ("", "");
        loop {
            match why {
                Unsized::Known => {
                    if open {
                        self = self.text("`");
                    }
                    return self;
                }
                Unsized::Value { what, fix } => {
                    self = if open { self.text("` is ") } else { self.text("a value that is ") };
                    self = self.text(what);
                    if fix && !at.0.is_empty() {
                        self = self.text("; add it to `").text(at.0);
                        if !at.1.is_empty() {
                            self = self.text(".").text(at.1);
                        }
                        self = self.text("`");
                    }
                    return self;
                }
                Unsized::Fields { owner, elements } => {
                    let mut i = 0;
                    while i < elements.len() && elements[i].size.is_some() {
                        i += 1;
                    }
                    if i == elements.len() {
                        // Every element is bounded: the size overflowed, nothing to name.
                        i = 0;
                        while i < elements.len() && elements[i].why.is_known() {
                            i += 1;
                        }
                        if i == elements.len() {
                            return if open { self.text("`") } else { self };
                        }
                    }
                    let e = elements[i];
                    if !open {
                        self = self.text("`").text(owner);
                        open = true;
                    }
                    if !e.key.is_empty() {
                        self = self.text(".").text(e.key);
                    }
                    at = (owner, e.key);
                    // Into the items of an array: `key[]`, unless the array itself is
                    // the value with no bound.
                    if e.many && !matches!(e.why, Unsized::Value { .. }) {
                        self = self.text("[]");
                    }
                    why = e.why;
                }
                Unsized::Ref { id } => {
                    let model = match *id {
                        Unsized::Fields { owner, .. } => owner,
                        _ => "T",
                    };
                    self = if open { self.text("` (a `Ref<") } else { self.text("a `Ref<") };
                    self = self.text(model).text(">`): ");
                    open = false;
                    why = *id;
                }
            }
        }
    }

    /// Whether nothing was written.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The text.
    pub const fn as_str(&self) -> &str {
        let mut len = self.len;
        // A cut multi-byte character is dropped.
        loop {
            match core::str::from_utf8(self.buf.split_at(len).0) {
                Ok(s) => return s,
                Err(_) => len -= 1,
            }
        }
    }
}

impl Default for ConstMessage {
    fn default() -> Self {
        Self::new()
    }
}

/// The compile-time verdict on a bounded document: empty when `estimate` is known and
/// within `limit`, otherwise the message a `const` assertion panics with.
///
/// `what` names the document (`bucket `SensorDay` (max = 1440 items)`), `unsized_why`
/// says which field of it has no bound, `fix` what to change when it is too large.
pub const fn verdict(
    rule: &str,
    what: &str,
    estimate: Option<usize>,
    limit: usize,
    unsized_why: Unsized,
    fix: &str,
) -> ConstMessage {
    let head = ConstMessage::new().text("docshape rule `").text(rule).text("`: ");
    match estimate {
        Some(n) if n <= limit => ConstMessage::new(),
        Some(n) => head
            .text("a full ")
            .text(what)
            .text(" can reach ")
            .number(n)
            .text(" bytes of BSON (field names included), above the limit of ")
            .number(limit)
            .text(" bytes; ")
            .text(fix),
        None => head
            .text("the size of a full ")
            .text(what)
            .text(" has no bound, so it could pass the 16 MB document limit: ")
            .why(unsized_why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::bson_compat;
    use bson::doc;

    #[test]
    fn array_sizes_match_encoded_arrays() {
        for n in [0usize, 1, 9, 10, 11, 99, 100, 101, 1000, 1440] {
            let values: Vec<i64> = (0..n as i64).collect();
            let encoded = bson_compat::to_vec(&doc! { "a": values }).unwrap();
            // The document around it: 4 + [1 + "a\0"] + array + 1.
            assert_eq!(array(n, Some(8)), Some(encoded.len() - 8), "n = {n}");
        }
    }

    #[test]
    fn strings_count_four_bytes_a_code_point() {
        let encoded = bson_compat::to_vec(&doc! { "s": "é😀a" }).unwrap();
        let value = encoded.len() - 4 - 3 - 1;
        assert!(string(3).unwrap() >= value);
    }

    #[test]
    fn messages_format_numbers() {
        let m = ConstMessage::new().text("n=").number(16_777_216).text(", z=").number(0);
        assert_eq!(m.as_str(), "n=16,777,216, z=0");
        let v = verdict("r", "x", Some(10), 5, Unsized::Known, "fix");
        assert!(v.as_str().contains("can reach 10 bytes"), "{}", v.as_str());
        assert!(verdict("r", "x", Some(5), 5, Unsized::Known, "").is_empty());
    }

    #[test]
    fn reasons_name_the_path_through_embedded_types_and_references() {
        // `User { _id: String }`, `Meta { note: String }`,
        // `Comment { meta: Meta, author: Ref<User> }`, `Thread { comments: Vec<Comment> }`.
        const USER_ID: Part = id_of("User", &[element_of("_id", false, (None, NO_MAX_LENGTH))]);
        const META: Unsized = Unsized::Fields {
            owner: "Meta",
            elements: &[
                element_of("at", false, (Some(8), Unsized::Known)),
                element_of("note", false, (None, NO_MAX_LENGTH)),
            ],
        };
        const AUTHOR: Unsized = Unsized::Ref { id: &USER_ID.1 };
        let comment = |meta: Part| Unsized::Fields {
            owner: "Comment",
            elements: Box::leak(Box::new([
                element_of("meta", false, meta),
                element_of("author", false, (None, AUTHOR)),
            ])),
        };
        let thread = |comment: Unsized| Unsized::Fields {
            owner: "Thread",
            elements: Box::leak(Box::new([element_of("comments", true, (None, comment))])),
        };
        assert_eq!(
            thread(comment((None, META))).to_string(),
            "`Thread.comments[].meta.note` is a String with no `#[validate(max_length = N)]`; add it to `Meta.note`"
        );
        assert_eq!(
            thread(comment((Some(20), Unsized::Known))).to_string(),
            "`Thread.comments[].author` (a `Ref<User>`): `User._id` is a String with no \
             `#[validate(max_length = N)]`; add it to `User._id`"
        );
        // An array that is itself unbounded is named as such, not entered.
        const TAGS: Unsized =
            Unsized::Fields { owner: "Post", elements: &[element_of("tags", true, (None, NO_MAX_ITEMS))] };
        let tags = TAGS;
        assert_eq!(
            tags.to_string(),
            "`Post.tags` is an array with no `#[validate(max_items = N)]`; add it to `Post.tags`"
        );
        // A bounded `_id` gives a bounded reference: the value's bytes, without the key.
        const BOUNDED: Part = id_of("User", &[element_of("_id", false, (string(64), Unsized::Known))]);
        assert_eq!(BOUNDED.0, string(64));
        let verdict =
            verdict("outlier_size", "`Thread.comments`", None, 10, thread(comment((None, META))), "");
        assert!(verdict.as_str().ends_with("add it to `Meta.note`"), "{}", verdict.as_str());
    }

    #[test]
    fn probe_falls_back_for_types_without_the_trait() {
        struct Opaque;
        assert_eq!(Probe::<f64>::MAX, Some(8));
        assert_eq!(<Probe<Opaque> as ProbeFallback>::MAX, None);
        assert_eq!(Probe::<Opaque>::MAX, None);
    }
}
