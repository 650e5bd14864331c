//! A page: the paginator, its one `find` per page, the cursors it writes, and the
//! documents it cannot place.

use std::fmt;
use std::marker::PhantomData;

use bson::{doc, Bson, Document, RawDocumentBuf};
use futures_util::TryStreamExt;
use mongodb::Database;

use super::token::{sort_keys, CursorError, CursorKey, PreparedScope, Scope};
use crate::core::access::command::ReadCommand;
use crate::core::access::find::{FindError, Projection};
use crate::core::access::AccessPattern;
use crate::core::bson_compat;
use crate::core::index::IndexKey;
use crate::core::model::Model;
use crate::core::trace;
use crate::core::validator::Schema;

/// Which side of the cursor to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    After,
    Before,
}

/// A page of items, with the cursors to the neighbouring pages.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page<T> {
    /// The items, in the pattern's sort order: the row's view when it declares
    /// `fields(...)`, else the model.
    pub items: Vec<T>,
    /// Pass to [`Paginator::after`] for the next page; `None` on the last page.
    pub next: Option<String>,
    /// Pass to [`Paginator::before`] for the previous page; `None` on the first page.
    pub prev: Option<String>,
    /// Documents the page's `find` returned that no cursor can place (a sort value
    /// that is an array, or on a row whose sort key's type the model does not pin, of
    /// another type than the walk's), left out of `items`: see
    /// [`Paginator::unplaced`].
    pub unplaced: Vec<Unplaced>,
}

/// A document of a feed that a keyset walk cannot place, written around the validator
/// (by another program, a shell, a restore): its sort value is missing, null, an
/// array, or of another BSON type than the walk compares.
#[derive(Debug, Clone, PartialEq)]
pub struct Unplaced {
    /// The document's `_id`, when it has one.
    pub id: Option<Box<Bson>>,
    /// The sort key.
    pub field: &'static str,
    /// The type stored (`"string"`, `"array"`, ...; `"missing"` for a missing or null
    /// value).
    pub found: &'static str,
    /// The type the walk compares, when known.
    pub expected: Option<&'static str>,
}

impl fmt::Display for Unplaced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.id.as_deref().map_or_else(|| "a document".to_owned(), |id| format!("document {id}"));
        match self.expected {
            Some(expected) => write!(
                f,
                "{id} holds a {} in `{}`, where the walk compares {expected}s",
                self.found, self.field
            ),
            None => write!(f, "{id} holds a {} in `{}`, which the walk cannot place", self.found, self.field),
        }
    }
}

/// Why a page could not be fetched.
#[derive(Debug)]
#[non_exhaustive]
pub enum PageError {
    /// The cursor token was refused.
    Cursor(CursorError),
    /// A filter value could not be converted to BSON.
    Filter(bson_compat::SerError),
    /// Every document the page's `find` returned is one no cursor can place, so the
    /// page has no position to continue from; each is listed.
    NoPosition {
        /// The documents, in the order the server returned them.
        unplaced: Vec<Unplaced>,
    },
    /// A stored document does not deserialize into the row's type.
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
            Self::NoPosition { unplaced } => {
                write!(f, "no document of this page can be placed by the walk's sort keys")?;
                if let Some(first) = unplaced.first() {
                    write!(f, ": {first}")?;
                }
                if unplaced.len() > 1 {
                    write!(f, ", and {} more", unplaced.len() - 1)?;
                }
                Ok(())
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
            Self::NoPosition { .. } => None,
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

/// A finder's error as a page's: the same causes (a decode names its document there).
impl From<FindError> for PageError {
    fn from(e: FindError) -> Self {
        match e {
            FindError::Parameter(e) => Self::Filter(e),
            FindError::Mongo(e) => Self::Mongo(e),
            FindError::Decode { source, .. } => Self::Decode(*source),
            FindError::Version(e) => Self::Version(e),
        }
    }
}

/// Items per page when the caller does not say ([`Paginator::page_size`]).
pub const DEFAULT_PAGE_SIZE: u32 = 20;

/// A typed keyset paginator for one access pattern, generated as
/// `Model::<pattern_name>(filter values...)`; its pages hold the row's view when the
/// row declares `fields(...)`, else the model.
///
/// ```no_run
/// # use docshape::{Model, validator::Schema};
/// # #[derive(serde::Serialize, serde::Deserialize, Model)]
/// # #[model(collection = "posts")]
/// # #[index(keys(author_id, created_at = -1, _id = -1))]
/// # #[access(name = "posts_by_author", filter(author_id), sort(created_at = -1), fields(title, created_at), paginate)]
/// # struct Post { author_id: String, title: String, created_at: docshape::bson::DateTime }
/// # async fn run(db: mongodb::Database) -> Result<(), docshape::paginate::PageError> {
/// let first = Post::posts_by_author("u_42").page_size(20).fetch(&db).await?;
/// for post in &first.items {
///     // A `PostsByAuthorView`: the title and the date, nothing else was sent.
///     println!("{} {}", post.created_at, post.title);
/// }
/// if let Some(next) = &first.next {
///     let second = Post::posts_by_author("u_42").after(next).fetch(&db).await?;
/// }
/// # Ok(()) }
/// ```
#[must_use = "a paginator does nothing until `fetch`"]
pub struct Paginator<V> {
    pattern: &'static AccessPattern,
    filter: Result<Document, bson_compat::SerError>,
    page_size: u32,
    cursor: Option<(Side, String)>,
    key: Option<CursorKey>,
    _view: PhantomData<fn() -> V>,
}

impl<V> fmt::Debug for Paginator<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Paginator")
            .field("pattern", &self.pattern.name)
            .field("page_size", &self.page_size)
            .field("cursor", &self.cursor)
            .finish()
    }
}

