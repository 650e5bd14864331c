//! docshape's error type.

use std::fmt;

/// What can go wrong in docshape's runtime.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The driver or the server refused an operation.
    Mongo(mongodb::error::Error),
    /// The server answered in a shape docshape did not expect.
    UnexpectedReply {
        /// The command that was sent.
        command: &'static str,
        /// What was wrong with the reply.
        detail: String,
    },
    /// The name belongs to something that is not a collection (a view, say).
    NotACollection {
        /// The namespace's name.
        name: String,
        /// Its `type` as `listCollections` reports it.
        kind: String,
    },
    /// Two registered models claim one collection.
    DuplicateCollection(DuplicateCollection),
    /// `sync` could not rebuild an index ([`crate::SyncOptions::rebuild_changed_indexes`]).
    IndexNotRebuilt {
        /// The collection.
        collection: String,
        /// The server's index the rebuild was to replace.
        kept: String,
        /// The model's index that was not built.
        wanted: String,
        /// Why.
        reason: String,
        /// Whether the server still has the index `kept` (a refused rebuild drops
        /// nothing; a failed build puts it back).
        restored: bool,
    },
    /// `sync` refused to install a validator of an older schema version than the one on
    /// the server: the code is an older release than the one that synced last, and its
    /// validator would refuse the newer release's documents. Nothing was changed;
    /// [`crate::SyncOptions::allow_older_schema`] (`--allow-older-schema`) installs it
    /// anyway.
    OlderSchema {
        /// The collection.
        collection: String,
        /// The schema version of the server's validator.
        server: i64,
        /// The code's schema version (`None`: the code's model is not versioned).
        code: Option<i64>,
    },
    /// `sync` refused to replace the server's validator: it holds constraints docshape's
    /// validators cannot express (`multipleOf`, `oneOf`, a query operator beside
    /// `$jsonSchema`, ...) and the code's validator would drop them, loosening what the
    /// server enforces. Nothing was changed; keep them in a validator managed by hand,
    /// or pass [`crate::SyncOptions::allow_weaker_validator`]
    /// (`--allow-weaker-validator`) to replace it anyway.
    WeakerValidator {
        /// The collection.
        collection: String,
        /// Each constraint that would be lost, as `path: value`.
        lost: Vec<String>,
    },
    /// The model declares a time-series collection (`#[model(timeseries(...))]`) and
    /// the server has a plain collection of that name. The server cannot turn one into
    /// the other: create the time-series collection under a new name, copy the
    /// documents into it (an aggregation ending in `$out` to it, MongoDB 7.0.3 and
    /// newer), then rename it over the old one. Nothing was changed.
    NotTimeSeries {
        /// The collection.
        collection: String,
    },
    /// The server's time-series collection has another `timeField` or `metaField`
    /// than the model, or a finer granularity: the server cannot change either in
    /// place. Migrate the readings into a new collection created with the model's
    /// options. Nothing was changed.
    TimeSeriesDiffers {
        /// The collection.
        collection: String,
        /// The server's `{timeseries, expireAfterSeconds}` options.
        server: Box<bson::Document>,
        /// The model's.
        model: Box<bson::Document>,
    },
    /// Exported artifacts could not be written, read or parsed.
    Artifacts {
        /// What went wrong, naming the file.
        detail: String,
        /// The error underneath (the I/O or JSON error), when there is one; also
        /// [`std::error::Error::source`].
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
}

/// What the server said when it refused one operation, in one line: its message and
/// code, without the raw reply the driver's error text carries. Errors that are not a
/// refusal (network, selection) keep the driver's text.
pub(crate) fn server_message(e: &mongodb::error::Error) -> String {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => format!("{} (code {})", w.message, w.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => format!("{} (code {})", w.message, w.code),
        ErrorKind::Command(c) => format!("{} (code {})", c.message, c.code),
        _ => e.to_string(),
    }
}

/// `Result` with docshape's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Mongo(e) => write!(f, "MongoDB: {e}"),
            Self::UnexpectedReply { command, detail } => {
                write!(f, "unexpected reply to `{command}`: {detail}")
            }
            Self::NotACollection { name, kind } => {
                write!(f, "`{name}` exists as a {kind}, not a collection; docshape will not replace it")
            }
            Self::DuplicateCollection(d) => write!(f, "{d}"),
            Self::IndexNotRebuilt { collection, kept, wanted, reason, restored } => {
                write!(f, "`{collection}`: index {wanted} not rebuilt: {reason}; ")?;
                if *restored {
                    write!(f, "the collection keeps index {kept}")
                } else {
                    write!(f, "index {kept} was dropped and could not be put back: create it again")
                }
            }
            Self::OlderSchema { collection, server, code } => {
                let code =
                    code.map_or_else(|| "no schema version".to_owned(), |c| format!("schema version {c}"));
                write!(
                    f,
                    "`{collection}`: the server's validator is for schema version {server}, and this code's is for {code}: an older release would refuse the newer one's documents; nothing was changed (sync from the newest release, or pass --allow-older-schema for a deliberate rollback)"
                )
            }
            Self::WeakerValidator { collection, lost } => write!(
                f,
                "`{collection}`: the server's validator holds {} constraint(s) docshape cannot express, which the code's validator would drop: {}; nothing was changed (pass --allow-weaker-validator to replace it anyway)",
                lost.len(),
                lost.join("; ")
            ),
            Self::NotTimeSeries { collection } => write!(
                f,
                "`{collection}` is a plain collection on the server and the model declares a time-series collection; the server cannot add time-series options to an existing collection: create the time-series collection under a new name, copy the documents into it (`$out`), and rename it over `{collection}`; nothing was changed"
            ),
            Self::TimeSeriesDiffers { collection, server, model } => write!(
                f,
                "`{collection}`: the server's time-series options are {server} and the model's are {model}; the time and meta fields cannot change, nor can the granularity get finer, in place: migrate the readings into a new collection created with the model's options; nothing was changed"
            ),
            Self::Artifacts { detail, .. } => write!(f, "artifacts: {detail}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Mongo(e) => Some(e),
            Self::DuplicateCollection(d) => Some(d),
            Self::Artifacts { source: Some(e), .. } => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<mongodb::error::Error> for Error {
    fn from(e: mongodb::error::Error) -> Self {
        Self::Mongo(e)
    }
}

impl From<DuplicateCollection> for Error {
    fn from(e: DuplicateCollection) -> Self {
        Self::DuplicateCollection(e)
    }
}

/// Two registered models claim one collection: `sync` would make the server match
/// whichever ran last, so docshape refuses to choose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateCollection {
    /// The collection.
    pub collection: String,
    /// The types that claim it.
    pub types: Vec<String>,
}

impl fmt::Display for DuplicateCollection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "collection `{}` is declared by more than one model ({}); one collection has one validator and one set of indexes, so keep one `#[model(collection = ...)]` for it",
            self.collection,
            self.types.join(", ")
        )
    }
}

impl std::error::Error for DuplicateCollection {}
