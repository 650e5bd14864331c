//! `check --workload`: how the queries a collection received differ from the model's
//! access-pattern table.
//!
//! The profiler's entries of the collection (`system.profile`, over a window) are
//! grouped into query shapes as `infer --workload` groups them
//! ([`QueryShape`]), and each shape is matched with the rows
//! of the table ([`AccessPattern`]): same equality fields (`filter`, in any order),
//! same range fields, the row's sort as its reads send it (forwards or backwards), and
//! for a row with a `freq`, the same kind (read or write). A paginated row's later
//! pages (their keyset `$or` and bounds on the sort keys) count as the row, and a row on
//! one variant of a polymorphic model has the discriminator among its equality fields,
//! as its reads send it. A
//! [`WorkloadReport`] then names:
//!
//! - each shape no row declares, with the `#[access(...)]` row that would declare it
//!   and the server index that serves it, if any ([`WorkloadFinding::Undeclared`]);
//! - each row no entry of the window matched ([`WorkloadFinding::Unused`]);
//! - each row whose queries ran without the index it names
//!   ([`WorkloadFinding::WithoutIndex`]): the entries' `planSummary` shows a collection
//!   scan or another index, or the index is not on the server at all;
//! - each row whose observed rate is more than [`FREQ_TOLERANCE`] times its declared
//!   `freq` ([`WorkloadFinding::AboveFreq`]).
//!
//! mongod's profiler gives each entry its `planSummary` (`COLLSCAN`, `IXSCAN { a: 1 }`,
//! `IDHACK`); a server whose profiler does not (the local test server) leaves only the
//! second evidence, an index missing on the server, and the report counts the entries
//! it could not check ([`WorkloadReport::without_plan`]). Reads only.

use std::collections::BTreeSet;
use std::fmt;

use docshape::access::command::sort_keys;
use docshape::access::{AccessPattern, RateKind, RowKind};
use docshape::bson::{self, Bson, DateTime, Document};
use docshape::index::IndexKey;
use docshape::mongodb::Database;
use docshape::sync::CollectionSpec;
use docshape::{Model, Result};

use crate::infer::workload::{self as shapes, QueryShape};
use crate::trace;

/// How many times its declared `freq` a row's observed rate may reach before
/// [`WorkloadFinding::AboveFreq`] reports it: more than twice the declared rate is
/// "far above". A declared rate is an estimate; twice it is a load the design was not
/// sized for (the table's documents and bytes per second double too).
pub const FREQ_TOLERANCE: f64 = 2.0;

/// Which profiler entries [`check_workload`] reads: `WorkloadOptions::default()` and
/// the setter, `WorkloadOptions::default().since(start)`.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct WorkloadOptions {
    /// Only entries at or after this time (`ts`); all of them when `None`. Either
    /// way at most 100,000 entries per collection are read.
    pub since: Option<DateTime>,
}

impl WorkloadOptions {
    /// Sets the field `since`: a time, or `None` for every entry.
    pub fn since(mut self, start: impl Into<Option<DateTime>>) -> Self {
        self.since = start.into();
        self
    }
}

/// One way a collection's workload differs from its model's access-pattern table.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum WorkloadFinding {
    /// Queries of a shape no row declares.
    Undeclared {
        /// The shape, with its count and rate.
        shape: QueryShape,
        /// The `#[access(...)]` row that would declare it (its `freq` the observed
        /// rate); `None` when a row cannot say it (`$or`, `$ne`, `$regex`, ...).
        row: Option<String>,
        /// The server index that serves it by docshape's rule; `None` when none
        /// does, and the row would not compile (rule `unserved`) until one is added.
        served_by: Option<String>,
    },
    /// A row no entry of the window matched.
    Unused {
        /// The row's name.
        pattern: &'static str,
    },
    /// A row's queries ran without the index the row names.
    WithoutIndex {
        /// The row's name.
        pattern: &'static str,
        /// The index the row names.
        index: &'static str,
        /// The row's calls in the window.
        calls: u64,
        /// The plans of the calls that used another plan (`COLLSCAN`, another
        /// index's `IXSCAN`), each with its count.
        plans: Vec<(String, u64)>,
        /// Whether the index (by its name or its keys) is missing on the server.
        missing: bool,
    },
    /// A row's observed rate is more than [`FREQ_TOLERANCE`] times its `freq`.
    AboveFreq {
        /// The row's name.
        pattern: &'static str,
        /// The declared `freq`, as written.
        declared: &'static str,
        /// The declared rate, in calls per second.
        declared_per_second: f64,
        /// The observed rate, in calls per second ([`QueryShape::per_second`] of the
        /// row's calls).
        observed_per_second: f64,
        /// The row's calls in the window.
        calls: u64,
    },
}

