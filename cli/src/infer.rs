//! Models from live data: [`infer`] samples each collection of a database (`$sample`,
//! 1,000 documents by default, all of them in a smaller collection), reads its indexes
//! (`listIndexes`), and writes Rust source that compiles under docshape's rules (a
//! `#[derive(Model)]` struct per collection, `#[derive(Embedded)]` types for
//! sub-documents, the indexes as `#[index(...)]`) and a Markdown report of what was
//! seen: coverage and types per field, and the anti-patterns in the sample.
//!
//! ```no_run
//! # async fn run(db: &docshape::mongodb::Database) -> Result<(), Box<dyn std::error::Error>> {
//! let inferred = docshape_cli::infer::infer(db, &docshape_cli::infer::InferOptions::default()).await?;
//! inferred.write(std::path::Path::new("inferred"))?; // models.rs and INFERRED.md
//! # Ok(()) }
//! ```
//!
//! What the sample shows becomes the type; what it suggests stays a comment. The most
//! common shape does not win over the others: a field missing from some documents is
//! an `Option` that serde leaves out when `None`, a field holding `null` is an
//! `Option`, an int/double mix is an `f64` whose validator takes any number (the report
//! says how many integers a validator of doubles would refuse, and the migration), and
//! any other mix of types is a `Bson` with
//! the observed distribution in a comment, so that every sampled document reads into
//! the type. Bounds seen in the data (the longest string, the range of numbers, a few
//! distinct values) are `#[validate(...)]` proposals in comments, never enforced: a
//! sample is not a rule. A collection read whole is its own rule for one thing: a
//! string field of two to five values gets `allowed = [...]` (unless
//! [`InferOptions::plain`]). An array of sub-documents is bounded by the longest one seen
//! (`#[embed(max = N, reason = "TODO: ...")]`), as docshape requires, with a reason for
//! the reader to write. Every keyword of the collection's own `$jsonSchema` validator
//! that a `#[validate]` can say (lengths, `pattern`, `enum`, bounds, item counts) is
//! one, its `validationLevel` and `validationAction` are `#[model(...)]` options, and
//! the report lists what is not kept. Patterns the data shows clearly are attributes
//! (unless [`InferOptions::plain`]): a polymorphic collection is an enum tagged by its
//! discriminator, a collection whose every index leads with one field declares it the
//! tenant, bucket documents and an array already in docshape's shapes are
//! `#[bucket(...)]` and `#[outlier(...)]` (a raw outlier gets its migration in the
//! report instead). With [`InferOptions::workload`] the profiler's
//! query shapes become proposed `#[access(...)]` rows ([`Workload`]). The anomalies
//! ([`CollectionShape::anti_patterns`]) name their documents, and references between
//! collections and the copies beside them are found by looking sampled values up.
//!
//! Memory stays bounded whatever the collection holds: documents are read one at a time
//! from a cursor and folded into per-field statistics (counts, types, lengths, a
//! handful of distinct values), then dropped. A document level with more than
//! [`MAX_FIELDS`] distinct names (a map keyed by data) or deeper than [`MAX_DEPTH`]
//! becomes a plain `Document`.
//!
//! On mongod, `$sample` reads a random sample without scanning the collection when
//! the sample is under 5% of it, and may then return a document twice; the statistics
//! count what the cursor returns.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use docshape::bson::{doc, Bson, Document, RawDocumentBuf};
use docshape::mongodb::{self, Database};
use docshape::Result;
use futures_util::TryStreamExt;

mod anomalies;
mod indexes;
mod links;
mod names;
mod patterns;
mod report;
mod server;
mod source;
pub use anomalies::{Anomalies, ArrayLengths, CountPair, FlagPair};
pub use links::{CopiedField, Link};
pub(crate) mod workload;
use source::{key_path, rust_ident, Gen};
pub use workload::{QueryShape, Workload};

/// How many distinct field names one document level may have before it is read as a
/// map (a `Document`): beyond it, the names are data, not a schema.
pub const MAX_FIELDS: usize = 200;

/// How deep sub-documents are followed; deeper ones are plain `Document`s.
pub const MAX_DEPTH: usize = 16;

/// Arrays longer than this are named in the report (the "unbounded array" anti-pattern).
pub const LONG_ARRAY: usize = 1_000;

/// Documents larger than this are named in the report (bytes).
pub const LARGE_DOCUMENT: usize = 2 * 1024 * 1024;