/// A page's read: the command, the cursor's values when there is one, and the type
/// each sort key's values have in the walk (when known).
struct PageRead {
    read: ReadCommand<'static>,
    cursor: Option<Vec<Bson>>,
    walk: Vec<Option<&'static str>>,
}

impl<V: Projection + Send + Sync + 'static> Paginator<V> {
    /// A paginator over the row at `index` of the model's `ACCESS_PATTERNS`, with its
    /// equality values. Generated code calls this; use the generated method. (The row is
    /// looked up here, in generic code, for the reason given at `Find::row`.)
    pub fn row(index: usize, filter: Result<Document, bson_compat::SerError>) -> Self {
        let pattern = &<V::Model as Model>::ACCESS_PATTERNS[index];
        Self { pattern, filter, page_size: DEFAULT_PAGE_SIZE, cursor: None, key: None, _view: PhantomData }
    }

    fn collection() -> &'static str {
        <V::Model as Model>::COLLECTION
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

    fn equality(&self) -> Result<&Document, PageError> {
        self.filter.as_ref().map_err(|e| PageError::Filter(e.clone()))
    }

    /// The scope of this paginator's tokens in the database named `database`, hashed
    /// once for the page.
    fn scope(&self, database: &str) -> Result<PreparedScope, PageError> {
        let filter = self.equality()?;
        Ok(Scope { database, collection: Self::collection(), pattern: self.pattern, filter }.prepare())
    }

    /// The `find` command for this page in the database named `database`, as sent to
    /// the server (for inspection and `explain`). A cursor token is checked against that
    /// name, as [`Paginator::fetch`] checks it against its database's.
    pub fn find_command(&self, database: &str) -> Result<Document, PageError> {
        Ok(self.read(&self.scope(database)?)?.read.command())
    }

    /// The page's read, built by the row's one command builder: the equality filter
    /// and the keyset bounds, the sort with its `_id` tie-break (reversed to read
    /// backwards), the view's projection plus the sort keys that place each item, and
    /// one more item than the page, to know whether another follows.
    ///
    /// The filter bounds only the row's index keys: on a first page each sort key is
    /// bounded to the BSON type the model stores there (`$type`, which the server turns
    /// into that type's index bounds), after a cursor by the comparison with the
    /// cursor's values (which match their own type only). So a page reads its items
    /// from the index and nothing else, whatever other programs stored; a document
    /// whose sort value has another type is outside every page (see
    /// [`Paginator::unplaced`]).
    fn read(&self, scope: &PreparedScope) -> Result<PageRead, PageError> {
        let keys = sort_keys(self.pattern);
        let equality = self.equality()?;
        let mut filter = equality.clone();
        let (side, cursor, walk) = match &self.cursor {
            Some((side, token)) => {
                let values = scope.decode(token, self.key.as_ref())?;
                keyset_filter(&mut filter, &keys, &values, *side);
                let walk = values.iter().map(|v| Some(bracket(v))).collect();
                (*side, Some(values), walk)
            }
            None => {
                let walk = walk_types::<V::Model>(&keys);
                for ((field, _), bracket) in keys.iter().zip(&walk) {
                    if let (Some(bracket), false) = (bracket, equality.contains_key(*field)) {
                        filter.insert(*field, doc! { "$type": *bracket });
                    }
                }
                (Side::After, None, walk)
            }
        };
        let placing: Vec<&str> = keys.iter().map(|(f, _)| *f).collect();
        let mut read = ReadCommand::new(self.pattern, Self::collection(), filter)
            .project(V::FIELDS, &placing)
            .limit(i64::from(self.page_size) + 1);
        if side == Side::Before {
            read = read.reversed();
        }
        Ok(PageRead { read, cursor, walk })
    }

    /// Runs the page's single `find` and returns its items and neighbouring cursors.
    pub async fn fetch(self, db: &Database) -> Result<Page<V>, PageError> {
        let side = match &self.cursor {
            None => "first",
            Some((Side::After, _)) => "after",
            Some((Side::Before, _)) => "before",
        };
        let span = trace::span!(
            "paginate.fetch",
            collection = Self::collection(),
            pattern = self.pattern.name,
            page_size = self.page_size,
            side,
            signed = self.key.is_some()
        );
        let page = trace::in_span(span.clone(), self.fetch_inner(db)).await;
        span.in_scope(|| match &page {
            Ok(page) => {
                trace::event!(
                    DEBUG,
                    items = page.items.len(),
                    next = page.next.is_some(),
                    prev = page.prev.is_some(),
                    "page"
                );
                for unplaced in &page.unplaced {
                    trace::event!(WARN, document = %unplaced, "left out of the page");
                }
            }
            Err(e) => trace::event!(DEBUG, error = %e, "refused"),
        });
        page
    }

    async fn fetch_inner(self, db: &Database) -> Result<Page<V>, PageError> {
        // One hash of the scope for the page: the cursor read and both cursors written.
        let scope = self.scope(db.name())?;
        let PageRead { read, cursor, walk } = self.read(&scope)?;
        let keys = sort_keys(self.pattern);
        let side = self.cursor.as_ref().map_or(Side::After, |(s, _)| *s);
        let collection = db.collection::<RawDocumentBuf>(Self::collection());
        let raw: Vec<RawDocumentBuf> = read.find(&collection).await?.try_collect().await?;
        let more = raw.len() > self.page_size as usize;
        // Each item's sort values must be scalars of the walk's types (the cursor's, the
        // model's, or on a row whose key the model does not type, the first item's);
        // others are reported, not returned: no cursor can point at them.
        let mut walk = walk;
        let mut placed = Vec::with_capacity(raw.len());
        let mut unplaced = Vec::new();
        for doc in raw {
            match place(&doc, &keys, &mut walk) {
                Ok(values) => placed.push((doc, values)),
                Err(u) => unplaced.push(u),
            }
        }
        placed.truncate(self.page_size as usize);
        if placed.is_empty() && more {
            return Err(PageError::NoPosition { unplaced });
        }
        if side == Side::Before {
            placed.reverse();
        }
        let position = |values: &Vec<Bson>| scope.encode(values, self.key.as_ref());
        let (first, last) = (placed.first().map(|(_, v)| v), placed.last().map(|(_, v)| v));
        let (next, prev) = match side {
            Side::After => (
                if more { last.map(position) } else { None },
                if cursor.is_some() { first.map(position) } else { None },
            ),
            Side::Before => (last.map(position), if more { first.map(position) } else { None }),
        };
        let items = placed.into_iter().map(|(doc, _)| V::decode(doc)).collect::<Result<Vec<V>, _>>()?;
        Ok(Page { items, next, prev, unplaced })
    }

    /// The documents of this paginator's feed (its equality values) that no page
    /// returns: a sort value missing, null, an array, or of another type than the model
    /// stores there. At most `limit`, in one `find` that returns only `_id` and the sort
    /// keys.
    ///
    /// This is the maintenance query that pages are not: its filter cannot be index
    /// bounds (`$not`/`$type` branches), so on mongod it reads every index key of the
    /// feed (the equality prefix bounds it to the feed). Run it from a repair job or an
    /// admin page, not per request.
    pub async fn unplaced(&self, db: &Database, limit: u32) -> Result<Vec<Unplaced>, PageError> {
        let keys = sort_keys(self.pattern);
        let walk = walk_types::<V::Model>(&keys);
        let mut or = Vec::new();
        for ((field, _), bracket) in keys.iter().zip(&walk) {
            match bracket {
                Some(bracket) => or.push(doc! { *field: { "$not": { "$type": *bracket } } }),
                None => {
                    or.push(doc! { *field: crate::core::access::literal::Literal::stored(Bson::Null).eq() })
                }
            }
            or.push(doc! { *field: { "$type": "array" } });
        }
        let mut filter = self.equality()?.clone();
        filter.insert("$or", or);
        let placing: Vec<&str> = keys.iter().map(|(f, _)| *f).collect();
        let read = ReadCommand::new(self.pattern, Self::collection(), filter)
            .project(Some(&placing), &["_id"])
            .limit(i64::from(limit.max(1)));
        let collection = db.collection::<RawDocumentBuf>(Self::collection());
        let raw: Vec<RawDocumentBuf> = read.find(&collection).await?.try_collect().await?;
        let mut out = Vec::with_capacity(raw.len());
        for doc in raw.into_iter().take(limit as usize) {
            let mut walk = walk.clone();
            if let Err(u) = place(&doc, &keys, &mut walk) {
                out.push(u);
            }
        }
        Ok(out)
    }
}

