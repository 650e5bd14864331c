//! Keyset pagination for `#[access(..., paginate)]` patterns, with opaque cursor
//! tokens.
//!
//! patterns-en: "Offsets (skip) degrade linearly and break when rows shift — never for
//! feeds." A page is one `find` that continues from the previous page's boundary item,
//! using the pattern's sort keys with `_id` appended to break ties; no `skip` anywhere.
//! So documents inserted or deleted between requests never make a document that existed
//! throughout appear twice or go missing.
//!
//! Cursor tokens are URL-safe strings holding the boundary item's sort values with
//! their BSON types, bound to their database, collection, access pattern and equality
//! values and, with a [`CursorKey`], signed so clients cannot forge positions. They are
//! not encrypted: anyone holding one can decode the boundary item's sort values (an
//! item the client was just sent). Decoding never panics: anything malformed is a
//! [`CursorError`].
//!
//! A document whose sort value is missing or of another BSON type than the walk's (one
//! written around the validator) would be skipped by a plain keyset comparison, which
//! only matches values of the same type. Every page's `find` therefore also matches
//! such documents, and a page that meets one fails with [`PageError::MissingSortValue`]
//! or [`PageError::SortType`]: a walk to its end returns every matching document
//! exactly once or fails, never silently less.

use crate::core::bson_compat;
use std::fmt;
use std::marker::PhantomData;

use bson::{doc, Bson, Document, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use futures_util::TryStreamExt;
use hmac::{KeyInit, Mac};
use mongodb::Database;
use serde::de::DeserializeOwned;

use crate::core::access::AccessPattern;
use crate::core::index::IndexKey;
use crate::core::model::Model;
use crate::core::trace;

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

/// The sort of a paginated pattern: its sort keys, then `_id` unless already there.
pub fn sort_keys(pattern: &AccessPattern) -> Vec<(&'static str, IndexKey)> {
    sort_key_iter(pattern).collect()
}

/// [`sort_keys`] without the allocation, for the token codec.
fn sort_key_iter(pattern: &AccessPattern) -> impl Iterator<Item = (&'static str, IndexKey)> + '_ {
    let tie_break = (!pattern.sort.iter().any(|(f, _)| *f == "_id"))
        .then(|| ("_id", pattern.sort.last().map_or(IndexKey::Asc, |(_, k)| *k)));
    pattern.sort.iter().copied().chain(tie_break)
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

/// Which side of the cursor to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    After,
    Before,
}

/// A page of items, with the cursors to the neighbouring pages.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items, in the pattern's sort order.
    pub items: Vec<T>,
    /// Pass to [`Paginator::after`] for the next page; `None` on the last page.
    pub next: Option<String>,
    /// Pass to [`Paginator::before`] for the previous page; `None` on the first page.
    pub prev: Option<String>,
}

/// Why a page could not be fetched.
#[derive(Debug)]
#[non_exhaustive]
pub enum PageError {
    /// The cursor token was refused.
    Cursor(CursorError),
    /// A filter value could not be converted to BSON.
    Filter(bson_compat::SerError),
    /// A stored document lacks a sort value (written by something that ignores the
    /// model), so no cursor can point at it.
    MissingSortValue {
        /// The document's `_id`.
        id: Option<Box<Bson>>,
        /// The sort field.
        field: &'static str,
    },
    /// A stored document's sort value is of another BSON type than the walk's (a date
    /// where the others hold strings, say: written around the validator). A keyset
    /// comparison only matches values of one type, so the walk cannot place it.
    SortType {
        /// The document's `_id`.
        id: Option<Box<Bson>>,
        /// The sort field.
        field: &'static str,
        /// The type the walk compares (`"date"`, `"number"`, ...).
        expected: &'static str,
        /// The type stored.
        found: &'static str,
    },
    /// A stored document does not deserialize into the model.
    Decode(bson_compat::DeError),
    /// A stored document of a versioned model is at a version this code cannot read.
    Version(Box<crate::core::version::VersionError>),
    /// The server refused the query.
    Mongo(mongodb::error::Error),
}

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cursor(e) => write!(f, "{e}"),
            Self::Filter(e) => write!(f, "filter value: {e}"),
            Self::MissingSortValue { id, field } => match id {
                Some(id) => write!(f, "document {id} has no `{field}`, a sort key of this pattern"),
                None => write!(f, "a document has no `{field}`, a sort key of this pattern"),
            },
            Self::SortType { id, field, expected, found } => {
                let id = id.as_deref().map_or_else(|| "a document".to_owned(), |id| format!("document {id}"));
                write!(f, "{id} holds a {found} in `{field}`, a sort key of this pattern whose values are {expected}s")
            }
            Self::Decode(e) => write!(f, "stored document does not match the model: {e}"),
            Self::Version(e) => write!(f, "{e}"),
            Self::Mongo(e) => write!(f, "MongoDB: {e}"),
        }
    }
}

