//! Copies between two tenant models: the holder's tenant field, the source's tenant,
//! and the documents of another tenant that reference a source (see the parent's
//! module docs).

use bson::{doc, Bson, Document};
use futures_util::TryStreamExt;
use mongodb::Collection;

use super::{value_at, via_filter, CopyWrite};
use crate::core::access::literal::Literal;
use crate::core::denormalized::{CopySpec, CROSS_TENANT_REPORTED};
use crate::core::model::eq;

/// The tenant field of the documents holding `spec`, when the copy is between two
/// tenant models: they take the copy only from a source document of their own tenant.
pub(crate) fn holder_tenant(spec: &CopySpec) -> Option<&'static str> {
    spec.source_tenant?;
    crate::core::registry::tenant_of(spec.collection)
}

/// The tenant of the source document `id` of `spec`'s source, as stored (`Null` when
/// it has none); `None` when the document is gone: what is written then is a deleted
/// source's `on_delete` (a cleared copy carries no tenant's data), so it is not scoped.
pub(super) async fn source_tenant(
    target: &Collection<Document>,
    spec: &CopySpec,
    id: &Bson,
) -> mongodb::error::Result<Option<Bson>> {
    let Some(field) = spec.source_tenant else { return Ok(None) };
    let db = target.client().database(&target.namespace().db);
    let found = db
        .collection::<Document>(spec.source)
        .find_one(doc! { "_id": eq(id.clone()) })
        .projection(doc! { field: 1 })
        .await?;
    Ok(found.map(|d| value_at(&d, field).unwrap_or(Bson::Null)))
}

/// The documents referencing the source whose tenant is not the source's, at most
/// [`CROSS_TENANT_REPORTED`]. On mongod, the holder's indexes lead with its tenant:
/// `{tenant: {$ne: t}, via: id}` is two ranges on the tenant with the point `id` on
/// `via` under each, served by an index `(tenant, via)` with a seek per tenant value.
pub(super) async fn other_tenants(
    target: &Collection<Document>,
    write: &CopyWrite<'_>,
    field: &'static str,
    tenant: &Bson,
) -> mongodb::error::Result<Vec<Bson>> {
    let mut filter = via_filter(write.spec, write.source);
    if let Some(only) = write.only {
        filter.insert("_id", eq(only.clone()));
    }
    // `$not: {$eq}` rather than `$ne`: the server refuses a regex under `$ne`.
    filter.insert(field, Literal::stored(tenant.clone()).ne());
    let found: Vec<Document> = target
        .find(filter)
        .projection(doc! { "_id": 1 })
        .limit(CROSS_TENANT_REPORTED as i64)
        .await?
        .try_collect()
        .await?;
    Ok(found.into_iter().filter_map(|d| d.get("_id").cloned()).collect())
}
