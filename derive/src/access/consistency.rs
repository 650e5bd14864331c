//! `consistency = "..."`: a closed vocabulary, read case- and spacing-tolerantly, and
//! expanded into the runtime's `Consistency`, which decides the read preference, read
//! concern and write concern the pattern's queries carry.

use darling::error::Accumulator;
use darling::Error;
use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

use crate::common::message::did_you_mean;

/// The words, as the error lists them.
const WORDS: &[&str] = &["strong", "strong (same doc)", "read-your-writes", "eventual ok", "eventual"];

/// The smallest `maxStalenessSeconds` MongoDB accepts.
const MIN_STALENESS_SECONDS: u64 = 90;

/// A parsed consistency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Consistency {
    Strong,
    StrongSameDoc,
    ReadYourWrites,
    /// With `maxStalenessSeconds` when a staleness is given.
    Eventual(Option<u64>),
    /// No `consistency`.
    Unspecified,
}

/// Reads the words; an unknown one, or a staleness MongoDB refuses, is an error under
/// the string.
pub(crate) fn parse(lit: Option<&LitStr>, errors: &mut Accumulator) -> Consistency {
    let Some(lit) = lit else { return Consistency::Unspecified };
    match read(&lit.value()) {
        Ok(c) => c,
        Err(message) => {
            errors.push(Error::custom(message).with_span(lit));
            Consistency::Unspecified
        }
    }
}

fn vocabulary() -> String {
    "`strong`, `strong (same doc)`, `read-your-writes`, `eventual ok` (or `eventual`), and `eventual` with a staleness such as `eventual (≤ 90s)`".to_owned()
}

/// Lower case, `-`/`_` read as spaces, one space between words, none inside parentheses.
fn normalize(text: &str) -> String {
    let spaced: String = text
        .to_lowercase()
        .chars()
        .map(|c| if c == '-' || c == '_' { ' ' } else { c })
        .collect::<String>()
        .replace('(', " (")
        .replace(')', ") ");
    let words = spaced.split_whitespace().collect::<Vec<_>>().join(" ");
    words.replace("( ", "(").replace(" )", ")")
}

fn read(text: &str) -> Result<Consistency, String> {
    let words = normalize(text);
    match words.as_str() {
        "" => {
            return Err(format!(
                "`consistency` is empty: name one of {}, or leave `consistency` out",
                vocabulary()
            ))
        }
        "strong" => return Ok(Consistency::Strong),
        "strong (same doc)" | "strong (same document)" => return Ok(Consistency::StrongSameDoc),
        "read your writes" => return Ok(Consistency::ReadYourWrites),
        "eventual" | "eventual ok" => return Ok(Consistency::Eventual(None)),
        _ => {}
    }
    let staleness = ["eventual ok (", "eventual ("].iter().find_map(|p| words.strip_prefix(p));
    if let Some(inner) = staleness.and_then(|rest| rest.strip_suffix(')')) {
        return staleness_seconds(inner, text).map(|s| Consistency::Eventual(Some(s)));
    }
    // The whole text, or else its first word ("eventualy consistent"), may be a misspelling.
    let first = text.split_whitespace().next().unwrap_or_default();
    let hint = did_you_mean(text.trim(), WORDS)
        .or_else(|| did_you_mean(first, WORDS))
        .map(|w| format!("; did you mean `{w}`?"))
        .unwrap_or_default();
    Err(format!(
        "unknown consistency `{text}`: docshape's consistency words are {}, each mapped to the read preference and read concern its queries send{hint}",
        vocabulary()
    ))
}

