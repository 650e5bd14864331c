//! `freq = "500 r/s"` becomes a load estimate: the parsed rate, the most documents one
//! call reads (found from the filter and the unique indexes), and the most bytes one
//! document takes, expanded into the runtime's `Load`.

use darling::error::Accumulator;
use darling::Error;
use proc_macro2::{Literal, TokenStream};
use quote::quote;
use syn::LitStr;

use super::Access;
use crate::facts::Facts;
use crate::index::IndexDef;

/// A parsed `freq`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rate {
    pub per_second: f64,
    pub write: bool,
}

/// The most documents one call reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Reads {
    /// `_id` or every key of a unique index is matched by equality.
    One,
    /// A page of a paginator.
    Page,
    #[default]
    Unbounded,
}

/// Reads the rate; a malformed one is an error under the string.
pub(crate) fn parse(lit: Option<&LitStr>, errors: &mut Accumulator) -> Option<Rate> {
    let lit = lit?;
    match read(&lit.value()) {
        Ok(rate) => Some(rate),
        Err(message) => {
            errors.push(Error::custom(message).with_span(lit));
            None
        }
    }
}

const FORM: &str = "a number, `r` (reads) or `w` (writes), `/`, and `s`, `min`, `h` or `day`, as in `500 r/s`, `50 w/s`, `30 r/min` or `2 w/h`";

fn read(text: &str) -> Result<Rate, String> {
    let lower = text.trim().to_lowercase();
    if lower.is_empty() {
        return Err(format!(
            "`freq` is empty: write how often the operation runs, {FORM}; or leave `freq` out"
        ));
    }
    let bad = |why: &str| format!("`freq = \"{text}\"` is not a rate ({why}): write {FORM}");
    let split = lower.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(lower.len());
    let (number, rest) = lower.split_at(split);
    if number.is_empty() {
        return Err(bad("it does not start with a number"));
    }
    let value: f64 = number.parse().map_err(|_| bad(&format!("`{number}` is not a number")))?;
    let Some((kind, unit)) = rest.split_once('/') else {
        return Err(bad("no `/` between the operation and the unit of time"));
    };
    let write = match kind.trim() {
        "r" | "read" | "reads" => false,
        "w" | "write" | "writes" => true,
        "" => return Err(bad("say `r` for reads or `w` for writes before the `/`")),
        other => return Err(bad(&format!("`{other}` is neither `r` (reads) nor `w` (writes)"))),
    };
    let seconds = match unit.trim() {
        "s" | "sec" | "second" => 1.0,
        "min" | "minute" => 60.0,
        "h" | "hr" | "hour" => 3600.0,
        "d" | "day" => 86_400.0,
        other => return Err(bad(&format!("`{other}` is not a unit of time"))),
    };
    let per_second = value / seconds;
    if !per_second.is_finite() {
        return Err(bad("the number is too large"));
    }
    Ok(Rate { per_second, write })
}

/// How many documents one call of `a` reads at most, from its filter and the indexes.
///
/// A unique index bounds an equality match when every one of its keys is matched by
/// equality, unless it is partial or sparse (documents outside it may repeat a value,
/// and a null matches every document missing the field), or it compares exactly while
/// the pattern ignores case ("A" and "a" are two values to the index and one to the
/// query). A variant's index, partial to its discriminator alone, holds every document
/// a row on that variant reads, so it bounds that row as a full index would.
pub(crate) fn docs_per_call(a: &Access, indexes: &[IndexDef]) -> Reads {
    let equal = |path: &str| a.filter.iter().any(|(p, _)| p == path);
    let by_id = equal("_id") && !a.case_insensitive;
    let by_unique = indexes.iter().any(|index| {
        index.unique.is_some()
            && a.read_whole(index)
            && !index.sparse
            && (index.locale.is_some() || !a.case_insensitive)
            && index.keys.iter().all(|k| k.kind.is_ordered() && equal(&k.path))
    });
    if by_id || by_unique {
        Reads::One
    } else if a.paginate.is_some() {
        Reads::Page
    } else {
        Reads::Unbounded
    }
}

