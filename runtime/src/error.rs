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
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Mongo(e) => Some(e),
            _ => None,
        }
    }
}

impl From<mongodb::error::Error> for Error {
    fn from(e: mongodb::error::Error) -> Self {
        Self::Mongo(e)
    }
}
