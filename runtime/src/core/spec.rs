//! [`CollectionSpec`]: one collection as the code declares it, the unit that the
//! registry lists, `sync` applies, `check` compares and the artifacts write out.

use bson::Document;

use crate::core::index::{Index, IndexKey};
use crate::core::model::{Model, ValidationAction, ValidationLevel};

/// Everything [`sync`](fn@crate::sync) makes true of one collection.
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
    /// The indexes, as `createIndexes` receives them (`{key, name, ...options}`).
    pub indexes: Vec<Document>,
    /// The shard key, when one is declared.
    pub shard_key: Option<Document>,
}

impl CollectionSpec {
    /// The spec a model declares.
    pub fn of<T: Model>() -> Self {
        // Every registered model instantiates this function in the crate that defines
        // it, so it only gathers the model's constants; the work is done once, below.
        Self::from_parts(
            T::COLLECTION,
            T::validator(),
            (T::VALIDATION_LEVEL, T::VALIDATION_ACTION),
            T::INDEXES,
            T::SHARD_KEY,
        )
    }

    fn from_parts(
        name: &str,
        validator: Document,
        (validation_level, validation_action): (ValidationLevel, ValidationAction),
        indexes: &[Index],
        shard_key: &[(&str, IndexKey)],
    ) -> Self {
        let shard_key = crate::core::index::keys_document(shard_key);
        Self {
            name: name.to_owned(),
            validator,
            validation_level,
            validation_action,
            indexes: indexes.iter().map(|i| i.to_document()).collect(),
            shard_key: (!shard_key.is_empty()).then_some(shard_key),
        }
    }
}

/// The `$jsonSchema.description` of a versioned model's validator: the schema version
/// the code that installed it writes.
pub fn schema_version_text(version: i64) -> String {
    format!("docshape schema version {version}")
}

/// The schema version a validator says it was installed for (see
/// [`schema_version_text`]); `None` for a validator without one (an unversioned model,
/// or one docshape did not write).
pub fn schema_version_of(validator: &Document) -> Option<i64> {
    let text = validator.get_document("$jsonSchema").ok()?.get_str("description").ok()?;
    text.strip_prefix("docshape schema version ")?.parse().ok()
}
