//! Why a write row's update did not happen: [`UpdateError`], with what the driver, the copies and the find said.

#[allow(unused_imports)]
use super::*;

/// Why a write row's update did not happen.
#[derive(Debug)]
#[non_exhaustive]
pub enum UpdateError {
    /// No document matches the row's filter.
    NotFound {
        /// The collection.
        collection: &'static str,
        /// The access pattern.
        pattern: &'static str,
    },
    /// The array is at its bound: the push was refused, nothing changed.
    Full {
        /// The collection.
        collection: &'static str,
        /// The matched document's `_id`.
        id: Box<Bson>,
        /// The array's stored path.
        field: &'static str,
        /// Its bound.
        max: u64,
    },
    /// Nothing matched when the update ran, yet the document now matches and has room:
    /// another writer changed it in between. Nothing was written; run it again.
    Changed {
        /// The collection.
        collection: &'static str,
        /// The access pattern.
        pattern: &'static str,
    },
    /// The document is stored at an older schema version, and stayed so through every
    /// attempt to upgrade it (other writers kept changing it). Nothing was written.
    OldVersion {
        /// The collection.
        collection: &'static str,
        /// The document's `_id`.
        id: Box<Bson>,
        /// Its stored version field, as stored (missing: `Null`).
        stored: Box<Bson>,
        /// The current version.
        current: i64,
    },
    /// The document was at an older schema version, and upgrading it in place (so that
    /// the write row could write the current shape) failed.
    Upgrade(Box<crate::core::version::VersionError>),
    /// The document was written by a newer release (its schema version is above this
    /// code's): this code cannot write its shape, so it leaves it alone. Seen after a
    /// rollback, while the newer release's documents remain.
    NewerVersion {
        /// The collection.
        collection: &'static str,
        /// The document's `_id`.
        id: Box<Bson>,
        /// Its stored version field.
        stored: Box<Bson>,
        /// This code's version.
        current: i64,
    },
    /// A conditional write (a row whose filter holds the model's `#[revision]`) matched
    /// nothing, and the document is there at another revision: another writer got
    /// there first. Nothing was written; read it again and decide.
    Conflict {
        /// The collection.
        collection: &'static str,
        /// The document's revision now (`None` when it holds none).
        current: Option<i64>,
    },
    /// The filter or update could not be built, or the command failed for another
    /// reason than the server refusing the write (the network, a timeout).
    Find(FindError),
    /// The server refused the write: nothing was written. Document validation failed
    /// (`code` 121: the collection's validator does not accept the document the update
    /// would make), a duplicate key (11000), or another write error the server
    /// answered for this statement.
    WriteRefused {
        /// The collection.
        collection: &'static str,
        /// The server's error code (121 for a validator's refusal).
        code: i32,
        /// The server's message.
        message: String,
        /// The driver's error, whole (for a validator's refusal, its `errInfo` says
        /// which rule failed).
        source: mongodb::error::Error,
    },
    /// The document was updated, but refreshing what is derived from it failed
    /// (a copy's refresh: see [`crate::denormalized`]).
    AfterWrite(Box<CopyError>),
    /// Nothing was written: a pattern keeping data derived from the document could not
    /// have done its part (cached keys with no connection installed to delete them:
    /// [`CopyError::CacheNotInvalidated`]), or data that must commit with the write (a
    /// `sync` summary) failed in the transaction started for it, which was aborted.
    Refused(Box<CopyError>),
}

impl std::fmt::Display for UpdateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotFound { collection, pattern } => {
                write!(f, "{collection}: `{pattern}` matched no document")
            }
            Self::Full { collection, id, field, max } => write!(
                f,
                "{collection}: `{field}` of document {id} already holds {max} items, its bound; nothing was pushed"
            ),
            Self::Changed { collection, pattern } => write!(
                f,
                "{collection}: `{pattern}` matched nothing, then the document changed; nothing was written, run it again"
            ),
            Self::OldVersion { collection, id, stored, current } => write!(
                f,
                "{collection}: document {id} is at schema version {stored}, not {current}, and other writers kept changing it while it was upgraded; nothing was written, run it again"
            ),
            Self::Upgrade(e) => write!(f, "upgrading the document before the write: {e}"),
            Self::NewerVersion { collection, id, stored, current } => write!(
                f,
                "{collection}: document {id} is at schema version {stored}, newer than this code's {current}: a newer release wrote it, and this code cannot write its shape; nothing was written (run the newer release, or see the guide's chapter `docshape::guide::upgrades`)"
            ),
            Self::Conflict { collection, current } => match current {
                Some(current) => write!(
                    f,
                    "{collection}: the document is at revision {current}, not the one the write expected; nothing was written, read it again"
                ),
                None => write!(
                    f,
                    "{collection}: the document holds no revision, not the one the write expected; nothing was written"
                ),
            },
            Self::Find(e) => write!(f, "{e}"),
            Self::WriteRefused { collection, code, message, .. } => {
                write!(f, "{collection}: the server refused the write (code {code}): {message}; nothing was written")
            }
            Self::AfterWrite(e) => write!(f, "the update was written, but what is derived from it is not in line: {e}"),
            Self::Refused(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for UpdateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Find(e) => Some(e),
            Self::WriteRefused { source, .. } => Some(source),
            Self::Upgrade(e) => Some(e.as_ref()),
            Self::AfterWrite(e) | Self::Refused(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<mongodb::error::Error> for UpdateError {
    fn from(e: mongodb::error::Error) -> Self {
        Self::Find(FindError::Mongo(e))
    }
}

impl UpdateError {
    /// A write command's error on `collection`: [`UpdateError::WriteRefused`] when the
    /// server refused the statement itself (a write error, or a command error that is
    /// neither retryable nor transient: `findAndModify` reports a validator's refusal
    /// so), [`UpdateError::Find`] otherwise.
    pub(crate) fn of_write(collection: &'static str, e: mongodb::error::Error) -> Self {
        use mongodb::error::{ErrorKind, WriteFailure};
        if !crate::core::denormalized::refresh::is_refusal(&e) {
            return Self::Find(FindError::Mongo(e));
        }
        let (code, message) = match e.kind.as_ref() {
            ErrorKind::Write(WriteFailure::WriteError(w)) => (w.code, w.message.clone()),
            ErrorKind::Command(c) => (c.code, c.message.clone()),
            _ => return Self::Find(FindError::Mongo(e)),
        };
        Self::WriteRefused { collection, code, message, source: e }
    }
}

impl From<FindError> for UpdateError {
    fn from(e: FindError) -> Self {
        Self::Find(e)
    }
}

impl From<crate::core::bson_compat::SerError> for UpdateError {
    fn from(e: crate::core::bson_compat::SerError) -> Self {
        Self::Find(FindError::Parameter(e))
    }
}
