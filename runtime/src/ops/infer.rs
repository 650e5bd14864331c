//! Models from live data: [`infer`] samples each collection of a database (`$sample`,
//! 1,000 documents by default, all of them in a smaller collection), reads its indexes
//! (`listIndexes`), and writes Rust source that compiles under docshape's rules (a
//! `#[derive(Model)]` struct per collection, `#[derive(Embedded)]` types for
//! sub-documents, the indexes as `#[index(...)]`) and a Markdown report of what was
//! seen: coverage and types per field, and the anti-patterns in the sample.
//!
//! ```no_run
//! # async fn run(db: &docshape::mongodb::Database) -> Result<(), Box<dyn std::error::Error>> {
//! let inferred = docshape::infer::infer(db, &docshape::infer::InferOptions::default()).await?;
//! inferred.write(std::path::Path::new("inferred"))?; // models.rs and INFERRED.md
//! # Ok(()) }
//! ```
//!
//! What the sample shows becomes the type; what it suggests stays a comment. The most
//! common shape does not win over the others: a field missing from some documents is
//! an `Option` that serde leaves out when `None`, a field holding `null` is an
//! `Option`, an int/double mix is an `f64`, and any other mix of types is a `Bson` with
//! the observed distribution in a comment, so that every sampled document reads into
//! the type. Bounds seen in the data (the longest string, the range of numbers, a few
//! distinct values) are `#[validate(...)]` proposals in comments, never enforced: a
//! sample is not a rule. An array of sub-documents is bounded by the longest one seen
//! (`#[embed(max = N, reason = "TODO: ...")]`), as docshape requires, with a reason for
//! the reader to write.
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

use bson::{doc, Bson, Document, RawDocumentBuf};
use futures_util::TryStreamExt;
use mongodb::Database;

use crate::core::error::Result;

mod workload;
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

/// Documents per batch of the sampling cursor.
const BATCH: u32 = 500;

/// The distinct values kept per field for an `allowed = [...]` proposal.
const DISTINCT: usize = 5;

/// What [`infer`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

impl Default for InferOptions {
    fn default() -> Self {
        InferOptions { sample: 1_000, collections: Vec::new(), workload: false }
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
    /// Every sampled document, as one node: its fields' statistics.
    pub root: Node,
    /// The collection's indexes as `listIndexes` returns them, `_id_` left out.
    pub indexes: Vec<Document>,
    /// The profiler's query shapes, when [`InferOptions::workload`] asked for them.
    pub workload: Option<Workload>,
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
        let mut shape = sample(db, &name, options.sample.max(1)).await?;
        if options.workload {
            shape.workload = Some(workload::read(db, &name).await?);
        }
        collections.push(shape);
    }
    Ok(Inferred { database: db.name().to_owned(), collections })
}

async fn sample(db: &Database, name: &str, size: u64) -> Result<CollectionShape> {
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
        root: Node::default(),
        indexes: Vec::new(),
        workload: None,
    };
    while let Some(raw) = cursor.try_next().await? {
        let bytes = raw.as_bytes().len();
        shape.largest_bytes = shape.largest_bytes.max(bytes);
        if bytes > LARGE_DOCUMENT {
            shape.large_documents += 1;
        }
        let document: Document = crate::core::bson_compat::from_slice(raw.as_bytes()).map_err(|e| {
            crate::core::error::Error::UnexpectedReply {
                command: "aggregate",
                detail: format!("a sampled document of `{name}` does not decode: {e}"),
            }
        })?;
        shape.sampled += 1;
        shape.root.seen += 1;
        *shape.root.kinds.entry("object").or_default() += 1;
        shape.root.fold_document(&document, 0);
    }
    let mut indexes = collection.list_indexes().await.map(Some).or_else(|e| match e.kind.as_ref() {
        // A collection that does not exist has no indexes (mongod: NamespaceNotFound).
        mongodb::error::ErrorKind::Command(c) if c.code == 26 => Ok(None),
        _ => Err(e),
    })?;
    if let Some(cursor) = &mut indexes {
        while let Some(index) = cursor.try_next().await? {
            let Ok(raw) = crate::core::bson_compat::to_document(&index) else { continue };
            if raw.get_str("name").ok() != Some("_id_") {
                shape.indexes.push(raw);
            }
        }
    }
    // By name: mongod lists them in creation order, other servers otherwise, and the
    // generated source should not depend on which.
    shape.indexes.sort_by(|a, b| a.get_str("name").unwrap_or("").cmp(b.get_str("name").unwrap_or("")));
    Ok(shape)
}

