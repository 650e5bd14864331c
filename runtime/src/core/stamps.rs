//! Timestamps and revisions a model declares once (`#[created_at]`, `#[updated_at]`,
//! `#[revision]` on its fields) and every docshape writer applies, inside the write's
//! own command: a write row and an upsert row ([`crate::access::Update`]), an insert
//! ([`crate::relation::insert_one`]), a versioned save or update
//! ([`crate::versioning`]) and a denormalized copy's refresh.
//!
//! - `updated_at` is set from the **server's** clock with `$currentDate`, so writers on
//!   machines whose clocks differ still order their stamps as the server saw them;
//! - `revision` is incremented by one with `$inc`, in the same command;
//! - `created_at` is written when the document is created. An insert, and an upsert's
//!   `$setOnInsert`, cannot read the server's clock (`$currentDate` applies on update
//!   and on insert alike, and `$$NOW` exists only in pipeline updates, which take no
//!   `$setOnInsert`, `$push` of `$each` or `$inc` as the write rows use them), so a created document
//!   takes the writer's clock for `created_at` (and, on insert, `updated_at`); every
//!   later write takes the server's. A created document's revision is 1: the revision
//!   counts the writes that made the document, its creation included.

pub use crate::core::descriptor::Stamps;
use bson::{doc, Bson, Document};

impl Stamps {
    /// A model without stamps.
    pub const NONE: Stamps = Stamps { created: None, updated: None, revision: None, wide_revision: false };

    /// Whether the model declares any stamp.
    pub fn is_empty(&self) -> bool {
        self.created.is_none() && self.updated.is_none() && self.revision.is_none()
    }

    /// Whether `path` is one of the stamp fields.
    pub fn holds(&self, path: &str) -> bool {
        [self.created, self.updated, self.revision].into_iter().flatten().any(|s| s == path)
    }

    /// Adds what every write of an existing document does to `update` (a classic update
    /// document, of operators): `$currentDate` of `updated_at`, `$inc` of the revision.
    pub fn on_update(&self, update: &mut Document) {
        if let Some(updated) = self.updated {
            operator(update, "$currentDate").insert(updated, true);
        }
        if let Some(revision) = self.revision {
            operator(update, "$inc").insert(revision, self.one());
        }
    }

    /// [`Stamps::on_update`], and for an upsert that creates the document, `created_at`
    /// from the writer's clock (`$setOnInsert`: see the [module docs](self)).
    pub fn on_upsert(&self, update: &mut Document) {
        self.on_update(update);
        if let Some(created) = self.created {
            operator(update, "$setOnInsert").insert(created, bson::DateTime::now());
        }
    }

    /// Sets the stamps of a document about to be inserted: both times from the writer's
    /// clock (an insert cannot read the server's; one command, and the validator,
    /// which requires the fields, sees them at once), the revision at 1.
    pub fn on_insert(&self, document: &mut Document) {
        let now = bson::DateTime::now();
        for field in [self.created, self.updated].into_iter().flatten() {
            document.insert(field, now);
        }
        if let Some(revision) = self.revision {
            document.insert(revision, self.one());
        }
    }

    /// One, in the revision's BSON type.
    fn one(&self) -> Bson {
        match self.wide_revision {
            true => Bson::Int64(1),
            false => Bson::Int32(1),
        }
    }

    /// The stamp fields, for a projection of what a write set.
    pub fn projection(&self) -> Document {
        let mut projection = doc! {};
        for field in [self.created, self.updated, self.revision].into_iter().flatten() {
            projection.insert(field, 1);
        }
        projection
    }

    /// The stamps of the registered model stored in `collection` (what a writer that
    /// knows the collection only, such as a copy's refresh, applies).
    pub fn of_collection(collection: &str) -> Stamps {
        // Unsorted: one pass over what the program registered, on every copy write.
        inventory::iter::<crate::core::descriptor::RegisteredModel>
            .into_iter()
            .find(|m| m.collection == collection)
            .map(|m| m.stamps)
            .unwrap_or(Stamps::NONE)
    }
}

/// `update[op]`, made a document when absent.
fn operator<'a>(update: &'a mut Document, op: &str) -> &'a mut Document {
    if !matches!(update.get(op), Some(Bson::Document(_))) {
        update.insert(op, Document::new());
    }
    match update.get_mut(op) {
        Some(Bson::Document(d)) => d,
        _ => unreachable!("inserted as a document above"),
    }
}

/// A stored revision as a number (`None` when missing or not an integer).
pub fn revision_of(value: Option<&Bson>) -> Option<i64> {
    match value? {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use bson::{doc, Bson};

    use super::Stamps;

    const ALL: Stamps = Stamps {
        created: Some("created_at"),
        updated: Some("updated_at"),
        revision: Some("rev"),
        wide_revision: true,
    };

    #[test]
    fn an_update_takes_the_server_clock_and_one_more_revision() {
        let mut update = doc! {"$set": {"name": "a"}, "$inc": {"uses": 1}};
        ALL.on_update(&mut update);
        assert_eq!(
            update,
            doc! {"$set": {"name": "a"}, "$inc": {"uses": 1, "rev": 1_i64}, "$currentDate": {"updated_at": true}}
        );
        let mut none = doc! {"$set": {"name": "a"}};
        Stamps::NONE.on_update(&mut none);
        assert_eq!(none, doc! {"$set": {"name": "a"}});
    }

    #[test]
    fn an_upsert_sets_created_on_insert_and_an_insert_sets_all() {
        let mut update = doc! {"$set": {"name": "a"}};
        ALL.on_upsert(&mut update);
        assert!(matches!(
            update.get_document("$setOnInsert").unwrap().get("created_at"),
            Some(Bson::DateTime(_))
        ));
        let mut inserted = doc! {"_id": 1};
        ALL.on_insert(&mut inserted);
        assert_eq!(inserted.get("rev"), Some(&Bson::Int64(1)));
        assert_eq!(inserted.get("created_at"), inserted.get("updated_at"));
        assert!(ALL.holds("rev") && !ALL.holds("name"));
    }
}
