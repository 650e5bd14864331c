//! Each anomaly `docshape infer` reports is named with its documents and a remedy:
//! outlier arrays (ids, lengths, a threshold between the normal maximum and the first
//! outlier), large documents (ids and sizes, GridFS or a side collection), bucket
//! documents whose stored count disagrees with their array, redundant index prefixes;
//! and no false alarm on a bucket's capped array or on a long name that costs little.

use docshape::bson::{doc, oid::ObjectId, Document};
use docshape_cli::infer::{infer, InferOptions};
use docshape_testkit as testkit;
use mongodb::IndexModel;

async fn seed(db: &mongodb::Database) {
    // Playlists of 5 to 40 tracks, and two of thousands.
    let playlists: Vec<Document> = (1..=60)
        .map(|i: i32| {
            let n = match i {
                7 => 3_000,
                42 => 1_500,
                _ => 5 + (i as usize * 7) % 36,
            };
            doc! { "_id": i, "owner": format!("u{}", i % 5), "created": i * 1_000, "tracks": (0..n as i32).collect::<Vec<_>>() }
        })
        .collect();
    let playlists_c = db.collection::<Document>("playlists");
    playlists_c.insert_many(playlists).await.unwrap();
    playlists_c
        .create_indexes(vec![
            IndexModel::builder().keys(doc! { "owner": 1 }).build(),
            IndexModel::builder().keys(doc! { "owner": 1, "created": -1 }).build(),
        ])
        .await
        .unwrap();

    // Attachments: two documents past 2 MiB.
    let attachments: Vec<Document> = (1..=6)
        .map(|i| {
            let size = match i {
                1 => 2_500_000,
                4 => 3_000_000,
                _ => 1_000,
            };
            doc! { "_id": format!("a{i}"), "name": format!("file{i}.bin"), "payload": "x".repeat(size) }
        })
        .collect();
    db.collection::<Document>("attachments").insert_many(attachments).await.unwrap();

    // Hourly buckets capped at 1,200 readings: 20 full, 10 filling, and three whose
    // stored count drifted from their array.
    let buckets: Vec<Document> = (0..30)
        .map(|i: i32| {
            let len = if i < 20 { 1_200 } else { 100 * (i - 19) };
            let count = match i {
                3 | 11 => 1_210,
                25 => 0,
                _ => len,
            };
            doc! { "_id": i, "sensor": format!("s{}", i % 4), "count": count, "readings": (0..len).collect::<Vec<_>>() }
        })
        .collect();
    db.collection::<Document>("temp_buckets").insert_many(buckets).await.unwrap();

    // Posts copy their author's name; three copies went stale when authors renamed.
    let authors: Vec<ObjectId> = (0..10).map(|_| ObjectId::new()).collect();
    let names: Vec<Document> = authors
        .iter()
        .enumerate()
        .map(|(i, id)| doc! { "_id": *id, "name": format!("Author {i}") })
        .collect();
    db.collection::<Document>("authors").insert_many(names).await.unwrap();
    let posts: Vec<Document> = (1..=50)
        .map(|i: i32| {
            let author = (i % 10) as usize;
            let name = if [5, 17, 33].contains(&i) {
                format!("Old name {author}")
            } else {
                format!("Author {author}")
            };
            doc! { "_id": i, "title": format!("post {i}"), "author_id": authors[author], "author_name": name }
        })
        .collect();
    db.collection::<Document>("posts").insert_many(posts).await.unwrap();

    // Profiles: a 14-byte name beside a 2,000-character biography costs under 1%.
    let profiles: Vec<Document> =
        (0..20).map(|i| doc! { "display_name_x": format!("p{i}"), "bio": "b".repeat(2_000) }).collect();
    db.collection::<Document>("profiles").insert_many(profiles).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_anomaly_is_named_with_its_documents_and_a_remedy() {
    let db = testkit::database("infer_anomalies").await.unwrap();
    seed(&db).await;
    let inferred = infer(&db, &InferOptions::default()).await.unwrap();
    let report = inferred.report();
    let section = |name: &str| -> String {
        let body =
            report.split(&format!("## `{name}`")).nth(1).unwrap_or_else(|| panic!("{name}:\n{report}"));
        body.split("\n## ").next().unwrap().to_owned()
    };

    let playlists = section("playlists");
    assert!(
        playlists.contains(
            "**outlier array** `tracks`: 2 of 60 documents (3.3%) hold more than 1,000 elements: `7` (3,000), `42` (1,500); the others hold at most 40. Mark it `#[outlier(threshold = 40)]`"
        ),
        "{playlists}"
    );
    assert!(
        playlists.contains("**redundant index** `owner_1` is a prefix of `owner_1_created_-1`")
            && playlists.contains(".dropIndex(\"owner_1\")"),
        "{playlists}"
    );

    let attachments = section("attachments");
    assert!(
        attachments.contains(
            "**large documents**: 2 of 6 documents (33.3%) are over 2.0 MiB: `\"a4\"` (2.9 MiB), `\"a1\"` (2.4 MiB)"
        ) && attachments.contains("GridFS")
            && attachments.contains("side collection"),
        "{attachments}"
    );

    // The capped array is no alarm; the counts that drifted are, by id.
    let buckets = section("temp_buckets");
    assert!(!buckets.contains("array** `readings`"), "{buckets}");
    assert!(
        buckets.contains(
            "**bucket count mismatch**: `count` is the length of `readings` in 27 of 30 documents, and differs in 3 of 30 documents (10.0%): `3` (count = 1210, 1200 elements), `11` (count = 1210, 1200 elements), `25` (count = 0, 600 elements)"
        ),
        "{buckets}"
    );
    assert!(buckets.contains("$size"), "{buckets}");

    // The reference, found by sampling; the copy and its stale documents, counted exactly.
    let posts = section("posts");
    assert!(posts.contains("- `author_id` holds `authors`'s ids: "), "{posts}");
    assert!(posts.contains("`Ref<Author>`"), "{posts}");
    assert!(
        posts.contains(
            "**stale copy** `author_name` copies `authors.name` through `author_id`: 3 of 50 documents (6.0%) differ from their source: `5` (\"Old name 5\" where the source has \"Author 5\"), `17` (\"Old name 7\" where the source has \"Author 7\"), `33` (\"Old name 3\" where the source has \"Author 3\")"
        ),
        "{posts}"
    );
    assert!(posts.contains("#[denormalized(...)]"), "{posts}");

    let profiles = section("profiles");
    assert!(!profiles.contains("long field name"), "{profiles}");
    assert!(profiles.contains("None seen in the sample."), "{profiles}");

    // One unit system: binary, named as such.
    for decimal in [" kB", " MB", " KB"] {
        assert!(!report.contains(decimal), "{decimal:?} in:\n{report}");
    }
}
