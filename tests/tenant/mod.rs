//! Tenants and soft deletes on a real server: every row of a tenant model filters on
//! the tenant first, so no call made for one tenant reads, writes or counts another's
//! documents (the property test in `isolation.rs`); a soft-delete model's rows read
//! live documents only, its unique indexes are partial to them, and `delete_by_id`,
//! `restore_by_id` and a TTL purge work (`soft_delete.rs`).

// See tests/index/mod.rs: a clippy false positive on repeated helper-attribute keys.
#![allow(clippy::duplicated_attributes)]

mod copies;
mod isolation;
mod refresh;
mod soft_delete;
mod summary;

use docshape::bson::DateTime;
use docshape::{KeyFamily, Model};
use serde::{Deserialize, Serialize};

/// A project of an organisation, soft-deleted: a read row of each shape, a paginated
/// row, a write row, an upsert row and a row that reads deleted projects too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "tenant_projects", tenant = org_id, soft_delete = deleted_at)]
#[index(keys(org_id, _id))]
#[index(keys(org_id, slug), unique, partial_filter = r#"{"deleted_at": null}"#)]
#[index(keys(org_id, owner, created = -1, _id = -1))]
#[access(name = "project", filter(org_id, _id))]
#[access(name = "project_by_slug", filter(org_id, slug))]
#[access(name = "projects_of_owner", filter(org_id, owner), sort(created = -1))]
#[access(name = "owner_feed", filter(org_id, owner), sort(created = -1), paginate)]
#[access(name = "any_project", filter(org_id, _id), include_deleted)]
#[access(name = "rename_project", filter(org_id, _id), update(set(name)))]
#[access(name = "touch_project", filter(org_id, slug), update(set(name)), upsert(default(created, owner)))]
pub struct Project {
    #[serde(rename = "_id")]
    pub id: docshape::bson::oid::ObjectId,
    pub org_id: String,
    pub slug: String,
    pub owner: String,
    pub name: String,
    pub created: i64,
    #[index(expire_after = "30d")]
    pub deleted_at: Option<DateTime>,
}

/// A draft, purged as soon as it is deleted: its TTL index on the deletion date
/// expires it at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "tenant_drafts", tenant = org_id, soft_delete = deleted_at)]
#[index(keys(org_id, _id))]
#[access(name = "draft", filter(org_id, _id))]
pub struct Draft {
    #[serde(rename = "_id")]
    pub id: i64,
    pub org_id: String,
    #[index(expire_after = "0s")]
    pub deleted_at: Option<DateTime>,
}

/// A support ticket, read through a cache keyed by its tenant and its id, and
/// soft-deleted: the cached rows of a tenant model (`isolation.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "tenant_tickets", tenant = org_id, soft_delete = deleted_at)]
#[index(keys(org_id, _id))]
#[access(name = "ticket", filter(org_id, _id), cache = TicketCache)]
#[access(name = "retitle_ticket", filter(org_id, _id), update(set(title)))]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: String,
    pub org_id: String,
    pub title: String,
    pub deleted_at: Option<DateTime>,
}

/// A ticket as cached for one tenant: the tenant, then the id.
#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:tenant_ticket:{org}:{id}", kind = string, value = Ticket, ttl = "600s", note = "invalidate on ticket write")]
pub struct TicketCache {
    pub org: String,
    pub id: String,
}

/// A project of `org` with a fresh id.
pub fn project(org: &str, slug: &str, owner: &str, created: i64) -> Project {
    Project {
        id: docshape::bson::oid::ObjectId::new(),
        org_id: org.to_owned(),
        slug: slug.to_owned(),
        owner: owner.to_owned(),
        name: format!("{org}/{slug}"),
        created,
        deleted_at: None,
    }
}
