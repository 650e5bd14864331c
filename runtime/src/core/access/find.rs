//! Typed finders: the read rows of the access-pattern table, executed.
//!
//! `#[derive(Model)]` generates one method per `#[access]` row, named after it
//! (`Order::load_order(id)`), whose parameters are typed by the row's fields. The
//! method returns a [`Find`] holding exactly the row's filter (every equality value
//! as `{$eq: value}`, every range as typed bounds), the row's sort, its projection
//! (`fields(...)`: the generated view type) and its consistency; a terminal call
//! sends one command:
//!
//! | call | command | memory |
//! |---|---|---|
//! | [`Find::one`] | `find` with `limit: 1` | one document |
//! | [`Find::first`] | `find` with `limit: n` | `n` documents |
//! | [`Find::stream`] | `find`, then `getMore` as the stream is read | one batch |
//! | [`Find::count`] | `aggregate` (`countDocuments`) | none |
//! | [`Find::all`] | `find`, then `getMore` until the end | every match: the caller's choice |
//!
//! The filter and sort are the ones `explain` checks
//! (`docshape_testkit::assert_access_patterns_use_indexes`), so the index chosen at
//! compile time is the one the running query uses.

use std::future::IntoFuture;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use bson::{Bson, Document, RawDocumentBuf};
use futures_util::stream::{BoxStream, StreamExt, TryStreamExt};
use mongodb::{ClientSession, Database};
use serde::de::DeserializeOwned;

use crate::core::access::command::ReadCommand;
use crate::core::access::literal::Chained;
use crate::core::descriptor::AccessPattern;
use crate::core::model::{eq, Model};
use crate::core::trace;
use crate::core::version::VersionError;

/// Why a finder or a write row failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum FindError {
    /// A parameter could not be written as BSON.
    Parameter(crate::core::bson_compat::SerError),
    /// The driver or the server refused the command.
    Mongo(mongodb::error::Error),
    /// A stored document does not decode into the row's type (written by another
    /// program, or by older code).
    Decode {
        /// The collection.
        collection: &'static str,
        /// The document's `_id`, when it has one.
        id: Option<Box<Bson>>,
        /// serde's error.
        source: Box<crate::core::bson_compat::DeError>,
    },
    /// A versioned model's document could not be read at its stored version.
    Version(Box<VersionError>),
}

impl std::fmt::Display for FindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Parameter(e) => write!(f, "a parameter cannot be written as BSON: {e}"),
            Self::Mongo(e) => write!(f, "MongoDB: {e}"),
            Self::Decode { collection, id: Some(id), source } => {
                write!(f, "{collection}: document {id} does not decode: {source}")
            }
            Self::Decode { collection, id: None, source } => {
                write!(f, "{collection}: a document without _id does not decode: {source}")
            }
            Self::Version(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for FindError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Parameter(e) => Some(e),
            Self::Mongo(e) => Some(e),
            Self::Decode { source, .. } => Some(source),
            Self::Version(e) => Some(e.as_ref()),
        }
    }
}

impl From<mongodb::error::Error> for FindError {
    fn from(e: mongodb::error::Error) -> Self {
        Self::Mongo(e)
    }
}

impl From<crate::core::bson_compat::SerError> for FindError {
    fn from(e: crate::core::bson_compat::SerError) -> Self {
        Self::Parameter(e)
    }
}

/// How a row's result type is read from a stored document.
///
/// The model itself reads whole documents (upgrading older versions of a versioned
/// model); a generated view reads only its fields. Generated code implements it; you
/// do not.
pub trait Projection: Sized {
    /// The model whose collection holds the documents.
    type Model: Model;
    /// The stored top-level fields the server sends back; `None` for whole documents.
    const FIELDS: Option<&'static [&'static str]>;
    /// Reads one stored document.
    fn decode(document: RawDocumentBuf) -> Result<Self, FindError>;
}

/// The `_id` of a stored document, for an error naming it.
fn raw_id(document: &RawDocumentBuf) -> Option<Box<Bson>> {
    let id = document.get("_id").ok().flatten()?;
    crate::core::bson_compat::raw_to_bson(id).map(Box::new)
}

