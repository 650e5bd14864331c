//! How a placeholder's value is written into a key, and read back.

use std::fmt;

/// Whether `b` is written as itself: RFC 3986's unreserved characters. Everything
/// else is percent-encoded, so a value can hold no delimiter (`:`), no glob character
/// of `SCAN MATCH` (`* ? [ ] \`), no brace (a Redis Cluster hash tag), no `%` of its
/// own, and nothing outside printable ASCII.
pub(crate) fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Escapes one placeholder value for a key: RFC 3986's unreserved characters
/// (`A-Z a-z 0-9 - . _ ~`) stay as they are, every other byte of the UTF-8 text
/// becomes `%XX` (upper-case hex).
///
/// The escaped text never contains `:`, so a value cannot add a segment to a key or
/// forge another family's literal text, and it never contains a glob character, so
/// it cannot change what a `SCAN MATCH` pattern matches. [`unescape`] is its exact
/// inverse.
///
/// ```
/// use docshape::keys::escape;
/// assert_eq!(escape("9f3e"), "9f3e");
/// assert_eq!(escape("203.0.113.7"), "203.0.113.7");
/// assert_eq!(escape("2001:db8::1"), "2001%3Adb8%3A%3A1");
/// assert_eq!(escape("a*b{c}"), "a%2Ab%7Bc%7D");
/// assert_eq!(escape("ñ"), "%C3%B1");
/// ```
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    push_escaped(value, &mut out);
    out
}

pub(crate) fn push_escaped(value: &str, out: &mut String) {
    for &b in value.as_bytes() {
        if unreserved(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xF)]));
        }
    }
}

/// Why a key segment is not an escaped value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscapeError {
    /// Byte offset of the problem in the segment.
    pub at: usize,
    /// What is wrong there.
    pub problem: &'static str,
}

impl fmt::Display for EscapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.problem, self.at)
    }
}

impl std::error::Error for EscapeError {}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Reads back a value [`escape`] wrote. Only [`escape`]'s own output is accepted:
/// lower-case hex, an escaped unreserved character (`%41` for `A`) or a raw reserved
/// one are refused, so that each value has exactly one key and each key at most one
/// value.
///
/// ```
/// use docshape::keys::{escape, unescape};
/// assert_eq!(unescape("2001%3Adb8%3A%3A1").unwrap(), "2001:db8::1");
/// assert!(unescape("%41").is_err()); // `A` is written as itself
/// assert!(unescape("%3a").is_err()); // hex is upper case
/// assert!(unescape("a:b").is_err());
/// let s = "any text: *, {, %, ñ";
/// assert_eq!(unescape(&escape(s)).unwrap(), s);
/// ```
pub fn unescape(segment: &str) -> Result<String, EscapeError> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if unreserved(b) {
            out.push(b);
            i += 1;
        } else if b == b'%' {
            let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex_value),
                bytes.get(i + 2).copied().and_then(hex_value),
            ) else {
                return Err(EscapeError { at: i, problem: "`%` not followed by two upper-case hex digits" });
            };
            let decoded = hi << 4 | lo;
            if unreserved(decoded) {
                return Err(EscapeError { at: i, problem: "an unreserved character written escaped" });
            }
            out.push(decoded);
            i += 3;
        } else {
            return Err(EscapeError { at: i, problem: "a character escaping would have encoded" });
        }
    }
    String::from_utf8(out).map_err(|e| EscapeError {
        at: e.utf8_error().valid_up_to(),
        problem: "escaped bytes that are not UTF-8",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips_and_only_canonical_text_is_accepted() {
        for c in (0u32..0x800).filter_map(char::from_u32) {
            let s = c.to_string();
            let e = escape(&s);
            assert!(!e.contains([':', '*', '?', '[', ']', '\\', '{', '}']), "{e}");
            assert_eq!(unescape(&e).unwrap(), s);
        }
        assert!(unescape("%").is_err());
        assert!(unescape("%4").is_err());
        assert!(unescape("%zz").is_err());
        assert!(unescape("%C3").is_err(), "half a UTF-8 sequence");
        assert!(unescape("a b").is_err());
        assert_eq!(unescape("").unwrap(), "");
    }
}
