//! The patterns `docshape infer` writes as attributes rather than comments, each
//! through the round trip: the generated source compiles (`patterns_inferred.rs`
//! beside this file, a module of this binary), every stored document reads into it,
//! `sync` into a fresh database takes every one of them (the validator refuses none,
//! the indexes are the original's) and `check` is clean. `--plain` keeps the plain
//! forms.
//!
//! - a polymorphic collection (`activity`: `kind` tells three document types apart)
//!   is an enum tagged by `kind`, one variant per value with its own fields;
//! - a collection whose every index leads with `org_id` (`tickets`) declares it the
//!   tenant, `#[model(tenant = org_id)]`: the profiled query that filters on it
//!   becomes a row led by it, the one that does not stays a comment; a collection
//!   whose indexes lead with different fields (`audit`) declares none.
//!
//! `DOCSHAPE_INFER=overwrite` rewrites the fixture (review the diff).

use docshape::bson::{doc, oid::ObjectId, Bson, DateTime, Document};
use docshape::Model;
use docshape_cli::infer::{infer, InferOptions, Inferred};
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::options::IndexOptions;
use mongodb::IndexModel;

#[rustfmt::skip]
#[allow(dead_code)]
#[path = "patterns_inferred.rs"]
mod inferred;

async fn seed(db: &mongodb::Database) {
    let at = DateTime::from_millis(1_780_000_000_000);
    // Activity: 12 clicks, 12 page views (half with a duration), 12 purchases.
    let activity: Vec<Document> = (0..36_i64)
        .map(|i| {
            let user = format!("u{}", i % 4);
            match i % 3 {
                0 => doc! { "_id": ObjectId::new(), "kind": "click", "user": user, "at": at, "target": format!("button-{i}") },
                1 => {
                    let mut d = doc! { "_id": ObjectId::new(), "kind": "page_view", "user": user, "at": at, "path": format!("/p/{i}") };
                    if i % 2 == 0 {
                        d.insert("ms", i * 10);
                    }
                    d
                }
                _ => doc! { "_id": ObjectId::new(), "kind": "purchase", "user": user, "at": at, "order_id": format!("o-{i}"), "amount_cents": i * 100 },
            }
        })
        .collect();
    let events = db.collection::<Document>("activity");
    events.insert_many(activity).await.unwrap();
    events.create_index(IndexModel::builder().keys(doc! { "user": 1, "at": -1 }).build()).await.unwrap();

    // Tickets of three organisations: every index leads with `org_id` (the TTL one
    // aside), the number unique per organisation.
    let orgs = ["acme", "globex", "initech"];
    let expires = DateTime::from_millis(4_000_000_000_000);
    let tickets: Vec<Document> = (0..30_i32)
        .map(|i| {
            doc! {
                "org_id": orgs[i as usize % 3],
                "number": i / 3,
                "status": if i % 4 == 0 { "closed" } else { "open" },
                "title": format!("ticket {i}"),
                "opened": at,
                "expires_at": expires,
            }
        })
        .collect();
    let tickets_c = db.collection::<Document>("tickets");
    tickets_c.insert_many(tickets).await.unwrap();
    tickets_c
        .create_indexes(vec![
            IndexModel::builder().keys(doc! { "org_id": 1, "status": 1 }).build(),
            IndexModel::builder()
                .keys(doc! { "org_id": 1, "number": 1 })
                .options(IndexOptions::builder().unique(true).build())
                .build(),
            IndexModel::builder().keys(doc! { "org_id": 1, "opened": -1 }).build(),
            IndexModel::builder()
                .keys(doc! { "expires_at": 1 })
                .options(IndexOptions::builder().expire_after(std::time::Duration::from_secs(3_600)).build())
                .build(),
        ])
        .await
        .unwrap();

    // Audit entries: one index leads with `org_id`, another with `actor`.
    let audit: Vec<Document> = (0..10_i32)
        .map(|i| doc! { "org_id": orgs[i as usize % 3], "actor": format!("a{i}"), "at": at })
        .collect();
    let audit_c = db.collection::<Document>("audit");
    audit_c.insert_many(audit).await.unwrap();
    audit_c
        .create_indexes(vec![
            IndexModel::builder().keys(doc! { "org_id": 1, "at": 1 }).build(),
            IndexModel::builder().keys(doc! { "actor": 1 }).build(),
        ])
        .await
        .unwrap();
}

