//! Cursor tokens: what a page position is bound to, and its byte format.

use crate::core::bson_compat;
use std::fmt;

use bson::{Bson, Document, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use hmac::{KeyInit, Mac};

use crate::core::access::AccessPattern;
use crate::core::index::IndexKey;

/// Version 2 binds the database and the equality values into the fingerprint.
const VERSION: u8 = 2;
const UNSIGNED: u8 = 0;
const SIGNED: u8 = 1;
const MAC_LEN: usize = 32;
/// Tokens longer than this are refused before decoding: no real position needs it.
const MAX_TOKEN_LEN: usize = 4096;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// A secret that signs cursor tokens, so a client can return a token but not forge or
/// alter one.
///
/// It holds the HMAC state already keyed, so signing or checking a token starts from a
/// copy of it instead of hashing the secret again.
#[derive(Clone)]
pub struct CursorKey(HmacSha256);

impl CursorKey {
    /// A key from secret bytes (at least 16; 32 random bytes are a good choice).
    pub fn new(secret: impl Into<Vec<u8>>) -> Result<Self, CursorError> {
        let secret = secret.into();
        if secret.len() < 16 {
            return Err(CursorError::WeakKey);
        }
        Ok(Self(<HmacSha256 as KeyInit>::new_from_slice(&secret).expect("HMAC takes keys of any length")))
    }

    fn mac(&self) -> HmacSha256 {
        self.0.clone()
    }
}

impl fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

/// Why a cursor token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CursorError {
    /// Not a token docshape wrote: bad characters, lengths or contents.
    Malformed(&'static str),
    /// A token format this version of docshape does not read.
    UnsupportedVersion(u8),
    /// The token belongs to another database, collection, access pattern or set of
    /// equality values (another owner's feed).
    WrongPattern,
    /// The signature does not match: the token was forged or altered.
    BadSignature,
    /// The paginator signs its tokens and this one is unsigned.
    Unsigned,
    /// The token is signed but the paginator has no key to check it.
    UnexpectedSignature,
    /// A signing key shorter than 16 bytes.
    WeakKey,
}

impl fmt::Display for CursorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(why) => write!(f, "malformed cursor token: {why}"),
            Self::UnsupportedVersion(v) => write!(f, "cursor token format {v} is not supported"),
            Self::WrongPattern => f.write_str(
                "cursor token belongs to another access pattern (or database, collection or equality values)",
            ),
            Self::BadSignature => f.write_str("cursor token signature does not match"),
            Self::Unsigned => {
                f.write_str("cursor token is not signed, and this paginator requires signatures")
            }
            Self::UnexpectedSignature => f.write_str("cursor token is signed, but this paginator has no key"),
            Self::WeakKey => f.write_str("a cursor key needs at least 16 bytes"),
        }
    }
}

impl std::error::Error for CursorError {}

/// The sort of a paginated pattern: its sort keys, then `_id` unless already there
/// (the one definition, which every read of the row sends:
/// [`crate::access::command::sort_keys`]).
pub fn sort_keys(pattern: &AccessPattern) -> Vec<(&'static str, IndexKey)> {
    sort_key_iter(pattern).collect()
}

/// [`sort_keys`] without the allocation, for the token codec.
fn sort_key_iter(pattern: &AccessPattern) -> impl Iterator<Item = (&'static str, IndexKey)> + '_ {
    crate::core::access::command::sort_keys(pattern)
}

/// What a token is bound to: a page position means something only in one database's
/// collection, for one access pattern and one set of equality values.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The database's name.
    pub database: &'a str,
    /// The collection's name.
    pub collection: &'a str,
    /// The access pattern.
    pub pattern: &'a AccessPattern,
    /// The pattern's equality filter, as sent (`{field: {$eq: value}}`).
    pub filter: &'a Document,
}

