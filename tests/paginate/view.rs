//! A paginated row with `fields(...)` pages its view: the seed's first access pattern
//! ("Posts by user, newest first", fields needed: title, created_at) sends one `find`
//! per page whose projection is those fields plus the sort keys that place each item,
//! and its pages hold `PostsByAuthorView`s, not whole posts.

use std::collections::HashSet;

use docshape::bson::{doc, DateTime, Document};
use docshape::Model;
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "view_posts")]
#[index(keys(author_id, created_at = -1, _id = -1))]
#[access(
    name = "posts_by_author",
    operation = "Posts by user, newest first",
    filter(author_id),
    sort(created_at = -1),
    fields(title, created_at),
    view(derive(Debug, Clone, PartialEq)),
    paginate
)]
pub(crate) struct Post {
    #[serde(rename = "_id")]
    id: String,
    author_id: String,
    title: String,
    /// What a feed does not need: large, and never sent for a page.
    body: String,
    created_at: DateTime,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paginated_row_with_fields_pages_its_view_with_one_projected_find_per_page() {
    let (db, log) = testkit::monitored("paginate_view").await.unwrap();
    docshape::sync::<Post>(&db).await.unwrap();
    let posts: Vec<Post> = (0..25)
        .map(|i| Post {
            id: format!("p_{i:02}"),
            author_id: if i % 5 == 4 { "u_7".into() } else { "u_42".into() },
            title: format!("Post {i}"),
            body: "x".repeat(10_000),
            // Pairs share a timestamp: `_id` breaks the ties.
            created_at: DateTime::from_millis(1_785_000_000_000 + (i / 2) * 60_000),
        })
        .collect();
    Post::collection(&db).insert_many(&posts).await.unwrap();
    let mut truth: Vec<&Post> = posts.iter().filter(|p| p.author_id == "u_42").collect();
    truth.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));

    log.clear();
    let mut seen: Vec<PostsByAuthorView> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut p = Post::posts_by_author("u_42").page_size(6);
        if let Some(c) = &cursor {
            p = p.after(c);
        }
        let page = p.fetch(&db).await.unwrap();
        pages += 1;
        assert!(pages <= 10, "the walk does not end");
        seen.extend(page.items);
        match page.next {
            Some(n) => cursor = Some(n),
            None => break,
        }
    }
    let expected: Vec<PostsByAuthorView> = truth
        .iter()
        .map(|p| PostsByAuthorView { title: p.title.clone(), created_at: p.created_at })
        .collect();
    assert_eq!(seen, expected, "every post of the feed once, newest first, as its view");
    let titles: HashSet<&str> = seen.iter().map(|v| v.title.as_str()).collect();
    assert_eq!(titles.len(), 20);

    let finds: Vec<Document> = log.named("find");
    assert_eq!(finds.len(), pages, "one find per page");
    for find in &finds {
        assert_eq!(
            find.get_document("projection").unwrap(),
            &doc! { "title": 1, "created_at": 1, "_id": 1 },
            "the view's fields and the sort keys, never `body`: {find}"
        );
    }
    // A backward page reads through the same projection.
    let back = Post::posts_by_author("u_42").page_size(6).before(cursor.as_deref().unwrap_or_default());
    let command = back.find_command(db.name()).unwrap();
    assert_eq!(command.get_document("projection").unwrap(), &doc! { "title": 1, "created_at": 1, "_id": 1 });
}
