//! `sync`: make a database's collections match the models.

use std::fmt;

use bson::{doc, Bson, Document};
use mongodb::Database;

use crate::error::{Error, Result};
use crate::model::{Model, ValidationAction, ValidationLevel};

/// Everything [`sync`] makes true of one collection.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionSpec {
    /// The collection's name.
    pub name: String,
    /// The `validator` option.
    pub validator: Document,
    /// The `validationLevel` option.
    pub validation_level: ValidationLevel,
    /// The `validationAction` option.
    pub validation_action: ValidationAction,
}

impl CollectionSpec {
    /// The spec a model declares.
    pub fn of<T: Model>() -> Self {
        Self {
            name: T::COLLECTION.to_owned(),
            validator: T::validator(),
            validation_level: T::VALIDATION_LEVEL,
            validation_action: T::VALIDATION_ACTION,
        }
    }
}

/// One thing [`sync`] changed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SyncChange {
    /// The collection did not exist and was created with its validator.
    CreatedCollection,
    /// The validator differed and was replaced; `before` is what the server had.
    ValidatorChanged {
        /// The validator the server had, if any.
        before: Option<Document>,
    },
    /// The validation level differed and was set.
    ValidationLevelChanged {
        /// The server's level before.
        before: String,
        /// The level now.
        after: ValidationLevel,
    },
    /// The validation action differed and was set.
    ValidationActionChanged {
        /// The server's action before.
        before: String,
        /// The action now.
        after: ValidationAction,
    },
}

/// What [`sync`] did to one collection.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncReport {
    /// The collection's name.
    pub collection: String,
    /// Each change made; empty when the collection already matched.
    pub changes: Vec<SyncChange>,
}

impl SyncReport {
    /// Whether the collection already matched the model.
    pub fn is_unchanged(&self) -> bool {
        self.changes.is_empty()
    }
}

impl fmt::Display for SyncChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CreatedCollection => f.write_str("created the collection with its validator"),
            Self::ValidatorChanged { before: None } => f.write_str("added a validator"),
            Self::ValidatorChanged { before: Some(_) } => f.write_str("replaced the validator"),
            Self::ValidationLevelChanged { before, after } => {
                write!(f, "validationLevel {before} -> {after}")
            }
            Self::ValidationActionChanged { before, after } => {
                write!(f, "validationAction {before} -> {after}")
            }
        }
    }
}

impl fmt::Display for SyncReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.changes.is_empty() {
            return write!(f, "{}: unchanged", self.collection);
        }
        write!(f, "{}: ", self.collection)?;
        for (i, change) in self.changes.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{change}")?;
        }
        Ok(())
    }
}

/// Creates `T`'s collection with its validator, or brings an existing one's validator,
/// validation level and action in line with `T` (`collMod`). Idempotent: a second run
/// changes nothing and says so.
///
/// Existing documents are not re-checked: a new validator applies to later writes
/// (with `validation_level = "moderate"`, only to documents that already pass).
/// Several processes may sync at once; each ends with the model's options in place,
/// and more than one may report [`SyncChange::CreatedCollection`].
///
/// ```no_run
/// # use docshape::{Model, validator::Schema};
/// # #[derive(serde::Serialize, serde::Deserialize, Model)]
/// # #[model(collection = "usuarios")]
/// # struct Usuario { nombre: String }
/// # async fn run(db: mongodb::Database) -> docshape::Result<()> {
/// let report = docshape::sync::<Usuario>(&db).await?;
/// println!("{report}"); // "usuarios: created the collection with its validator"
/// assert!(docshape::sync::<Usuario>(&db).await?.is_unchanged());
/// # Ok(()) }
/// ```
pub async fn sync<T: Model>(db: &Database) -> Result<SyncReport> {
    sync_spec(db, &CollectionSpec::of::<T>()).await
}