impl std::error::Error for PageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Cursor(e) => Some(e),
            Self::Filter(e) => Some(e),
            Self::Decode(e) => Some(e),
            Self::Version(e) => Some(e.as_ref()),
            Self::Mongo(e) => Some(e),
            Self::MissingSortValue { .. } | Self::SortType { .. } => None,
        }
    }
}

impl From<CursorError> for PageError {
    fn from(e: CursorError) -> Self {
        Self::Cursor(e)
    }
}

impl From<mongodb::error::Error> for PageError {
    fn from(e: mongodb::error::Error) -> Self {
        Self::Mongo(e)
    }
}

/// Items per page when the caller does not say ([`Paginator::page_size`]).
pub const DEFAULT_PAGE_SIZE: u32 = 20;

/// A typed keyset paginator for one access pattern, generated as
/// `Model::<pattern_name>(filter values...)`.
///
/// ```no_run
/// # use docshape::{Model, validator::Schema};
/// # #[derive(serde::Serialize, serde::Deserialize, Model)]
/// # #[model(collection = "posts")]
/// # #[index(keys(author_id, created_at = -1, _id = -1))]
/// # #[access(name = "posts_by_author", filter(author_id), sort(created_at = -1), paginate)]
/// # struct Post { author_id: String, created_at: docshape::bson::DateTime }
/// # async fn run(db: mongodb::Database) -> Result<(), docshape::paginate::PageError> {
/// let first = Post::posts_by_author("u_42").page_size(20).fetch(&db).await?;
/// if let Some(next) = &first.next {
///     let second = Post::posts_by_author("u_42").after(next).fetch(&db).await?;
/// }
/// # Ok(()) }
/// ```
#[must_use = "a paginator does nothing until `fetch`"]
pub struct Paginator<T> {
    pattern: &'static AccessPattern,
    collection: &'static str,
    filter: Result<Document, bson_compat::SerError>,
    page_size: u32,
    cursor: Option<(Side, String)>,
    key: Option<CursorKey>,
    _model: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Paginator<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Paginator")
            .field("pattern", &self.pattern.name)
            .field("page_size", &self.page_size)
            .field("cursor", &self.cursor)
            .finish()
    }
}

impl<T: Model + DeserializeOwned> Paginator<T> {
    /// A paginator over `pattern` (one of `T::ACCESS_PATTERNS`) with its equality
    /// values. Generated code calls this; use the generated method.
    pub fn new(pattern: &'static AccessPattern, filter: Result<Document, bson_compat::SerError>) -> Self {
        Self {
            pattern,
            collection: T::COLLECTION,
            filter,
            page_size: DEFAULT_PAGE_SIZE,
            cursor: None,
            key: None,
            _model: PhantomData,
        }
    }

    /// Items per page (default 20; at least 1).
    pub fn page_size(mut self, n: u32) -> Self {
        self.page_size = n.max(1);
        self
    }

    /// The page after the item `cursor` points at (a page's [`Page::next`]).
    pub fn after(mut self, cursor: &str) -> Self {
        self.cursor = Some((Side::After, cursor.to_owned()));
        self
    }

    /// The page before the item `cursor` points at (a page's [`Page::prev`]).
    pub fn before(mut self, cursor: &str) -> Self {
        self.cursor = Some((Side::Before, cursor.to_owned()));
        self
    }

    /// Signs the tokens this paginator writes and requires a valid signature on the
    /// ones it reads.
    pub fn signed_with(mut self, key: &CursorKey) -> Self {
        self.key = Some(key.clone());
        self
    }

    /// The token this paginator writes for a boundary item with these sort `values` in
    /// the database named `database` (for benchmarks and tests that start mid-walk).
    pub fn token_at(&self, database: &str, values: &[Bson]) -> Result<String, PageError> {
        Ok(self.scope(database)?.encode(values, self.key.as_ref()))
    }

    /// The scope of this paginator's tokens in the database named `database`, hashed
    /// once for the page.
    fn scope(&self, database: &str) -> Result<PreparedScope, PageError> {
        let equality = self.filter.as_ref().map_err(|e| PageError::Filter(e.clone()))?;
        Ok(Scope { database, collection: self.collection, pattern: self.pattern, filter: equality }.prepare())
    }

    /// The `find` command for this page in the database named `database`, as sent to
    /// the server (for inspection and `explain`). A cursor token is checked against that
    /// name, as [`Paginator::fetch`] checks it against its database's.
    pub fn find_command(&self, database: &str) -> Result<Document, PageError> {
        self.command(&self.scope(database)?).map(|(find, _)| find)
    }

