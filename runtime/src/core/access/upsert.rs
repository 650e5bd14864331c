//! Upsert rows: a write row that declares `upsert` creates the document its filter
//! names when none matches, in the same single command.
//!
//! ```text
//! #[index(keys(item_id, user_id), unique)]
//! #[access(name = "vote", filter(item_id, user_id), update(set(value)),
//!          upsert(insert(created_at)))]
//! ```
//!
//! generates `Vote::vote(item_id, user_id, value, created_at)`, whose [`Upsert::run`]
//! sends the write row's command (an `update`, or a `findAndModify` projected to `_id`)
//! with `upsert: true`. A created document holds the filter's equality values, the
//! update's fields (`set` the value, `inc` the amount, `push` a one-element array),
//! and `$setOnInsert` of the row's `insert(...)` parameters and `default(...)` fields;
//! the derive refuses a row whose created document could miss a field the model's
//! validator requires. When the filter does not name `_id`, an `_id` is set on insert
//! (a new `ObjectId`, or the `insert(_id)` parameter), so the reply tells which
//! document was written in either case: [`Upserted`].
//!
//! Concurrent upserts of one key: the server reads, finds nothing, and inserts, so two
//! writers can both insert. A unique index on the filter's keys (which the derive
//! requires unless waived) makes the second insert fail with a duplicate key; mongod
//! (4.2+) retries that itself only when the filter is exactly the unique index's keys,
//! by equality, with nothing else in it (no bound guard, no version). docshape sends
//! the upsert again itself, a bounded number of times: the retry finds the winner's
//! document and updates it. A duplicate key on a document the row's guards refuse (a
//! full array) is reported as what it is ([`UpdateError::Full`]), not retried.

use bson::{Bson, Document};
use mongodb::{ClientSession, Database};

use crate::core::access::find::{NoSession, SessionSlot};
use crate::core::access::update::{Update, UpdateError, Wrote};
use crate::core::model::Model;

/// What an upsert did.
#[derive(Debug, Clone, PartialEq)]
pub enum Upserted {
    /// No document matched: this one was created.
    Inserted {
        /// Its `_id`.
        id: Bson,
    },
    /// The document the filter names existed and was updated.
    Updated {
        /// Its `_id`.
        id: Bson,
    },
}

impl Upserted {
    /// The written document's `_id`.
    pub fn id(&self) -> &Bson {
        match self {
            Self::Inserted { id } | Self::Updated { id } => id,
        }
    }

    /// Whether the document was created.
    pub fn inserted(&self) -> bool {
        matches!(self, Self::Inserted { .. })
    }
}

/// One upsert row's write, typed: see the [module docs](self). `S` is where it runs:
/// outside a session by default, in one after [`Upsert::session`].
#[must_use = "an upsert does nothing until `run`"]
pub struct Upsert<T, S = NoSession> {
    update: Update<T, S>,
}

impl<T, S> std::fmt::Debug for Upsert<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upsert").field("update", &self.update).finish()
    }
}

impl<T: Model> Upsert<T> {
    /// The write row's update, sent as an upsert. Generated code calls this; use the
    /// generated method.
    pub fn new(update: Update<T>) -> Self {
        Self { update }
    }

    /// The same upsert inside `session` (see [`Update::session`]).
    pub fn session(self, session: &mut ClientSession) -> Upsert<T, &mut ClientSession> {
        Upsert { update: self.update.session(session) }
    }
}

impl<T: Model, S: SessionSlot> Upsert<T, S> {
    /// The filter and update as sent (`$setOnInsert` included), with `upsert: true`.
    pub fn command(&self) -> Result<(Document, Document), UpdateError> {
        self.update.command()
    }

    /// Sends the upsert: one command, and again when it lost the race to insert (see
    /// the [module docs](self)). Errors as for [`Update::run`], except that no document
    /// is "not found": a missing one is created.
    pub async fn run(self, db: &Database) -> Result<Upserted, UpdateError> {
        Ok(match self.update.run_as(db, true).await? {
            Wrote::Inserted(id) => Upserted::Inserted { id },
            Wrote::Updated(id) => Upserted::Updated { id },
        })
    }
}