impl fmt::Display for WorkloadFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Undeclared { shape, row, served_by } => {
                let kind = if shape.write { "write" } else { "read" };
                write!(
                    f,
                    "{} {kind} call(s) of a shape no row declares (about {})",
                    shape.count,
                    shape.freq()
                )?;
                match row {
                    Some(row) => write!(f, "; declare it: {row}")?,
                    None => write!(
                        f,
                        "; not expressible as a row: {}",
                        shape.other.iter().map(|o| format!("{o:?}")).collect::<Vec<_>>().join(", ")
                    )?,
                }
                // What serves a shape no row can say is not docshape's rule to tell.
                match (row, served_by) {
                    (None, _) => Ok(()),
                    (Some(_), Some(index)) => write!(f, " (served by {index:?})"),
                    (Some(_), None) => f.write_str(
                        " (served by no index on the server: a collection scan; the row would not \
                         compile, rule `unserved`, until one is added)",
                    ),
                }
            }
            Self::Unused { pattern } => write!(f, "row {pattern:?} was never called in the window"),
            Self::WithoutIndex { pattern, index, calls, plans, missing } => {
                write!(f, "row {pattern:?} ran without its index {index:?}")?;
                if *missing {
                    write!(f, ", which is not on the server")?;
                }
                write!(f, ": {calls} call(s)")?;
                if !plans.is_empty() {
                    // Quoted: a plan summary is the server's text, stored in the profile.
                    let plans: Vec<String> = plans.iter().map(|(p, n)| format!("{n} with {p:?}")).collect();
                    write!(f, ", {}", plans.join(", "))?;
                }
                Ok(())
            }
            Self::AboveFreq { pattern, declared, declared_per_second, observed_per_second, calls } => write!(
                f,
                "row {pattern:?} ran at {observed_per_second:.3} calls/s ({calls} calls), more than \
                 {FREQ_TOLERANCE} times its freq {declared:?} ({declared_per_second:.3} calls/s)"
            ),
        }
    }
}

/// One declared row beside what the profiler saw of it: the numbers a reader checks
/// the table's `freq` against.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RowObserved {
    /// The row's name.
    pub pattern: &'static str,
    /// The declared `freq`, as written (empty when the row declares none).
    pub declared: &'static str,
    /// The row's calls in the window.
    pub calls: u64,
    /// Their rate, in calls per second ([`QueryShape::per_second`]).
    pub per_second: f64,
    /// The row's share of the window's profiler entries, from 0 to 1.
    pub share: f64,
}

impl fmt::Display for RowObserved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let declared = if self.declared.is_empty() { "no freq declared" } else { self.declared };
        write!(
            f,
            "row \"{}\": {} call(s), {:.3}/s observed, {:.1}% of the entries; declared {declared}",
            self.pattern,
            self.calls,
            self.per_second,
            self.share * 100.0
        )
    }
}

/// How one collection's workload differs from its model's access-pattern table.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadReport {
    /// The collection's name.
    pub collection: String,
    /// Profiler entries read.
    pub entries: u64,
    /// Entries of shapes past the 200 distinct ones kept, not compared.
    pub unshaped: u64,
    /// Calls matched to a row whose plan the profiler did not give (no
    /// `planSummary`), so that only a missing index could show they ran without it.
    pub without_plan: u64,
    /// Every declared row, in the table's order, with its observed count, rate and
    /// share (a row never called has 0).
    pub rows: Vec<RowObserved>,
    /// Each difference; empty when the workload matches the table.
    pub findings: Vec<WorkloadFinding>,
}