/// More indexes than this on one collection are named in the report.
pub const MANY_INDEXES: usize = 30;

/// Field names at least this long (bytes), repeated in most documents, are named in
/// the report with what a short name would save.
pub const LONG_NAME: usize = 12;

/// The share of the average document a long name must cost to be named: below it,
/// renaming saves too little to be worth a migration.
pub const LONG_NAME_SHARE: f64 = 0.05;

/// The fewest indexes (besides `_id_`, TTL indexes aside) that must all lead with one
/// field for `infer` to declare it the tenant: one index leading with a field is an
/// index; two or more that all do are a collection partitioned by it.
pub const MIN_TENANT_INDEXES: usize = 2;

/// Documents per batch of the sampling cursor.
const BATCH: u32 = 500;

/// The distinct values kept per field for an `allowed = [...]` proposal.
const DISTINCT: usize = 5;

/// What [`infer`] reads: `InferOptions::default()` and the setters,
/// `InferOptions::default().sample(200).collections(["users"])`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InferOptions {
    /// Documents sampled per collection (`$sample`'s size); a smaller collection is
    /// read whole. Default 1,000.
    pub sample: u64,
    /// The collections to read; empty: every collection of the database (not views,
    /// not `system.*`).
    pub collections: Vec<String>,
    /// Also read the profiler's entries of each collection (`system.profile`) and
    /// propose `#[access(...)]` rows from their query shapes. The profiler must have
    /// been on (`db.setProfilingLevel(2)` or `1`) while the application ran; on mongod
    /// `system.profile` is a capped collection (1 MB by default), so it holds the latest
    /// entries only.
    pub workload: bool,
    /// Draw a progress line on standard error while a collection is sampled, when
    /// standard error is a terminal (the CLI sets it; a log gets no progress lines).
    pub progress: bool,
    /// Keep the plain forms: a string field of a handful of values stays a `String`
    /// without `allowed = [...]` (the values stay a comment), a reference its raw id,
    /// a copy undeclared, a polymorphic collection one struct (the enum proposed in a
    /// comment), a collection no tenant, buckets a plain struct, an outlier array a
    /// plain `Vec<T>`.
    pub plain: bool,
}

impl Default for InferOptions {
    fn default() -> Self {
        InferOptions {
            sample: 1_000,
            collections: Vec::new(),
            workload: false,
            progress: false,
            plain: false,
        }
    }
}

impl InferOptions {
    /// Sets the field `sample`.
    pub fn sample(mut self, documents: u64) -> Self {
        self.sample = documents;
        self
    }