/// Reads `document` as `T` with serde, naming the document in the error.
pub fn decode_raw<T: DeserializeOwned>(
    collection: &'static str,
    document: &RawDocumentBuf,
) -> Result<T, FindError> {
    crate::core::bson_compat::from_slice(document.as_bytes()).map_err(|source| FindError::Decode {
        collection,
        id: raw_id(document),
        source: Box::new(source),
    })
}

/// Reads a document of `T`'s collection as `T`: serde for a plain model, the upgrade
/// chain for a versioned one ([`Model::DECODE_STORED`]).
pub fn decode_model<T: Model + DeserializeOwned>(document: RawDocumentBuf) -> Result<T, FindError> {
    match T::DECODE_STORED {
        None => decode_raw(T::COLLECTION, &document),
        Some(decode) => {
            let document: Document =
                crate::core::bson_compat::from_slice(document.as_bytes()).map_err(|source| {
                    FindError::Decode {
                        collection: T::COLLECTION,
                        id: raw_id(&document),
                        source: Box::new(source),
                    }
                })?;
            decode(document).map_err(|e| FindError::Version(Box::new(e)))
        }
    }
}

/// Reads a document of the polymorphic model `T` (upgraded first when it is versioned)
/// and takes one variant's fields from it with `pick`: the view of a row that reads a
/// whole variant needs no deserializer of its own. A document of another variant
/// (`pick` returns `None`) is a decode error naming the variant the row reads.
#[inline]
pub fn decode_variant<T, V>(
    document: RawDocumentBuf,
    variant: &'static str,
    pick: impl FnOnce(T) -> Option<V>,
) -> Result<V, FindError>
where
    T: Model + DeserializeOwned,
{
    let id = raw_id(&document);
    let model: T = decode_model(document)?;
    pick(model).ok_or_else(|| FindError::Decode {
        collection: T::COLLECTION,
        id,
        source: Box::new(<crate::core::bson_compat::DeError as serde::de::Error>::custom(format!(
            "the row reads documents of the variant stored as \"{variant}\" only, and this document is of another"
        ))),
    })
}

/// A view's fields, written as serde's derive writes a struct: `serialize_struct(name,
/// keys.len())`, then one `serialize_field(key, value)` per key, in order. A view
/// that reads a whole variant implements `Serialize` through it, so that each view's
/// impl is one call the compiler checks instead of one call per field.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct NamedFields<T> {
    /// The struct's name.
    pub name: &'static str,
    /// The stored names, one per value.
    pub keys: &'static [&'static str],
    /// A tuple of references to the values.
    pub values: T,
}

/// `Serialize` for [`NamedFields`] of one to sixteen values (the derive writes a
/// larger view's impl out in full).
macro_rules! named_fields {
    ($($n:tt $t:ident),+) => {
        impl<'a, $($t: serde::Serialize + ?Sized),+> serde::Serialize for NamedFields<($(&'a $t,)+)> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeStruct as _;
                let mut state = serializer.serialize_struct(self.name, self.keys.len())?;
                $(state.serialize_field(self.keys[$n], self.values.$n)?;)+
                state.end()
            }
        }
    };
}
named_fields!(0 A);
named_fields!(0 A, 1 B);
named_fields!(0 A, 1 B, 2 C);
named_fields!(0 A, 1 B, 2 C, 3 D);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N, 14 O);
named_fields!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N, 14 O, 15 P);

/// Reads a document of a versioned model's collection as the view `V`: upgraded to the
/// current version first, then the view's fields taken from it.
pub fn decode_upgraded<T, V>(document: RawDocumentBuf) -> Result<V, FindError>
where
    T: Model + DeserializeOwned + serde::Serialize,
    V: DeserializeOwned,
{
    let id = raw_id(&document);
    let current: T = decode_model(document)?;
    let bytes = crate::core::bson_compat::to_vec(&current)?;
    crate::core::bson_compat::from_slice(&bytes).map_err(|source| FindError::Decode {
        collection: T::COLLECTION,
        id,
        source: Box::new(source),
    })
}