impl WorkloadReport {
    /// Whether the workload matches the table: no finding.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

/// One line per declared row (`orders: row "by_sku": 5 call(s), 0.250/s observed,
/// 3.7% of the entries; declared 1 r/s`), then one per finding (`orders: row "by_sku"
/// ran without its index ...`), or
/// `orders: the workload matches the access table (N entries)`, then a line for
/// entries not compared.
impl fmt::Display for WorkloadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for row in &self.rows {
            writeln!(f, "{}: {row}", self.collection)?;
        }
        if self.findings.is_empty() {
            writeln!(
                f,
                "{}: the workload matches the access table ({} profiler entries)",
                self.collection, self.entries
            )?;
        }
        for finding in &self.findings {
            writeln!(f, "{}: {finding}", self.collection)?;
        }
        if self.entries >= shapes::MAX_ENTRIES as u64 {
            writeln!(
                f,
                "{}: the read stopped at {} profiler entries: the rest were not compared (narrow the window with since)",
                self.collection, self.entries
            )?;
        }
        if self.unshaped > 0 {
            writeln!(
                f,
                "{}: {} entries of further shapes were not compared",
                self.collection, self.unshaped
            )?;
        }
        if self.without_plan > 0 {
            writeln!(
                f,
                "{}: {} call(s) of declared rows had no planSummary: their plans were not checked",
                self.collection, self.without_plan
            )?;
        }
        Ok(())
    }
}

/// How the profiled workload of `T`'s collection differs from `T`'s access table.
/// Reads `system.profile` and `listIndexes` only.
pub async fn check_workload<T: Model>(db: &Database, options: &WorkloadOptions) -> Result<WorkloadReport> {
    let table = Table { patterns: T::ACCESS_PATTERNS, polymorphic_rows: T::POLYMORPHIC_ROWS };
    check_workload_of(db, T::COLLECTION, table, &CollectionSpec::of::<T>().indexes, options).await
}

/// [`check_workload`] for every registered model, in collection-name order.
pub async fn check_workload_all(db: &Database, options: &WorkloadOptions) -> Result<Vec<WorkloadReport>> {
    let mut reports = Vec::new();
    for model in docshape::registry::models() {
        let spec = (model.spec)();
        let table = Table { patterns: model.access_patterns, polymorphic_rows: model.polymorphic_rows };
        reports.push(check_workload_of(db, model.collection, table, &spec.indexes, options).await?);
    }
    Ok(reports)
}

/// A model's access table, as [`check_workload_of`] compares it.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// The rows ([`Model::ACCESS_PATTERNS`]).
    pub patterns: &'static [AccessPattern],
    /// The rows on one variant and the discriminator their reads add
    /// ([`Model::POLYMORPHIC_ROWS`]).
    pub polymorphic_rows: &'static [(&'static str, &'static str, &'static str)],
}

/// [`check_workload`] for a collection, its access table and its declared indexes
/// (as `createIndexes` receives them: `{key, name, ...}`).
pub async fn check_workload_of(
    db: &Database,
    collection: &str,
    table: Table,
    indexes: &[Document],
    options: &WorkloadOptions,
) -> Result<WorkloadReport> {
    let span = trace::span!("check.workload", collection = collection);
    let work = async {
        let workload = shapes::read(db, collection, options.since).await?;
        let server = crate::infer::server_indexes(db, collection).await?;
        Ok::<_, docshape::Error>(compare(collection, table, indexes, &server, &workload))
    };
    let report = trace::in_span(span.clone(), work).await?;
    span.in_scope(|| trace::event!(INFO, findings = report.findings.len(), "checked the workload"));
    Ok(report)
}