/// The profiled queries on tickets: one filtering on the tenant (written second), one
/// without it.
async fn profile(db: &mongodb::Database) {
    let tickets = db.collection::<Document>("tickets");
    db.run_command(doc! { "profile": 2 }).await.unwrap();
    for _ in 0..4 {
        tickets.find_one(doc! { "status": "open", "org_id": "acme" }).await.unwrap();
    }
    for _ in 0..2 {
        tickets.find_one(doc! { "status": "closed" }).await.unwrap();
    }
    db.run_command(doc! { "profile": 0 }).await.unwrap();
}

fn section<'a>(report: &'a str, name: &str) -> &'a str {
    let body = report.split(&format!("## `{name}`")).nth(1).unwrap_or_else(|| panic!("{name}:\n{report}"));
    body.split("\n## ").next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patterns_are_written_as_attributes_and_the_models_round_trip() {
    use inferred::{Activity, Audit, Ticket};
    let db = testkit::database("infer_patterns").await.unwrap();
    seed(&db).await;
    profile(&db).await;
    let options = InferOptions::default().workload(true).collections(["activity", "audit", "tickets"]);
    let inferred = infer(&db, &options).await.unwrap();
    let source = inferred.source();
    let report = inferred.report();

    // The polymorphic collection: an enum tagged by `kind`, each variant its own fields.
    for written in [
        "#[derive(Debug, Clone, Serialize, Deserialize, Model)]\n#[serde(tag = \"kind\")]\n#[model(collection = \"activity\")]\n",
        "#[index(keys(user, at = -1))]\npub enum Activity {\n",
        "    #[serde(rename = \"click\")]\n    Click {\n",
        "    #[serde(rename = \"page_view\")]\n    PageView {\n",
        "    #[serde(rename = \"purchase\")]\n    Purchase {\n",
        "        target: String,\n",
        "        #[serde(default, skip_serializing_if = \"Option::is_none\")]\n        ms: Option<i64>,\n",
        "        amount_cents: i64,\n",
    ] {
        assert!(source.contains(written), "{written:?} not in:\n{source}");
    }
    let activity = section(&report, "activity");
    assert!(activity.contains("`models.rs` writes it: `#[serde(tag = \"kind\")]`"), "{activity}");

    // The tenant: declared, its values not made `allowed`; the row that filters on it
    // is led by it, the one that does not is a comment.
    for written in [
        "#[model(collection = \"tickets\", tenant = org_id)]\n",
        "#[access(name = \"by_org_id_status\", filter(org_id, status), freq = ",
        "// #[access(name = \"by_status\", filter(status), freq = ",
        "does not filter on the tenant `org_id` (rule `tenant_filter`)",
        "#[index(keys(org_id, number), unique)]",
        "#[index(keys(expires_at), expire_after = \"3600s\")]",
        "no `allowed` from the data, a tenant's values grow with its customers\n    pub org_id: String,",
    ] {
        assert!(source.contains(written), "{written:?} not in:\n{source}");
    }
    let tickets = section(&report, "tickets");
    assert!(
        tickets.contains(
            "### Tenant\n\nEvery index besides `_id_` (3 of them, TTL indexes aside) leads with `org_id`"
        ) && tickets.contains("`models.rs` declares it `#[model(tenant = org_id)]`")
            && tickets.contains("1 here, stays a comment"),
        "{tickets}"
    );
    // Indexes leading with two fields: no tenant.
    assert!(source.contains("#[model(collection = \"audit\")]\n"), "{source}");
    assert!(!section(&report, "audit").contains("### Tenant"), "{report}");

    // `--plain`: one struct, no tenant.
    let plain = Inferred { plain: true, ..inferred.clone() };
    let plain_source = plain.source();
    assert!(!plain_source.contains("tenant =") && !plain_source.contains("\npub enum"), "{plain_source}");
    assert!(
        plain_source.contains("pub struct Activity {")
            && plain_source.contains("//   #[serde(tag = \"kind\")]"),
        "{plain_source}"
    );
    assert!(
        plain.report().contains("`--plain` was given: `models.rs` declares no tenant."),
        "{}",
        plain.report()
    );

    let source = source.replace(db.name(), "shop");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("infer/patterns_inferred.rs");
    if std::env::var("DOCSHAPE_INFER").is_ok_and(|v| v == "overwrite") {
        std::fs::write(&fixture, &source).unwrap();
    }
    let expected = std::fs::read_to_string(&fixture).unwrap().replace("\r\n", "\n");
    assert!(
        expected == source,
        "the generated source differs from {} (DOCSHAPE_INFER=overwrite rewrites it):\n{source}",
        fixture.display()
    );

    // Every stored document reads into its variant.
    let all: Vec<Activity> =
        Activity::collection(&db).find(doc! {}).await.unwrap().try_collect().await.unwrap();
    let kinds = |f: fn(&Activity) -> bool| all.iter().filter(|a| f(a)).count();
    assert_eq!(
        (
            kinds(|a| matches!(a, Activity::Click { .. })),
            kinds(|a| matches!(a, Activity::PageView { ms: Some(_), .. })),
            kinds(|a| matches!(a, Activity::PageView { ms: None, .. })),
            kinds(|a| matches!(a, Activity::Purchase { .. })),
        ),
        (12, 6, 6, 12)
    );
    // Sync into a fresh database takes every document (the validator refuses none, the
    // indexes are the original's) and `check` is clean there and on the original.
    let fresh = testkit::database("infer_patterns_fresh").await.unwrap();
    assert_eq!(super::copy_through::<Activity>(&db, &fresh).await, 36);
    assert_eq!(super::copy_through::<Ticket>(&db, &fresh).await, 30);
    assert_eq!(super::copy_through::<Audit>(&db, &fresh).await, 10);
    let index_drift = |report: &docshape::CheckReport| -> Vec<String> {
        report
            .drift
            .iter()
            .filter(|d| !matches!(d, docshape::check::Drift::MissingValidator))
            .map(|d| d.to_string())
            .collect()
    };
    for report in [
        docshape::check::<Activity>(&db).await.unwrap(),
        docshape::check::<Ticket>(&db).await.unwrap(),
        docshape::check::<Audit>(&db).await.unwrap(),
    ] {
        assert_eq!(index_drift(&report), Vec::<String>::new(), "{report}");
    }
    // The validator is one branch per type: a click carrying a purchase's tag is refused.
    let wrong = fresh
        .collection::<Document>("activity")
        .insert_one(doc! { "_id": ObjectId::new(), "kind": "purchase", "user": "u", "at": DateTime::now(), "target": "x" })
        .await;
    assert!(wrong.is_err(), "a purchase without its order was accepted");
    let unknown = fresh
        .collection::<Document>("activity")
        .insert_one(doc! { "_id": ObjectId::new(), "kind": "scroll", "user": "u", "at": DateTime::now() })
        .await;
    assert!(unknown.is_err(), "an unknown kind was accepted");

    // The tenant's row reads one organisation's tickets only.
    let acme = Ticket::by_org_id_status("acme", "open").all(&db).await.unwrap();
    assert!(!acme.is_empty() && acme.iter().all(|t| t.org_id == "acme" && t.status == "open"), "{acme:?}");
    assert_eq!(<Ticket as Model>::TENANT, Some("org_id"));
    let _ = Bson::Null;
}