/// The most BSON bytes one document the pattern reads takes, and why it is unbounded
/// when it is: the one place that names the type read. A read row with `fields(...)`
/// reads its view (the listed top-level fields, as the projection sends them); other
/// rows, and a versioned model's views (which read whole documents), read the model.
/// A row on one variant of a polymorphic model reads that variant's documents only: its
/// `fields(...)`, or the variant's whole document (`MaxBsonSize::VARIANT_SIZES`); a row on
/// the enum reads any variant, as large as the largest.
fn doc_size_bound(a: &Access, cx: &Facts) -> DocSize {
    // The variant the row reads, and its place among the variants' sizes.
    let variant = match (&cx.polymorphic, &a.discriminator) {
        (Some(p), Some((_, value))) => {
            p.variants.iter().position(|v| v.value == *value).map(|i| (i, &p.variants[i]))
        }
        _ => None,
    };
    let c = variant.map_or(&cx.container, |(_, v)| &v.container);
    if !c.generics.params.is_empty() {
        // A generic model has no size of its own: it depends on its parameters.
        return DocSize::Pair(
            quote!(::core::option::Option::None),
            quote!(__ds::sz::Unsized::Value {
                what: "of a generic model, whose size depends on its type parameters",
                fix: false
            }),
        );
    }
    let versioned = cx.model.as_ref().is_some_and(|m| m.version.is_some());
    // A row that reads its variant whole reads the variant's document, tag included.
    if !a.fields.is_empty() && a.update.is_none() && a.paginate.is_none() && !versioned && !a.whole_variant {
        let stored = crate::common::paths::stored_fields(c);
        let mut firsts: Vec<&str> = Vec::new();
        for (path, _) in &a.fields {
            let first = path.split('.').next().unwrap_or_default();
            if !firsts.contains(&first) {
                firsts.push(first);
            }
        }
        let fields: Vec<&crate::ast::Field> = firsts
            .iter()
            .filter_map(|n| {
                stored.iter().copied().find(|f| f.serde.flatten.is_none() && f.name.as_deref() == Some(*n))
            })
            .collect();
        // Only when every listed field is a declared one (an implicit `_id` is not).
        if fields.len() == firsts.len() {
            // A variant's fields are named after it in a reason: `Event::Click.target`.
            let owner =
                variant.map_or_else(|| c.ident.to_string(), |(_, v)| format!("{}::{}", c.ident, v.ident));
            let (bytes, why) = crate::common::size::fields_size(&owner, &fields);
            return DocSize::Pair(bytes, why);
        }
    }
    if let Some((i, _)) = variant {
        return DocSize::Variant(quote!(<Self as __ds::MaxBsonSize>::VARIANT_SIZES[#i]));
    }
    DocSize::Pair(
        quote!(<Self as __ds::MaxBsonSize>::MAX_BSON_SIZE),
        quote!(<Self as __ds::MaxBsonSize>::UNSIZED),
    )
}

/// The size of one document a row reads.
enum DocSize {
    /// `(size, reason)` tokens.
    Pair(TokenStream, TokenStream),
    /// A variant's `VariantSize`, which holds both.
    Variant(TokenStream),
}

/// `__ds::Load::of(..)` for one pattern, completed with its rate.
pub(crate) fn load_tokens(a: &Access, cx: &Facts) -> TokenStream {
    let rate = match a.rate {
        Some(Rate { per_second, write }) => {
            let per_second = Literal::f64_suffixed(per_second);
            let kind = if write { quote!(__ds::RateKind::Write) } else { quote!(__ds::RateKind::Read) };
            Some(quote!(::core::option::Option::Some(__ds::Rate { per_second: #per_second, kind: #kind })))
        }
        None => None,
    };
    let docs = match a.reads {
        Reads::One => quote!(__ds::DocsPerCall::One),
        Reads::Page => quote!(__ds::DocsPerCall::Page { page_size: __ds::DEFAULT_PAGE_SIZE }),
        Reads::Unbounded => quote!(__ds::DocsPerCall::Unbounded),
    };
    let load = match doc_size_bound(a, cx) {
        DocSize::Pair(bytes, why) => quote!(__ds::Load::of(#docs, #bytes, #why)),
        DocSize::Variant(size) => quote!(__ds::Load::variant(#docs, #size)),
    };
    match rate {
        None => load,
        // A call, not struct update syntax: see `AccessPattern::row`'s completions.
        Some(rate) => quote!(#load.with_rate(#rate)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_rates_and_other_units() {
        let rate = |t: &str| read(t).unwrap();
        assert_eq!(rate("500 r/s"), Rate { per_second: 500.0, write: false });
        assert_eq!(rate("50 w/s"), Rate { per_second: 50.0, write: true });
        assert_eq!(rate("5 r/s"), Rate { per_second: 5.0, write: false });
        assert_eq!(rate("30 r/min"), Rate { per_second: 0.5, write: false });
        assert_eq!(rate("2 w/h").per_second, 2.0 / 3600.0);
        assert_eq!(rate("0.5 R / S"), Rate { per_second: 0.5, write: false });
        assert_eq!(rate("86400 reads/day").per_second, 1.0);
        assert_eq!(rate("12writes/min").per_second, 0.2);
    }

    #[test]
    fn malformed_rates_say_the_form() {
        for (text, why) in [
            ("often", "does not start with a number"),
            ("500", "no `/`"),
            ("500 r", "no `/`"),
            ("500 q/s", "`q` is neither"),
            ("500 r/week", "`week` is not a unit"),
            ("5..0 r/s", "is not a number"),
            ("500 /s", "say `r` for reads"),
        ] {
            let e = read(text).unwrap_err();
            assert!(e.contains(why) && e.contains("`500 r/s`"), "{text}: {e}");
        }
        assert!(read(" ").unwrap_err().contains("is empty"));
    }
}
