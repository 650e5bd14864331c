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

use base64::Engine as _;
use bson::{doc, Bson, Document, RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use futures_util::TryStreamExt;
use hmac::{KeyInit, Mac};
use mongodb::Database;
use serde::de::DeserializeOwned;

use crate::core::access::AccessPattern;
use crate::core::index::IndexKey;
use crate::core::model::Model;

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
    /// spell the same bytes.
    fn digest(&self) -> [u8; 32] {
        use sha2::Digest as _;
        let mut h = sha2::Sha256::new();
        let mut eat = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        eat(b"docshape cursor scope");
        eat(self.database.as_bytes());
        eat(self.collection.as_bytes());
        eat(self.pattern.name.as_bytes());
        for (field, key) in sort_key_iter(self.pattern) {
            eat(field.as_bytes());
            eat(key.name_part().as_bytes());
        }
        let mut filter = Vec::new();
        // A document always serializes; an empty one stands in if it ever did not.
        let _ = self.filter.to_writer(&mut filter);
        eat(&filter);
        h.finalize().into()
    }
}

/// The 8 bytes of the scope's digest a token carries, so that a token of another scope
/// is refused as such even unsigned. A signed token's MAC covers the whole digest.
fn fingerprint(scope: &Scope<'_>) -> [u8; 8] {
    let mut out = [0u8; 8];
    out.copy_from_slice(&scope.digest()[..8]);
    out
}

