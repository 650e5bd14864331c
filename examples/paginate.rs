//! A feed with keyset pagination: patterns-en's "posts by user, newest first", paged
//! with opaque cursor tokens instead of `skip`.
//!
//! "Offsets (skip) degrade linearly and break when rows shift — never for feeds." Here
//! a new post arrives between two page requests and nothing shifts: no post is shown
//! twice, none is skipped. Tokens are signed, so a client cannot forge a position.
//!
//! Run: `cargo run --example paginate`

use docshape::bson::DateTime;
use docshape::paginate::{CursorKey, PageError};
use docshape::Model;
use docshape_examples::fresh_database;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "posts")]
// The seed's index, with `_id` appended: it breaks ties between equal timestamps, so
// the index must hold it too, or the server sorts every page in memory.
#[index(keys(author_id, created_at = -1, _id = -1))]
#[access(
    name = "posts_by_author",
    operation = "Posts by user, newest first",
    filter(author_id),
    sort(created_at = -1),
    // The seed's "fields needed": each page holds a `PostsByAuthorView` of these
    // two, and the server sends nothing else (the sort keys that place each item
    // come along in the projection, not in the view).
    fields(title, created_at),
    view(derive(Debug)),
    freq = "500 r/s",
    consistency = "eventual ok",
    paginate
)]
struct Post {
    #[serde(rename = "_id")]
    id: String,
    author_id: String,
    /// Copy of the author's name, refreshed on rename.
    author_name: String,
    title: String,
    created_at: DateTime,
}

fn post(n: u32, minute: i64) -> Post {
    Post {
        id: format!("p_{n:03}"),
        author_id: "u_42".into(),
        author_name: "Alice".into(),
        title: format!("Post number {n}"),
        created_at: DateTime::from_millis(1_785_000_000_000 + minute * 60_000),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_feed").await?;
    docshape::sync::<Post>(&db).await?;
    docshape_testkit::assert_access_patterns_use_indexes::<Post>(&db).await;
    // 23 posts, two or three a minute: many share a timestamp.
    let posts: Vec<Post> = (0..23).map(|n| post(n, i64::from(n) / 3)).collect();
    Post::collection(&db).insert_many(&posts).await?;
    // In production the key comes from your secret store.
    let key = CursorKey::new(b"feed-cursor-secret-0123456789abc".to_vec())?;

    println!("== forward, 5 a page");
    let mut shown: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut page_no = 0;
    let mut last_prev;
    loop {
        let mut request = Post::posts_by_author("u_42").page_size(5).signed_with(&key);
        if let Some(c) = &cursor {
            request = request.after(c);
        }
        let page = request.fetch(&db).await?;
        page_no += 1;
        let titles: Vec<&str> = page.items.iter().map(|p| p.title.as_str()).collect();
        println!("page {page_no}: {titles:?}");
        shown.extend(page.items.iter().map(|p| p.title.clone()));
        if page_no == 2 {
            // A new post arrives while the reader is on page 2: it is newer than
            // everything, so it belongs before the reader's position and does not
            // push any post onto the next page twice.
            Post::collection(&db).insert_one(post(99, 100)).await?;
            println!("        (a new post, number 99, arrived)");
        }
        last_prev = page.prev.clone();
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let mut unique = shown.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), shown.len(), "no post twice");
    assert_eq!(shown.len(), 23, "every post that existed throughout, once");
    println!("{} posts shown, none twice", shown.len());

    println!("== back one page from the last");
    if let Some(prev) = last_prev {
        let page =
            Post::posts_by_author("u_42").page_size(5).signed_with(&key).before(&prev).fetch(&db).await?;
        let titles: Vec<&str> = page.items.iter().map(|p| p.title.as_str()).collect();
        println!("previous page: {titles:?}");
    }

    println!("== what a client cannot do with a token");
    let first = Post::posts_by_author("u_42").page_size(5).signed_with(&key).fetch(&db).await?;
    let token = first.next.unwrap_or_default();
    println!("token: {token}");
    let mut forged = token.clone().into_bytes();
    let last = forged.len() - 3;
    forged[last] = if forged[last] == b'x' { b'y' } else { b'x' };
    let forged = String::from_utf8(forged)?;
    match Post::posts_by_author("u_42").signed_with(&key).after(&forged).fetch(&db).await {
        Err(PageError::Cursor(e)) => println!("altered token refused: {e}"),
        other => return Err(format!("an altered token was accepted: {other:?}").into()),
    }
    match Post::posts_by_author("u_42").signed_with(&key).after("{\"$gt\": 1}").fetch(&db).await {
        Err(PageError::Cursor(e)) => println!("injected operator refused: {e}"),
        other => return Err(format!("junk was accepted: {other:?}").into()),
    }
    let find =
        Post::posts_by_author("u_42").page_size(5).signed_with(&key).after(&token).find_command(db.name())?;
    println!("the query a page runs (one find, no skip, the view's projection): {find}");
    assert_eq!(
        find.get_document("projection")?,
        &docshape::bson::doc! { "title": 1, "created_at": 1, "_id": 1 },
        "the view's fields, and the sort keys that place each item"
    );
    Ok(())
}