    /// Sets the field `collections` (none: every collection).
    pub fn collections<I>(mut self, names: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.collections = names.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the field `workload`.
    pub fn workload(mut self, read: bool) -> Self {
        self.workload = read;
        self
    }

    /// Sets the field `progress`.
    pub fn progress(mut self, draw: bool) -> Self {
        self.progress = draw;
        self
    }

    /// Sets the field `plain`.
    pub fn plain(mut self, plain: bool) -> Self {
        self.plain = plain;
        self
    }
}

/// What [`infer`] found: per collection, the statistics of its sample and its indexes.
/// [`Inferred::source`] renders the Rust models, [`Inferred::report`] the Markdown
/// report.
#[derive(Debug, Clone)]
pub struct Inferred {
    /// The database's name.
    pub database: String,
    /// Each collection read, by name.
    pub collections: Vec<CollectionShape>,
    /// [`InferOptions::plain`]: the plain forms, no pattern written as an attribute.
    pub plain: bool,
}

/// One collection's sample, folded into statistics.
#[derive(Debug, Clone)]
pub struct CollectionShape {
    /// The collection's name.
    pub name: String,
    /// How many documents the server estimates the collection holds.
    pub estimated_count: u64,
    /// How many documents the sample held.
    pub sampled: u64,
    /// The largest sampled document, in bytes.
    pub largest_bytes: usize,
    /// How many sampled documents were over [`LARGE_DOCUMENT`].
    pub large_documents: u64,
    /// The sampled documents' bytes, summed (their average size is what a long field
    /// name is measured against).
    pub total_bytes: u64,
    /// The anomalies, each with the documents that show it.
    pub anomalies: Anomalies,
    /// The top-level fields holding another collection's `_id`s, and the copies
    /// beside them (found across the collections read together).
    pub links: Vec<Link>,
    /// Every sampled document, as one node: its fields' statistics.
    pub root: Node,
    /// The collection's indexes as `listIndexes` returns them, `_id_` left out.
    pub indexes: Vec<Document>,
    /// The collection's validator (`listCollections`), if it has one: its
    /// `$jsonSchema` bounds that map onto a field's type become `#[validate]`s.
    pub validator: Option<Document>,
    /// The collection's `validationLevel` (`strict`, `moderate`, `off`), if it has a
    /// validator: kept as `#[model(validation_level = ...)]`.
    pub validation_level: Option<String>,
    /// The collection's `validationAction` (`error`, `warn`): kept as
    /// `#[model(validation_action = ...)]`.
    pub validation_action: Option<String>,
    /// The profiler's query shapes, when [`InferOptions::workload`] asked for them.
    pub workload: Option<Workload>,
    /// The top-level fields that may tell document shapes apart: see
    /// [`CollectionShape::discriminator`].
    pub tags: Tags,
    /// When a discriminator was found, a second sample folded per value of it: each
    /// document type's own statistics, from which the polymorphic model's variants
    /// are written.
    pub variants: Vec<Variant>,
    /// Documents of that second sample whose tag was none of the first sample's
    /// values (or no string): then no polymorphic model is written, since some
    /// stored documents would not read into any variant.
    pub untagged: u64,
}

/// One document type of a polymorphic collection: its tag value and its documents'
/// statistics.
#[derive(Debug, Clone)]
pub struct Variant {
    /// The discriminator's value (`"click"`).
    pub value: String,
    /// How many documents of the second sample held it.
    pub sampled: u64,
    /// Their fields, as [`CollectionShape::root`] holds the collection's.
    pub root: Node,
}

/// Per top-level field that has held only short strings of a handful of values: per
/// value, how many sampled documents held it and which other top-level fields they
/// had. Bounded: a field is dropped once it holds another type or more than
/// [`MAX_TAG_VALUES`] values.
#[derive(Debug, Clone, Default)]
pub struct Tags {
    /// `None`: the field is not a candidate any more.
    candidates: BTreeMap<String, Option<BTreeMap<String, TagValue>>>,
}

/// The documents holding one value of a candidate field.
#[derive(Debug, Clone, Default)]
struct TagValue {
    documents: u64,
    /// Each other top-level field, and in how many of these documents it was.
    fields: BTreeMap<String, u64>,
}

/// Values a discriminator may have: more are data, not document types.
pub const MAX_TAG_VALUES: usize = 12;

/// The fewest sampled documents in which a discriminator is looked for.
pub const MIN_TAG_SAMPLE: u64 = 10;

impl Tags {
    fn fold(&mut self, document: &Document) {
        for (key, value) in document {
            // A map keyed by data has no discriminator among its keys.
            if !self.candidates.contains_key(key) && self.candidates.len() >= MAX_FIELDS {
                continue;
            }
            let slot = self.candidates.entry(key.clone()).or_insert_with(|| Some(BTreeMap::new()));
            let Some(values) = slot else { continue };
            let text = match value {
                Bson::String(s) if !s.is_empty() && s.len() <= 40 => s,
                _ => {
                    *slot = None;
                    continue;
                }
            };
            if !values.contains_key(text) && values.len() >= MAX_TAG_VALUES {
                *slot = None;
                continue;
            }
            let entry = values.entry(text.clone()).or_default();
            entry.documents += 1;
            for other in document.keys().filter(|k| *k != key && k.len() <= 64) {
                if entry.fields.len() < MAX_FIELDS || entry.fields.contains_key(other) {
                    *entry.fields.entry(other.clone()).or_default() += 1;
                }
            }
        }
    }
}

/// A field whose values tell the collection's document shapes apart: a polymorphic
/// model's tag.
#[derive(Debug, Clone, PartialEq)]
pub struct Discriminator {
    /// The field (`kind`).
    pub field: String,
    /// Per value: how many sampled documents held it, and the fields every one of
    /// them had (`_id` and the tag left out), sorted.
    pub variants: Vec<(String, u64, Vec<String>)>,
}

impl CollectionShape {
    /// The field that looks like a discriminator: in every one of at least
    /// [`MIN_TAG_SAMPLE`] sampled documents, a string of two to [`MAX_TAG_VALUES`]
    /// values, each held by two documents or more, whose documents hold different sets
    /// of fields
    /// (each value's own, the fields all of its documents have). The one telling the
    /// most shapes apart, then the one with the fewest values, then by name.
    pub fn discriminator(&self) -> Option<Discriminator> {
        let mut best: Option<(usize, usize, Discriminator)> = None;
        for (field, values) in &self.tags.candidates {
            let Some(values) = values else { continue };
            let total: u64 = values.values().map(|v| v.documents).sum();
            // A shape seen once is not a type: each value must be held by a few
            // documents of a sample large enough to tell.
            let credible = self.sampled >= MIN_TAG_SAMPLE && values.values().all(|v| v.documents >= 2);
            if values.len() < 2 || total != self.sampled || field == "_id" || !credible {
                continue;
            }
            let variants: Vec<(String, u64, Vec<String>)> = values
                .iter()
                .map(|(value, v)| {
                    let own = v
                        .fields
                        .iter()
                        .filter(|(f, n)| **n == v.documents && f.as_str() != "_id")
                        .map(|(f, _)| f.clone())
                        .collect();
                    (value.clone(), v.documents, own)
                })
                .collect();
            let shapes: BTreeSet<&Vec<String>> = variants.iter().map(|(_, _, own)| own).collect();
            if shapes.len() < 2 {
                continue;
            }
            let rank = (shapes.len(), usize::MAX - variants.len());
            let found = Discriminator { field: field.clone(), variants };
            if best.as_ref().is_none_or(|(s, v, _)| rank > (*s, *v)) {
                best = Some((rank.0, rank.1, found));
            }
        }
        best.map(|(_, _, d)| d)
    }
}

/// The statistics of the values seen at one path.
#[derive(Debug, Clone, Default)]
pub struct Node {
    /// How many values were seen (null included).
    pub seen: u64,
    /// How many of each BSON type (`$type`'s names: `string`, `int`, `object`, ...).
    pub kinds: BTreeMap<&'static str, u64>,
    /// The longest string, in code points (what `maxLength` counts).
    pub max_chars: usize,
    /// The smallest and largest number.
    pub range: Option<(f64, f64)>,
    /// The distinct strings seen, while there are at most a handful.
    pub distinct: Option<BTreeSet<String>>,
    /// The sub-document's fields, in the order first seen.
    pub fields: Vec<(String, Node)>,
    /// The sub-document level had more than [`MAX_FIELDS`] names, or was past
    /// [`MAX_DEPTH`]: its fields were not followed.
    pub opaque: bool,
    /// The longest array.
    pub max_len: usize,
    /// How many arrays were longer than [`LONG_ARRAY`].
    pub long_arrays: u64,
    /// Every array element, folded together.
    pub items: Option<Box<Node>>,
}

impl Node {
    fn fold_document(&mut self, document: &Document, depth: usize) {
        if depth >= MAX_DEPTH {
            self.opaque = true;
        }
        if self.opaque {
            return;
        }
        for (key, value) in document {
            let at = match self.fields.iter().position(|(k, _)| k == key) {
                Some(at) => at,
                None if self.fields.len() >= MAX_FIELDS => {
                    // A map keyed by data: forget the names, keep the memory bound.
                    self.opaque = true;
                    self.fields.clear();
                    return;
                }
                None => {
                    self.fields.push((key.clone(), Node::default()));
                    self.fields.len() - 1
                }
            };
            self.fields[at].1.fold(value, depth + 1);
        }
    }