    /// The `find` command, and the cursor's values when there is one.
    fn command(&self, scope: &PreparedScope) -> Result<(Document, Option<Vec<Bson>>), PageError> {
        let keys = sort_keys(self.pattern);
        let equality = self.filter.as_ref().map_err(|e| PageError::Filter(e.clone()))?;
        let mut filter = equality.clone();
        let (side, values) = match &self.cursor {
            Some((side, token)) => {
                let values = scope.decode(token, self.key.as_ref())?;
                let mut keyset = equality.clone();
                keyset_filter(&mut keyset, &keys, &values, *side);
                // The keyset condition, or any document whose sort value the keyset
                // comparison cannot see (missing, null, another type, an array): those
                // come back so that the page reports them instead of skipping them.
                let keyset: Document =
                    keyset.into_iter().filter(|(k, _)| !equality.contains_key(k)).collect();
                let mut or = vec![Bson::Document(keyset)];
                for ((field, _), value) in keys.iter().zip(&values) {
                    or.push(Bson::Document(doc! { *field: { "$not": { "$type": bracket(value) } } }));
                    or.push(Bson::Document(doc! { *field: { "$type": "array" } }));
                }
                filter.insert("$or", or);
                (*side, Some(values))
            }
            None => (Side::After, None),
        };
        let reverse = side == Side::Before;
        let sort: Document = keys
            .iter()
            .map(|(f, k)| {
                let ascending = (*k == IndexKey::Asc) != reverse;
                ((*f).to_owned(), Bson::Int32(if ascending { 1 } else { -1 }))
            })
            .collect();
        // One more than the page, to know whether another page follows.
        let limit = i64::from(self.page_size) + 1;
        let mut find = doc! { "find": self.collection, "filter": filter, "sort": sort, "limit": limit };
        if self.pattern.case_insensitive {
            find.insert("collation", doc! { "locale": "en", "strength": 2 });
        }
        Ok((find, values))
    }

    /// Runs the page's single `find` and returns its items and neighbouring cursors.
    pub async fn fetch(self, db: &Database) -> Result<Page<T>, PageError> {
        let side = match &self.cursor {
            None => "first",
            Some((Side::After, _)) => "after",
            Some((Side::Before, _)) => "before",
        };
        let span = trace::span!(
            "paginate.fetch",
            collection = self.collection,
            pattern = self.pattern.name,
            page_size = self.page_size,
            side,
            signed = self.key.is_some()
        );
        let page = trace::in_span(span.clone(), self.fetch_inner(db)).await;
        span.in_scope(|| match &page {
            Ok(page) => trace::event!(
                DEBUG,
                items = page.items.len(),
                next = page.next.is_some(),
                prev = page.prev.is_some(),
                "page"
            ),
            Err(e) => trace::event!(DEBUG, error = %e, "refused"),
        });
        page
    }

