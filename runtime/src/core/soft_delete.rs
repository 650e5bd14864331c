//! `#[model(soft_delete = deleted_at)]`: a delete sets the deletion date instead of
//! removing the document, and a restore clears it. The generated `delete_by_id` and
//! `restore_by_id` return a [`SoftDelete`]; both go through the write pipeline
//! ([the writes chapter](crate::guide::writes)): guards, stamps, the command, then the derived data.
//!
//! Every live row carries `{deleted_at: null}` (see the guide's tenant chapter for why
//! `null` and not `$exists: false`); a TTL index on the field
//! (`#[index(expire_after = "30d")]`) purges deleted documents for good.

use std::fmt;
use std::marker::PhantomData;

use bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;
use mongodb::{ClientSession, Database};

use crate::core::bson_compat::SerError;
use crate::core::denormalized::CopyError;
use crate::core::model::Model;
use crate::core::write::Effects;

/// A soft delete or a restore of one document, ready to run.
#[must_use = "a soft delete does nothing until `run`"]
pub struct SoftDelete<T> {
    field: &'static str,
    filter: Result<Document, SerError>,
    restore: bool,
    model: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for SoftDelete<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SoftDelete").field("field", &self.field).field("restore", &self.restore).finish()
    }
}

/// Why a soft delete or a restore failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum SoftDeleteError {
    /// A parameter (the tenant, the id) could not be encoded.
    Encode(SerError),
    /// Nothing was written: the write pipeline refused the write before sending it
    /// (derived data it could not keep), or data that must commit with it (a `sync`
    /// summary) failed in the transaction started for it, which was aborted.
    Refused(Box<CopyError>),
    /// The server refused the command.
    Command(mongodb::error::Error),
    /// The document was written; keeping its derived data (copies, cached keys) failed.
    Derived(Box<CopyError>),
}

impl fmt::Display for SoftDeleteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Encode(e) => write!(f, "soft delete: a parameter could not be encoded: {e}"),
            Self::Refused(e) => write!(f, "soft delete not written: {e}"),
            Self::Command(e) => write!(f, "soft delete: the server refused the command: {e}"),
            Self::Derived(e) => write!(f, "soft delete written, its derived data failed: {e}"),
        }
    }
}

impl std::error::Error for SoftDeleteError {
    // The driver's error among the sources is what tells a transaction (a
    // `docshape::transaction`'s, or the one a write starts for its sync summaries)
    // that a conflict is transient and the body is to run again.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Encode(e) => Some(e),
            Self::Command(e) => Some(e),
            Self::Refused(e) | Self::Derived(e) => Some(e.as_ref()),
        }
    }
}

impl<T: Model> SoftDelete<T> {
    /// Generated code: the delete of the live document `filter` matches.
    #[doc(hidden)]
    pub fn delete(field: &'static str, filter: Result<Document, SerError>) -> Self {
        Self { field, filter, restore: false, model: PhantomData }
    }

    /// Generated code: the restore of the deleted document `filter` matches.
    #[doc(hidden)]
    pub fn restore(field: &'static str, filter: Result<Document, SerError>) -> Self {
        Self { field, filter, restore: true, model: PhantomData }
    }

    /// The filter and update the command sends: a delete matches a live document and
    /// stamps the server's clock; a restore matches a deleted one and sets `null`
    /// (which live rows match as they match a missing field).
    pub fn command(&self) -> Result<(Document, Document), SoftDeleteError> {
        let mut filter = self.filter.clone().map_err(SoftDeleteError::Encode)?;
        let mut update = if self.restore {
            filter.insert(self.field, doc! { "$ne": Bson::Null });
            doc! { "$set": { self.field: Bson::Null } }
        } else {
            filter.insert(self.field, Bson::Null);
            doc! { "$currentDate": { self.field: true } }
        };
        Effects::of::<T>().on_update(&mut update);
        Ok((filter, update))
    }

    /// Runs it: `true` when a document changed, `false` when none matched (no such
    /// document in the tenant, or already deleted or live).
    ///
    /// When the model keeps data that must commit with its writes (a `sync` summary),
    /// the command and that data run in one transaction of their own: see
    /// [`crate::guide::writes`].
    pub async fn run(self, db: &Database) -> Result<bool, SoftDeleteError> {
        self.run_with(db, None).await
    }