impl Inferred {
    /// The Rust source of every collection's model and its embedded types: one file
    /// that compiles against `docshape` and `serde`.
    pub fn source(&self) -> String {
        let mut g = Gen::default();
        for c in &self.collections {
            g.model(c);
        }
        let mut out = String::new();
        let _ = writeln!(
            out,
            "//! Models inferred by `docshape infer` from the database {}: review every\n//! comment, bound and `TODO` before relying on them (see INFERRED.md).\n",
            escaped(&self.database)
        );
        let _ = writeln!(out, "use docshape::{{Embedded, Model}};");
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
        for c in &self.collections {
            report_collection(&mut out, c);
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

impl CollectionShape {
    /// The anti-patterns seen in the sample, one sentence each.
    pub fn anti_patterns(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut arrays = Vec::new();
        walk(&self.root, "", &mut |path, node| {
            if node.long_arrays > 0 {
                arrays.push((path.to_owned(), node.max_len, node.long_arrays));
            }
        });
        for (path, max, count) in arrays {
            out.push(format!(
                "**unbounded array** `{}`: up to {} elements, {} sampled value(s) past {}: a few huge lists \
                 are an `#[outlier]` array; lists that grow with the data belong in a collection of their \
                 own, each element holding a reference to this document",
                md(&path),
                thousands(max as u64),
                count,
                thousands(LONG_ARRAY as u64)
            ));
        }
        if self.large_documents > 0 {
            out.push(format!(
                "**large documents**: {} sampled document(s) over 2 MB (the largest {} bytes): every read \
                 of one moves it whole; split what is read apart (the subset pattern) or bound what grows",
                self.large_documents,
                thousands(self.largest_bytes as u64)
            ));
        }
        if self.indexes.len() + 1 > MANY_INDEXES {
            out.push(format!(
                "**too many indexes**: {} (with `_id_`), more than {}: each costs memory and slows every write; \
                 drop those no access pattern needs",
                self.indexes.len() + 1,
                MANY_INDEXES
            ));
        }
        for (path, name, occurrences) in self.long_names() {
            let saved = (name.len() - 2) as u64 * occurrences;
            let per_document = saved as f64 / self.sampled.max(1) as f64;
            out.push(format!(
                "**long field name** `{}` ({} bytes) at `{}`, {} times in {} sampled documents: a 2-byte name \
                 would save about {:.0} bytes per document, about {} over the estimated {} documents",
                md(&name),
                name.len(),
                md(&path),
                thousands(occurrences),
                thousands(self.sampled),
                per_document,
                bytes((per_document * self.estimated_count as f64) as u64),
                thousands(self.estimated_count)
            ));
        }
        out
    }

    /// Names of at least [`LONG_NAME`] bytes stored at least once per sampled document
    /// on average: (path, name, occurrences).
    fn long_names(&self) -> Vec<(String, String, u64)> {
        let mut found = Vec::new();
        let sampled = self.sampled;
        walk(&self.root, "", &mut |path, node| {
            let name = path.rsplit('.').next().unwrap_or(path);
            if name.len() >= LONG_NAME && node.seen * 2 >= sampled && sampled > 0 {
                found.push((path.to_owned(), name.to_owned(), node.seen));
            }
        });
        found.sort_by_key(|(_, name, n)| std::cmp::Reverse((name.len() - 2) as u64 * n));
        found.truncate(10);
        found
    }
}

/// Visits every field under `node` with its dotted path (array elements' fields under
/// the array's path, as MongoDB's queries name them).
fn walk(node: &Node, prefix: &str, f: &mut dyn FnMut(&str, &Node)) {
    for (name, child) in &node.fields {
        let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        f(&path, child);
        walk(child, &path, f);
        if let Some(items) = &child.items {
            walk(items, &path, f);
        }
    }
}

fn report_collection(out: &mut String, c: &CollectionShape) {
    let _ = writeln!(out, "## `{}`\n", md(&c.name));
    let _ = writeln!(
        out,
        "Sampled {} of about {} documents (`$sample`); the largest was {} bytes.\n",
        thousands(c.sampled),
        thousands(c.estimated_count),
        thousands(c.largest_bytes as u64)
    );
    let _ = writeln!(out, "| field | coverage | types |\n|---|---|---|");
    rows(out, &c.root, "", c.sampled);
    let _ = writeln!(out);
    let _ = writeln!(out, "Indexes besides `_id_`: {}.\n", c.indexes.len());
    for index in &c.indexes {
        let _ =
            writeln!(out, "- `{}`", md(&Bson::Document(index.clone()).into_relaxed_extjson().to_string()));
    }
    if !c.indexes.is_empty() {
        let _ = writeln!(out);
    }
    if let Some(w) = &c.workload {
        report_workload(out, c, w);
    }
    let found = c.anti_patterns();
    let _ = writeln!(out, "### Anti-patterns\n");
    if found.is_empty() {
        let _ = writeln!(out, "None seen in the sample.\n");
    }
    for line in found {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(out);
}

fn rows(out: &mut String, node: &Node, prefix: &str, parent: u64) {
    for (name, child) in &node.fields {
        let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        let share = if parent == 0 { 0.0 } else { child.seen as f64 * 100.0 / parent as f64 };
        let mut types = distribution(&child.kinds);
        if let Some(items) = &child.items {
            types.push_str(&format!("; elements: {}", distribution(&items.kinds)));
        }
        if child.opaque {
            types.push_str("; not followed (too many names or too deep)");
        }
        let _ = writeln!(
            out,
            "| `{}` | {:.0}% ({} of {}) | {} |",
            md(&path),
            share,
            child.seen,
            parent,
            md(&types)
        );
        rows(out, child, &path, child.kinds.get("object").copied().unwrap_or(0));
        if let Some(items) = &child.items {
            rows(out, items, &path, items.kinds.get("object").copied().unwrap_or(0));
        }
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

fn bytes(n: u64) -> String {
    match n {
        n if n >= 10 * 1024 * 1024 => format!("{} MB", thousands(n / (1024 * 1024))),
        n if n >= 10 * 1024 => format!("{} kB", thousands(n / 1024)),
        n => format!("{} bytes", thousands(n)),
    }
}

/// The source being written: finished items, the names taken, the bson types used.
#[derive(Default)]
struct Gen {
    items: Vec<String>,
    taken: BTreeSet<String>,
    imports: BTreeSet<&'static str>,
}

/// Type names the generated file imports or the prelude holds: never a model's name.
const RESERVED_TYPES: &[&str] = &[
    "Bson",
    "Document",
    "DateTime",
    "ObjectId",
    "Binary",
    "Timestamp",
    "Decimal128",
    "Serialize",
    "Deserialize",
    "Model",
    "Embedded",
    "Option",
    "Vec",
    "String",
    "Box",
    "Result",
    "Some",
    "None",
    "Ok",
    "Err",
    "Self",
];

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while",
    "abstract", "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual",
    "yield", "try", "gen", "union",
];

/// A field's type as written, and what the reader should know about it.
struct Typed {
    ty: String,
    /// Holds sub-documents (an embedded type or `Document`): an array of it needs a bound.
    document: bool,
    notes: Vec<String>,
}

impl Gen {
    fn type_name(&mut self, wanted: &str) -> String {
        let base = if wanted.is_empty() { "Inferred".to_owned() } else { wanted.to_owned() };
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) || RESERVED_TYPES.contains(&name.as_str()) {
            name = format!("{base}{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    fn model(&mut self, c: &CollectionShape) {
        let name = self.type_name(&singular(&pascal(&c.name)));
        let (index_attrs, index_notes, budget) = indexes(c);
        let mut head = String::new();
        let _ = writeln!(
            head,
            "/// The collection {}: {} of about {} documents sampled.",
            escaped(&c.name),
            c.sampled,
            c.estimated_count
        );
        for note in &index_notes {
            let _ = writeln!(head, "// {note}");
        }
        let _ = writeln!(head, "#[derive(Debug, Clone, Serialize, Deserialize, Model)]");
        match budget {
            Some(n) => {
                let _ = writeln!(head, "#[model(collection = {}, max_indexes = {n})]", escaped(&c.name));
            }
            None => {
                let _ = writeln!(head, "#[model(collection = {})]", escaped(&c.name));
            }
        }
        for row in access_rows(c) {
            let _ = writeln!(head, "// {row}");
        }
        for attr in &index_attrs {
            let _ = writeln!(head, "{attr}");
        }
        self.structure(&name, head, &c.root, c.sampled, true);
    }

    /// Writes the struct `name` for the fields of `node`, whose values were seen as
    /// sub-documents `parent` times, after `head` (its attributes).
    fn structure(&mut self, name: &str, head: String, node: &Node, parent: u64, model: bool) {
        let mut body = head;
        let _ = writeln!(body, "pub struct {name} {{");
        let mut idents = BTreeSet::new();
        if model {
            idents.insert("id".to_owned());
        }
        let mut has_id = false;
        for (field, child) in &node.fields {
            if !storable(field) {
                let _ = writeln!(
                    body,
                    "    // left out: the field {} ({} values), a name MongoDB cannot query (`.`, a leading `$`, or empty); serde ignores it on read",
                    escaped(field),
                    child.seen
                );
                continue;
            }
            let ident = if model && field == "_id" {
                has_id = true;
                "id".to_owned()
            } else {
                let mut ident = rust_ident(field);
                let base = ident.clone();
                let mut n = 2;
                while idents.contains(&ident) {
                    ident = format!("{base}_{n}");
                    n += 1;
                }
                ident
            };
            idents.insert(ident.clone());
            let hint = format!("{name}{}", pascal(field));
            let typed = self.field_type(child, &hint);
            let missing = child.seen < parent;
            let nullable = child.kinds.contains_key("null");
            let share = if parent == 0 { 0.0 } else { child.seen as f64 * 100.0 / parent as f64 };
            let _ = writeln!(
                body,
                "    // {}: in {} of {} ({share:.0}%); {}",
                escaped(field),
                child.seen,
                parent,
                distribution(&child.kinds)
            );
            for note in &typed.notes {
                let _ = writeln!(body, "    // {note}");
            }
            if let Some(proposal) = proposal(child) {
                let _ = writeln!(body, "    // proposed (observed, not enforced): #[validate({proposal})]");
            }
            if *field != ident {
                let _ = writeln!(body, "    #[serde(rename = {})]", escaped(field));
            }
            if missing {
                let _ = writeln!(body, "    #[serde(default, skip_serializing_if = \"Option::is_none\")]");
            }
            let only_arrays = child.non_null().keys().eq(["array"].iter());
            if let (true, Some(items)) = (only_arrays, &child.items) {
                // docshape refuses an array of sub-documents without a bound.
                if self.element_is_document(items) {
                    let _ = writeln!(
                        body,
                        "    #[embed(max = {}, reason = \"TODO: the longest array sampled; say why it stays this small, or move the elements out\")]",
                        child.max_len.max(1)
                    );
                }
            }
            let ty = if missing || nullable { format!("Option<{}>", typed.ty) } else { typed.ty };
            let _ = writeln!(body, "    pub {ident}: {ty},");
        }
        if model && !has_id {
            // Every stored document has one; an empty sample shows none.
            self.imports.insert("Bson");
            let _ = writeln!(body, "    // no document sampled: the `_id`'s type is unknown");
            let _ = writeln!(body, "    #[serde(rename = \"_id\")]\n    pub id: Bson,");
        }
        body.push_str("}\n");
        self.items.push(body);
    }

    fn element_is_document(&self, items: &Node) -> bool {
        let kinds = items.non_null();
        kinds.len() == 1 && kinds.contains_key("object")
    }

    /// The type of the values of `node` (null aside: the caller makes it an `Option`).
    fn field_type(&mut self, node: &Node, hint: &str) -> Typed {
        let kinds = node.non_null();
        let plain = |s: &str| Typed { ty: s.to_owned(), document: false, notes: Vec::new() };
        let only = |k: &str| kinds.len() == 1 && kinds.contains_key(k);
        if kinds.is_empty() {
            self.imports.insert("Bson");
            return Typed {
                ty: "Bson".into(),
                document: false,
                notes: vec!["only null seen: the type is unknown".into()],
            };
        }
        if kinds.keys().all(|k| ["int", "long", "double"].contains(k)) {
            return match (kinds.contains_key("double"), kinds.contains_key("long")) {
                (false, false) => plain("i32"),
                (false, true) => plain("i64"),
                (true, _) if kinds.len() == 1 => plain("f64"),
                (true, _) => Typed {
                    ty: "f64".into(),
                    document: false,
                    notes: vec![format!(
                        "integers and doubles mixed ({}): read as f64, written back as doubles",
                        distribution(&node.kinds)
                    )],
                },
            };
        }
        let simple = [
            ("string", "String", None),
            ("bool", "bool", None),
            ("objectId", "ObjectId", Some("oid::ObjectId")),
            ("date", "DateTime", Some("DateTime")),
            ("decimal", "Decimal128", Some("Decimal128")),
            ("binData", "Binary", Some("Binary")),
            ("timestamp", "Timestamp", Some("Timestamp")),
        ];
        for (kind, ty, import) in simple {
            if only(kind) {
                if let Some(import) = import {
                    self.imports.insert(import);
                }
                return plain(ty);
            }
        }
        if only("object") {
            if node.opaque {
                self.imports.insert("Document");
                return Typed {
                    ty: "Document".into(),
                    document: true,
                    notes: vec![format!(
                        "a plain Document: more than {MAX_FIELDS} distinct names (a map keyed by data) or nested deeper than {MAX_DEPTH}"
                    )],
                };
            }
            let name = self.type_name(hint);
            let mut head = String::new();
            let _ = writeln!(head, "/// A sub-document, seen {} times.", node.kinds["object"]);
            let _ = writeln!(head, "#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]");
            self.structure(&name, head, node, node.kinds["object"], false);
            return Typed { ty: name, document: true, notes: Vec::new() };
        }
        if only("array") {
            let Some(items) = &node.items else {
                self.imports.insert("Bson");
                return Typed {
                    ty: "Vec<Bson>".into(),
                    document: false,
                    notes: vec!["only empty arrays seen: the elements' type is unknown".into()],
                };
            };
            let element = self.field_type(items, &singular(hint));
            let ty = if items.kinds.contains_key("null") {
                format!("Vec<Option<{}>>", element.ty)
            } else {
                format!("Vec<{}>", element.ty)
            };
            let mut notes: Vec<String> =
                element.notes.into_iter().map(|n| format!("elements: {n}")).collect();
            notes.push(format!("arrays of up to {} elements", node.max_len));
            if node.long_arrays > 0 {
                notes.push(format!(
                    "{} array(s) past {LONG_ARRAY} elements: see INFERRED.md (an outlier array, or the elements in a collection of their own)",
                    node.long_arrays
                ));
            }
            if element.document && !items.is_struct() {
                notes.push("elements are plain Documents".into());
            }
            return Typed { ty, document: false, notes };
        }
        self.imports.insert("Bson");
        Typed {
            ty: "Bson".into(),
            document: false,
            notes: vec![format!("mixed types: {}", distribution(&node.kinds))],
        }
    }
}

/// A `#[validate(...)]` proposal from what was seen, or `None`.
fn proposal(node: &Node) -> Option<String> {
    let kinds = node.non_null();
    if kinds.len() == 1 && kinds.contains_key("string") {
        let mut parts = vec![format!("max_length = {}", node.max_chars)];
        if let Some(set) = node.distinct.as_ref().filter(|s| !s.is_empty() && node.seen >= 10) {
            let values: Vec<String> = set.iter().map(|v| escaped(v)).collect();
            parts.push(format!("allowed = [{}]", values.join(", ")));
        }
        return Some(parts.join(", "));
    }
    let numeric = !kinds.is_empty() && kinds.keys().all(|k| ["int", "long", "double"].contains(k));
    if let (true, Some((lo, hi))) = (numeric, node.range) {
        let show =
            |x: f64| if kinds.contains_key("double") { format!("{x:?}") } else { format!("{}", x as i64) };
        return Some(format!("minimum = {}, maximum = {}", show(lo), show(hi)));
    }
    if kinds.len() == 1 && kinds.contains_key("array") && node.items.is_some() {
        return Some(format!("max_items = {}", node.max_len));
    }
    None
}

/// A name MongoDB can query and docshape accepts as a field.
fn storable(name: &str) -> bool {
    !name.is_empty() && !name.contains('.') && !name.starts_with('$') && !name.contains('\0')
}

/// A snake_case Rust identifier for a stored name: the name itself when it is one.
fn rust_ident(name: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if previous_lower && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            previous_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            previous_lower = false;
        }
    }
    let trimmed = out.trim_matches('_');
    let mut ident = if trimmed.is_empty() { "field".to_owned() } else { trimmed.to_owned() };
    if ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident = format!("f_{ident}");
    }
    if KEYWORDS.contains(&ident.as_str()) {
        ident.push('_');
    }
    ident
}

/// `order_items`, `order-items`, `orderItems` → `OrderItems`.
fn pascal(name: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'C');
    }
    out
}

/// `Users` → `User`, `Addresses` → `Address`: the type of one element or document.
fn singular(name: &str) -> String {
    if let Some(stem) = name.strip_suffix("sses") {
        return format!("{stem}ss");
    }
    if let Some(stem) = name.strip_suffix("ies").filter(|s| s.len() > 1) {
        return format!("{stem}y");
    }
    match name.strip_suffix('s') {
        Some(stem) if stem.len() > 1 && !stem.ends_with('s') && !stem.ends_with('u') => stem.to_owned(),
        _ => name.to_owned(),
    }
}

/// A key's path in `keys(...)`: a bare identifier when it is one, else a string.
fn key_path(path: &str) -> String {
    let plain = path.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && path.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&path);
    if plain {
        path.to_owned()
    } else {
        escaped(path)
    }
}