/// [`sync`] for a spec built by hand or read from an export.
pub async fn sync_spec(db: &Database, spec: &CollectionSpec) -> Result<SyncReport> {
    let mut report = SyncReport { collection: spec.name.clone(), changes: Vec::new() };
    let current = match collection_options(db, &spec.name).await? {
        Some(options) => options,
        None => {
            let create = doc! {
                "create": &spec.name,
                "validator": spec.validator.clone(),
                "validationLevel": spec.validation_level.as_str(),
                "validationAction": spec.validation_action.as_str(),
            };
            match db.run_command(create).await {
                // The server also answers ok when the collection already exists with
                // identical options, so racing syncs may each report the creation.
                Ok(_) => {
                    report.changes.push(SyncChange::CreatedCollection);
                    return Ok(report);
                }
                // Another process created it between our look and our create: fall
                // through and compare with what it made.
                Err(e) if command_error_code(&e) == Some(NAMESPACE_EXISTS) => {
                    collection_options(db, &spec.name).await?.unwrap_or_default()
                }
                Err(e) => return Err(e.into()),
            }
        }
    };

    let validator = current.get_document("validator").ok();
    if !validator
        .is_some_and(|v| same_bson(&Bson::Document(v.clone()), &Bson::Document(spec.validator.clone())))
    {
        report.changes.push(SyncChange::ValidatorChanged { before: validator.cloned() });
    }
    let level = current.get_str("validationLevel").unwrap_or("strict");
    if level != spec.validation_level.as_str() {
        report.changes.push(SyncChange::ValidationLevelChanged {
            before: level.to_owned(),
            after: spec.validation_level,
        });
    }
    let action = current.get_str("validationAction").unwrap_or("error");
    if action != spec.validation_action.as_str() {
        report.changes.push(SyncChange::ValidationActionChanged {
            before: action.to_owned(),
            after: spec.validation_action,
        });
    }
    if !report.changes.is_empty() {
        db.run_command(doc! {
            "collMod": &spec.name,
            "validator": spec.validator.clone(),
            "validationLevel": spec.validation_level.as_str(),
            "validationAction": spec.validation_action.as_str(),
        })
        .await?;
    }
    Ok(report)
}

const NAMESPACE_EXISTS: i32 = 48;

fn command_error_code(e: &mongodb::error::Error) -> Option<i32> {
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => Some(c.code),
        _ => None,
    }
}

/// The `options` document `listCollections` reports for `name`, or `None` when there
/// is no such namespace.
pub(crate) async fn collection_options(db: &Database, name: &str) -> Result<Option<Document>> {
    let reply = db.run_command(doc! { "listCollections": 1, "filter": { "name": name } }).await?;
    let unexpected =
        |detail: &str| Error::UnexpectedReply { command: "listCollections", detail: detail.to_owned() };
    let batch = reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .map_err(|_| unexpected("no cursor.firstBatch"))?;
    let Some(entry) = batch.iter().filter_map(Bson::as_document).next() else {
        return Ok(None);
    };
    let kind = entry.get_str("type").unwrap_or("collection");
    if kind != "collection" {
        return Err(Error::NotACollection { name: name.to_owned(), kind: kind.to_owned() });
    }
    Ok(Some(entry.get_document("options").cloned().unwrap_or_default()))
}

/// BSON equality as the server means it for a validator read back: key order inside
/// documents does not matter, and numbers compare by value whatever their width.
pub(crate) fn same_bson(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Document(x), Bson::Document(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_bson(v, w)))
        }
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_bson(v, w))
        }
        _ => match (number(a), number(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
}

fn number(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(i) => Some(f64::from(*i)),
        // Bounds written by docshape fit in f64's 53 bits except near i64's ends,
        // where i64::MAX and its f64 rounding compare equal: both mean "the top".
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bson_ignores_key_order_and_number_width() {
        let a = Bson::Document(doc! { "a": 1_i32, "b": { "c": [1_i64, "x"] } });
        let b = Bson::Document(doc! { "b": { "c": [1.0, "x"] }, "a": 1_i64 });
        assert!(same_bson(&a, &b));
        let c = Bson::Document(doc! { "b": { "c": ["x", 1.0] }, "a": 1_i64 });
        assert!(!same_bson(&a, &c));
        let d = Bson::Document(doc! { "a": 1_i32 });
        assert!(!same_bson(&a, &d));
    }
}
