//! The one place a command is built from its access row.
//!
//! Every read docshape sends for a row (a finder's `find` and `count`, a page's
//! `find`, the sample `explain` checks) and every write row's `update` or
//! `findAndModify` takes its sort, projection, collation, read preference, read
//! concern and write concern from here, so that a row's declaration means the same
//! thing on every path. The filter comes in already built from typed values (by the
//! generated code through the literal encoder, or by the paginator's keyset bounds):
//! this module never reads a caller's value.

use bson::{doc, Document, RawDocumentBuf};
use mongodb::options::{Collation, CollationStrength, ReadConcern, SelectionCriteria, WriteConcern};
use mongodb::Collection;

use crate::core::descriptor::AccessPattern;
use crate::core::descriptor::IndexKey;

/// The largest batch size a bounded read asks for. The driver sends a batch size as a
/// signed 32-bit number and, when it equals the limit, asks for one more (so that the
/// server closes the cursor with the first reply): `i32::MAX - 1` is the largest that
/// always fits. A larger limit still returns up to that many documents, in more
/// batches; the server cuts every reply at 16 MB anyway.
const MAX_BATCH: u32 = (i32::MAX - 1) as u32;

/// The batch size of a read limited to `limit` documents.
fn first_batch(limit: i64) -> u32 {
    u32::try_from(limit).unwrap_or(u32::MAX).min(MAX_BATCH)
}

/// The collation of a row whose filter is `(case_insensitive)`: English at strength 2
/// (case-insensitive, accent-sensitive), the one its index was declared with.
pub fn collation(pattern: &AccessPattern) -> Option<Collation> {
    pattern
        .case_insensitive
        .then(|| Collation::builder().locale("en").strength(CollationStrength::Secondary).build())
}

/// [`collation`] as a command's `collation` field.
fn collation_document(pattern: &AccessPattern) -> Option<Document> {
    pattern.case_insensitive.then(|| doc! { "locale": "en", "strength": 2 })
}

/// The read preference a row's consistency sends.
pub fn selection_criteria(pattern: &AccessPattern) -> Option<SelectionCriteria> {
    pattern.guarantee.selection_criteria()
}

/// The read concern a row's consistency sends.
pub fn read_concern(pattern: &AccessPattern) -> Option<ReadConcern> {
    pattern.guarantee.read_concern()
}

/// The write concern a write row's consistency sends.
pub fn write_concern(pattern: &AccessPattern) -> Option<WriteConcern> {
    pattern.guarantee.write_concern()
}

/// The row's sort keys as its reads send them: the declared keys, and for a paginated
/// row `_id` last (in the last key's direction) unless declared: it breaks ties, so a
/// keyset position names one document.
pub fn sort_keys(pattern: &AccessPattern) -> impl Iterator<Item = (&'static str, IndexKey)> + '_ {
    let tie_break = (pattern.paginate && !pattern.sort.iter().any(|(f, _)| *f == "_id"))
        .then(|| ("_id", pattern.sort.last().map_or(IndexKey::Asc, |(_, k)| *k)));
    pattern.sort.iter().copied().chain(tie_break)
}

/// [`sort_keys`] as a `sort` document, each direction flipped when `reverse` (a page
/// read backwards); `None` when the row has no sort.
pub fn sort_document(pattern: &AccessPattern, reverse: bool) -> Option<Document> {
    let flip = |k: IndexKey| match (k, reverse) {
        (IndexKey::Asc, true) => IndexKey::Desc,
        (IndexKey::Desc, true) => IndexKey::Asc,
        (k, _) => k,
    };
    let keys: Vec<(&str, IndexKey)> = sort_keys(pattern).map(|(f, k)| (f, flip(k))).collect();
    (!keys.is_empty()).then(|| crate::core::index::keys_document(&keys))
}

/// The projection that returns `fields` (top-level names) and, for a read that needs
/// them to place its items, `also`; `_id` is left out unless named in either. `None`
/// for whole documents.
pub fn projection(fields: Option<&[&str]>, also: &[&str]) -> Option<Document> {
    let fields = fields?;
    let mut p = Document::new();
    for field in fields.iter().chain(also) {
        // A nested path (`address.city`) is read through its top-level field, which the
        // view holds whole.
        let top = field.split('.').next().unwrap_or(field);
        p.insert(top, 1);
    }
    // `_id` comes back unless refused; a view that does not hold it need not pay for it.
    if !p.contains_key("_id") {
        p.insert("_id", 0);
    }
    Some(p)
}

/// One read of one access row, as sent: see the [module docs](self).
#[derive(Debug, Clone)]
pub struct ReadCommand<'a> {
    pattern: &'static AccessPattern,
    collection: &'a str,
    filter: Document,
    sort: Option<Document>,
    projection: Option<Document>,
    limit: Option<i64>,
    transaction: bool,
}

impl<'a> ReadCommand<'a> {
    /// The row's read of `collection` with `filter` (built from typed values), in the
    /// row's sort order, returning whole documents.
    pub fn new(pattern: &'static AccessPattern, collection: &'a str, filter: Document) -> Self {
        ReadCommand {
            pattern,
            collection,
            filter,
            sort: sort_document(pattern, false),
            projection: None,
            limit: None,
            transaction: false,
        }
    }

    /// Sent inside a transaction, whose read concern applies and whose reads go to the
    /// primary: the row's read concern and read preference are left out (the driver
    /// refuses them there).
    pub fn in_transaction(mut self, transaction: bool) -> Self {
        self.transaction = transaction;
        self
    }

