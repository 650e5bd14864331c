//! The workload: the profiler's entries of a collection (`system.profile`), grouped by
//! query shape (equality fields, range fields, sort) into `#[access(...)]` rows with
//! their observed frequency.
//!
//! A read that an index declared in the generated model serves, by the rule the derive
//! applies, is written as an attribute: it compiles. Every other row is a comment that
//! says why: no index serves it (the derive's `unserved` rule would refuse it, which is
//! the finding), the index that serves it is not declared as a plain one, a row cannot
//! say it (`$or`, `$ne`, ...), or it is a write whose `update(...)` the profile does not
//! give. `check --workload` ([`crate::check::check_workload`]) reads the same shapes.

use std::collections::BTreeMap;

use docshape::bson::{self, doc, Bson, Document};
use docshape::mongodb::Database;
use futures_util::TryStreamExt;

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{escaped, key_path, md, rust_ident, CollectionShape};
use docshape::Result;

/// Profiler entries read per collection at most.
pub(crate) const MAX_ENTRIES: i64 = 100_000;

/// Distinct plans (`planSummary`) kept per shape, each at most [`MAX_PLAN_CHARS`].
const MAX_PLANS: usize = 8;
const MAX_PLAN_CHARS: usize = 200;

/// Distinct shapes kept per collection; entries of further shapes are only counted.
const MAX_SHAPES: usize = 200;

/// One query shape and how often it was seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryShape {
    /// An update, delete or findAndModify (its filter), not a read.
    pub write: bool,
    /// Fields compared by equality (`{f: v}`, `$eq`, `$in`).
    pub equality: Vec<String>,
    /// Fields compared by range (`$gt`, `$gte`, `$lt`, `$lte`).
    pub range: Vec<String>,
    /// The sort, in order, with its directions.
    pub sort: Vec<(String, i32)>,
    /// What the row cannot say: top-level operators (`$or`, `$expr`) and fields under
    /// other operators (`$ne`, `$exists`, `$regex`, ...).
    pub other: Vec<String>,
    /// How many entries had this shape.
    pub count: u64,
    /// The first and last entry's time (ms since the epoch).
    pub span_ms: Option<(i64, i64)>,
    /// The plans the server reported (`planSummary`: `COLLSCAN`, `IXSCAN { a: 1 }`),
    /// each with its count; entries without one (a server whose profiler does not
    /// give it) are in `count` only. At most 8 distinct plans are kept.
    pub plans: Vec<(String, u64)>,
}

/// The workload of one collection.
#[derive(Debug, Clone, Default)]
pub struct Workload {
    /// The shapes, most frequent first.
    pub shapes: Vec<QueryShape>,
    /// Entries read.
    pub entries: u64,
    /// Entries whose shape was past the 200 distinct ones kept.
    pub unshaped: u64,
}