/// A model reads whole documents: itself, upgraded when it is versioned.
impl<T: Model + DeserializeOwned> Projection for T {
    type Model = T;
    const FIELDS: Option<&'static [&'static str]> = None;
    fn decode(document: RawDocumentBuf) -> Result<Self, FindError> {
        decode_model(document)
    }
}

/// One bound of a `range(...)` parameter, as `(operator, value)`.
fn bound(b: Bound<&Bson>, inclusive: &'static str, exclusive: &'static str) -> Option<(&'static str, Bson)> {
    match b {
        Bound::Included(v) => Some((inclusive, v.clone())),
        Bound::Excluded(v) => Some((exclusive, v.clone())),
        Bound::Unbounded => None,
    }
}

/// A `range(...)` parameter as a filter condition: `a..b` is `{$gte: a, $lt: b}`,
/// `a..=b` `{$gte: a, $lte: b}`, `..` no condition. The values sit under comparison
/// operators, so whatever they hold is compared, never run.
pub fn range_condition(start: Bound<&Bson>, end: Bound<&Bson>) -> Option<Document> {
    let mut condition = Document::new();
    for (op, value) in [bound(start, "$gte", "$gt"), bound(end, "$lte", "$lt")].into_iter().flatten() {
        condition.insert(op, value);
    }
    (!condition.is_empty()).then_some(condition)
}

/// Builds a row's filter: generated code pushes every parameter through here, each
/// value written by the literal encoder ([`crate::access::literal()`]) under a
/// comparison operator.
///
/// The calls chain by value and the first value the encoder refuses is kept for
/// [`build`](Self::build), so a finder's body is one expression: no closure and no `?`
/// per parameter for the compiler to check in every model's crate.
#[derive(Debug, Default)]
pub struct FilterBuilder {
    filter: Document,
    values: Chained,
}

impl FilterBuilder {
    /// An empty filter.
    pub fn new() -> Self {
        Self::default()
    }

    /// `{path: {$eq: value}}`.
    pub fn equal<T: serde::Serialize + ?Sized>(mut self, path: &str, value: &T) -> Self {
        if let Some(value) = self.values.write(value) {
            self.filter.insert(path, eq(value));
        }
        self
    }

    /// `{tag: {$eq: value}}`: a row on one variant of a polymorphic model.
    pub fn tag(mut self, tag: &str, value: &str) -> Self {
        self.filter.insert(tag, eq(Bson::String(value.to_owned())));
        self
    }

    /// `{path: null}`: a live document of a soft-delete model (the field is missing or
    /// null). The same predicate as its unique indexes' partial filter, so they serve it.
    pub fn live(mut self, path: &str) -> Self {
        self.filter.insert(path, Bson::Null);
        self
    }

    /// `{path: {$gte/$gt: start, $lte/$lt: end}}`, nothing for `..`.
    pub fn range<T: serde::Serialize + ?Sized>(mut self, path: &str, range: &impl RangeBounds<T>) -> Self {
        let mut bound = |b: Bound<&T>| match b {
            Bound::Included(v) => self.values.write(v).map_or(Bound::Unbounded, Bound::Included),
            Bound::Excluded(v) => self.values.write(v).map_or(Bound::Unbounded, Bound::Excluded),
            Bound::Unbounded => Bound::Unbounded,
        };
        let (start, end) = (bound(range.start_bound()), bound(range.end_bound()));
        if let Some(condition) = range_condition(start.as_ref(), end.as_ref()) {
            self.filter.insert(path, condition);
        }
        self
    }

    /// The filter, or the first value the encoder refused.
    pub fn build(self) -> Result<Document, crate::core::bson_compat::SerError> {
        self.values.finish(self.filter)
    }
}

/// Where a finder's commands run: outside any session ([`NoSession`], the default),
/// or in the caller's [`ClientSession`] (`&mut ClientSession`, given by
/// [`Find::session`]). Sealed: those two are all.
pub trait SessionSlot: Send + sealed::Sealed {
    /// The session, when there is one.
    fn session(&mut self) -> Option<&mut ClientSession>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NoSession {}
    impl Sealed for &mut mongodb::ClientSession {}
}