/// Encodes a boundary position as a token.
pub fn encode_token(scope: &Scope<'_>, values: &[Bson], key: Option<&CursorKey>) -> String {
    let mut bytes = Vec::with_capacity(64 + MAC_LEN);
    bytes.extend_from_slice(&[VERSION, if key.is_some() { SIGNED } else { UNSIGNED }]);
    bytes.extend_from_slice(&fingerprint(scope));
    // `{v: [values]}` as BSON, written straight into the token's bytes.
    let mut array = RawArrayBuf::new();
    for value in values {
        // Every value a cursor holds is a scalar, which always converts.
        if let Ok(raw) = RawBson::try_from(value.clone()) {
            array.push(raw);
        }
    }
    let mut payload = RawDocumentBuf::new();
    bson_compat::append(&mut payload, "v", RawBson::Array(array));
    bytes.extend_from_slice(payload.as_bytes());
    if let Some(key) = key {
        let mut mac = key.mac();
        mac.update(&scope.digest());
        mac.update(&bytes);
        bytes.extend_from_slice(&mac.finalize().into_bytes());
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes a token from an untrusted client into the boundary values it holds.
///
/// Checks, in order: size, base64, version, signature (when `key` is given, or its
/// absence), the access pattern, and that the payload is a BSON array of exactly one
/// scalar per sort key. The values only ever become comparison operands of the
/// pattern's own fields, so a token cannot choose fields or operators.
pub fn decode_token(
    token: &str,
    scope: &Scope<'_>,
    key: Option<&CursorKey>,
) -> Result<Vec<Bson>, CursorError> {
    let pattern = scope.pattern;
    if token.is_empty() || token.len() > MAX_TOKEN_LEN {
        return Err(CursorError::Malformed("length"));
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| CursorError::Malformed("not URL-safe base64"))?;
    let (&version, rest) = bytes.split_first().ok_or(CursorError::Malformed("empty"))?;
    if version != VERSION {
        return Err(CursorError::UnsupportedVersion(version));
    }
    let (&kind, _) = rest.split_first().ok_or(CursorError::Malformed("truncated"))?;
    let body = match (kind, key) {
        (SIGNED, Some(key)) => {
            if bytes.len() < 2 + 8 + MAC_LEN {
                return Err(CursorError::Malformed("truncated"));
            }
            let (body, tag) = bytes.split_at(bytes.len() - MAC_LEN);
            if body.get(2..10) != Some(&fingerprint(scope)[..]) {
                return Err(CursorError::WrongPattern);
            }
            let mut mac = key.mac();
            mac.update(&scope.digest());
            mac.update(body);
            mac.verify_slice(tag).map_err(|_| CursorError::BadSignature)?;
            body
        }
        (SIGNED, None) => return Err(CursorError::UnexpectedSignature),
        (UNSIGNED, Some(_)) => return Err(CursorError::Unsigned),
        (UNSIGNED, None) => &bytes[..],
        _ => return Err(CursorError::Malformed("unknown kind")),
    };
    let fp = body.get(2..10).ok_or(CursorError::Malformed("truncated"))?;
    if fp != fingerprint(scope) {
        return Err(CursorError::WrongPattern);
    }
    // Read in place: the payload must be exactly `{v: [...]}`, every element well formed.
    let payload = RawDocument::from_bytes(&body[10..]).map_err(|_| CursorError::Malformed("payload"))?;
    let mut elements = payload.iter();
    let array = match (elements.next(), elements.next()) {
        (Some(Ok((key, RawBsonRef::Array(array)))), None) if bson_compat::key_str(key) == "v" => array,
        _ => return Err(CursorError::Malformed("payload")),
    };
    let mut values = Vec::with_capacity(pattern.sort.len() + 1);
    for value in array {
        let value = value.map_err(|_| CursorError::Malformed("payload"))?;
        values.push(bson_compat::raw_to_bson(value).ok_or(CursorError::Malformed("payload"))?);
    }
    if values.len() != sort_key_iter(pattern).count() {
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
            page_size: 20,
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
        let equality = self.filter.as_ref().map_err(|e| PageError::Filter(e.clone()))?;
        let scope = Scope { database, collection: self.collection, pattern: self.pattern, filter: equality };
        Ok(encode_token(&scope, values, self.key.as_ref()))
    }

    /// The `find` command for this page in the database named `database`, as sent to
    /// the server (for inspection and `explain`). A cursor token is checked against that
    /// name, as [`Paginator::fetch`] checks it against its database's.
    pub fn find_command(&self, database: &str) -> Result<Document, PageError> {
        self.command(database).map(|(find, _)| find)
    }

    /// The `find` command, and the cursor's values when there is one.
    fn command(&self, database: &str) -> Result<(Document, Option<Vec<Bson>>), PageError> {
        let keys = sort_keys(self.pattern);
        let equality = self.filter.as_ref().map_err(|e| PageError::Filter(e.clone()))?;
        let mut filter = equality.clone();
        let scope = Scope { database, collection: self.collection, pattern: self.pattern, filter: equality };
        let (side, values) = match &self.cursor {
            Some((side, token)) => {
                let values = decode_token(token, &scope, self.key.as_ref())?;
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
        let (find, cursor_values) = self.command(db.name())?;
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
        let equality = self.filter.as_ref().map_err(|e| PageError::Filter(e.clone()))?;
        let scope = Scope {
            database: db.name(),
            collection: self.collection,
            pattern: self.pattern,
            filter: equality,
        };
        let position = |values: &Vec<Bson>| -> Result<String, PageError> {
            Ok(encode_token(&scope, values, self.key.as_ref()))
        };
        let (first, last) = (positions.first(), positions.last());
        let (next, prev) = match side {
            Side::After => (
                if more { last.map(&position).transpose()? } else { None },
                if self.cursor.is_some() { first.map(&position).transpose()? } else { None },
            ),
            Side::Before => (
                last.map(&position).transpose()?,
                if more { first.map(&position).transpose()? } else { None },
            ),
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
        index: Some("author_id_1_created_at_-1__id_-1"),
        waivers: &[],
        paginate: true,
    };
    const OTHER: AccessPattern = AccessPattern { name: "other", ..P };

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
    fn a_hundred_thousand_random_and_mutated_tokens_are_typed_errors() {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1;
        // proptest's generator, seeded per run (the seed is printed on failure).
        let bytes: Vec<u8> = seed.to_le_bytes().iter().chain(&(!seed).to_le_bytes()).copied().collect();
        let mut rng =
            proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::XorShift, &bytes);
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
                    let at = (next() % bytes.len() as u64) as usize;
                    match next() % 3 {
                        0 => bytes[at] = next() as u8,
                        1 => {
                            bytes.remove(at);
                        }
                        _ => bytes.insert(at, next() as u8),
                    }
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