/// The comparison itself, on what was read: `declared` are the model's indexes,
/// `server` the collection's (`listIndexes`, `_id_` left out).
fn compare(
    collection: &str,
    table: Table,
    declared: &[Document],
    server: &[Document],
    workload: &shapes::Workload,
) -> WorkloadReport {
    let mut report = WorkloadReport {
        collection: collection.to_owned(),
        entries: workload.entries,
        unshaped: workload.unshaped,
        without_plan: 0,
        rows: Vec::new(),
        findings: Vec::new(),
    };
    let patterns = table.patterns;
    let discriminator = |p: &AccessPattern| {
        table.polymorphic_rows.iter().find(|(row, _, _)| *row == p.name).map(|(_, tag, _)| *tag)
    };
    let matches = |s: &QueryShape, p: &AccessPattern| matches(s, p, discriminator(p));
    let served = shapes::ordered_indexes(server);
    let mut names: BTreeSet<String> = patterns.iter().map(|p| p.name.to_owned()).collect();
    for shape in &workload.shapes {
        if patterns.iter().any(|p| matches(shape, p)) {
            continue;
        }
        let row = shape.other.is_empty().then(|| shapes::row(shape, &mut names));
        let served_by = shape.served_by(&served).map(str::to_owned);
        report.findings.push(WorkloadFinding::Undeclared { shape: shape.clone(), row, served_by });
    }
    for pattern in patterns {
        let mine: Vec<&QueryShape> = workload.shapes.iter().filter(|s| matches(s, pattern)).collect();
        let observed = QueryShape {
            count: mine.iter().map(|s| s.count).sum(),
            span_ms: mine.iter().filter_map(|s| s.span_ms).reduce(|(a, b), (c, d)| (a.min(c), b.max(d))),
            ..QueryShape::default()
        };
        report.rows.push(RowObserved {
            pattern: pattern.name,
            declared: pattern.freq,
            calls: observed.count,
            per_second: if observed.count == 0 { 0.0 } else { observed.per_second() },
            share: observed.count as f64 / workload.entries.max(1) as f64,
        });
        if mine.is_empty() {
            report.findings.push(WorkloadFinding::Unused { pattern: pattern.name });
            continue;
        }
        // The row's calls as one shape: their count and the span of all of them.
        let calls = QueryShape {
            count: mine.iter().map(|s| s.count).sum(),
            span_ms: mine.iter().filter_map(|s| s.span_ms).reduce(|(a, b), (c, d)| (a.min(c), b.max(d))),
            ..QueryShape::default()
        };
        if let Some(index) = pattern.index {
            let keys = index_keys(declared, index);
            let missing = !on_server(server, index, keys.as_ref());
            let mut plans: Vec<(String, u64)> = Vec::new();
            let mut planned = 0;
            for (plan, n) in mine.iter().flat_map(|s| &s.plans) {
                planned += n;
                if !uses(plan, index, keys.as_ref()) {
                    match plans.iter_mut().find(|(p, _)| p == plan) {
                        Some((_, m)) => *m += n,
                        None => plans.push((plan.clone(), *n)),
                    }
                }
            }
            report.without_plan += calls.count.saturating_sub(planned);
            if missing || !plans.is_empty() {
                report.findings.push(WorkloadFinding::WithoutIndex {
                    pattern: pattern.name,
                    index,
                    calls: calls.count,
                    plans,
                    missing,
                });
            }
        }
        if let Some(rate) = pattern.load.rate {
            let observed = calls.per_second();
            if rate.per_second > 0.0 && observed > FREQ_TOLERANCE * rate.per_second {
                report.findings.push(WorkloadFinding::AboveFreq {
                    pattern: pattern.name,
                    declared: pattern.freq,
                    declared_per_second: rate.per_second,
                    observed_per_second: observed,
                    calls: calls.count,
                });
            }
        }
    }
    report
}