/// `≤ 90s`, `<= 2 min`, `≤1h`: whole seconds, at least MongoDB's minimum.
fn staleness_seconds(inner: &str, text: &str) -> Result<u64, String> {
    let form = format!(
        "`{text}`: a staleness is written `eventual (≤ 90s)` or `eventual (<= 2 min)`: `≤` or `<=`, a number, and `s`, `min` or `h`"
    );
    let Some(amount) = inner.strip_prefix('≤').or_else(|| inner.strip_prefix("<=")) else {
        return Err(form);
    };
    let amount = amount.trim();
    let split = amount.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(amount.len());
    let (number, unit) = amount.split_at(split);
    let Ok(value) = number.parse::<f64>() else { return Err(form) };
    let unit_seconds = match unit.trim() {
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hr" | "hour" | "hours" => 3600.0,
        _ => return Err(form),
    };
    let seconds = value * unit_seconds;
    if !seconds.is_finite() || seconds > 1e12 || seconds.fract() != 0.0 {
        return Err(format!(
            "`{text}`: `maxStalenessSeconds` is a whole number of seconds; write the staleness in whole seconds, like `eventual (≤ 90s)`"
        ));
    }
    let seconds = seconds as u64;
    if seconds < MIN_STALENESS_SECONDS {
        return Err(format!(
            "`{text}`: MongoDB refuses a staleness below {MIN_STALENESS_SECONDS} seconds (`maxStalenessSeconds` must be at least {MIN_STALENESS_SECONDS}, since a secondary's lag is only known to within its heartbeat and the primary's idle writes); write `eventual (≤ {MIN_STALENESS_SECONDS}s)` or more, or `eventual ok` for no bound"
        ));
    }
    Ok(seconds)
}

/// The runtime value, `__ds::Consistency::...`.
pub(crate) fn tokens(c: Consistency) -> TokenStream {
    match c {
        Consistency::Strong => quote!(__ds::Consistency::Strong),
        Consistency::StrongSameDoc => quote!(__ds::Consistency::StrongSameDoc),
        Consistency::ReadYourWrites => quote!(__ds::Consistency::ReadYourWrites),
        Consistency::Eventual(None) => {
            quote!(__ds::Consistency::Eventual { max_staleness: ::core::option::Option::None })
        }
        Consistency::Eventual(Some(s)) => quote!(__ds::Consistency::Eventual {
            max_staleness: ::core::option::Option::Some(::core::time::Duration::from_secs(#s))
        }),
        Consistency::Unspecified => quote!(__ds::Consistency::Unspecified),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_words_and_their_spellings() {
        for (text, want) in [
            ("strong", Consistency::Strong),
            ("  Strong ", Consistency::Strong),
            ("strong (same doc)", Consistency::StrongSameDoc),
            ("Strong(Same Doc)", Consistency::StrongSameDoc),
            ("strong ( same  document )", Consistency::StrongSameDoc),
            ("read-your-writes", Consistency::ReadYourWrites),
            ("Read your writes", Consistency::ReadYourWrites),
            ("read_your_writes", Consistency::ReadYourWrites),
            ("eventual ok", Consistency::Eventual(None)),
            ("Eventual OK", Consistency::Eventual(None)),
            ("eventual", Consistency::Eventual(None)),
            ("eventual (≤ 90s)", Consistency::Eventual(Some(90))),
            ("eventual (<= 90s)", Consistency::Eventual(Some(90))),
            ("eventual(≤90 s)", Consistency::Eventual(Some(90))),
            ("eventual ok (≤ 5 min)", Consistency::Eventual(Some(300))),
            ("eventual (≤ 1.5 min)", Consistency::Eventual(Some(90))),
            ("eventual (<= 2h)", Consistency::Eventual(Some(7200))),
        ] {
            assert_eq!(read(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn other_words_are_refused_with_the_vocabulary() {
        let e = read("eventualy").unwrap_err();
        assert!(e.contains("did you mean `eventual`?"), "{e}");
        assert!(e.contains("`read-your-writes`"), "{e}");
        let e = read("stong").unwrap_err();
        assert!(e.contains("did you mean `strong`?"), "{e}");
        let e = read("eventualy consistent").unwrap_err();
        assert!(e.contains("did you mean `eventual`?"), "{e}");
        let e = read("linearizable").unwrap_err();
        assert!(!e.contains("did you mean"), "{e}");
        assert!(read("").unwrap_err().contains("is empty"));
        assert!(read("strong (other doc)").is_err());
    }

    #[test]
    fn a_staleness_is_at_least_ninety_seconds_in_whole_seconds() {
        let e = read("eventual (≤ 30s)").unwrap_err();
        assert!(e.contains("below 90 seconds"), "{e}");
        assert!(read("eventual (≤ 89s)").is_err());
        assert!(read("eventual (≤ 1 min)").unwrap_err().contains("below 90"));
        assert!(read("eventual (≤ 90.5s)").unwrap_err().contains("whole number"));
        assert!(read("eventual (90s)").unwrap_err().contains("`≤` or `<=`"));
        assert!(read("eventual (≤ 90 weeks)").unwrap_err().contains("`s`, `min` or `h`"));
        assert!(read("eventual (≤ s)").is_err());
    }
}