    async fn fetch_inner(self, db: &Database) -> Result<Page<T>, PageError> {
        // One hash of the scope for the page: the cursor read and both cursors written.
        let scope = self.scope(db.name())?;
        let (find, cursor_values) = self.command(&scope)?;
        let keys = sort_keys(self.pattern);
        let side = self.cursor.as_ref().map_or(Side::After, |(s, _)| *s);
        let collection = db.collection::<RawDocumentBuf>(self.collection);
        let mut query = collection
            .find(find.get_document("filter").cloned().unwrap_or_default())
            .sort(find.get_document("sort").cloned().unwrap_or_default())
            .limit(find.get_i64("limit").unwrap_or(21));
        if self.pattern.case_insensitive {
            query = query.collation(
                mongodb::options::Collation::builder()
                    .locale("en")
                    .strength(mongodb::options::CollationStrength::Secondary)
                    .build(),
            );
        }
        // The row's consistency: its read preference and read concern.
        if let Some(selection) = self.pattern.guarantee.selection_criteria() {
            query = query.selection_criteria(selection);
        }
        if let Some(concern) = self.pattern.guarantee.read_concern() {
            query = query.read_concern(concern);
        }
        let mut raw: Vec<RawDocumentBuf> = query.await?.try_collect().await?;
        let more = raw.len() > self.page_size as usize;
        raw.truncate(self.page_size as usize);
        if side == Side::Before {
            raw.reverse();
        }
        // Every item's sort values must be present and of the walk's types (the
        // cursor's, or the first item's on a first page): see the module docs.
        let mut expected: Option<Vec<&'static str>> =
            cursor_values.as_ref().map(|values| values.iter().map(bracket).collect());
        let mut positions = Vec::with_capacity(raw.len());
        for doc in &raw {
            let id = || lookup(doc, "_id").map(Box::new);
            let mut values = Vec::with_capacity(keys.len());
            for (field, _) in &keys {
                let value =
                    lookup(doc, field).ok_or_else(|| PageError::MissingSortValue { id: id(), field })?;
                values.push(value);
            }
            let found: Vec<&'static str> = values.iter().map(bracket).collect();
            let expected = expected.get_or_insert_with(|| found.clone());
            if let Some(i) = (0..keys.len()).find(|&i| found[i] != expected[i] || found[i] == "array") {
                let expected = if expected[i] == "array" { "scalar" } else { expected[i] };
                return Err(PageError::SortType { id: id(), field: keys[i].0, expected, found: found[i] });
            }
            positions.push(values);
        }
        let position = |values: &Vec<Bson>| scope.encode(values, self.key.as_ref());
        let (first, last) = (positions.first(), positions.last());
        let (next, prev) = match side {
            Side::After => (
                if more { last.map(position) } else { None },
                if self.cursor.is_some() { first.map(position) } else { None },
            ),
            Side::Before => (last.map(position), if more { first.map(position) } else { None }),
        };
        // A versioned model reads every stored version; others decode as they are.
        let decode = |d: &RawDocumentBuf| match T::DECODE_STORED {
            None => bson_compat::from_slice::<T>(d.as_bytes()).map_err(PageError::Decode),
            Some(decode) => {
                let document = Document::try_from(d.as_ref())
                    .map_err(|e| PageError::Decode(<bson_compat::DeError as serde::de::Error>::custom(e)))?;
                decode(document).map_err(|e| PageError::Version(Box::new(e)))
            }
        };
        let items = raw.iter().map(decode).collect::<Result<Vec<T>, _>>()?;
        Ok(Page { items, next, prev })
    }
}

/// The group of BSON types a keyset comparison matches together (MongoDB compares
/// across numeric types, and within each other type only): the `$type` alias that
/// names it.
fn bracket(value: &Bson) -> &'static str {
    match value {
        Bson::Double(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Decimal128(_) => "number",
        Bson::String(_) | Bson::Symbol(_) => "string",
        Bson::DateTime(_) => "date",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::Timestamp(_) => "timestamp",
        Bson::Binary(_) => "binData",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Null | Bson::Undefined => "null",
        Bson::RegularExpression(_) => "regex",
        Bson::JavaScriptCode(_) | Bson::JavaScriptCodeWithScope(_) => "javascript",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
        Bson::DbPointer(_) => "dbPointer",
    }
}

/// The value at a dotted path of a stored document.
fn lookup(doc: &RawDocumentBuf, path: &str) -> Option<Bson> {
    let mut current = doc.as_ref();
    let mut segments = path.split('.').peekable();
    while let Some(segment) = segments.next() {
        let value = current.get(segment).ok()??;
        if segments.peek().is_none() {
            return bson_compat::raw_to_bson(value).filter(|b| !matches!(b, Bson::Null));
        }
        current = value.as_document()?;
    }
    None
}