/// A finder outside any explicit session (the driver uses an implicit one).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSession;

impl SessionSlot for NoSession {
    fn session(&mut self) -> Option<&mut ClientSession> {
        None
    }
}

impl SessionSlot for &mut ClientSession {
    fn session(&mut self) -> Option<&mut ClientSession> {
        Some(&mut **self)
    }
}

/// The read of one access pattern, typed: see the [module docs](self). `S` is where
/// it runs: outside a session by default, in one after [`Find::session`].
#[must_use = "a finder does nothing until a terminal call (`one`, `first`, `stream`, `count`, `all`)"]
pub struct Find<V, S = NoSession> {
    pattern: &'static AccessPattern,
    filter: Result<Document, crate::core::bson_compat::SerError>,
    session: S,
    _view: PhantomData<fn() -> V>,
}

impl<V, S> std::fmt::Debug for Find<V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Find").field("pattern", &self.pattern.name).field("filter", &self.filter).finish()
    }
}

impl<V: Projection + Send + Sync + 'static> Find<V> {
    /// A finder over the row at `index` of the model's `ACCESS_PATTERNS`, with its
    /// filter. Generated code calls this; use the generated method.
    ///
    /// The row is looked up here, in generic code, rather than written
    /// `&ACCESS_PATTERNS[index]` in each finder: a finder's body that named the table
    /// cost the models' crate about as much as the rest of the body (benches/README.md,
    /// "Finders' filters as one expression"), the table with every size bound it holds
    /// being evaluated for it; here it is evaluated where a finder is instantiated.
    pub fn row(index: usize, filter: Result<Document, crate::core::bson_compat::SerError>) -> Self {
        let pattern = &<V::Model as Model>::ACCESS_PATTERNS[index];
        Self { pattern, filter, session: NoSession, _view: PhantomData }
    }

    /// The same read inside `session`: with a causally consistent session, the read
    /// sees the session's earlier writes (`afterClusterTime`), whatever the row's
    /// consistency routes it to. The same command is sent; the bounded terminal calls
    /// (`one`, `first`, `count`) take the session.
    pub fn session(self, session: &mut ClientSession) -> Find<V, &mut ClientSession> {
        Find { pattern: self.pattern, filter: self.filter, session, _view: PhantomData }
    }

    /// Every match, in the row's sort order, as the server sends them batch by batch:
    /// one `find`, then a `getMore` whenever the stream needs the next batch. Memory
    /// holds one batch.
    pub async fn stream(self, db: &Database) -> Result<BoxStream<'static, Result<V, FindError>>, FindError> {
        let span = trace::span!("access.stream", pattern = self.pattern.name);
        let collection = Self::collection(db);
        let cursor =
            trace::in_span(span, async { self.read(None)?.find(&collection).await.map_err(FindError::from) })
                .await?;
        Ok(cursor.map(|item| item.map_err(FindError::from).and_then(V::decode)).boxed())
    }

    /// Every match, collected: memory grows with the result, so this is for results
    /// the caller knows to be small. One `find`, then `getMore` until the end.
    pub async fn all(self, db: &Database) -> Result<Vec<V>, FindError> {
        self.stream(db).await?.try_collect().await
    }
}

