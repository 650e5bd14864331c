//! The registry of models: every `#[derive(Model)]` on a non-generic type submits a
//! [`RegisteredModel`] (and its extra collections) through the `inventory` crate. The
//! public path [`crate::registry`] adds the key families, which the keys pattern
//! registers.

use std::fmt;

use crate::core::descriptor::CollectionSpec;
pub use crate::core::descriptor::RegisteredModel;
pub use crate::core::error::DuplicateCollection;
use crate::core::model::Model;

impl RegisteredModel {
    /// The entry for `T`; what the derive submits.
    pub const fn of<T: Model>() -> Self {
        Self {
            collection: T::COLLECTION,
            type_name: std::any::type_name::<T>,
            spec: CollectionSpec::of::<T>,
            access_patterns: T::ACCESS_PATTERNS,
            polymorphic_rows: T::POLYMORPHIC_ROWS,
            relations: T::RELATIONS,
            nested: T::NESTED,
            stamps: T::STAMPS,
            copies: T::COPIES,
            variants: T::VARIANTS,
            tenant: T::TENANT,
            soft_delete: T::SOFT_DELETE,
        }
    }
}

impl fmt::Debug for RegisteredModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredModel")
            .field("collection", &self.collection)
            .field("type_name", &(self.type_name)())
            .finish_non_exhaustive()
    }
}

inventory::collect!(RegisteredModel);

/// A collection a model needs besides its own (an outlier's overflow collection),
/// registered by the derive with the model.
#[derive(Clone, Copy)]
pub struct RegisteredCollection {
    /// The owning model's type name.
    pub owner: fn() -> &'static str,
    /// The collection's spec.
    pub spec: fn() -> CollectionSpec,
    /// The embedded types its documents hold, whose copies are registered under this
    /// collection (an outlier's overflow documents hold the items in `items`).
    pub nested: &'static [crate::core::descriptor::Nested],
}

impl fmt::Debug for RegisteredCollection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredCollection").field("owner", &(self.owner)()).finish_non_exhaustive()
    }
}

inventory::collect!(RegisteredCollection);

/// The registered model stored in `collection` (the first one linked, when two claim
/// it: [`specs`] refuses such a program).
fn model_of(collection: &str) -> Option<&'static RegisteredModel> {
    inventory::iter::<RegisteredModel>.into_iter().find(|m| m.collection == collection)
}

/// The tenant field of the model stored in `collection` (`Model::TENANT`).
pub(crate) fn tenant_of(collection: &str) -> Option<&'static str> {
    model_of(collection).and_then(|m| m.tenant)
}

/// The deletion date of the model stored in `collection` (`Model::SOFT_DELETE`).
pub(crate) fn soft_delete_of(collection: &str) -> Option<&'static str> {
    model_of(collection).and_then(|m| m.soft_delete)
}

/// The filter of the live document `id` of `collection`: `{_id: {$eq: id}}`, and
/// `{deleted_at: null}` on a soft-delete model, whose deleted documents are, to
/// whatever is derived from them (copies), deleted.
pub(crate) fn live_by_id(collection: &str, id: &bson::Bson) -> bson::Document {
    let mut filter = bson::doc! { "_id": crate::core::model::eq(id.clone()) };
    if let Some(field) = soft_delete_of(collection) {
        filter.insert(field, bson::Bson::Null);
    }
    filter
}

/// Every registered model, ordered by collection name and then type name, so that what
/// is built from the list does not depend on link order.
pub fn models() -> Vec<&'static RegisteredModel> {
    let mut all: Vec<&'static RegisteredModel> = inventory::iter::<RegisteredModel>.into_iter().collect();
    all.sort_by(|a, b| a.collection.cmp(b.collection).then_with(|| (a.type_name)().cmp((b.type_name)())));
    all
}

/// The collection spec of every registered model and of the collections they need
/// besides their own (outlier overflow), ordered by collection name; an error when two
/// claim the same collection.
pub fn specs() -> Result<Vec<CollectionSpec>, DuplicateCollection> {
    let mut all: Vec<(CollectionSpec, String)> =
        models().iter().map(|m| ((m.spec)(), (m.type_name)().to_owned())).collect();
    for extra in inventory::iter::<RegisteredCollection> {
        let spec = (extra.spec)();
        let owner = format!("{} (its `{}`)", (extra.owner)(), spec.name);
        all.push((spec, owner));
    }
    all.sort_by(|a, b| a.0.name.cmp(&b.0.name).then_with(|| a.1.cmp(&b.1)));
    if let Some(pair) = all.windows(2).find(|w| w[0].0.name == w[1].0.name) {
        let collection = pair[0].0.name.clone();
        let types = all.iter().filter(|(s, _)| s.name == collection).map(|(_, t)| t.clone()).collect();
        return Err(DuplicateCollection { collection, types });
    }
    Ok(all.into_iter().map(|(s, _)| s).collect())
}