impl Scope<'_> {
    /// SHA-256 over the scope's parts, each length-prefixed so that no two scopes
    /// spell the same bytes. The parts are laid out in one buffer and hashed in one
    /// call: feeding them to the hasher one by one cost more than the hashing itself.
    fn digest(&self) -> [u8; 32] {
        use sha2::Digest as _;
        let mut bytes = Vec::with_capacity(256);
        let eat = |bytes: &mut Vec<u8>, part: &[u8]| {
            bytes.extend_from_slice(&(part.len() as u64).to_le_bytes());
            bytes.extend_from_slice(part);
        };
        eat(&mut bytes, b"docshape cursor scope");
        eat(&mut bytes, self.database.as_bytes());
        eat(&mut bytes, self.collection.as_bytes());
        eat(&mut bytes, self.pattern.name.as_bytes());
        for (field, key) in sort_key_iter(self.pattern) {
            eat(&mut bytes, field.as_bytes());
            eat(&mut bytes, key.name_part().as_bytes());
        }
        // The filter as `Document::to_writer` writes it, behind its length; no bytes
        // (length 0) where that fails, as it always was.
        let at = bytes.len();
        bytes.extend_from_slice(&[0; 8]);
        if !write_document(&mut bytes, self.filter) {
            bytes.truncate(at + 8);
        }
        let len = (bytes.len() - at - 8) as u64;
        bytes[at..at + 8].copy_from_slice(&len.to_le_bytes());
        sha2::Sha256::digest(&bytes).into()
    }

    /// The scope hashed once, for every token of a page: a page that reads a cursor and
    /// writes its neighbours' hashes its scope once instead of three times.
    pub fn prepare(&self) -> PreparedScope {
        PreparedScope { digest: self.digest(), values: sort_key_iter(self.pattern).count() }
    }
}

/// A [`Scope`] hashed once ([`Scope::prepare`]): it encodes and decodes the scope's
/// tokens exactly as [`encode_token`] and [`decode_token`] do, without hashing the scope
/// again for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreparedScope {
    digest: [u8; 32],
    /// How many sort values a position holds: the pattern's sort keys and `_id`.
    values: usize,
}

impl PreparedScope {
    /// [`encode_token`] for this scope.
    pub fn encode(&self, values: &[Bson], key: Option<&CursorKey>) -> String {
        encode_prepared(self, values, key)
    }

    /// [`decode_token`] for this scope.
    pub fn decode(&self, token: &str, key: Option<&CursorKey>) -> Result<Vec<Bson>, CursorError> {
        decode_prepared(token, self, key)
    }
}

/// The 8 bytes of the scope's digest a token carries, so that a token of another scope
/// is refused as such even unsigned. A signed token's MAC covers the whole digest.
#[cfg(test)]
fn fingerprint(scope: &Scope<'_>) -> [u8; 8] {
    let mut out = [0u8; 8];
    out.copy_from_slice(&scope.digest()[..8]);
    out
}

/// An element's name: an array's decimal index, or a document's key.
#[derive(Clone, Copy)]
enum Name<'a> {
    Index(usize),
    Key(&'a str),
}