    fn fold(&mut self, value: &Bson, depth: usize) {
        self.seen += 1;
        *self.kinds.entry(kind(value)).or_default() += 1;
        match value {
            Bson::String(s) => {
                self.max_chars = self.max_chars.max(s.chars().count());
                let first = self.seen == 1;
                if first {
                    self.distinct = Some(BTreeSet::new());
                }
                if let Some(set) = &mut self.distinct {
                    if s.len() <= 40 {
                        set.insert(s.clone());
                    }
                    if s.len() > 40 || set.len() > DISTINCT {
                        self.distinct = None;
                    }
                }
            }
            Bson::Int32(i) => self.number(f64::from(*i)),
            Bson::Int64(i) => self.number(*i as f64),
            Bson::Double(d) if d.is_finite() => self.number(*d),
            Bson::Document(d) => self.fold_document(d, depth),
            Bson::Array(items) => {
                self.max_len = self.max_len.max(items.len());
                if items.len() > LONG_ARRAY {
                    self.long_arrays += 1;
                }
                if depth >= MAX_DEPTH {
                    return;
                }
                for item in items {
                    self.items.get_or_insert_with(Box::default).fold(item, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn number(&mut self, n: f64) {
        self.range = Some(match self.range {
            Some((lo, hi)) => (lo.min(n), hi.max(n)),
            None => (n, n),
        });
    }

    /// The kinds seen besides `null`.
    fn non_null(&self) -> BTreeMap<&'static str, u64> {
        self.kinds.iter().filter(|(k, _)| **k != "null").map(|(k, n)| (*k, *n)).collect()
    }

    /// Whether the values are sub-documents only (nulls aside), followed field by field.
    fn is_struct(&self) -> bool {
        let kinds = self.non_null();
        kinds.len() == 1 && kinds.contains_key("object") && !self.opaque
    }

    fn field(&self, name: &str) -> Option<&Node> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, n)| n)
    }
}

/// `$type`'s name of a value.
fn kind(value: &Bson) -> &'static str {
    match value {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Binary(_) => "binData",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "regex",
        Bson::Int32(_) => "int",
        Bson::Int64(_) => "long",
        Bson::Decimal128(_) => "decimal",
        Bson::Timestamp(_) => "timestamp",
        Bson::Undefined => "undefined",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
        Bson::Symbol(_) => "symbol",
        Bson::JavaScriptCode(_) => "javascript",
        Bson::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        Bson::DbPointer(_) => "dbPointer",
    }
}

/// Samples every collection `options` names (all of them when it names none) and
/// reads their indexes.
///
/// Each collection is one `$sample` aggregation read through a cursor, and one
/// `listIndexes`; nothing is written. A collection named in `options` that does not
/// exist is sampled as an empty one.
pub async fn infer(db: &Database, options: &InferOptions) -> Result<Inferred> {
    let names = if options.collections.is_empty() {
        let mut names = Vec::new();
        let mut cursor = db.list_collections().filter(doc! { "type": "collection" }).await?;
        while let Some(spec) = cursor.try_next().await? {
            if !spec.name.starts_with("system.") {
                names.push(spec.name);
            }
        }
        names.sort();
        names
    } else {
        options.collections.clone()
    };
    let mut collections = Vec::new();
    for name in names {
        let progress = options.progress && std::io::IsTerminal::is_terminal(&std::io::stderr());
        let mut shape = sample(db, &name, options.sample.max(1), progress).await?;
        if let Some(d) = shape.discriminator() {
            sample_variants(db, &mut shape, &d, options.sample.max(1)).await?;
        }
        if options.workload {
            shape.workload = Some(workload::read(db, &name, None).await?);
        }
        collections.push(shape);
    }
    // References and copies need every collection's statistics.
    links::find(db, &mut collections).await?;
    Ok(Inferred { database: db.name().to_owned(), collections, plain: options.plain })
}

async fn sample(db: &Database, name: &str, size: u64, progress: bool) -> Result<CollectionShape> {
    let collection = db.collection::<RawDocumentBuf>(name);
    let estimated_count = collection.estimated_document_count().await?;
    let size = i64::try_from(size).unwrap_or(i64::MAX);
    // A batch size of our own: the driver holds a whole batch, which a server may make
    // as large as the sample (mongod stops at 16 MB).
    let mut cursor = collection
        .aggregate(vec![doc! { "$sample": { "size": size } }])
        .batch_size(BATCH)
        .with_type::<RawDocumentBuf>()
        .await?;
    let mut shape = CollectionShape {
        name: name.to_owned(),
        estimated_count,
        sampled: 0,
        largest_bytes: 0,
        large_documents: 0,
        total_bytes: 0,
        anomalies: Anomalies::default(),
        links: Vec::new(),
        root: Node::default(),
        indexes: Vec::new(),
        validator: None,
        validation_level: None,
        validation_action: None,
        workload: None,
        tags: Tags::default(),
        variants: Vec::new(),
        untagged: 0,
    };
    // A progress line, redrawn at most four times a second, on long samples.
    let target = size.min(i64::try_from(estimated_count).unwrap_or(i64::MAX));
    let mut drawn = std::time::Instant::now();
    while let Some(raw) = cursor.try_next().await? {
        if progress && drawn.elapsed() >= std::time::Duration::from_millis(250) {
            drawn = std::time::Instant::now();
            eprint!(
                "\r{name}: {} of {} documents sampled",
                thousands(shape.sampled),
                thousands(target as u64)
            );
        }
        let bytes = raw.as_bytes().len();
        shape.largest_bytes = shape.largest_bytes.max(bytes);
        if bytes > LARGE_DOCUMENT {
            shape.large_documents += 1;
        }
        let document: Document = docshape::bson_compat::from_slice(raw.as_bytes()).map_err(|e| {
            docshape::Error::UnexpectedReply {
                command: "aggregate",
                detail: format!("a sampled document of `{name}` does not decode: {e}"),
            }
        })?;
        shape.total_bytes += bytes as u64;
        shape.anomalies.fold(&document, bytes);
        shape.sampled += 1;
        shape.root.seen += 1;
        *shape.root.kinds.entry("object").or_default() += 1;
        shape.root.fold_document(&document, 0);
        shape.tags.fold(&document);
    }
    if progress {
        // Ends the line the progress was drawn on.
        eprintln!("\r{name}: {} documents sampled", thousands(shape.sampled));
    }
    shape.indexes = server_indexes(db, name).await?;
    let mut specs = db
        .list_collections()
        .filter(doc! { "name": docshape::__private::eq_filter(Bson::String(name.to_owned())) })
        .await?;
    while let Some(spec) = specs.try_next().await? {
        // The driver's enums, as the server names them (`moderate`, `warn`).
        let named = |v: Option<serde_json::Value>| v.and_then(|v| v.as_str().map(str::to_owned));
        shape.validation_level =
            named(spec.options.validation_level.and_then(|l| serde_json::to_value(l).ok()));
        shape.validation_action =
            named(spec.options.validation_action.and_then(|a| serde_json::to_value(a).ok()));
        shape.validator = spec.options.validator;
    }
    Ok(shape)
}

/// A second `$sample` of the collection (the whole of it when it is smaller), each
/// document folded into the statistics of its discriminator's value: the variants'
/// own fields and types. A document whose tag is none of the first sample's values
/// is counted in [`CollectionShape::untagged`].
async fn sample_variants(
    db: &Database,
    shape: &mut CollectionShape,
    d: &Discriminator,
    size: u64,
) -> Result<()> {
    let size = i64::try_from(size).unwrap_or(i64::MAX);
    let mut cursor = db
        .collection::<Document>(&shape.name)
        .aggregate(vec![doc! { "$sample": { "size": size } }])
        .batch_size(BATCH)
        .await?;
    let mut variants: Vec<Variant> = d
        .variants
        .iter()
        .map(|(value, _, _)| Variant { value: value.clone(), sampled: 0, root: Node::default() })
        .collect();
    while let Some(document) = cursor.try_next().await? {
        let tag = document.get_str(&d.field).ok();
        match variants.iter_mut().find(|v| Some(v.value.as_str()) == tag) {
            Some(v) => {
                v.sampled += 1;
                v.root.seen += 1;
                *v.root.kinds.entry("object").or_default() += 1;
                v.root.fold_document(&document, 0);
            }
            None => shape.untagged += 1,
        }
    }
    shape.variants = variants;
    Ok(())
}

/// The collection's indexes as `listIndexes` returns them, `_id_` left out, by name:
/// mongod lists them in creation order, other servers otherwise, and what is built
/// from them should not depend on which. None for a collection that does not exist.
pub(crate) async fn server_indexes(db: &Database, name: &str) -> Result<Vec<Document>> {
    let collection = db.collection::<RawDocumentBuf>(name);
    let mut out = Vec::new();
    let mut indexes = collection.list_indexes().await.map(Some).or_else(|e| match e.kind.as_ref() {
        // A collection that does not exist has no indexes (mongod: NamespaceNotFound).
        mongodb::error::ErrorKind::Command(c) if c.code == 26 => Ok(None),
        _ => Err(e),
    })?;
    if let Some(cursor) = &mut indexes {
        while let Some(index) = cursor.try_next().await? {
            let Ok(raw) = docshape::bson_compat::to_document(&index) else { continue };
            if raw.get_str("name").ok() != Some("_id_") {
                out.push(raw);
            }
        }
    }
    out.sort_by(|a, b| a.get_str("name").unwrap_or("").cmp(b.get_str("name").unwrap_or("")));
    Ok(out)
}

impl Inferred {
    /// The Rust source of every collection's model and its embedded types: one file
    /// that compiles against `docshape` and `serde`.
    pub fn source(&self) -> String {
        let mut g = Gen::new(self.plain);
        g.name_models(&self.collections);
        for c in &self.collections {
            // An outlier's overflow collection is the outlier's: `sync` of its owner
            // gives it its validator and index, and a model of its own would fight it.
            let owner = if self.plain { None } else { patterns::overflow_owner(c, &self.collections) };
            if let Some((owner, array)) = owner {
                g.items.push(format!(
                    "// The collection {}: the overflow of `{}.{}`, declared by its `#[outlier]`: no model of its own.\n",
                    escaped(&c.name),
                    md(&owner),
                    md(&array)
                ));
                continue;
            }
            g.model(c, &self.collections);
        }
        let mut out = String::new();
        let _ = writeln!(
            out,
            "//! Models inferred by `docshape infer` from the database {}: review every\n//! comment, bound and `TODO` before relying on them (see INFERRED.md).\n",
            escaped(&self.database)
        );
        // Two indexes or rows sharing a key (every index of a tenant model leads with
        // it) read to clippy as duplicated attributes.
        let _ = writeln!(out, "#![allow(clippy::duplicated_attributes)]\n");
        // Only what the file uses: the generated file should compile without warnings.
        if g.uses_ref {
            let _ = writeln!(out, "use docshape::refs::Ref;");
        }
        if g.embedded {
            let _ = writeln!(out, "use docshape::{{Embedded, Model}};");
        } else {
            let _ = writeln!(out, "use docshape::Model;");
        }
        let bson: Vec<&str> = g.imports.iter().copied().collect();
        if !bson.is_empty() {
            let _ = writeln!(out, "#[allow(unused_imports)]\nuse docshape::bson::{{{}}};", bson.join(", "));
        }
        let _ = writeln!(out, "use serde::{{Deserialize, Serialize}};");
        for item in &g.items {
            out.push('\n');
            out.push_str(item);
        }
        out
    }