/// Reads `db.system.profile`'s entries for `collection` (at most [`MAX_ENTRIES`]),
/// those at or after `since` when given.
pub(crate) async fn read(db: &Database, collection: &str, since: Option<bson::DateTime>) -> Result<Workload> {
    let ns = format!("{}.{collection}", db.name());
    let mut filter = doc! { "ns": docshape::__private::eq_filter(bson::Bson::String(ns)) };
    // The window's start, under a comparison operator through the literal encoder.
    let since = since.map(bson::Bson::DateTime);
    let start = since.as_ref().map_or(std::ops::Bound::Unbounded, std::ops::Bound::Included);
    if let Some(condition) = docshape::access::find::range_condition(start, std::ops::Bound::Unbounded) {
        filter.insert("ts", condition);
    }
    let mut cursor =
        db.collection::<Document>("system.profile").find(filter).limit(MAX_ENTRIES).batch_size(500).await?;
    let mut shapes: BTreeMap<String, QueryShape> = BTreeMap::new();
    let mut workload = Workload::default();
    while let Some(entry) = cursor.try_next().await? {
        workload.entries += 1;
        let at = match entry.get("ts") {
            Some(Bson::DateTime(t)) => Some(t.timestamp_millis()),
            _ => None,
        };
        let plan = entry.get_str("planSummary").ok();
        for shape in shapes_of(&entry) {
            let key =
                format!("{:?}", (shape.write, &shape.equality, &shape.range, &shape.sort, &shape.other));
            if !shapes.contains_key(&key) && shapes.len() >= MAX_SHAPES {
                workload.unshaped += 1;
                continue;
            }
            let kept = shapes.entry(key).or_insert(shape);
            kept.count += 1;
            if let Some(plan) = plan {
                let plan: String = plan.chars().take(MAX_PLAN_CHARS).collect();
                match kept.plans.iter().position(|(p, _)| *p == plan) {
                    Some(at) => kept.plans[at].1 += 1,
                    None if kept.plans.len() < MAX_PLANS => kept.plans.push((plan, 1)),
                    None => {}
                }
            }
            if let Some(at) = at {
                kept.span_ms = Some(match kept.span_ms {
                    Some((lo, hi)) => (lo.min(at), hi.max(at)),
                    None => (at, at),
                });
            }
        }
    }
    let mut shapes: Vec<QueryShape> = shapes.into_values().collect();
    shapes.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| format!("{a:?}").cmp(&format!("{b:?}"))));
    workload.shapes = shapes;
    Ok(workload)
}

/// The shapes of one profiler entry, in mongod's form: `op` and `command` (a find, an
/// aggregate whose first stage is `$match`, a count or distinct, an update or delete
/// with `q` or a list of statements, a findAndModify).
fn shapes_of(entry: &Document) -> Vec<QueryShape> {
    let Ok(command) = entry.get_document("command") else { return Vec::new() };
    let op = entry.get_str("op").unwrap_or("");
    let sort = |d: Option<&Document>| -> Vec<(String, i32)> {
        d.map(|s| {
            s.iter()
                .map(|(k, v)| {
                    let dir = match v {
                        Bson::Int32(d) => *d,
                        Bson::Int64(d) => *d as i32,
                        Bson::Double(d) => *d as i32,
                        _ => 1,
                    };
                    (k.clone(), if dir < 0 { -1 } else { 1 })
                })
                .collect()
        })
        .unwrap_or_default()
    };
    let empty = Document::new();
    if command.contains_key("find") {
        let filter = command.get_document("filter").unwrap_or(&empty);
        return vec![shape(filter, sort(command.get_document("sort").ok()), false)];
    }
    if command.contains_key("aggregate") {
        let stages: Vec<&Document> = command
            .get_array("pipeline")
            .map(|p| p.iter().filter_map(Bson::as_document).collect())
            .unwrap_or_default();
        let filter = stages.first().and_then(|s| s.get_document("$match").ok()).unwrap_or(&empty);
        let sorted = stages.iter().find_map(|s| s.get_document("$sort").ok());
        return vec![shape(filter, sort(sorted), false)];
    }
    if command.contains_key("count") || command.contains_key("distinct") {
        return vec![shape(command.get_document("query").unwrap_or(&empty), Vec::new(), false)];
    }
    if command.contains_key("findAndModify") || command.contains_key("findandmodify") {
        let filter = command.get_document("query").unwrap_or(&empty);
        return vec![shape(filter, sort(command.get_document("sort").ok()), true)];
    }
    if op == "update" || op == "remove" || op == "delete" {
        if let Ok(q) = command.get_document("q") {
            return vec![shape(q, Vec::new(), true)];
        }
        let list = command.get_array("updates").or_else(|_| command.get_array("deletes"));
        return list
            .map(|l| {
                l.iter()
                    .filter_map(Bson::as_document)
                    .filter_map(|s| s.get_document("q").ok())
                    .map(|q| shape(q, Vec::new(), true))
                    .collect()
            })
            .unwrap_or_default();
    }
    Vec::new()
}