impl<V: Projection + Send + Sync + 'static, S: SessionSlot> Find<V, S> {
    /// The access pattern this finder runs.
    pub fn pattern(&self) -> &'static AccessPattern {
        self.pattern
    }

    /// The filter as sent (every value under `$eq` or a comparison operator).
    pub fn filter(&self) -> Result<&Document, FindError> {
        self.filter.as_ref().map_err(|e| FindError::Parameter(e.clone()))
    }

    /// The read as sent, through the one command builder: the row's sort, the view's
    /// projection, collation and consistency.
    fn read(&self, limit: Option<i64>) -> Result<ReadCommand<'static>, FindError> {
        let read = ReadCommand::new(self.pattern, <V::Model as Model>::COLLECTION, self.filter()?.clone())
            .project(V::FIELDS, &[]);
        Ok(match limit {
            Some(limit) => read.limit(limit),
            None => read,
        })
    }

    /// The `find` command as the server receives it for `first(n)` (`n` as `limit`),
    /// or for `stream` and `all` with `None`: for inspection and `explain`.
    pub fn find_command(&self, limit: Option<u32>) -> Result<Document, FindError> {
        Ok(self.read(limit.map(i64::from))?.command())
    }

    fn collection(db: &Database) -> mongodb::Collection<RawDocumentBuf> {
        db.collection(<V::Model as Model>::COLLECTION)
    }

    /// The first match in the row's sort order, or `None`: one `find` with `limit: 1`.
    pub async fn one(self, db: &Database) -> Result<Option<V>, FindError> {
        let mut found = self.first(1, db).await?;
        Ok(found.pop())
    }

    /// At most `n` matches in the row's sort order: one `find` with `limit: n`, all in
    /// its first reply. `n = 0` returns nothing without asking the server. Any `u32` is
    /// accepted; past `i32::MAX - 1` (the driver's largest batch) or 16 MB of
    /// documents, the rest comes by `getMore`. Memory holds what is returned: `n` is
    /// the caller's bound.
    pub async fn first(mut self, n: u32, db: &Database) -> Result<Vec<V>, FindError> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let span = trace::span!("access.find", pattern = self.pattern.name, limit = n);
        let work = async {
            let collection = Self::collection(db);
            let transaction = crate::core::transaction::in_transaction(self.session.session()).await?;
            let read = self.read(Some(i64::from(n)))?.in_transaction(transaction);
            let raw: Vec<RawDocumentBuf> = match self.session.session() {
                None => read.find(&collection).await?.try_collect().await?,
                Some(session) => {
                    let mut cursor = read.find(&collection).session(&mut *session).await?;
                    let mut raw = Vec::new();
                    while let Some(document) = cursor.next(&mut *session).await {
                        raw.push(document?);
                    }
                    raw
                }
            };
            raw.into_iter().map(V::decode).collect::<Result<Vec<V>, FindError>>()
        };
        let found = trace::in_span(span.clone(), work).await;
        let _entered = span.enter();
        match &found {
            Ok(items) => trace::event!(DEBUG, items = items.len(), "found"),
            Err(e) => trace::event!(DEBUG, error = %e, "failed"),
        }
        found
    }

    /// How many documents match (`countDocuments`: one `aggregate` with the filter).
    pub async fn count(mut self, db: &Database) -> Result<u64, FindError> {
        let collection = Self::collection(db);
        let transaction = crate::core::transaction::in_transaction(self.session.session()).await?;
        let read = self.read(None)?.in_transaction(transaction);
        let count = read.count(&collection);
        let count = match self.session.session() {
            None => count,
            Some(session) => count.session(session),
        };
        let counted =
            trace::in_span(trace::span!("access.count", pattern = self.pattern.name), count.into_future())
                .await?;
        Ok(counted)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bson::doc;

    use super::FilterBuilder;
    use crate::core::access::literal::Refused;

    #[test]
    fn the_chain_writes_each_value_under_its_operator() {
        // A map shaped as an operator is a value compared under `$eq`, never run.
        let hostile: BTreeMap<&str, Option<i32>> = [("$ne", None)].into_iter().collect();
        let filter = FilterBuilder::new()
            .equal("user", &hostile)
            .tag("kind", "click")
            .range::<i32>("score", &(1..5))
            .range::<i32>("unbounded", &(..))
            .build()
            .unwrap();
        assert_eq!(
            filter,
            doc! {
                "user": {"$eq": {"$ne": null}},
                "kind": {"$eq": "click"},
                "score": {"$gte": 1, "$lt": 5},
            }
        );
    }

    #[test]
    fn a_refused_value_fails_the_whole_filter() {
        let refused = FilterBuilder::new().equal("a", &1).equal("b", &Refused).equal("c", &3).build();
        assert!(refused.unwrap_err().to_string().contains("refused on purpose"));
        // In a range bound too: no filter without the bound is ever built.
        let bound = FilterBuilder::new().range::<Refused>("a", &(Refused..)).build();
        assert!(bound.is_err());
    }
}