/// Whether `shape` is a call of `pattern`: the same equality fields (with the
/// `discriminator` of a row on one variant) and range fields, the
/// sort its reads send (or all of it reversed, a page read backwards), and the same
/// kind: a read row matches reads, a write row writes. A paginated row's later pages add a keyset `$or` and
/// bounds on sort keys, which still match it.
fn matches(shape: &QueryShape, pattern: &AccessPattern, discriminator: Option<&str>) -> bool {
    let set = |v: &[&str]| v.iter().map(|f| (*f).to_owned()).collect::<BTreeSet<String>>();
    let mut equality = set(pattern.filter);
    equality.extend(discriminator.map(str::to_owned));
    if shape.equality.iter().cloned().collect::<BTreeSet<_>>() != equality {
        return false;
    }
    // A row writes when it has `update(...)`, or declares a write rate (a row that
    // documents writes the application sends itself).
    let writes =
        pattern.kind != RowKind::Read || pattern.load.rate.is_some_and(|r| r.kind == RateKind::Write);
    if shape.write != writes {
        return false;
    }
    let sort: Vec<(String, i32)> = if pattern.paginate {
        sort_keys(pattern).map(|(f, k)| (f.to_owned(), direction(k))).collect()
    } else {
        pattern.sort.iter().map(|(f, k)| ((*f).to_owned(), direction(*k))).collect()
    };
    let reversed: Vec<(String, i32)> = sort.iter().map(|(f, d)| (f.clone(), -d)).collect();
    if shape.sort != sort && !(pattern.paginate && shape.sort == reversed) {
        return false;
    }
    let range: BTreeSet<String> = shape.range.iter().cloned().collect();
    if pattern.paginate {
        let keys: BTreeSet<String> = sort.iter().map(|(f, _)| f.clone()).collect();
        let allowed: BTreeSet<String> = set(pattern.range).union(&keys).cloned().collect();
        set(pattern.range).is_subset(&range)
            && range.is_subset(&allowed)
            && shape.other.iter().all(|o| o == "$or")
    } else {
        range == set(pattern.range) && shape.other.is_empty()
    }
}

fn direction(key: IndexKey) -> i32 {
    if key == IndexKey::Desc {
        -1
    } else {
        1
    }
}

/// The key document of the declared index `name`; `_id_` is `{_id: 1}`.
fn index_keys(declared: &[Document], name: &str) -> Option<Document> {
    if name == "_id_" {
        return Some(bson::doc! { "_id": 1 });
    }
    declared
        .iter()
        .find(|i| i.get_str("name").ok() == Some(name))
        .and_then(|i| i.get_document("key").ok())
        .cloned()
}

/// Whether the server has the index, by name or by keys.
fn on_server(server: &[Document], name: &str, keys: Option<&Document>) -> bool {
    name == "_id_"
        || server.iter().any(|i| {
            i.get_str("name").ok() == Some(name)
                || keys.is_some_and(|k| i.get_document("key").is_ok_and(|s| same_keys(s, k)))
        })
}

fn same_keys(a: &Document, b: &Document) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((ka, va), (kb, vb))| ka == kb && key_value(va) == key_value(vb))
}