fn shape(filter: &Document, sort: Vec<(String, i32)>, write: bool) -> QueryShape {
    let mut s = QueryShape { write, sort, ..QueryShape::default() };
    for (key, value) in filter {
        if key.starts_with('$') {
            s.other.push(key.clone());
            continue;
        }
        let operators: Option<Vec<&str>> = match value {
            Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => {
                Some(d.keys().map(String::as_str).collect())
            }
            _ => None,
        };
        match operators {
            None if matches!(value, Bson::RegularExpression(_)) => s.other.push(key.clone()),
            None => s.equality.push(key.clone()),
            Some(ops) if ops.iter().all(|o| ["$eq", "$in"].contains(o)) => s.equality.push(key.clone()),
            Some(ops) if ops.iter().all(|o| ["$gt", "$gte", "$lt", "$lte"].contains(o)) => {
                s.range.push(key.clone())
            }
            Some(_) => s.other.push(key.clone()),
        }
    }
    s.equality.sort();
    s.range.sort();
    s.other.sort();
    s
}

impl QueryShape {
    /// The observed calls per second: the calls after the first over the time between
    /// the first and the last (the rate of calls evenly spaced over that time; the
    /// count alone would overstate it by `count / (count - 1)`), at least a second;
    /// a single call, or calls without timestamps, count as that many in one second.
    pub fn per_second(&self) -> f64 {
        match self.span_ms {
            Some((lo, hi)) if self.count >= 2 && hi > lo => {
                (self.count - 1) as f64 / ((hi - lo) as f64 / 1000.0).max(1.0)
            }
            _ => self.count as f64,
        }
    }

    /// The observed rate ([`QueryShape::per_second`]) in `freq`'s syntax (`12 r/min`).
    pub fn freq(&self) -> String {
        let per_second = self.per_second();
        let kind = if self.write { "w" } else { "r" };
        let (value, unit) = [(1.0, "s"), (60.0, "min"), (3600.0, "h"), (86400.0, "day")]
            .into_iter()
            .map(|(factor, unit)| (per_second * factor, unit))
            .find(|(v, _)| *v >= 1.0)
            .unwrap_or((per_second * 86400.0, "day"));
        let number = format!("{value:.1}");
        format!("{} {kind}/{unit}", number.trim_end_matches(".0"))
    }

    /// The index of `indexes` (name and keys with directions) that serves this shape
    /// by docshape's rule: the equality fields in any order, then the sort keys in
    /// order (all as declared or all reversed), then the range fields.
    pub fn served_by<'a>(&self, indexes: &'a [(String, Vec<(String, i32)>)]) -> Option<&'a str> {
        // A shape with nothing to match or sort on reads the whole collection.
        if !self.other.is_empty() || self.equality.is_empty() && self.sort.is_empty() && self.range.is_empty()
        {
            return None;
        }
        // A range on a sorted field is bounded by the sort's own key.
        let range: Vec<&str> = self
            .range
            .iter()
            .map(String::as_str)
            .filter(|r| !self.sort.iter().any(|(s, _)| s == r))
            .collect();
        indexes
            .iter()
            .find(|(_, keys)| {
                let e = self.equality.len();
                let s = self.sort.len();
                if keys.len() < e + s + range.len() {
                    return false;
                }
                let mut equal: Vec<&str> = keys[..e].iter().map(|(p, _)| p.as_str()).collect();
                equal.sort_unstable();
                if equal != self.equality.iter().map(String::as_str).collect::<Vec<_>>() {
                    return false;
                }
                let sorts = &keys[e..e + s];
                let same = sorts.iter().zip(&self.sort).all(|(k, w)| k.0 == w.0 && k.1 == w.1);
                let reversed = sorts.iter().zip(&self.sort).all(|(k, w)| k.0 == w.0 && k.1 == -w.1);
                if !(same || reversed) {
                    return false;
                }
                let mut ranged: Vec<&str> =
                    keys[e + s..e + s + range.len()].iter().map(|(p, _)| p.as_str()).collect();
                ranged.sort_unstable();
                ranged == range
            })
            .map(|(name, _)| name.as_str())
    }
}

