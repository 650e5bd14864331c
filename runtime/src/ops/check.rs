//! `check`: how a live database differs from the code, for CI and deploy pipelines.
//!
//! [`check`] compares one model's collection with what [`sync`](fn@crate::sync) would make of it:
//! the validator (down to the path of each differing value), the validation level and
//! action, the indexes (missing, extra, different), and the shard key. It changes
//! nothing. [`check_all`] does it for every registered model; [`check_specs`] for specs
//! read from exported artifacts. A clean report means `sync` would change nothing and
//! note nothing, but for a declared shard key on a deployment that is not sharded
//! (development and test databases), which is not drift.
//!
//! ```no_run
//! # async fn run(db: mongodb::Database) -> docshape::Result<()> {
//! let reports = docshape::check::check_all(&db).await?;
//! for report in &reports {
//!     print!("{report}");
//! }
//! if reports.iter().any(|r| !r.is_clean()) {
//!     std::process::exit(1);
//! }
//! # Ok(()) }
//! ```

use std::fmt;

use bson::{Bson, Document};
use mongodb::Database;

use crate::core::error::Result;
use crate::core::model::{Model, ValidationAction, ValidationLevel};
use crate::core::trace;
use crate::ops::sync::{plan_spec, same_bson, CollectionSpec, SyncChange, SyncNote, SyncOptions};

/// One way a collection on the server differs from the code.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Drift {
    /// The collection does not exist.
    MissingCollection,
    /// The collection has no validator; the code declares one.
    MissingValidator,
    /// The validator differs; each entry names a path and both values.
    ValidatorDiffers {
        /// The differing values, in the code's key order.
        differences: Vec<ValueDiff>,
    },
    /// The validation level differs.
    ValidationLevel {
        /// What the server has.
        server: String,
        /// What the code declares.
        code: ValidationLevel,
    },
    /// The validation action differs.
    ValidationAction {
        /// What the server has.
        server: String,
        /// What the code declares.
        code: ValidationAction,
    },
    /// An index the code declares is not on the server.
    MissingIndex {
        /// Its name.
        name: String,
        /// Its definition in the code.
        code: Document,
    },
    /// The server has an index the code does not declare.
    ExtraIndex {
        /// Its name.
        name: String,
        /// Its definition on the server.
        server: Document,
    },
    /// An index differs in keys or options (or has the code's keys under another name).
    IndexDiffers {
        /// The code's name for it.
        name: String,
        /// The server's definition.
        server: Document,
        /// The code's definition.
        code: Document,
    },
    /// The time-series options differ (`server` is `None` for a plain collection where
    /// the code declares a time-series one), as `{timeseries, expireAfterSeconds}`.
    TimeSeries {
        /// What the server has.
        server: Option<Document>,
        /// What the code declares.
        code: Document,
    },
    /// The deployment is sharded and the collection is not sharded on its key.
    NotSharded {
        /// The key the code declares.
        code: Document,
    },
    /// The collection is sharded on another key.
    ShardKeyDiffers {
        /// The server's key.
        server: Document,
        /// The code's key.
        code: Document,
    },
}

/// A value at one path of a document that differs between server and code.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueDiff {
    /// The dotted path, array positions in brackets: `$jsonSchema.properties.tags.enum[1]`
    /// (a `required` list is a set: its path is the list's, one entry per name one side
    /// lacks).
    pub path: String,
    /// The server's value; `None` when the server lacks the path.
    pub server: Option<Bson>,
    /// The code's value; `None` when the code lacks the path.
    pub code: Option<Bson>,
}

impl fmt::Display for ValueDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at `{}` ", self.path)?;
        match (&self.server, &self.code) {
            (Some(s), Some(c)) => write!(f, "the server has {s}, the code has {c}"),
            (None, Some(c)) => write!(f, "the server has nothing, the code has {c}"),
            (Some(s), None) => write!(f, "the server has {s}, the code has nothing"),
            (None, None) => f.write_str("both have nothing"),
        }
    }
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingCollection => f.write_str("the collection does not exist"),
            Self::MissingValidator => f.write_str("the collection has no validator; the code declares one"),
            Self::ValidatorDiffers { differences } => {
                f.write_str("the validator differs from the code")?;
                for d in differences {
                    write!(f, "\n    {d}")?;
                }
                Ok(())
            }
            Self::ValidationLevel { server, code } => {
                write!(f, "validationLevel is {server} on the server, {code} in the code")
            }
            Self::ValidationAction { server, code } => {
                write!(f, "validationAction is {server} on the server, {code} in the code")
            }
            Self::MissingIndex { name, code } => write!(
                f,
                "index {name} {} is missing on the server",
                code.get("key").map(ToString::to_string).unwrap_or_default()
            ),
            Self::ExtraIndex { name, server } => write!(
                f,
                "index {name} {} is on the server but not in the code",
                server.get("key").map(ToString::to_string).unwrap_or_default()
            ),
            Self::IndexDiffers { name, server, code } => {
                write!(f, "index {name} differs: the server has {server}, the code declares {code}")
            }
            Self::NotSharded { code } => write!(f, "the collection is not sharded; the code declares {code}"),
            Self::TimeSeries { server: None, code } => {
                write!(f, "the collection is a plain one; the code declares a time-series collection {code}")
            }
            Self::TimeSeries { server: Some(server), code } => {
                write!(f, "time-series options: the server has {server}, the code declares {code}")
            }
            Self::ShardKeyDiffers { server, code } => {
                write!(f, "the collection is sharded on {server}; the code declares {code}")
            }
        }
    }
}