    /// Reads backwards: every sort direction flipped.
    pub fn reversed(mut self) -> Self {
        self.sort = sort_document(self.pattern, true);
        self
    }

    /// Returns only `fields` and `also` ([`projection`]); `None` for whole documents.
    pub fn project(mut self, fields: Option<&[&str]>, also: &[&str]) -> Self {
        self.projection = projection(fields, also);
        self
    }

    /// At most `limit` documents, all in the first reply when they fit in one.
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = Some(limit);
        self
    }

    /// The access row.
    pub fn pattern(&self) -> &'static AccessPattern {
        self.pattern
    }

    /// The filter.
    pub fn filter(&self) -> &Document {
        &self.filter
    }

    /// The `find` command as the server receives it (for inspection and `explain`):
    /// `find`, `filter`, then `sort`, `projection`, `limit` and `collation` when set.
    pub fn command(&self) -> Document {
        let mut find = doc! { "find": self.collection, "filter": self.filter.clone() };
        if let Some(sort) = &self.sort {
            find.insert("sort", sort.clone());
        }
        if let Some(projection) = &self.projection {
            find.insert("projection", projection.clone());
        }
        if let Some(limit) = self.limit {
            find.insert("limit", limit);
        }
        if let Some(collation) = collation_document(self.pattern) {
            find.insert("collation", collation);
        }
        find
    }

    /// The driver's `find` for this read on `collection`, with every option of the row.
    pub fn find<'c>(
        &self,
        collection: &'c Collection<RawDocumentBuf>,
    ) -> mongodb::action::Find<'c, RawDocumentBuf> {
        let mut find = collection.find(self.filter.clone());
        if let Some(sort) = &self.sort {
            find = find.sort(sort.clone());
        }
        if let Some(projection) = &self.projection {
            find = find.projection(projection.clone());
        }
        if let Some(collation) = collation(self.pattern) {
            find = find.collation(collation);
        }
        if let Some(selection) = selection_criteria(self.pattern).filter(|_| !self.transaction) {
            find = find.selection_criteria(selection);
        }
        if let Some(concern) = read_concern(self.pattern).filter(|_| !self.transaction) {
            find = find.read_concern(concern);
        }
        if let Some(limit) = self.limit {
            find = find.limit(limit);
            if limit > 0 {
                // All of it in the first reply: no `getMore` for a bounded read.
                find = find.batch_size(first_batch(limit));
            }
        }
        find
    }

    /// The driver's `countDocuments` of this read's filter on `collection`, with the
    /// row's collation and consistency.
    pub fn count<'c>(
        &self,
        collection: &'c Collection<RawDocumentBuf>,
    ) -> mongodb::action::CountDocuments<'c> {
        let mut count = collection.count_documents(self.filter.clone());
        if let Some(collation) = collation(self.pattern) {
            count = count.collation(collation);
        }
        if let Some(selection) = selection_criteria(self.pattern).filter(|_| !self.transaction) {
            count = count.selection_criteria(selection);
        }
        if let Some(concern) = read_concern(self.pattern).filter(|_| !self.transaction) {
            count = count.read_concern(concern);
        }
        count
    }
}

/// The `update` of a write row that names its document by `_id`, with the row's
/// collation and write concern; inside a `transaction`, whose write concern applies,
/// without the row's (the driver refuses one there).
pub fn update_one<'c>(
    pattern: &AccessPattern,
    collection: &'c Collection<Document>,
    filter: Document,
    update: Document,
    transaction: bool,
) -> mongodb::action::Update<'c> {
    let mut command = collection.update_one(filter, update);
    if let Some(collation) = collation(pattern) {
        command = command.collation(collation);
    }
    if let Some(concern) = write_concern(pattern).filter(|_| !transaction) {
        command = command.write_concern(concern);
    }
    command
}

/// The `findAndModify` of a write row that names its document by other fields: the
/// row's sort picks which document when several match; it returns the `_id` only,
/// as it was before the update. Inside a `transaction`, without the row's write
/// concern, as [`update_one`].
pub fn find_one_and_update<'c>(
    pattern: &'static AccessPattern,
    collection: &'c Collection<Document>,
    filter: Document,
    update: Document,
    transaction: bool,
) -> mongodb::action::FindOneAndUpdate<'c, Document> {
    let mut command = collection
        .find_one_and_update(filter, update)
        .projection(doc! { "_id": 1 })
        .return_document(mongodb::options::ReturnDocument::Before);
    if let Some(sort) = sort_document(pattern, false) {
        command = command.sort(sort);
    }
    if let Some(collation) = collation(pattern) {
        command = command.collation(collation);
    }
    if let Some(concern) = write_concern(pattern).filter(|_| !transaction) {
        command = command.write_concern(concern);
    }
    command
}

#[cfg(test)]
mod tests {
    use super::{first_batch, MAX_BATCH};

    #[test]
    fn every_limit_has_a_batch_size_the_driver_can_send() {
        assert_eq!(first_batch(1), 1);
        assert_eq!(first_batch(i64::from(MAX_BATCH)), MAX_BATCH);
        for n in [i64::from(i32::MAX), i64::from(u32::MAX), i64::MAX] {
            // The driver adds one to a batch equal to the limit: it must still fit.
            assert!(i32::try_from(first_batch(n) + 1).is_ok(), "{n}");
        }
    }
}