/// The sort values of a returned document, or why no cursor can place it. A key whose
/// walk type is still unknown takes this document's.
fn place(
    doc: &RawDocumentBuf,
    keys: &[(&'static str, IndexKey)],
    walk: &mut [Option<&'static str>],
) -> Result<Vec<Bson>, Unplaced> {
    let id = || lookup(doc, "_id").map(Box::new);
    let mut values = Vec::with_capacity(keys.len());
    for ((field, _), expected) in keys.iter().zip(walk.iter()) {
        let Some(value) = lookup(doc, field) else {
            return Err(Unplaced { id: id(), field, found: "missing", expected: *expected });
        };
        let found = bracket(&value);
        if found == "array" || expected.is_some_and(|e| e != found) {
            return Err(Unplaced { id: id(), field, found, expected: *expected });
        }
        values.push(value);
    }
    for (w, v) in walk.iter_mut().zip(&values) {
        w.get_or_insert(bracket(v));
    }
    Ok(values)
}

/// The BSON type group each sort key holds in `M`'s documents, from the schema its
/// validator enforces: `None` for a key the schema does not pin to one group (a `Bson`
/// field, a union).
fn walk_types<M: Schema>(keys: &[(&'static str, IndexKey)]) -> Vec<Option<&'static str>> {
    let schema = M::schema();
    keys.iter().map(|(field, _)| schema_bracket(&schema, field)).collect()
}

/// The type group of the value at `path` in a `$jsonSchema`, when it has exactly one
/// besides null.
fn schema_bracket(schema: &Document, path: &str) -> Option<&'static str> {
    let mut node = schema;
    for segment in path.split('.') {
        node = node.get_document("properties").ok()?.get_document(segment).ok()?;
    }
    let types: Vec<&str> = match node.get("bsonType")? {
        Bson::String(t) => vec![t.as_str()],
        Bson::Array(ts) => ts.iter().filter_map(Bson::as_str).collect(),
        _ => return None,
    };
    let mut groups = types.into_iter().filter(|t| *t != "null").map(alias_bracket);
    let first = groups.next()??;
    groups.all(|g| g == Some(first)).then_some(first)
}

/// The type group of a `bsonType` alias, as [`bracket`] names it.
fn alias_bracket(alias: &str) -> Option<&'static str> {
    Some(match alias {
        "double" | "int" | "long" | "decimal" | "number" => "number",
        "string" | "symbol" => "string",
        "date" => "date",
        "objectId" => "objectId",
        "bool" => "bool",
        "timestamp" => "timestamp",
        "binData" => "binData",
        "object" => "object",
        "regex" => "regex",
        "javascript" | "javascriptWithScope" => "javascript",
        "minKey" => "minKey",
        "maxKey" => "maxKey",
        "dbPointer" => "dbPointer",
        _ => return None,
    })
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
                // Under `$eq`: a cursor's value (a stored sort key, or one read from a
                // token) is compared, never read as operators.
                clause.insert(*field, crate::core::access::literal::Literal::stored(values[j].clone()).eq());
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
    use super::super::token::tests::{values, P};
    use super::*;

    #[test]
    fn a_walk_type_is_the_one_group_the_schema_allows_besides_null() {
        let schema = doc! { "bsonType": "object", "properties": {
            "created_at": { "bsonType": "date" },
            "rank": { "bsonType": ["int", "long", "null"] },
            "mixed": { "bsonType": ["string", "int"] },
            "any": {},
            "meta": { "bsonType": "object", "properties": { "at": { "bsonType": ["date", "null"] } } },
        } };
        assert_eq!(schema_bracket(&schema, "created_at"), Some("date"));
        assert_eq!(schema_bracket(&schema, "rank"), Some("number"));
        assert_eq!(schema_bracket(&schema, "meta.at"), Some("date"));
        for unknown in ["mixed", "any", "absent", "meta.absent", "created_at.x"] {
            assert_eq!(schema_bracket(&schema, unknown), None, "{unknown}");
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
                { "created_at": { "$eq": values()[0].clone() }, "_id": { "$lt": "p_1" } },
            ])
        );
    }
}