/// Appends one element `name: value` in BSON, byte for byte as the bson crate writes it,
/// and returns `false` (having appended nothing) for what the bson crate refuses to
/// write: a key holding a NUL. The values a cursor or an equality filter holds are
/// written here directly (no clone of the value, no intermediate buffer); anything else
/// goes through the bson crate.
fn write_element(out: &mut Vec<u8>, name: Name<'_>, value: &Bson) -> bool {
    let start = out.len();
    let head = |out: &mut Vec<u8>, tag: u8| {
        out.push(tag);
        match name {
            Name::Index(index) => {
                let mut digits = [0u8; 20];
                let mut at = digits.len();
                let mut n = index;
                loop {
                    at -= 1;
                    digits[at] = b'0' + (n % 10) as u8;
                    n /= 10;
                    if n == 0 {
                        break;
                    }
                }
                out.extend_from_slice(&digits[at..]);
            }
            Name::Key(key) => out.extend_from_slice(key.as_bytes()),
        }
        out.push(0);
    };
    if matches!(name, Name::Key(key) if key.contains('\0')) {
        return false;
    }
    match value {
        Bson::String(s) => {
            head(out, 0x02);
            out.extend_from_slice(&(s.len() as i32 + 1).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
            out.push(0);
        }
        Bson::Int32(n) => {
            head(out, 0x10);
            out.extend_from_slice(&n.to_le_bytes());
        }
        Bson::Int64(n) => {
            head(out, 0x12);
            out.extend_from_slice(&n.to_le_bytes());
        }
        Bson::Double(x) => {
            head(out, 0x01);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Bson::DateTime(d) => {
            head(out, 0x09);
            out.extend_from_slice(&d.timestamp_millis().to_le_bytes());
        }
        Bson::ObjectId(id) => {
            head(out, 0x07);
            out.extend_from_slice(&id.bytes());
        }
        Bson::Boolean(b) => {
            head(out, 0x08);
            out.push(u8::from(*b));
        }
        Bson::Document(doc) => {
            head(out, 0x03);
            if !write_document(out, doc) {
                out.truncate(start);
                return false;
            }
        }
        other => {
            let Ok(raw) = RawBson::try_from(other.clone()) else { return false };
            let mut one = RawDocumentBuf::new();
            let appended = match name {
                Name::Index(index) => bson_compat::try_append(&mut one, &index.to_string(), raw),
                Name::Key(key) => bson_compat::try_append(&mut one, key, raw),
            };
            if !appended {
                return false;
            }
            let bytes = one.as_bytes();
            // The element without the document's length prefix and final NUL.
            out.extend_from_slice(&bytes[4..bytes.len() - 1]);
        }
    }
    true
}

/// Writes a document as BSON, as `Document::to_writer` does, and returns `false`
/// (leaving a partial document for the caller to drop) where `to_writer` fails.
fn write_document(out: &mut Vec<u8>, doc: &Document) -> bool {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    for (key, value) in doc {
        if !write_element(out, Name::Key(key), value) {
            return false;
        }
    }
    out.push(0);
    let len = (out.len() - start) as i32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    true
}

/// Writes `{v: [values]}` as BSON. A value the bson crate cannot write is left out,
/// as `RawArrayBuf` did: the decoder then refuses the token for its count.
fn write_payload(out: &mut Vec<u8>, values: &[Bson]) {
    let doc_start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&[0x04, b'v', 0]);
    let array_start = out.len();
    out.extend_from_slice(&[0; 4]);
    let mut index = 0;
    for value in values {
        if write_element(out, Name::Index(index), value) {
            index += 1;
        }
    }
    out.push(0);
    let array_len = (out.len() - array_start) as i32;
    out[array_start..array_start + 4].copy_from_slice(&array_len.to_le_bytes());
    out.push(0);
    let doc_len = (out.len() - doc_start) as i32;
    out[doc_start..doc_start + 4].copy_from_slice(&doc_len.to_le_bytes());
}

/// Encodes a boundary position as a token.
///
/// Hashes the scope; to write several tokens of one scope, [`Scope::prepare`] it once.
pub fn encode_token(scope: &Scope<'_>, values: &[Bson], key: Option<&CursorKey>) -> String {
    encode_prepared(&scope.prepare(), values, key)
}

fn encode_prepared(scope: &PreparedScope, values: &[Bson], key: Option<&CursorKey>) -> String {
    // The fingerprint is the digest's first 8 bytes; the MAC covers all of it.
    let digest = &scope.digest;
    let mut bytes = Vec::with_capacity(96 + MAC_LEN);
    bytes.extend_from_slice(&[VERSION, if key.is_some() { SIGNED } else { UNSIGNED }]);
    bytes.extend_from_slice(&digest[..8]);
    write_payload(&mut bytes, values);
    if let Some(key) = key {
        let mut mac = key.mac();
        mac.update(digest);
        mac.update(&bytes);
        bytes.extend_from_slice(&mac.finalize().into_bytes());
    }
    base64_encode(&bytes)
}

/// The URL-safe base64 alphabet (RFC 4648, section 5).
const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Each byte's value in [`BASE64`], or `0xff` for a byte outside it.
const BASE64_VALUE: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 64 {
        table[BASE64[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// `bytes` in URL-safe base64 without padding, as the `base64` crate's
/// `URL_SAFE_NO_PAD` writes it. By hand: for a token's hundred bytes the crate's
/// general engine took a tenth of a round trip.
fn base64_encode(bytes: &[u8]) -> String {
    let char_at = |n: u32, shift: u32| BASE64[(n >> shift) as usize & 63];
    let mut out = vec![0u8; bytes.len() / 3 * 4 + [0, 2, 3][bytes.len() % 3]];
    let (whole, rest) = out.split_at_mut(bytes.len() / 3 * 4);
    for (c, o) in bytes.chunks_exact(3).zip(whole.chunks_exact_mut(4)) {
        let n = u32::from(c[0]) << 16 | u32::from(c[1]) << 8 | u32::from(c[2]);
        o.copy_from_slice(&[char_at(n, 18), char_at(n, 12), char_at(n, 6), char_at(n, 0)]);
    }
    let tail = &bytes[bytes.len() / 3 * 3..];
    let n = tail.iter().enumerate().fold(0, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
    for (i, o) in rest.iter_mut().enumerate() {
        *o = char_at(n, 18 - 6 * i as u32);
    }
    String::from_utf8(out).expect("the base64 alphabet is ASCII")
}

/// Decodes URL-safe base64 without padding into `out` and returns the length written;
/// `None` for a character outside the alphabet, a length no encoding has (a lone last
/// character), non-zero unused bits in the last character (so that one byte string has
/// one spelling, as the `base64` crate requires), or an `out` too short.
fn base64_decode(text: &[u8], out: &mut [u8]) -> Option<usize> {
    let value = |c: u8| match BASE64_VALUE[c as usize] {
        0xff => None,
        v => Some(u32::from(v)),
    };
    let mut len = 0;
    let mut chunks = text.chunks_exact(4);
    for c in &mut chunks {
        let n = value(c[0])? << 18 | value(c[1])? << 12 | value(c[2])? << 6 | value(c[3])?;
        out.get_mut(len..len + 3)?.copy_from_slice(&n.to_be_bytes()[1..]);
        len += 3;
    }
    match *chunks.remainder() {
        [] => {}
        [a, b] => {
            let n = value(a)? << 18 | value(b)? << 12;
            if n & 0xffff != 0 {
                return None;
            }
            *out.get_mut(len)? = (n >> 16) as u8;
            len += 1;
        }
        [a, b, c] => {
            let n = value(a)? << 18 | value(b)? << 12 | value(c)? << 6;
            if n & 0xff != 0 {
                return None;
            }
            out.get_mut(len..len + 2)?.copy_from_slice(&n.to_be_bytes()[1..3]);
            len += 2;
        }
        _ => return None,
    }
    Some(len)
}

/// A cursor's scalar as a [`Bson`] value, straight from its raw form; `None` for the
/// types a cursor does not hold, which take the general conversion.
fn scalar(value: RawBsonRef<'_>) -> Option<Bson> {
    Some(match value {
        RawBsonRef::String(s) => Bson::String(s.to_owned()),
        RawBsonRef::Int32(n) => Bson::Int32(n),
        RawBsonRef::Int64(n) => Bson::Int64(n),
        RawBsonRef::Double(x) => Bson::Double(x),
        RawBsonRef::DateTime(d) => Bson::DateTime(d),
        RawBsonRef::ObjectId(id) => Bson::ObjectId(id),
        RawBsonRef::Boolean(b) => Bson::Boolean(b),
        RawBsonRef::Decimal128(d) => Bson::Decimal128(d),
        RawBsonRef::Timestamp(t) => Bson::Timestamp(t),
        _ => return None,
    })
}

/// The payload's values through the bson crate's raw reader: the payload must be
/// exactly `{v: [...]}`, every element well formed.
fn read_payload(payload: &[u8], count: usize) -> Result<Vec<Bson>, CursorError> {
    let payload = RawDocument::from_bytes(payload).map_err(|_| CursorError::Malformed("payload"))?;
    let mut elements = payload.iter();
    let array = match (elements.next(), elements.next()) {
        (Some(Ok((key, RawBsonRef::Array(array)))), None) if bson_compat::key_str(key) == "v" => array,
        _ => return Err(CursorError::Malformed("payload")),
    };
    let mut values = Vec::with_capacity(count);
    for value in array {
        let value = value.map_err(|_| CursorError::Malformed("payload"))?;
        let value = match scalar(value) {
            Some(value) => value,
            None => bson_compat::raw_to_bson(value).ok_or(CursorError::Malformed("payload"))?,
        };
        values.push(value);
    }
    Ok(values)
}

/// The payload's values when it is byte for byte what [`write_payload`] writes for
/// strings, integers, doubles, dates, object ids and booleans: `{v: [...]}` with the
/// indexes `0`, `1`, ... in order. `None` for anything else, even what
/// [`read_payload`] would accept, so that it decides; where this returns values,
/// [`read_payload`] returns the same ones. A token's values are read about twice as fast
/// this way, without the general element iterator and its key checks.
fn read_written_payload(payload: &[u8], count: usize) -> Option<Vec<Bson>> {
    // The smallest such payload, `{v: []}`, is 13 bytes.
    if payload.len() < 13 {
        return None;
    }
    let i32_at = |at: usize| payload.get(at..at + 4).map(|b| i32::from_le_bytes(b.try_into().unwrap()));
    let fixed = |at: usize, n: usize| payload.get(at..at + n);
    // `{`, `v: [` ... `]`, `}`: both lengths exact, both terminators in place.
    if i32_at(0)? as usize != payload.len() || fixed(4, 3)? != [0x04, b'v', 0] {
        return None;
    }
    if i32_at(7)? as usize != payload.len() - 8 || payload[payload.len() - 2..] != [0, 0] {
        return None;
    }
    let end = payload.len() - 2;
    let mut at = 11;
    let mut values = Vec::with_capacity(count);
    while at < end {
        let tag = payload[at];
        // The index, as `write_element` spells it: decimal, no leading zero.
        let mut digits = [0u8; 20];
        let mut n = values.len();
        let mut len = 0;
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        digits[..len].reverse();
        if fixed(at + 1, len)? != &digits[..len] || *payload.get(at + 1 + len)? != 0 {
            return None;
        }
        at += 2 + len;
        let (value, size) = match tag {
            0x02 => {
                let n = i32_at(at)?;
                let n = usize::try_from(n).ok().filter(|&n| n >= 1)?;
                let bytes = fixed(at + 4, n)?;
                let (text, nul) = bytes.split_at(n - 1);
                // A NUL inside the string: left to the bson crate's rules.
                if nul != [0] || text.contains(&0) {
                    return None;
                }
                (Bson::String(std::str::from_utf8(text).ok()?.to_owned()), 4 + n)
            }
            0x10 => (Bson::Int32(i32_at(at)?), 4),
            0x12 => (Bson::Int64(i64::from_le_bytes(fixed(at, 8)?.try_into().unwrap())), 8),
            0x01 => (Bson::Double(f64::from_le_bytes(fixed(at, 8)?.try_into().unwrap())), 8),
            0x09 => {
                let millis = i64::from_le_bytes(fixed(at, 8)?.try_into().unwrap());
                (Bson::DateTime(bson::DateTime::from_millis(millis)), 8)
            }
            0x07 => {
                let id: [u8; 12] = fixed(at, 12)?.try_into().unwrap();
                (Bson::ObjectId(bson::oid::ObjectId::from_bytes(id)), 12)
            }
            0x08 => match *payload.get(at)? {
                0 => (Bson::Boolean(false), 1),
                1 => (Bson::Boolean(true), 1),
                _ => return None,
            },
            _ => return None,
        };
        at += size;
        if at > end {
            return None;
        }
        values.push(value);
    }
    (at == end).then_some(values)
}

/// Decodes a token from an untrusted client into the boundary values it holds.
///
/// Checks, in order: size, base64, version, signature (when `key` is given, or its
/// absence), the access pattern, and that the payload is a BSON array of exactly one
/// scalar per sort key. The values only ever become comparison operands of the
/// pattern's own fields, so a token cannot choose fields or operators.
///
/// Hashes the scope; to read and write several tokens of one scope,
/// [`Scope::prepare`] it once.
pub fn decode_token(
    token: &str,
    scope: &Scope<'_>,
    key: Option<&CursorKey>,
) -> Result<Vec<Bson>, CursorError> {
    decode_prepared(token, &scope.prepare(), key)
}

fn decode_prepared(
    token: &str,
    scope: &PreparedScope,
    key: Option<&CursorKey>,
) -> Result<Vec<Bson>, CursorError> {
    if token.is_empty() || token.len() > MAX_TOKEN_LEN {
        return Err(CursorError::Malformed("length"));
    }
    // Decoded on the stack when it fits, as a feed's tokens do (about 110 characters).
    let mut stack = [0u8; 256];
    let mut heap = Vec::new();
    let buffer: &mut [u8] = if token.len() <= 336 {
        &mut stack
    } else {
        heap.resize(token.len() / 4 * 3 + 3, 0);
        &mut heap
    };
    let len = base64_decode(token.as_bytes(), buffer).ok_or(CursorError::Malformed("not URL-safe base64"))?;
    let bytes = &buffer[..len];
    let (&version, rest) = bytes.split_first().ok_or(CursorError::Malformed("empty"))?;
    if version != VERSION {
        return Err(CursorError::UnsupportedVersion(version));
    }
    let (&kind, _) = rest.split_first().ok_or(CursorError::Malformed("truncated"))?;
    let digest = &scope.digest;
    let body = match (kind, key) {
        (SIGNED, Some(key)) => {
            if bytes.len() < 2 + 8 + MAC_LEN {
                return Err(CursorError::Malformed("truncated"));
            }
            let (body, tag) = bytes.split_at(bytes.len() - MAC_LEN);
            if body.get(2..10) != Some(&digest[..8]) {
                return Err(CursorError::WrongPattern);
            }
            let mut mac = key.mac();
            mac.update(digest);
            mac.update(body);
            mac.verify_slice(tag).map_err(|_| CursorError::BadSignature)?;
            body
        }
        (SIGNED, None) => return Err(CursorError::UnexpectedSignature),
        (UNSIGNED, Some(_)) => return Err(CursorError::Unsigned),
        (UNSIGNED, None) => bytes,
        _ => return Err(CursorError::Malformed("unknown kind")),
    };
    let fp = body.get(2..10).ok_or(CursorError::Malformed("truncated"))?;
    if fp != &digest[..8] {
        return Err(CursorError::WrongPattern);
    }
    let payload = &body[10..];
    // What `write_payload` wrote is read by hand; anything else takes the bson crate's
    // reader, which decides exactly as before.
    let values = match read_written_payload(payload, scope.values) {
        Some(values) => values,
        None => read_payload(payload, scope.values)?,
    };
    if values.len() != scope.values {
        return Err(CursorError::Malformed("wrong number of values"));
    }
    for value in &values {
        let scalar = matches!(
            value,
            Bson::String(_)
                | Bson::Int32(_)
                | Bson::Int64(_)
                | Bson::Double(_)
                | Bson::Decimal128(_)
                | Bson::DateTime(_)
                | Bson::ObjectId(_)
                | Bson::Boolean(_)
                | Bson::Timestamp(_)
                | Bson::Binary(_)
        );
        if !scalar {
            return Err(CursorError::Malformed("a value of a type cursors do not hold"));
        }
    }
    Ok(values)
}
#[cfg(test)]
pub(super) mod tests;