/// The server's indexes (`listIndexes`, `_id_` left out) as (name, keys with
/// directions), `_id_` included; keys that are not ordered (text, hashed) end the
/// list, as they serve no sort.
pub(crate) fn ordered_indexes(indexes: &[Document]) -> Vec<(String, Vec<(String, i32)>)> {
    let mut out = vec![("_id_".to_owned(), vec![("_id".to_owned(), 1)])];
    for index in indexes {
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

/// The `#[access(...)]` rows of a collection's workload, each with its count and the
/// index that serves it. `Ok`: an attribute, for a read that an index declared above
/// (one of `declared`, by name: neither partial nor sparse, no collation) serves by the
/// rule the derive applies, so that it compiles. `Err`: a comment, for the rest: a
/// write (its `update(...)` is not in the profile), a shape a row cannot say, one no
/// declared index serves (the derive's `unserved` rule would refuse it).
///
/// On a tenant model (`tenant`), a row filters on the tenant first: a shape that has it
/// elsewhere among its equalities gets it moved first, one without it stays a comment
/// (the derive's `tenant_filter`). On a polymorphic model, a row naming a field that
/// not every document type stores (`common` holds those that are) stays a comment.
pub(super) fn access_rows(
    c: &CollectionShape,
    declared: &[String],
    tenant: Option<&str>,
    common: Option<&BTreeSet<String>>,
) -> Vec<std::result::Result<String, String>> {
    let Some(w) = &c.workload else { return Vec::new() };
    let indexes = ordered_indexes(&c.indexes);
    let mut names = BTreeSet::new();
    let mut rows = vec![Err(format!(
        "workload ({} system.profile entries): rows a declared index serves are attributes, the others comments",
        w.entries
    ))];
    for shape in &w.shapes {
        let mut led = shape.clone();
        if let Some(at) = tenant.and_then(|t| led.equality.iter().position(|f| f == t)) {
            let field = led.equality.remove(at);
            led.equality.insert(0, field);
        }
        let shape = &led;
        let attribute = row(shape, &mut names);
        let untenanted = tenant.is_some_and(|t| shape.equality.first().map(String::as_str) != Some(t));
        let uncommon = common.and_then(|common| {
            let sorted = shape.sort.iter().map(|(p, _)| p);
            shape
                .equality
                .iter()
                .chain(&shape.range)
                .chain(sorted)
                .find(|p| !common.contains(p.split('.').next().unwrap_or(p)))
        });
        if untenanted || uncommon.is_some() {
            let why = match uncommon {
                Some(p) => format!("names `{}`, which only some document types store: add its `variant = ...`", md(p)),
                None => format!(
                    "does not filter on the tenant `{}` (rule `tenant_filter`): the application must say whose documents it reads",
                    md(tenant.unwrap_or_default())
                ),
            };
            rows.push(Err(format!("{attribute} // {} calls; {why}", shape.count)));
            continue;
        }
        let served = shape.served_by(&indexes);
        let calls = shape.count;
        let usable = |index: &str| {
            if index == "_id_" {
                // The derive gives `_id_` to a filter on `_id` alone or a sort on it alone.
                shape.range.is_empty()
            } else {
                declared.iter().any(|d| d == index)
            }
        };
        let served = match served {
            Some(index) if !shape.write && usable(index) => {
                rows.push(Ok(format!("{attribute} // {calls} calls; served by {}", escaped(index))));
                continue;
            }
            Some(index) if !shape.write && !usable(index) => format!(
                "served by {}, which is not declared above as a plain index: the row would not compile",
                escaped(index)
            ),
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
        rows.push(Err(format!("{attribute} // {calls} calls; {served}{write}")));
    }
    if w.unshaped > 0 {
        rows.push(Err(format!("{} more entries of other shapes, not grouped", w.unshaped)));
    }
    rows
}

/// The `#[access(...)]` row that declares `shape`, named from its fields (`by_email`,
/// `write_by_email`, `all`), made unique among `names` (which it joins), with the
/// observed rate as its `freq`. Fields and names reach it as escaped literals only.
pub(crate) fn row(shape: &QueryShape, names: &mut BTreeSet<String>) -> String {
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
    format!("#[access({})]", parts.join(", "))
}

pub(super) fn report_workload(out: &mut String, c: &CollectionShape, w: &Workload) {
    let _ = writeln!(out, "### Workload (`system.profile`)\n");
    let _ = writeln!(out, "{} profiler entries read.\n", w.entries);
    if w.shapes.is_empty() {
        return;
    }
    let indexes = ordered_indexes(&c.indexes);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_from_profiler_entries() {
        let find = doc! { "op": "query", "command": {
            "find": "users", "filter": { "plan": "pro", "age": { "$gt": 30 }, "tag": { "$in": ["a"] } },
            "sort": { "email": -1 },
        } };
        let s = &shapes_of(&find)[0];
        assert_eq!(s.equality, ["plan", "tag"]);
        assert_eq!(s.range, ["age"]);
        assert_eq!(s.sort, [("email".to_owned(), -1)]);
        assert!(!s.write && s.other.is_empty());
        let update = doc! { "op": "update", "command": { "update": "users", "updates": [
            { "q": { "email": "x" }, "u": { "$set": { "a": 1 } } },
            { "q": { "$or": [{ "a": 1 }], "b": { "$ne": 2 } }, "u": {} },
        ] } };
        let shapes = shapes_of(&update);
        assert_eq!(shapes.len(), 2);
        assert!(shapes[0].write && shapes[0].equality == ["email"]);
        assert_eq!(shapes[1].other, ["$or", "b"]);
        let mongod_update = doc! { "op": "update", "command": { "q": { "sku": "a" }, "u": {} } };
        assert_eq!(shapes_of(&mongod_update)[0].equality, ["sku"]);
        let agg = doc! { "op": "command", "command": { "aggregate": "o", "pipeline": [
            { "$match": { "user": "u" } }, { "$sort": { "at": 1 } },
        ] } };
        assert_eq!(shapes_of(&agg)[0].sort, [("at".to_owned(), 1)]);
        assert!(shapes_of(&doc! { "op": "insert", "command": { "insert": "o" } }).is_empty());
    }

    #[test]
    fn rates_and_serving_indexes() {
        let mut s = QueryShape {
            equality: vec!["plan".into()],
            range: vec!["age".into()],
            sort: vec![("email".into(), -1)],
            count: 31,
            span_ms: Some((0, 60_000)),
            ..QueryShape::default()
        };
        // 31 calls evenly spaced over a minute: 30 intervals of 2 s.
        assert_eq!(s.freq(), "30 r/min");
        s.span_ms = Some((0, 10_000));
        assert_eq!(s.freq(), "3 r/s");
        // Within a second: counted over one second.
        s.span_ms = Some((0, 200));
        assert_eq!(s.freq(), "30 r/s");
        s.count = 1;
        s.span_ms = None;
        assert_eq!(s.freq(), "1 r/s");
        let indexes = vec![
            ("a".to_owned(), vec![("plan".to_owned(), 1), ("age".to_owned(), 1)]),
            ("b".to_owned(), vec![("plan".to_owned(), 1), ("email".to_owned(), 1), ("age".to_owned(), 1)]),
        ];
        assert_eq!(s.served_by(&indexes), Some("b"));
        s.sort.clear();
        assert_eq!(s.served_by(&indexes), Some("a"));
        // A range on the sorted field needs no key of its own.
        let by_age = QueryShape { sort: vec![("age".into(), -1)], range: vec!["age".into()], ..s.clone() };
        assert_eq!(by_age.served_by(&indexes), Some("a"));
        s.other.push("$or".into());
        assert_eq!(s.served_by(&indexes), None);
        // Nothing to match or sort on: a collection scan, whatever the indexes.
        assert_eq!(QueryShape::default().served_by(&indexes), None);
    }
}
