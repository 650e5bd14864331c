//! A multi-tenant application's models: organisations' projects and their tasks, each
//! document owned by one organisation (`tenant = org_id`), tasks soft-deleted
//! (`soft_delete = deleted_at`) and purged a month after deletion.
//!
//! The tenant is an `OrgId`, a newtype whose constructor stands for the application's
//! authorization (here, `OrgId::authorized`): every generated method takes it first, so
//! no query can be written without one. The run shows two organisations with the same
//! project slugs, a token of one refused for the other, a task deleted, its slug
//! re-used, and the deleted task restored under another slug's shadow.
//!
//! Run: `cargo run -p docshape-examples --example tenants`

// See tests/index/mod.rs: a clippy false positive on repeated helper-attribute keys.
#![allow(clippy::duplicated_attributes)]

use docshape::bson::{oid::ObjectId, DateTime};
use docshape::paginate::{CursorError, PageError};
use docshape::{Embedded, Model};
use docshape_examples::fresh_database;
use serde::{Deserialize, Serialize};

/// An organisation's id, obtained once per request from the authorization layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Embedded)]
#[serde(transparent)]
pub struct OrgId(String);

impl OrgId {
    /// The tenant of an authenticated request (the application checks the caller here).
    fn authorized(org: &str) -> Self {
        OrgId(org.to_owned())
    }
}

/// A project: unique by slug within its organisation.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "projects", tenant = org_id)]
#[index(keys(org_id, _id))]
#[index(keys(org_id, slug), unique)]
#[access(name = "project", filter(org_id, _id))]
#[access(name = "project_by_slug", filter(org_id, slug))]
pub struct Project {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub org_id: OrgId,
    pub slug: String,
}

/// A task of a project: listed newest first, soft-deleted, purged 30 days after.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "tasks", tenant = org_id, soft_delete = deleted_at)]
#[index(keys(org_id, _id))]
#[index(keys(org_id, project, created = -1, _id = -1))]
#[index(keys(org_id, key), unique, partial_filter = r#"{"deleted_at": null}"#)]
#[access(name = "task", filter(org_id, _id))]
#[access(name = "task_by_key", filter(org_id, key))]
#[access(name = "board", filter(org_id, project), sort(created = -1), paginate)]
#[access(name = "trash", filter(org_id, _id), include_deleted)]
#[access(name = "retitle", filter(org_id, _id), update(set(title)))]
pub struct Task {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub org_id: OrgId,
    pub project: ObjectId,
    pub key: String,
    pub title: String,
    pub created: i64,
    #[index(expire_after = "30d")]
    pub deleted_at: Option<DateTime>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_tenants").await?;
    docshape::sync::<Project>(&db).await?;
    docshape::sync::<Task>(&db).await?;
    let (acme, globex) = (OrgId::authorized("acme"), OrgId::authorized("globex"));

    println!("== two organisations, the same slug each");
    let mut projects = Vec::new();
    for org in [&acme, &globex] {
        let p = Project { id: ObjectId::new(), org_id: org.clone(), slug: "website".into() };
        Project::collection(&db).insert_one(&p).await?;
        projects.push(p);
    }
    let acme_site = Project::project_by_slug(acme.clone(), "website").one(&db).await?.expect("acme's");
    assert_eq!(acme_site.id, projects[0].id);
    // globex's project id, asked for acme: nothing.
    assert!(Project::project(acme.clone(), projects[1].id).one(&db).await?.is_none());
    println!("acme sees its project only: {}", acme_site.id);

    println!("== tasks; a board token of acme is refused for globex");
    for (org, project) in [(&acme, projects[0].id), (&globex, projects[1].id)] {
        let tasks: Vec<Task> = (0..5)
            .map(|i| Task {
                id: ObjectId::new(),
                org_id: org.clone(),
                project,
                key: format!("T-{i}"),
                title: format!("task {i}"),
                created: i,
                deleted_at: None,
            })
            .collect();
        Task::collection(&db).insert_many(&tasks).await?;
    }
    let page = Task::board(acme.clone(), projects[0].id).page_size(2).fetch(&db).await?;
    let token = page.next.expect("more tasks");
    let refused = Task::board(globex.clone(), projects[1].id).after(&token).fetch(&db).await.unwrap_err();
    assert!(matches!(refused, PageError::Cursor(CursorError::WrongPattern)));
    println!("refused: {refused}");

    println!("== soft delete: T-1 deleted, its key re-used, then the old one restored as trash");
    let t1 = Task::task_by_key(acme.clone(), "T-1").one(&db).await?.expect("T-1");
    assert!(Task::delete_by_id(acme.clone(), t1.id).run(&db).await?);
    assert!(Task::task(acme.clone(), t1.id).one(&db).await?.is_none(), "deleted tasks are not read");
    let in_trash = Task::trash(acme.clone(), t1.id).one(&db).await?.expect("include_deleted reads it");
    println!("in the trash since {:?}", in_trash.deleted_at);
    let again = Task { id: ObjectId::new(), title: "T-1, again".into(), ..t1.clone() };
    let again = Task { deleted_at: None, ..again };
    Task::collection(&db).insert_one(&again).await?;
    println!("T-1 re-used by {}: a deleted task blocks no key", again.id);
    // globex cannot restore acme's task.
    assert!(!Task::restore_by_id(globex.clone(), t1.id).run(&db).await?);
    assert!(Task::delete_by_id(acme.clone(), again.id).run(&db).await?);
    assert!(Task::restore_by_id(acme.clone(), t1.id).run(&db).await?);
    assert_eq!(Task::task_by_key(acme, "T-1").one(&db).await?.map(|t| t.id), Some(t1.id));
    println!("restored {}", t1.id);
    Ok(())
}