/// How one collection differs from the code.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// The collection's name.
    pub collection: String,
    /// Each difference; empty when the server matches the code.
    pub drift: Vec<Drift>,
}

impl CheckReport {
    /// Whether the server matches the code.
    pub fn is_clean(&self) -> bool {
        self.drift.is_empty()
    }
}

/// One line per difference (`orders: index status_1 ... is missing on the server`), or
/// `orders: matches the code`.
impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.drift.is_empty() {
            return writeln!(f, "{}: matches the code", self.collection);
        }
        for d in &self.drift {
            writeln!(f, "{}: {d}", self.collection)?;
        }
        Ok(())
    }
}

/// How `T`'s collection in `db` differs from `T`. Reads only.
pub async fn check<T: Model>(db: &Database) -> Result<CheckReport> {
    check_spec(db, &CollectionSpec::of::<T>()).await
}

/// [`check`] for every registered model, in collection-name order.
pub async fn check_all(db: &Database) -> Result<Vec<CheckReport>> {
    check_specs(db, &crate::core::registry::specs()?).await
}

/// [`check`] for several specs (from [`crate::artifacts::specs_from`], say).
pub async fn check_specs(db: &Database, specs: &[CollectionSpec]) -> Result<Vec<CheckReport>> {
    let mut reports = Vec::with_capacity(specs.len());
    for spec in specs {
        reports.push(check_spec(db, spec).await?);
    }
    Ok(reports)
}

/// [`check`] for a spec built by hand or read from an export.
pub async fn check_spec(db: &Database, spec: &CollectionSpec) -> Result<CheckReport> {
    let span = trace::span!("check", collection = spec.name.as_str());
    let report = trace::in_span(span.clone(), check_spec_inner(db, spec)).await?;
    span.in_scope(|| trace::event!(INFO, drift = report.drift.len(), "checked"));
    Ok(report)
}

async fn check_spec_inner(db: &Database, spec: &CollectionSpec) -> Result<CheckReport> {
    // What sync would do, read as what differs: one comparison, so `check` is clean
    // exactly when `sync` would change and note nothing.
    // An older code's validator, or one dropping what docshape cannot express, is
    // drift to report, not a sync to refuse.
    let plan =
        plan_spec(db, spec, SyncOptions::default().allow_older_schema(true).allow_weaker_validator(true))
            .await?;
    let mut drift = Vec::new();
    let index = |name: &str| spec.indexes.iter().find(|i| i.get_str("name").ok() == Some(name)).cloned();
    if plan
        .report
        .changes
        .iter()
        .any(|c| matches!(c, SyncChange::CreatedCollection | SyncChange::CreatedTimeSeries { .. }))
    {
        drift.push(Drift::MissingCollection);
        return Ok(CheckReport { collection: spec.name.clone(), drift });
    }
    for change in &plan.report.changes {
        drift.push(match change {
            SyncChange::ValidatorChanged { before: None } => Drift::MissingValidator,
            SyncChange::ValidatorChanged { before: Some(server) } => {
                Drift::ValidatorDiffers { differences: validator_differences(server, &spec.validator) }
            }
            SyncChange::ValidationLevelChanged { before, after } => {
                Drift::ValidationLevel { server: before.clone(), code: *after }
            }
            SyncChange::ValidationActionChanged { before, after } => {
                Drift::ValidationAction { server: before.clone(), code: *after }
            }
            SyncChange::CreatedIndex { name } => {
                Drift::MissingIndex { name: name.clone(), code: index(name).unwrap_or_default() }
            }
            SyncChange::ShardedCollection { key } => Drift::NotSharded { code: key.clone() },
            SyncChange::TimeSeriesChanged { before, after } => {
                Drift::TimeSeries { server: Some(before.clone()), code: after.clone() }
            }
            // Only planned with options that check does not set.
            SyncChange::CreatedCollection
            | SyncChange::CreatedTimeSeries { .. }
            | SyncChange::RebuiltIndex { .. }
            | SyncChange::DroppedIndex { .. } => continue,
        });
    }
    for note in &plan.report.notes {
        drift.push(match note {
            SyncNote::ExtraIndex { name, spec } => {
                Drift::ExtraIndex { name: name.clone(), server: spec.clone() }
            }
            SyncNote::ChangedIndex { name, server, model } => {
                Drift::IndexDiffers { name: name.clone(), server: server.clone(), code: model.clone() }
            }
            SyncNote::TimeSeriesDiffers { server, model } => {
                Drift::TimeSeries { server: server.clone(), code: model.clone() }
            }
            SyncNote::ShardKeyDiffers { server, model } => {
                Drift::ShardKeyDiffers { server: server.clone(), code: model.clone() }
            }
            // A declared shard key on an unsharded deployment is how development and
            // test databases run; it is not drift.
            SyncNote::NotSharded { .. } => continue,
            // The unique index is drift already (missing); that it would not build is
            // what `sync` reports.
            SyncNote::UniqueMeetsDuplicates { .. } => continue,
        });
    }
    Ok(CheckReport { collection: spec.name.clone(), drift })
}