/// Adds the keyset condition to the pattern's equality filter: the seed's `$or`, plus
/// the first key's inclusive bound at the top level, which says the same thing
/// (`a < x or (a = x and ...)` implies `a <= x`) in a form every planner turns into
/// index bounds, so a page reads from its cursor instead of from the start.
fn keyset_filter(filter: &mut Document, keys: &[(&'static str, IndexKey)], values: &[Bson], side: Side) {
    let mut or = keyset_or(keys, values, side);
    let (first, key) = keys[0];
    if filter.contains_key(first) {
        // The equality filter pins the first key already; keep it and the `$or`.
        filter.insert("$or", or);
        return;
    }
    if or.len() == 1 {
        if let Some(Bson::Document(only)) = or.pop() {
            filter.extend(only);
        }
        return;
    }
    let ascending = key == IndexKey::Asc;
    let op = if ascending == (side == Side::After) { "$gte" } else { "$lte" };
    filter.insert(first, doc! { op: values[0].clone() });
    filter.insert("$or", or);
}

/// The general form of the seed's `$or`: past the boundary on the first key, or equal
/// on it and past on the second, and so on; `_id` last breaks ties.
fn keyset_or(keys: &[(&'static str, IndexKey)], values: &[Bson], side: Side) -> Vec<Bson> {
    (0..keys.len())
        .map(|i| {
            let mut clause = Document::new();
            for (j, (field, _)) in keys.iter().enumerate().take(i) {
                clause.insert(*field, values[j].clone());
            }
            let (field, key) = keys[i];
            let ascending = key == IndexKey::Asc;
            let op = if ascending == (side == Side::After) { "$gt" } else { "$lt" };
            clause.insert(field, doc! { op: values[i].clone() });
            Bson::Document(clause)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use bson::RawArrayBuf;

    const P: AccessPattern = AccessPattern {
        name: "posts_by_author",
        operation: "",
        filter: &["author_id"],
        case_insensitive: false,
        sort: &[("created_at", IndexKey::Desc)],
        range: &[],
        fields: &[],
        freq: "",
        consistency: "",
        guarantee: crate::core::access::Consistency::Unspecified,
        load: crate::core::access::Load {
            rate: None,
            docs_per_call: crate::core::access::DocsPerCall::Page { page_size: DEFAULT_PAGE_SIZE },
            doc_bytes: None,
            doc_unsized: "",
        },
        index: Some("author_id_1_created_at_-1__id_-1"),
        waivers: &[],
        paginate: true,
    };
    const OTHER: AccessPattern = AccessPattern { name: "other", ..P };

    /// The test's generator, from the workspace's one run seed (`DOCSHAPE_TEST_SEED`
    /// replays another), and that seed, which the assertions print.
    fn seeded(name: &str) -> (u64, docshape_test_seed::Seeded<proptest::test_runner::TestRng>) {
        (docshape_test_seed::run_seed(), docshape_test_seed::rng(name))
    }

    /// One random change to `bytes`, which must not be empty: a byte replaced, removed
    /// or inserted.
    fn mutate(bytes: &mut Vec<u8>, next: &mut impl FnMut() -> u64) {
        let at = (next() % bytes.len() as u64) as usize;
        match next() % 3 {
            0 => bytes[at] = next() as u8,
            1 => {
                bytes.remove(at);
            }
            _ => bytes.insert(at, next() as u8),
        }
    }

    /// A scope in database `db` for the feed of `u_42`.
    fn scope<'a>(collection: &'a str, pattern: &'a AccessPattern) -> Scope<'a> {
        in_scope("db", collection, pattern, "u_42")
    }

    fn in_scope<'a>(
        database: &'a str,
        collection: &'a str,
        pattern: &'a AccessPattern,
        owner: &str,
    ) -> Scope<'a> {
        let filter: &'static Document = Box::leak(Box::new(doc! { "author_id": { "$eq": owner } }));
        Scope { database, collection, pattern, filter }
    }

    fn values() -> Vec<Bson> {
        vec![Bson::DateTime(bson::DateTime::from_millis(1_700_000_000_000)), Bson::String("p_1".into())]
    }

    #[test]
    fn a_token_is_its_header_and_the_bson_document_v() {
        // The byte layout of version 2: a token issued before an upgrade still decodes
        // after it while the version stays.
        let token = encode_token(&scope("posts", &P), &values(), None);
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&token).unwrap();
        let mut payload = Vec::new();
        doc! { "v": values() }.to_writer(&mut payload).unwrap();
        assert_eq!(bytes[..2], [VERSION, UNSIGNED]);
        assert_eq!(bytes[2..10], fingerprint(&scope("posts", &P)));
        assert_eq!(bytes[10..], payload[..]);
        // A payload with a second key, or `v` twice, is refused.
        let array = || {
            let mut a = RawArrayBuf::new();
            values().into_iter().for_each(|v| a.push(RawBson::try_from(v).unwrap()));
            a
        };
        for second in ["w", "v"] {
            let mut extra = RawDocumentBuf::new();
            bson_compat::append(&mut extra, "v", RawBson::Array(array()));
            bson_compat::append(&mut extra, second, RawBson::Array(array()));
            let mut forged = bytes[..10].to_vec();
            forged.extend_from_slice(extra.as_bytes());
            let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged);
            assert!(decode_token(&forged, &scope("posts", &P), None).is_err(), "{second}");
        }
    }

    #[test]
    fn the_payload_is_what_the_bson_crate_writes_for_every_scalar() {
        // Written by hand for speed; it must stay byte for byte what tokens issued
        // through the bson crate hold, for every type and for two-digit indexes.
        let scalars = vec![
            Bson::String("p_1".into()),
            Bson::String(String::new()),
            Bson::String("é\0x".into()),
            Bson::Int32(-7),
            Bson::Int64(1 << 40),
            Bson::Double(-0.5),
            Bson::DateTime(bson::DateTime::from_millis(-1)),
            Bson::ObjectId(bson::oid::ObjectId::from_bytes([7; 12])),
            Bson::Boolean(true),
            Bson::Boolean(false),
            Bson::Decimal128(bson::Decimal128::from_bytes([3; 16])),
            Bson::Timestamp(bson::Timestamp { time: 5, increment: 9 }),
            Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2] }),
            Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::BinaryOld, bytes: vec![1, 2] }),
        ];
        let mut expected = RawArrayBuf::new();
        scalars.iter().for_each(|v| expected.push(RawBson::try_from(v.clone()).unwrap()));
        let mut doc = RawDocumentBuf::new();
        bson_compat::append(&mut doc, "v", RawBson::Array(expected));
        let mut written = Vec::new();
        write_payload(&mut written, &scalars);
        assert_eq!(written, doc.as_bytes());
        let mut empty = Vec::new();
        write_payload(&mut empty, &[]);
        assert_eq!(empty, bson::rawdoc! { "v": [] }.as_bytes());
    }

    #[test]
    // bson 2 stores a regex's parts as `String`, bson 3 as `CString`: one spelling for both.
    #[allow(clippy::useless_conversion)]
    fn the_scope_filter_is_hashed_as_the_bson_crate_writes_it() {
        let scalars = || {
            vec![
                Bson::String("u_42".into()),
                Bson::Int64(-3),
                Bson::Double(f64::NAN),
                Bson::Null,
                Bson::Array(vec![Bson::Int32(1), bson::bson!({ "a": [true] })]),
                Bson::Decimal128(bson::Decimal128::from_bytes([1; 16])),
                Bson::RegularExpression(bson::Regex {
                    pattern: "^a".to_owned().try_into().unwrap(),
                    options: "i".to_owned().try_into().unwrap(),
                }),
            ]
        };
        for value in scalars() {
            for filter in [
                doc! { "author_id": { "$eq": value.clone() } },
                doc! { "a": { "$eq": { "nested": value.clone(), "n": 1 } }, "b": { "$eq": value.clone() } },
                doc! {},
            ] {
                let mut written = Vec::new();
                assert!(write_document(&mut written, &filter));
                assert_eq!(written, bson_compat::to_vec(&filter).unwrap(), "{filter}");
            }
        }
        // Where the bson crate refuses (a key with a NUL), so does the hand-written one,
        // and the digest hashes no filter bytes, as it always did.
        let mut bad = Document::new();
        bad.insert("a\0b", 1);
        let filter = doc! { "author_id": { "$eq": bad.clone() } };
        assert!(bson_compat::to_vec(&filter).is_err());
        assert!(!write_document(&mut Vec::new(), &filter));
        let empty = Document::new();
        let (with_bad, with_nothing) = (in_scope_with("db", &filter), in_scope_with("db", &empty));
        let mut nothing = Vec::new();
        write_document(&mut nothing, &empty);
        assert_ne!(nothing.len(), 0);
        assert_ne!(with_bad.digest(), with_nothing.digest(), "no filter bytes is not the empty document");
        let mut a = Vec::new();
        assert!(!write_element(&mut a, Name::Index(0), &Bson::Document(bad)));
        assert!(a.is_empty(), "a refused value appends nothing");
    }

    fn in_scope_with<'a>(database: &'a str, filter: &'a Document) -> Scope<'a> {
        Scope { database, collection: "posts", pattern: &P, filter }
    }

    #[test]
    fn the_first_key_bound_is_lifted_out_of_the_or() {
        let mut filter = doc! { "author_id": "u_42" };
        keyset_filter(&mut filter, &sort_keys(&P), &values(), Side::After);
        assert_eq!(filter.get_document("created_at").unwrap(), &doc! { "$lte": values()[0].clone() });
        assert_eq!(filter.get_array("$or").unwrap().len(), 2);
        let mut filter = doc! { "author_id": "u_42" };
        keyset_filter(&mut filter, &sort_keys(&P), &values(), Side::Before);
        assert_eq!(filter.get_document("created_at").unwrap(), &doc! { "$gte": values()[0].clone() });
        // A one-key sort needs no `$or`.
        let by_id = AccessPattern { sort: &[], ..P };
        let mut filter = doc! { "author_id": "u_42" };
        keyset_filter(&mut filter, &sort_keys(&by_id), &[Bson::Int32(5)], Side::After);
        assert_eq!(filter, doc! { "author_id": "u_42", "_id": { "$gt": 5 } });
        // A sort key pinned by the equality filter keeps its equality.
        let mut filter = doc! { "created_at": values()[0].clone() };
        keyset_filter(&mut filter, &sort_keys(&P), &values(), Side::After);
        assert_eq!(filter.get("created_at"), Some(&values()[0]));
    }

    #[test]
    fn the_seed_or_expansion() {
        let or = keyset_or(&sort_keys(&P), &values(), Side::After);
        assert_eq!(
            Bson::Array(or),
            bson::bson!([
                { "created_at": { "$lt": values()[0].clone() } },
                { "created_at": values()[0].clone(), "_id": { "$lt": "p_1" } },
            ])
        );
    }

    #[test]
    fn tokens_round_trip_and_bind_to_their_pattern() {
        let token = encode_token(&scope("posts", &P), &values(), None);
        assert_eq!(decode_token(&token, &scope("posts", &P), None).unwrap(), values());
        assert_eq!(decode_token(&token, &scope("posts", &OTHER), None), Err(CursorError::WrongPattern));
        assert_eq!(decode_token(&token, &scope("other_posts", &P), None), Err(CursorError::WrongPattern));
        let key = CursorKey::new(*b"0123456789abcdef0123456789abcdef").unwrap();
        assert_eq!(decode_token(&token, &scope("posts", &P), Some(&key)), Err(CursorError::Unsigned));
        let signed = encode_token(&scope("posts", &P), &values(), Some(&key));
        assert_eq!(decode_token(&signed, &scope("posts", &P), Some(&key)).unwrap(), values());
        assert_eq!(decode_token(&signed, &scope("posts", &P), None), Err(CursorError::UnexpectedSignature));
        let other_key = CursorKey::new(*b"fedcba9876543210fedcba9876543210").unwrap();
        assert_eq!(
            decode_token(&signed, &scope("posts", &P), Some(&other_key)),
            Err(CursorError::BadSignature)
        );
    }

    #[test]
    fn tokens_bind_their_database_and_equality_values() {
        let key = CursorKey::new(vec![3u8; 32]).unwrap();
        for key in [None, Some(&key)] {
            let token = encode_token(&in_scope("a", "posts", &P, "u_42"), &values(), key);
            assert_eq!(decode_token(&token, &in_scope("a", "posts", &P, "u_42"), key).unwrap(), values());
            assert_eq!(
                decode_token(&token, &in_scope("b", "posts", &P, "u_42"), key),
                Err(CursorError::WrongPattern)
            );
            assert_eq!(
                decode_token(&token, &in_scope("a", "posts", &P, "u_43"), key),
                Err(CursorError::WrongPattern)
            );
            // Length-prefixed parts: moving a byte from one name to the next is another scope.
            assert_eq!(
                decode_token(&token, &in_scope("ap", "osts", &P, "u_42"), key),
                Err(CursorError::WrongPattern)
            );
        }
    }

    #[test]
    fn signed_tokens_reject_any_changed_byte() {
        let key = CursorKey::new(vec![7u8; 32]).unwrap();
        let signed = encode_token(&scope("posts", &P), &values(), Some(&key));
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&signed).unwrap();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut changed = bytes.clone();
                changed[i] ^= 1 << bit;
                let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&changed);
                assert!(decode_token(&token, &scope("posts", &P), Some(&key)).is_err(), "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn the_base64_is_the_base64_crates_url_safe_no_pad() {
        let (seed, mut rng) = seeded("the_base64_is_the_base64_crates_url_safe_no_pad");
        use proptest::prelude::Rng;
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let alphabet = b"AQgw-_Zz09+/=. \0\xff";
        let (mut accepted, mut refused) = (0, 0);
        for i in 0..50_000 {
            let len = rng.next_u32() as usize % 120;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
            let text = base64_encode(&bytes);
            assert_eq!(text, engine.encode(&bytes), "seed {seed}");
            let mut out = [0u8; 256];
            assert_eq!(base64_decode(text.as_bytes(), &mut out), Some(len), "seed {seed}");
            assert_eq!(out[..len], bytes[..], "seed {seed}");
            // Any text: the same bytes, or refused by both.
            let text: Vec<u8> = if i % 2 == 0 {
                (0..len).map(|_| alphabet[rng.next_u32() as usize % alphabet.len()]).collect()
            } else {
                let mut text = text.into_bytes();
                if !text.is_empty() {
                    let at = rng.next_u32() as usize % text.len();
                    text[at] = alphabet[rng.next_u32() as usize % alphabet.len()];
                }
                text
            };
            let ours = base64_decode(&text, &mut out).map(|n| out[..n].to_vec());
            let theirs = engine.decode(&text).ok();
            assert_eq!(ours, theirs, "seed {seed}: {:?}", String::from_utf8_lossy(&text));
            if ours.is_some() {
                accepted += 1
            } else {
                refused += 1
            }
        }
        assert!(accepted > 1000 && refused > 1000, "{accepted} accepted, {refused} refused (seed {seed})");
        // Too short a buffer is refused, not a panic.
        assert_eq!(base64_decode(b"AAAA", &mut [0u8; 2]), None);
        assert_eq!(base64_decode(b"AAA", &mut [0u8; 1]), None);
    }

    #[test]
    fn the_hand_reader_agrees_with_the_bson_crate_on_written_and_mutated_payloads() {
        // Where the hand reader answers, the bson crate's reader answers the same;
        // where it declines, the bson crate decides (see `read_written_payload`).
        let (seed, mut rng) =
            seeded("the_hand_reader_agrees_with_the_bson_crate_on_written_and_mutated_payloads");
        use proptest::prelude::Rng;
        let mut next = move || rng.next_u64();
        let pick = |next: &mut dyn FnMut() -> u64| -> Bson {
            match next() % 8 {
                0 => Bson::String(["", "p_1", "é✓", "a\0b", "{\"$gt\":1}"][(next() % 5) as usize].to_owned()),
                1 => Bson::Int32(next() as i32),
                2 => Bson::Int64(next() as i64),
                3 => Bson::Double(f64::from_bits(next())),
                4 => Bson::DateTime(bson::DateTime::from_millis(next() as i64)),
                5 => Bson::ObjectId(bson::oid::ObjectId::from_bytes([next() as u8; 12])),
                6 => Bson::Boolean(next().is_multiple_of(2)),
                _ => Bson::Timestamp(bson::Timestamp { time: next() as u32, increment: 1 }),
            }
        };
        let same = |a: &[Bson], b: &[Bson]| format!("{a:?}") == format!("{b:?}");
        let (mut answered, mut declined) = (0, 0);
        for _ in 0..20_000 {
            let values: Vec<Bson> = (0..(next() % 13)).map(|_| pick(&mut next)).collect();
            let mut payload = Vec::new();
            write_payload(&mut payload, &values);
            let general = read_payload(&payload, values.len()).unwrap();
            assert!(same(&general, &values), "seed {seed}: {values:?}");
            // Every payload of the types it reads is read by hand.
            let plain = !values.iter().any(|v| matches!(v, Bson::Timestamp(_)))
                && !values.iter().any(|v| matches!(v, Bson::String(s) if s.contains('\0')));
            assert_eq!(
                read_written_payload(&payload, values.len()).is_some(),
                plain,
                "seed {seed}: {values:?}"
            );
            for _ in 0..=(next() % 3) {
                if payload.is_empty() {
                    break;
                }
                mutate(&mut payload, &mut next);
            }
            match read_written_payload(&payload, values.len()) {
                Some(fast) => {
                    answered += 1;
                    let general = read_payload(&payload, values.len());
                    assert!(
                        matches!(&general, Ok(g) if same(g, &fast)),
                        "seed {seed}: {fast:?} vs {general:?}"
                    );
                }
                None => declined += 1,
            }
        }
        // Both sides of the comparison were reached.
        assert!(answered > 100 && declined > 100, "{answered} answered, {declined} declined (seed {seed})");
    }

    #[test]
    fn a_hundred_thousand_random_and_mutated_tokens_are_typed_errors() {
        let (seed, mut rng) = seeded("a_hundred_thousand_random_and_mutated_tokens_are_typed_errors");
        use proptest::prelude::Rng;
        let mut next = move || rng.next_u64();
        let key = CursorKey::new(vec![9u8; 32]).unwrap();
        let valid = [
            encode_token(&scope("posts", &P), &values(), None),
            encode_token(&scope("posts", &P), &values(), Some(&key)),
        ];
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/.%$ {}\"\\\0";
        let mut accepted = 0;
        for i in 0..100_000 {
            let token = if i % 2 == 0 {
                let len = (next() % 200) as usize;
                (0..len)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char)
                    .collect::<String>()
            } else {
                // Mutate the decoded bytes of a valid token, then re-encode, so the
                // mutations reach the version, kind, fingerprint and BSON parsing.
                let base = &valid[(next() % 2) as usize];
                let mut bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(base).unwrap();
                for _ in 0..=(next() % 4) {
                    mutate(&mut bytes, &mut next);
                    if bytes.is_empty() {
                        bytes.push(1);
                    }
                }
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes)
            };
            let key = if i % 3 == 0 { Some(&key) } else { None };
            let outcome = std::panic::catch_unwind(|| decode_token(&token, &scope("posts", &P), key));
            match outcome {
                Err(_) => panic!("decoding panicked (seed {seed}) on {token:?}"),
                Ok(Ok(values)) => {
                    // A mutation may leave an unsigned token well-formed (a changed
                    // string byte, say): it must still hold one scalar per sort key.
                    assert_eq!(values.len(), 2);
                    accepted += 1;
                }
                Ok(Err(_)) => {}
            }
        }
        assert!(accepted < 10_000, "{accepted} mutated tokens accepted (seed {seed})");
    }
}