/// A raw string literal holding `text`, with enough `#`s.
fn raw_string(text: &str) -> String {
    let mut hashes = 1;
    while text.contains(&format!("\"{}", "#".repeat(hashes))) {
        hashes += 1;
    }
    let h = "#".repeat(hashes);
    format!("r{h}\"{text}\"{h}")
}

/// What an index key resolves to in the inferred shape.
struct Resolved {
    date: bool,
    in_array: bool,
}

/// Follows a dotted path through the fields the generated types will have.
fn resolve(root: &Node, path: &str) -> Option<Resolved> {
    let mut node = root;
    let mut in_array = false;
    let segments: Vec<&str> = path.split('.').collect();
    for (i, segment) in segments.iter().enumerate() {
        if !storable(segment) || !node.is_struct() && i > 0 {
            return None;
        }
        let child = node.field(segment)?;
        if i + 1 == segments.len() {
            let kinds = child.non_null();
            return Some(Resolved { date: kinds.len() == 1 && kinds.contains_key("date"), in_array });
        }
        let kinds = child.non_null();
        node = if kinds.len() == 1 && kinds.contains_key("array") {
            in_array = true;
            child.items.as_deref()?
        } else {
            child
        };
        if !node.is_struct() {
            return None;
        }
    }
    None
}

