//! A field holding another collection's `_id`s is written as `Ref<T>` when its values
//! are of exactly the kind of that `_id` (found by looking sampled values up there):
//! the generated models compile, read every stored document, sync and load through
//! the reference; a field whose integers are narrower than the ids it references
//! stays the raw id, said in the report; `--plain` keeps every raw id.
//!
//! The generated source is compared with `references_inferred.rs` beside this file,
//! which this binary compiles (`DOCSHAPE_INFER=overwrite` rewrites it; review the diff).

use docshape::bson::{doc, oid::ObjectId, Bson, Document};
use docshape::Model;
use docshape_cli::infer::{infer, InferOptions, Inferred};
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::IndexModel;

#[rustfmt::skip]
#[allow(dead_code)]
#[path = "references_inferred.rs"]
mod inferred;

/// Authors (`ObjectId` ids) and the essays that reference them, a reviewer in three
/// essays of five, the author's name copied (two copies stale); remarks copying it
/// with no index on their reference; dispatchers with 64-bit ids and callouts that hold them as 32-bit integers.
async fn seed(db: &mongodb::Database) {
    let columnists: Vec<ObjectId> = (0..8).map(|_| ObjectId::new()).collect();
    let docs: Vec<Document> = columnists
        .iter()
        .enumerate()
        .map(|(i, id)| doc! { "_id": *id, "name": format!("Columnist {i}") })
        .collect();
    db.collection::<Document>("columnists").insert_many(docs).await.unwrap();
    let essays: Vec<Document> = (1..=50)
        .map(|i: i32| {
            let author = i as usize % 8;
            // Two copies of the author's name went stale when the author was renamed.
            let name = if [7, 19].contains(&i) { format!("Old {author}") } else { format!("Columnist {author}") };
            let mut d = doc! { "_id": i, "title": format!("post {i}"), "author_id": columnists[author], "author_name": name };
            if i % 5 < 3 {
                d.insert("reviewer_id", columnists[(i as usize + 3) % 8]);
            }
            d
        })
        .collect();
    let posts_c = db.collection::<Document>("essays");
    posts_c.insert_many(essays).await.unwrap();
    posts_c.create_index(IndexModel::builder().keys(doc! { "author_id": 1 }).build()).await.unwrap();
    // Comments copy their author's name too, with no index on the reference.
    let remarks: Vec<Document> = (0..20)
        .map(|i: usize| doc! { "_id": ObjectId::new(), "by": columnists[i % 8], "by_name": format!("Columnist {}", i % 8), "text": "ok" })
        .collect();
    db.collection::<Document>("remarks").insert_many(remarks).await.unwrap();
    let dispatchers: Vec<Document> =
        (1..=6_i64).map(|i| doc! { "_id": i, "desk": format!("d{i}") }).collect();
    db.collection::<Document>("dispatchers").insert_many(dispatchers).await.unwrap();
    let callouts: Vec<Document> =
        (1..=40).map(|i: i32| doc! { "_id": i, "agent_id": Bson::Int32(1 + i % 6) }).collect();
    db.collection::<Document>("callouts").insert_many(callouts).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_field_of_another_collections_ids_is_written_as_a_ref() {
    use inferred::{Callout, Columnist, Dispatcher, Essay, Remark};
    let db = testkit::database("infer_refs").await.unwrap();
    seed(&db).await;
    let inferred = infer(&db, &InferOptions::default()).await.unwrap();
    let source = inferred.source();
    let report = inferred.report();

    assert!(source.contains("use docshape::refs::Ref;\n"), "{source}");
    for written in [
        "`infer --plain` leaves the raw id\n    pub author_id: Ref<Columnist>,",
        "#[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub reviewer_id: Option<Ref<Columnist>>,",
        "#[index(keys(author_id))]",
        // 32-bit values referencing 64-bit ids: `Ref<Dispatcher>` would validate them as
        // `long` and refuse every stored ticket.
        "    pub agent_id: i32,",
        // Copies: kept in step by docshape's writers where an index leads with the
        // reference, a snapshot where none does.
        "stale in 2 of 50 documents (refresh them first: INFERRED.md): `#[denormalized]`; `infer --plain` leaves it undeclared\n    #[denormalized(from = \"Columnist::name\", via = \"author_id\", refresh = \"sync\")]\n    pub author_name: String,",
        "#[denormalized(from = \"Columnist::name\", via = \"by\", refresh = \"never\")]\n    pub by_name: String,",
    ] {
        assert!(source.contains(written), "{written} not in:\n{source}");
    }
    let essays = report.split("## `essays`").nth(1).unwrap().split("\n## ").next().unwrap();
    assert!(essays.contains("- `author_id` holds `columnists`'s ids: 8 of 8 distinct sampled values are ids there. `models.rs` writes it as `Ref<Columnist>`"), "{essays}");
    assert!(essays.contains("- `reviewer_id` holds `columnists`'s ids: "), "{essays}");
    assert!(essays.contains("  - `author_name` copies `columnists.name` (48 of 50 compared documents equal; 2 stale, see below): a denormalized copy. `models.rs` declares it `#[denormalized(from = \"Columnist::name\", via = \"author_id\", refresh = \"sync\")]`: an index leads with `author_id`"), "{essays}");
    let remarks = report.split("## `remarks`").nth(1).unwrap().split("\n## ").next().unwrap();
    assert!(remarks.contains("a snapshot: no index leads with `by`"), "{remarks}");
    let callouts = report.split("## `callouts`").nth(1).unwrap().split("\n## ").next().unwrap();
    assert!(callouts.contains("- `agent_id` holds `dispatchers`'s ids: 6 of 6 distinct sampled values are ids there. It stays the raw id"), "{callouts}");

    // `--plain`: every reference stays its raw id, and the report says why.
    let plain = Inferred { plain: true, ..inferred.clone() };
    let plain_source = plain.source();
    assert!(!plain_source.contains("Ref"), "{plain_source}");
    assert!(!plain_source.contains("#[denormalized"), "{plain_source}");
    assert!(plain_source.contains("    pub author_name: String,"), "{plain_source}");
    assert!(plain_source.contains("    pub author_id: ObjectId,"), "{plain_source}");
    assert!(plain_source.contains("    pub reviewer_id: Option<ObjectId>,"), "{plain_source}");
    assert!(plain.report().contains("`--plain` was given"), "{}", plain.report());

    let source = source.replace(db.name(), "shop");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("infer/references_inferred.rs");
    if std::env::var("DOCSHAPE_INFER").is_ok_and(|v| v == "overwrite") {
        std::fs::write(&fixture, &source).unwrap();
    }
    let expected = std::fs::read_to_string(&fixture).unwrap().replace("\r\n", "\n");
    assert!(
        expected == source,
        "the generated source differs from {} (DOCSHAPE_INFER=overwrite rewrites it):\n{source}",
        fixture.display()
    );

    // Every stored document reads, syncs into a fresh database (its validator accepts
    // them, its indexes equal the original's) and each reference loads its author.
    let fresh = testkit::database("infer_refs_fresh").await.unwrap();
    assert_eq!(super::copy_through::<Columnist>(&db, &fresh).await, 8);
    assert_eq!(super::copy_through::<Essay>(&db, &fresh).await, 50);
    assert_eq!(super::copy_through::<Dispatcher>(&db, &fresh).await, 6);
    assert_eq!(super::copy_through::<Callout>(&db, &fresh).await, 40);
    assert_eq!(super::copy_through::<Remark>(&db, &fresh).await, 20);
    let essays: Vec<Essay> = Essay::collection(&db).find(doc! {}).await.unwrap().try_collect().await.unwrap();
    let mut reviewed = 0;
    for post in &essays {
        let author = post.author_id.load(&db).await.unwrap().expect("every author exists");
        assert_eq!(author.name, format!("Columnist {}", post.id as usize % 8));
        if let Some(reviewer) = &post.reviewer_id {
            assert!(reviewer.load(&db).await.unwrap().is_some());
            reviewed += 1;
        }
    }
    assert_eq!(reviewed, 30);
    // The declared copies are the derive's: renaming an author through docshape's
    // writer rewrites its essays' copies (`sync`) and leaves its remarks' snapshots.
    let renamed = essays[0].author_id;
    docshape::denormalized::update_one::<Columnist>(
        &db,
        renamed.id(),
        doc! { "$set": { "name": "Renamed" } },
    )
    .await
    .unwrap();
    let posts_of = doc! { "author_id": renamed.id() };
    let copies: Vec<Essay> =
        Essay::collection(&db).find(posts_of).await.unwrap().try_collect().await.unwrap();
    assert!(!copies.is_empty());
    assert!(copies.iter().all(|p| p.author_name == "Renamed"), "{copies:?}");
    let snapshots: Vec<Remark> =
        Remark::collection(&db).find(doc! { "by": renamed.id() }).await.unwrap().try_collect().await.unwrap();
    assert!(!snapshots.is_empty() && snapshots.iter().all(|c| c.by_name != "Renamed"), "{snapshots:?}");
    // The validator synced from `Essay` refuses a reference of another kind.
    let wrong = fresh
        .collection::<Document>("essays")
        .insert_one(doc! { "_id": 999, "title": "x", "author_id": "not an id" })
        .await;
    assert!(wrong.is_err(), "a string author_id was accepted");
}