/// Each path where the `server`'s validator and the `code`'s differ, with both values,
/// compared as the server compares them: what [`Drift::ValidatorDiffers`] holds, and
/// what `sync --dry-run` prints under "replaced the validator".
pub fn validator_differences(server: &Document, code: &Document) -> Vec<ValueDiff> {
    let mut differences = Vec::new();
    diff(
        &mut String::new(),
        Some(&Bson::Document(server.clone())),
        Some(&Bson::Document(code.clone())),
        &mut differences,
    );
    differences
}

/// Collects the paths where `server` and `code` differ, comparing as the server does
/// (numbers by value, document keys in any order).
fn diff(path: &mut String, server: Option<&Bson>, code: Option<&Bson>, out: &mut Vec<ValueDiff>) {
    let len = path.len();
    match (server, code) {
        (Some(Bson::Document(s)), Some(Bson::Document(c))) => {
            for (key, value) in c {
                push_key(path, key);
                diff(path, s.get(key), Some(value), out);
                path.truncate(len);
            }
            for (key, value) in s.iter().filter(|(k, _)| !c.contains_key(k.as_str())) {
                push_key(path, key);
                diff(path, Some(value), None, out);
                path.truncate(len);
            }
        }
        // `required` is a set: each name one side lacks, once, whatever the order.
        (Some(Bson::Array(s)), Some(Bson::Array(c)))
            if path.ends_with("required") && s.iter().chain(c).all(|n| n.as_str().is_some()) =>
        {
            for name in s.iter().filter(|n| !c.contains(n)) {
                out.push(ValueDiff { path: path.clone(), server: Some(name.clone()), code: None });
            }
            for name in c.iter().filter(|n| !s.contains(n)) {
                out.push(ValueDiff { path: path.clone(), server: None, code: Some(name.clone()) });
            }
        }
        (Some(Bson::Array(s)), Some(Bson::Array(c))) => {
            for i in 0..s.len().max(c.len()) {
                path.push_str(&format!("[{i}]"));
                diff(path, s.get(i), c.get(i), out);
                path.truncate(len);
            }
        }
        (Some(s), Some(c)) if same_bson(s, c) => {}
        (None, None) => {}
        (s, c) => out.push(ValueDiff { path: path.clone(), server: s.cloned(), code: c.cloned() }),
    }
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn diff_names_each_differing_path() {
        let server = Bson::Document(doc! {
            "$jsonSchema": { "required": ["a", "b"], "properties": { "a": { "maxLength": 50_i32 }, "x": 1 } }
        });
        let code = Bson::Document(doc! {
            "$jsonSchema": { "required": ["a"], "properties": { "a": { "maxLength": 100_i64 }, "b": 2.0 } }
        });
        let mut out = Vec::new();
        diff(&mut String::new(), Some(&server), Some(&code), &mut out);
        let lines: Vec<String> = out.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "at `$jsonSchema.required` the server has \"b\", the code has nothing",
                "at `$jsonSchema.properties.a.maxLength` the server has 50, the code has 100",
                "at `$jsonSchema.properties.b` the server has nothing, the code has 2",
                "at `$jsonSchema.properties.x` the server has 1, the code has nothing",
            ]
        );
        let mut none = Vec::new();
        let same = Bson::Document(doc! { "a": 1_i32, "b": [1.0] });
        diff(
            &mut String::new(),
            Some(&same),
            Some(&Bson::Document(doc! { "b": [1_i64], "a": 1.0 })),
            &mut none,
        );
        assert!(none.is_empty());
        // A name added in front of `required`: one entry, not one per shifted position.
        let mut out = Vec::new();
        diff(
            &mut String::new(),
            Some(&Bson::Document(doc! { "required": ["a", "b", "c", "d"] })),
            Some(&Bson::Document(doc! { "required": ["_id", "a", "b", "c", "d"] })),
            &mut out,
        );
        let lines: Vec<String> = out.iter().map(ToString::to_string).collect();
        assert_eq!(lines, ["at `required` the server has nothing, the code has \"_id\""]);
    }
}