/// An index key's value as mongod prints it in a plan summary: `1`, `-1`, `"text"`.
fn key_value(value: &Bson) -> String {
    match value {
        Bson::Int32(d) => d.signum().to_string(),
        Bson::Int64(d) => d.signum().to_string(),
        Bson::Double(d) => (if *d < 0.0 { "-1" } else { "1" }).to_owned(),
        Bson::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// Whether a `planSummary` shows the index: mongod names an index scan by its keys
/// (`IXSCAN { status: 1, created_at: -1 }`), and `_id_` by `IDHACK` (`EXPRESS_IXSCAN`
/// and `EXPRESS_IDHACK` in 8.0). A summary with several scans (an `$or`) counts when
/// any is the index.
fn uses(plan: &str, name: &str, keys: Option<&Document>) -> bool {
    if name == "_id_" && plan.contains("IDHACK") {
        return true;
    }
    let Some(keys) = keys else { return false };
    let wanted: String =
        keys.iter().map(|(k, v)| format!("{k}:{}", key_value(v))).collect::<Vec<_>>().join(",");
    let compact: String = plan.chars().filter(|c| !c.is_whitespace()).collect();
    compact.match_indices("IXSCAN{").any(|(at, _)| {
        let rest = &compact[at + "IXSCAN{".len()..];
        rest.split('}').next() == Some(wanted.as_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;
    use docshape::access::{Consistency, DocsPerCall, Load, Rate};

    const fn row(
        name: &'static str,
        filter: &'static [&'static str],
        sort: &'static [(&'static str, IndexKey)],
        freq: &'static str,
        per_second: f64,
        index: Option<&'static str>,
    ) -> AccessPattern {
        AccessPattern {
            name,
            operation: "",
            filter,
            case_insensitive: false,
            sort,
            range: &[],
            fields: &[],
            freq,
            consistency: "",
            guarantee: Consistency::Unspecified,
            load: Load {
                rate: Some(Rate { per_second, kind: RateKind::Read }),
                docs_per_call: DocsPerCall::Unbounded,
                doc_bytes: None,
                doc_unsized: docshape::size::Unsized::Known,
            },
            index,
            waivers: &[],
            paginate: false,
            kind: docshape::access::RowKind::Read,
        }
    }

    static ROWS: [AccessPattern; 4] = [
        row("by_status", &["status"], &[("at", IndexKey::Desc)], "10 r/s", 10.0, Some("status_1_at_-1")),
        row("by_sku", &["sku"], &[], "10 r/s", 10.0, Some("sku_1")),
        row("by_id", &["_id"], &[], "1 r/min", 1.0 / 60.0, Some("_id_")),
        row("by_region", &["region"], &[], "1 r/s", 1.0, Some("region_1")),
    ];

    fn shape(equality: &[&str], sort: &[(&str, i32)], count: u64, plans: &[(&str, u64)]) -> QueryShape {
        QueryShape {
            equality: equality.iter().map(|f| (*f).to_owned()).collect(),
            sort: sort.iter().map(|(f, d)| ((*f).to_owned(), *d)).collect(),
            count,
            span_ms: Some((0, 10_000)),
            plans: plans.iter().map(|(p, n)| ((*p).to_owned(), *n)).collect(),
            ..QueryShape::default()
        }
    }

    #[test]
    fn each_finding_from_shapes_plans_and_indexes() {
        let declared = vec![
            doc! { "key": { "status": 1, "at": -1 }, "name": "status_1_at_-1" },
            doc! { "key": { "sku": 1 }, "name": "sku_1" },
            doc! { "key": { "region": 1 }, "name": "region_1" },
        ];
        // The server lacks sku_1.
        let server = vec![
            doc! { "v": 2, "key": { "status": 1_i64, "at": -1.0 }, "name": "status_1_at_-1" },
            doc! { "v": 2, "key": { "region": 1 }, "name": "region_1" },
        ];
        let workload = shapes::Workload {
            shapes: vec![
                // Served by its index (a plan naming its keys), at the declared rate.
                shape(&["status"], &[("at", -1)], 11, &[("IXSCAN { status: 1, at: -1 }", 11)]),
                // No planSummary, and its index is missing on the server.
                shape(&["sku"], &[], 5, &[]),
                // 21 calls in 10 s: 2 r/s, above twice 1 r/min; IDHACK is `_id_`.
                shape(&["_id"], &[], 21, &[("IDHACK", 21)]),
                // Not declared: the row's sort is not this one.
                shape(&["status"], &[("at", 1)], 3, &[]),
                // Not expressible.
                QueryShape { other: vec!["$or".into()], ..shape(&[], &[], 2, &[]) },
            ],
            entries: 42,
            unshaped: 0,
        };
        let table = Table { patterns: &ROWS, polymorphic_rows: &[] };
        let report = compare("orders", table, &declared, &server, &workload);
        let lines: Vec<String> = report.findings.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "3 read call(s) of a shape no row declares (about 12 r/min); declare it: \
                 #[access(name = \"by_status_2\", filter(status), sort(at), freq = \"12 r/min\")] \
                 (served by \"status_1_at_-1\")",
                "2 read call(s) of a shape no row declares (about 6 r/min); not expressible as a row: \"$or\"",

                "row \"by_sku\" ran without its index \"sku_1\", which is not on the server: 5 call(s)",
                "row \"by_id\" ran at 2.000 calls/s (21 calls), more than 2 times its freq \"1 r/min\" (0.017 calls/s)",
                "row \"by_region\" was never called in the window",
            ]
        );
        assert_eq!(report.without_plan, 5);
        assert!(!report.is_clean());

        // The same shapes with mongod's plans: a collection scan and another index.
        let mut planned = workload.clone();
        planned.shapes[0].plans = vec![("COLLSCAN".into(), 4), ("IXSCAN { status: 1, at: -1 }".into(), 7)];
        planned.shapes[2].plans = vec![("IXSCAN { region: 1 }".into(), 21)];
        let report = compare("orders", table, &declared, &server, &planned);
        let without: Vec<String> = report
            .findings
            .iter()
            .filter(|f| matches!(f, WorkloadFinding::WithoutIndex { .. }))
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            without,
            [
                "row \"by_status\" ran without its index \"status_1_at_-1\": 11 call(s), 4 with \"COLLSCAN\"",
                "row \"by_sku\" ran without its index \"sku_1\", which is not on the server: 5 call(s)",
                "row \"by_id\" ran without its index \"_id_\": 21 call(s), 21 with \"IXSCAN { region: 1 }\"",
            ]
        );
    }

    #[test]
    fn a_variant_row_matches_with_its_discriminator() {
        static VARIANT: [AccessPattern; 1] = [row("clicks_of", &["user"], &[], "1 r/s", 1.0, Some("_id_"))];
        let table = Table { patterns: &VARIANT, polymorphic_rows: &[("clicks_of", "kind", "click")] };
        let workload = shapes::Workload {
            shapes: vec![shape(&["kind", "user"], &[], 2, &[]), shape(&["user"], &[], 2, &[])],
            entries: 4,
            unshaped: 0,
        };
        let report = compare("events", table, &[], &[], &workload);
        match &report.findings[..] {
            [WorkloadFinding::Undeclared { shape, .. }] => assert_eq!(shape.equality, ["user"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_row_matches_calls_of_its_own_kind() {
        const fn kind(mut p: AccessPattern, kind: docshape::access::RowKind) -> AccessPattern {
            p.kind = kind;
            p.load.rate = None;
            p
        }
        // No `freq` on either: the kind comes from `update(...)` alone.
        static ROWS: [AccessPattern; 2] = [
            kind(row("read_sku", &["sku"], &[], "", 0.0, Some("sku_1")), RowKind::Read),
            kind(row("write_sku", &["sku"], &[], "", 0.0, Some("sku_1")), RowKind::Write),
        ];
        let table = Table { patterns: &ROWS, polymorphic_rows: &[] };
        let mut write = shape(&["sku"], &[], 3, &[]);
        write.write = true;
        let workload = shapes::Workload { shapes: vec![write], entries: 3, unshaped: 0 };
        let report = compare("items", table, &[], &[], &workload);
        let unused: Vec<String> = report
            .findings
            .iter()
            .filter_map(|f| match f {
                WorkloadFinding::Unused { pattern } => Some((*pattern).to_owned()),
                _ => None,
            })
            .collect();
        assert_eq!(unused, ["read_sku"], "the write is the write row's call only: {:?}", report.findings);
    }

    #[test]
    fn plan_summaries_name_indexes_by_their_keys() {
        let keys = doc! { "a": 1, "b.c": -1 };
        assert!(uses("IXSCAN { a: 1, b.c: -1 }", "a_1_b.c_-1", Some(&keys)));
        assert!(uses("IXSCAN { x: 1 }, IXSCAN { a: 1, b.c: -1 }", "a_1_b.c_-1", Some(&keys)));
        assert!(!uses("IXSCAN { a: 1 }", "a_1_b.c_-1", Some(&keys)), "a prefix is another index");
        assert!(!uses("IXSCAN { a: 1, b.c: -1, d: 1 }", "a_1_b.c_-1", Some(&keys)));
        assert!(!uses("COLLSCAN", "a_1_b.c_-1", Some(&keys)));
        assert!(uses("IDHACK", "_id_", index_keys(&[], "_id_").as_ref()));
        assert!(uses("EXPRESS_IXSCAN { _id: 1 }", "_id_", index_keys(&[], "_id_").as_ref()));
        assert!(!uses("IXSCAN { a: 1 }", "unknown", None));
    }
}
