//! Durations written in attributes: `expire_after = "30d"`, `max_stale = "5m"`.

use darling::Error;
use syn::LitStr;

/// `"30d"`, `"12h"`, `"5m"`, `"300s"`, `"300"` in seconds.
pub(crate) fn parse_duration(lit: &LitStr) -> Result<u64, Error> {
    let text = lit.value();
    let text = text.trim();
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let factor = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => 0,
    };
    match digits.parse::<u64>() {
        Ok(n) if factor > 0 => n
            .checked_mul(factor)
            .ok_or_else(|| Error::custom("this duration overflows").with_span(lit)),
        _ => Err(Error::custom(format!(
            "`{text}` is not a duration: write a number of seconds, or a number with `s`, `m`, `h` or `d`, like \"30d\""
        ))
        .with_span(lit)),
    }
}