    /// [`SoftDelete::run`] in `session`: in the transaction it runs, if any (a
    /// `docshape::transaction`'s `tx`, or one the caller started), the delete or restore
    /// commits with the rest, and so do the `sync` summaries it leaves or rejoins. In
    /// a session that runs none, as [`SoftDelete::run`], in that session.
    pub async fn run_in(self, db: &Database, session: &mut ClientSession) -> Result<bool, SoftDeleteError> {
        self.run_with(db, Some(session)).await
    }

    async fn run_with(
        self,
        db: &Database,
        mut session: Option<&mut ClientSession>,
    ) -> Result<bool, SoftDeleteError> {
        use crate::core::transaction::{for_write, in_transaction};
        let running = in_transaction(session.as_deref_mut()).await.map_err(SoftDeleteError::Command)?;
        if !running && Effects::of::<T>().commits_with_source() {
            let this = &self;
            let own = for_write(
                db.client(),
                session.as_deref_mut(),
                |tx| {
                    let again = SoftDelete::<T> { filter: this.filter.clone(), model: PhantomData, ..*this };
                    Box::pin(async move { again.run_once(db, Some(&mut **tx)).await })
                },
                |e| match e {
                    // The transaction was aborted with it: nothing was written.
                    SoftDeleteError::Derived(e) => SoftDeleteError::Refused(e),
                    e => e,
                },
                SoftDeleteError::Command,
                SoftDeleteError::Derived,
            );
            if let Some(done) = own.await {
                return done;
            }
        }
        self.run_once(db, session).await
    }

    async fn run_once(
        self,
        db: &Database,
        mut session: Option<&mut ClientSession>,
    ) -> Result<bool, SoftDeleteError> {
        let effects = Effects::of::<T>();
        effects.check(db).map_err(|e| SoftDeleteError::Refused(Box::new(e)))?;
        let (filter, update) = self.command()?;
        let transaction = crate::core::transaction::in_transaction(session.as_deref_mut())
            .await
            .map_err(SoftDeleteError::Command)?;
        // In a transaction, a sync summary reads the written document: the command
        // returns it whole (an empty projection is every field). A delete returns it as
        // it was: what the document contributed before, and the document as written
        // (the same with the deletion date set: whatever else the stamps changed, a
        // deleted document contributes nothing) both follow from it.
        let returned = transaction && effects.reads_document();
        let before = returned && !self.restore;
        let collection = db.collection::<Document>(T::COLLECTION);
        let command = collection
            .find_one_and_update(filter, update.clone())
            .projection(if returned {
                Document::new()
            } else {
                doc! { "_id": 1 }
            })
            .return_document(if before { ReturnDocument::Before } else { ReturnDocument::After });
        let found = match session.as_deref_mut() {
            Some(s) => command.session(s).await,
            None => command.await,
        }
        .map_err(SoftDeleteError::Command)?;
        let Some(found) = found else { return Ok(false) };
        let id = found.get("_id").cloned().unwrap_or(Bson::Null);
        let done = if before {
            let mut deleted = found.clone();
            deleted.insert(self.field, bson::DateTime::now());
            let prior = crate::core::hooks::Prior::Was(&found);
            effects.after_in_from(db, &id, Some(&update), Some(&deleted), prior, session).await
        } else {
            effects.after_in(db, &id, Some(&update), returned.then_some(&found), session).await
        };
        done.map_err(|e| SoftDeleteError::Derived(Box::new(e)))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drivers_error_is_found_among_the_sources() {
        let driver = || mongodb::error::Error::custom(std::sync::Arc::new("conflict".to_owned()));
        let command = SoftDeleteError::Command(driver());
        assert!(crate::core::transaction::mongo_error_in(&command).is_some());
        let copy = CopyError::Copy {
            copy: "summary s".into(),
            id: Bson::Int32(1),
            source_updated: false,
            error: driver(),
        };
        let derived = SoftDeleteError::Derived(Box::new(copy));
        assert!(crate::core::transaction::mongo_error_in(&derived).is_some());
    }
}