/// The `#[index(...)]` attributes of a collection, notes on the indexes that cannot be
/// declared, and the `max_indexes` its count needs past the default budget of 10.
fn indexes(c: &CollectionShape) -> (Vec<String>, Vec<String>, Option<usize>) {
    struct Declared {
        keys: Vec<(String, String)>,
        options: bool,
        parts: Vec<String>,
    }
    let mut declared: Vec<Declared> = Vec::new();
    let mut notes = Vec::new();
    for index in &c.indexes {
        let name = index.get_str("name").unwrap_or("").to_owned();
        let shown = Bson::Document(index.clone()).into_relaxed_extjson().to_string();
        let Ok(key) = index.get_document("key") else { continue };
        let mut keys = Vec::new();
        let mut why_not = None;
        for (path, direction) in key {
            let kind = match direction {
                Bson::Int32(1) | Bson::Int64(1) => "1".to_owned(),
                Bson::Double(d) if *d == 1.0 => "1".to_owned(),
                Bson::Int32(-1) | Bson::Int64(-1) => "-1".to_owned(),
                Bson::Double(d) if *d == -1.0 => "-1".to_owned(),
                Bson::String(s) if s == "hashed" || s == "2dsphere" => s.clone(),
                other => {
                    why_not = Some(format!("key `{path}: {other}` is not a kind docshape declares"));
                    break;
                }
            };
            if path.contains("$**") || path.starts_with("_fts") {
                why_not = Some("wildcard and text indexes are declared by hand".to_owned());
                break;
            }
            match resolve(&c.root, path) {
                None => {
                    why_not = Some(format!("`{path}` is not a field of the inferred types"));
                    break;
                }
                Some(r) => keys.push((path.clone(), kind, r)),
            }
        }
        let unique = index.get_bool("unique").unwrap_or(false);
        let sparse = index.get_bool("sparse").unwrap_or(false);
        let ttl = match index.get("expireAfterSeconds") {
            Some(Bson::Int32(s)) => Some(i64::from(*s)),
            Some(Bson::Int64(s)) => Some(*s),
            Some(Bson::Double(s)) => Some(*s as i64),
            _ => None,
        };
        if why_not.is_none() && ttl.is_some() && (keys.len() != 1 || !keys[0].2.date) {
            why_not = Some("a TTL index needs one key on a field stored only as a date".to_owned());
        }
        if why_not.is_none() && ttl.is_some_and(|s| s < 0) {
            why_not = Some("a negative expireAfterSeconds".to_owned());
        }
        let collation = index.get_document("collation").ok();
        let case_insensitive = collation.and_then(|c| {
            let strength = match c.get("strength") {
                Some(Bson::Int32(s)) => i64::from(*s),
                Some(Bson::Int64(s)) => *s,
                _ => 3,
            };
            (strength <= 2).then(|| c.get_str("locale").unwrap_or("en").to_owned())
        });
        if why_not.is_none() && collation.is_some() && case_insensitive.is_none() {
            why_not = Some("a collation other than a case-insensitive one".to_owned());
        }
        if let Some(why) = why_not {
            notes.push(format!("index {} not declared ({why}): {}", escaped(&name), escaped(&shown)));
            continue;
        }
        let mut parts = Vec::new();
        let list: Vec<String> = keys
            .iter()
            .map(|(path, kind, _)| match kind.as_str() {
                "1" => key_path(path),
                "-1" => format!("{} = -1", key_path(path)),
                other => format!("{} = {}", key_path(path), escaped(other)),
            })
            .collect();
        parts.push(format!("keys({})", list.join(", ")));
        if unique {
            parts.push("unique".into());
        }
        if sparse {
            parts.push("sparse".into());
        }
        let default_name: String =
            keys.iter().map(|(p, k, _)| format!("{p}_{k}")).collect::<Vec<_>>().join("_");
        if name != default_name {
            parts.push(format!("name = {}", escaped(&name)));
        }
        if let Some(seconds) = ttl {
            parts.push(format!("expire_after = \"{seconds}s\""));
        }
        if let Some(locale) = &case_insensitive {
            parts.push(format!("case_insensitive, locale = {}", escaped(locale)));
        }
        if let Ok(filter) = index.get_document("partialFilterExpression") {
            let json = serde_json::to_string(&Bson::Document(filter.clone()).into_relaxed_extjson())
                .unwrap_or_else(|_| "{}".into());
            parts.push(format!("partial_filter = {}", raw_string(&json)));
        }
        let mut waived = Vec::new();
        if unique && keys.iter().any(|k| k.2.in_array) {
            waived.push("unique_in_array");
        }
        let options = unique || sparse || ttl.is_some() || index.contains_key("partialFilterExpression");
        let same = declared
            .iter()
            .any(|d| d.keys == keys.iter().map(|(p, k, _)| (p.clone(), k.clone())).collect::<Vec<_>>());
        if same {
            notes.push(format!(
                "index {} not declared: another index has the same keys, which docshape declares once: {}",
                escaped(&name),
                escaped(&shown)
            ));
            continue;
        }
        declared.push(Declared { keys: keys.into_iter().map(|(p, k, _)| (p, k)).collect(), options, parts });
        if !waived.is_empty() {
            let last = declared.last_mut().expect("just pushed");
            last.parts.push(format!(
                "allow({}, reason = \"TODO: on the server already (inferred); say why it is right\")",
                waived.join(", ")
            ));
        }
    }
    // An index that is a plain prefix of another is refused unless waived: the server
    // has both, so the inferred model says so and asks why.
    let prefixes: Vec<bool> = declared
        .iter()
        .map(|a| {
            !a.options
                && declared
                    .iter()
                    .any(|b| a.keys.len() < b.keys.len() && b.keys[..a.keys.len()] == a.keys[..])
        })
        .collect();
    let mut attrs = Vec::new();
    for (mut d, prefix) in declared.into_iter().zip(prefixes) {
        if prefix {
            d.parts.push(
                "allow(redundant_index, reason = \"TODO: on the server already (inferred); a prefix of another index, drop one?\")"
                    .into(),
            );
        }
        attrs.push(format!("#[index({})]", d.parts.join(", ")));
    }
    let budget = (attrs.len() > 10).then_some(attrs.len());
    (attrs, notes, budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_identifiers_and_types() {
        assert_eq!(rust_ident("first-name"), "first_name");
        assert_eq!(rust_ident("firstName"), "first_name");
        assert_eq!(rust_ident("type"), "type_");
        assert_eq!(rust_ident("2fa"), "f_2fa");
        assert_eq!(rust_ident("ünï"), "n");
        assert_eq!(rust_ident("\n// x"), "x");
        assert_eq!(pascal("order-items"), "OrderItems");
        assert_eq!(pascal("2024_logs"), "C2024Logs");
        assert_eq!(singular("Users"), "User");
        assert_eq!(singular("Addresses"), "Address");
        assert_eq!(singular("Categories"), "Category");
        assert_eq!(singular("Status"), "Status");
        assert_eq!(key_path("a.b"), "\"a.b\"");
        assert_eq!(key_path("email"), "email");
        assert_eq!(raw_string(r##"{"a": "#"}"##), r###"r##"{"a": "#"}"##"###);
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn a_map_keyed_by_data_stops_at_the_bound() {
        let mut root = Node::default();
        for i in 0..(MAX_FIELDS + 50) {
            let mut d = Document::new();
            d.insert(format!("k{i}"), 1);
            root.fold_document(&d, 0);
        }
        assert!(root.opaque);
        assert!(root.fields.is_empty());
    }

    #[test]
    fn mixed_numbers_and_types() {
        let mut node = Node::default();
        for v in [Bson::Int32(1), Bson::Double(2.5), Bson::Null] {
            node.fold(&v, 0);
        }
        let mut g = Gen::default();
        let t = g.field_type(&node, "X");
        assert_eq!(t.ty, "f64");
        assert!(t.notes[0].contains("integers and doubles"), "{:?}", t.notes);
        node.fold(&Bson::String("x".into()), 0);
        let t = g.field_type(&node, "X");
        assert_eq!(t.ty, "Bson");
        assert!(t.notes[0].starts_with("mixed types: "), "{:?}", t.notes);
    }
}

/// The server's indexes as (name, keys with directions), `_id_` included; keys that are
/// not ordered (text, hashed) end the list, as they serve no sort.
fn ordered_indexes(c: &CollectionShape) -> Vec<(String, Vec<(String, i32)>)> {
    let mut out = vec![("_id_".to_owned(), vec![("_id".to_owned(), 1)])];
    for index in &c.indexes {
        let (Ok(name), Ok(key)) = (index.get_str("name"), index.get_document("key")) else { continue };
        let keys = key
            .iter()
            .map_while(|(path, direction)| match direction {
                Bson::Int32(d) => Some((path.clone(), (*d).signum())),
                Bson::Int64(d) => Some((path.clone(), d.signum() as i32)),
                Bson::Double(d) => Some((path.clone(), if *d < 0.0 { -1 } else { 1 })),
                _ => None,
            })
            .collect();
        // A partial or sparse index leaves documents out: it serves only the queries
        // that imply its filter, which the shape alone cannot tell.
        let name =
            if index.contains_key("partialFilterExpression") || index.get_bool("sparse").unwrap_or(false) {
                format!("{name} (partial or sparse: only for queries that imply its filter)")
            } else {
                name.to_owned()
            };
        out.push((name, keys));
    }
    out
}

/// The proposed `#[access(...)]` rows of a collection's workload, each with its count
/// and the index that serves it: comments, since a row no index serves does not
/// compile.
fn access_rows(c: &CollectionShape) -> Vec<String> {
    let Some(w) = &c.workload else { return Vec::new() };
    let indexes = ordered_indexes(c);
    let mut names = BTreeSet::new();
    let mut rows = vec![format!(
        "workload ({} system.profile entries), proposed rows: uncomment those you keep",
        w.entries
    )];
    for shape in &w.shapes {
        let fields: Vec<String> = shape.equality.iter().chain(&shape.range).map(|f| rust_ident(f)).collect();
        let base = format!(
            "{}{}",
            if shape.write { "write_" } else { "" },
            if fields.is_empty() { "all".to_owned() } else { format!("by_{}", fields.join("_")) }
        );
        let mut name = base.clone();
        let mut n = 2;
        while !names.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        let mut parts = vec![format!("name = {}", escaped(&name))];
        let list = |fields: &[String]| fields.iter().map(|f| key_path(f)).collect::<Vec<_>>().join(", ");
        if !shape.equality.is_empty() {
            parts.push(format!("filter({})", list(&shape.equality)));
        }
        if !shape.sort.is_empty() {
            let sort: Vec<String> = shape
                .sort
                .iter()
                .map(|(p, d)| if *d < 0 { format!("{} = -1", key_path(p)) } else { key_path(p) })
                .collect();
            parts.push(format!("sort({})", sort.join(", ")));
        }
        if !shape.range.is_empty() {
            parts.push(format!("range({})", list(&shape.range)));
        }
        parts.push(format!("freq = \"{}\"", shape.freq()));
        let served = match shape.served_by(&indexes) {
            Some(index) => format!("served by {}", escaped(index)),
            None if !shape.other.is_empty() => format!(
                "not expressible as a row: {}",
                shape.other.iter().map(|o| escaped(o)).collect::<Vec<_>>().join(", ")
            ),
            None => {
                "served by no index: it would not compile (rule `unserved`) until one is added".to_owned()
            }
        };
        let write = if shape.write { "; a write: add its update(...)" } else { "" };
        rows.push(format!("#[access({})] // {} calls; {served}{write}", parts.join(", "), shape.count));
    }
    if w.unshaped > 0 {
        rows.push(format!("{} more entries of other shapes, not grouped", w.unshaped));
    }
    rows
}

fn report_workload(out: &mut String, c: &CollectionShape, w: &Workload) {
    let _ = writeln!(out, "### Workload (`system.profile`)\n");
    let _ = writeln!(out, "{} profiler entries read.\n", w.entries);
    if w.shapes.is_empty() {
        return;
    }
    let indexes = ordered_indexes(c);
    let _ = writeln!(out, "| calls | rate | kind | equality | sort | range | other | served by |\n|---|---|---|---|---|---|---|---|");
    let join = |v: &[String]| md(&v.join(", "));
    for s in &w.shapes {
        let sort: Vec<String> =
            s.sort.iter().map(|(p, d)| format!("{p} {}", if *d < 0 { "desc" } else { "asc" })).collect();
        let served = s.served_by(&indexes).map_or_else(|| "**none**".to_owned(), |i| format!("`{}`", md(i)));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {served} |",
            s.count,
            s.freq(),
            if s.write { "write" } else { "read" },
            join(&s.equality),
            md(&sort.join(", ")),
            join(&s.range),
            join(&s.other),
        );
    }
    let _ = writeln!(out);
}