    /// The Markdown report: per collection, the sample, each field's coverage and
    /// types, the indexes, and the anti-patterns seen.
    pub fn report(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Inferred from `{}`\n", md(&self.database));
        let _ = writeln!(
            out,
            "What `docshape infer` saw in a sample of each collection; the models are in `models.rs`. \
             Proposed bounds there are comments: a sample is not a rule.\n"
        );
        // The same names and references as the source, so that the report says what
        // `models.rs` holds.
        let mut g = Gen::new(self.plain);
        g.name_models(&self.collections);
        for c in &self.collections {
            g.find_refs(c, &self.collections);
            report::collection(&mut out, c, &g.refs, &g.copies, self.plain, &self.collections);
        }
        out
    }

    /// Writes `models.rs` and `INFERRED.md` into `dir` (created if missing) and
    /// returns their paths.
    pub fn write(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let source = dir.join("models.rs");
        let report = dir.join("INFERRED.md");
        std::fs::write(&source, self.source())?;
        std::fs::write(&report, self.report())?;
        Ok(vec![source, report])
    }
}

/// `int 3 (60%), string 2 (40%)`.
fn distribution(kinds: &BTreeMap<&'static str, u64>) -> String {
    let total: u64 = kinds.values().sum();
    let mut sorted: Vec<_> = kinds.iter().collect();
    sorted.sort_by_key(|(k, n)| (std::cmp::Reverse(**n), **k));
    sorted
        .iter()
        .map(|(k, n)| format!("{k} {n} ({:.0}%)", **n as f64 * 100.0 / total.max(1) as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Text safe inside a Markdown table cell or code span: on one line, no pipe or backtick.
fn md(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '|' => '¦',
            '`' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// A name as a Rust string literal: quoted and escaped, so that nothing in it can end a
/// comment's line or a literal.
fn escaped(text: &str) -> String {
    format!("{text:?}")
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Sizes in binary units, as the server's limits are (16 MiB), everywhere in the report.
fn bytes(n: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    match n {
        n if n >= 10 * MIB => format!("{} MiB", thousands(n / MIB)),
        n if n >= MIB => format!("{:.1} MiB", n as f64 / MIB as f64),
        n if n >= 10 * KIB => format!("{} KiB", thousands(n / KIB)),
        n => format!("{} bytes", thousands(n)),
    }
}

#[cfg(test)]
mod tests;
