//! A cursor token is bound to its database and to its equality values: a token minted
//! in one database is refused in another, and one owner's token on another owner's feed.

use docshape::paginate::{CursorError, CursorKey, PageError};
use docshape::Model;
use docshape_testkit as testkit;

use super::{item, FeedItem};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_refused_in_another_database_and_on_another_feed() {
    let a = testkit::database("paginate_scope_a").await.unwrap();
    let b = testkit::database("paginate_scope_b").await.unwrap();
    let key = CursorKey::new(b"a secret of thirty-two bytes!!!!".to_vec()).unwrap();
    for db in [&a, &b] {
        let docs: Vec<FeedItem> =
            (0..20).map(|i| item(i, if i % 2 == 0 { "x" } else { "y" }, i * 1000, 0, i)).collect();
        FeedItem::collection(db).insert_many(&docs).await.unwrap();
    }
    for key in [None, Some(&key)] {
        let paginator = |owner: &str| {
            let p = FeedItem::feed_by_author(owner).page_size(3);
            match key {
                Some(k) => p.signed_with(k),
                None => p,
            }
        };
        let next = paginator("x").fetch(&a).await.unwrap().next.unwrap();
        // Where it was minted, it works.
        assert_eq!(paginator("x").after(&next).fetch(&a).await.unwrap().items.len(), 3);
        let err = paginator("x").after(&next).fetch(&b).await.unwrap_err();
        assert!(matches!(err, PageError::Cursor(CursorError::WrongPattern)), "another database: {err}");
        let err = paginator("y").after(&next).fetch(&a).await.unwrap_err();
        assert!(matches!(err, PageError::Cursor(CursorError::WrongPattern)), "another owner: {err}");
        let err = paginator("y").before(&next).fetch(&a).await.unwrap_err();
        assert!(matches!(err, PageError::Cursor(CursorError::WrongPattern)), "another owner: {err}");
    }
}
