//! The workload on a real server: a program issues six query shapes at known rates
//! with the profiler on; `infer --workload` proposes six rows whose `freq` is each
//! shape's rate, and `check --workload` compares the same entries with a model that
//! declares five of the shapes, a row never called and a row whose index the server
//! lacks.
//!
//! The local server's profiler records `op`, `ns`, `command`, `ts` and `millis` but no
//! `planSummary`: there the row without its index is found by the index missing on the
//! server. On mongod the entries also carry `planSummary` (`COLLSCAN` for that row),
//! which the assertions accept as well.

// See tests/index/mod.rs: a clippy false positive on repeated helper-attribute keys.
#![allow(clippy::duplicated_attributes)]

use std::time::Duration;

use docshape::bson::oid::ObjectId;
use docshape::bson::{doc, DateTime, Document};
use docshape::Model;
use docshape_cli::check::{check_workload, WorkloadFinding, WorkloadOptions};
use docshape_cli::infer::{infer, InferOptions};
use docshape_testkit as testkit;
use mongodb::IndexModel;
use serde::{Deserialize, Serialize};

const COLLECTION: &str = "infer_workload_orders";

/// Five of the six shapes the program issues (not `{status}` alone), `by_customer`,
/// which it never calls, and `by_sku`, whose index the test never creates: its calls
/// scan the collection.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "infer_workload_orders")]
#[index(keys(customer, placed_at = -1))]
#[index(keys(status, total))]
#[index(keys(region))]
#[index(keys(customer, region))]
#[index(keys(sku))]
#[access(name = "recent_by_customer", filter(customer), sort(placed_at = -1), freq = "100 r/s")]
#[access(name = "by_status_total", filter(status), range(total), freq = "100 r/s")]
#[access(name = "by_id", filter(_id), freq = "100 r/s")]
#[access(name = "by_region", filter(region), freq = "100 r/s")]
#[access(name = "by_customer_region", filter(customer, region), freq = "100 r/s")]
#[access(name = "by_customer", filter(customer), freq = "100 r/s")]
#[access(name = "by_sku", filter(sku), freq = "100 r/s")]
pub struct WorkloadOrder {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub customer: String,
    pub status: String,
    pub placed_at: DateTime,
    pub total: i64,
    pub region: String,
    pub sku: String,
}

/// The window the calls are spread over.
const WINDOW: Duration = Duration::from_secs(4);

/// Each shape's calls in the window, and its query.
const COUNTS: [u32; 6] = [60, 30, 20, 10, 6, 4];

fn query(shape: usize, i: u32, ids: &[ObjectId]) -> (Document, Option<Document>) {
    let customer = format!("c{}", i % 7);
    match shape {
        0 => (doc! { "customer": customer }, Some(doc! { "placed_at": -1 })),
        1 => (doc! { "status": "paid", "total": { "$gte": i64::from(i) * 10 } }, None),
        2 => (doc! { "_id": ids[i as usize % ids.len()] }, None),
        3 => (doc! { "region": (["eu", "us"][i as usize % 2]) }, None),
        4 => (doc! { "region": "eu", "customer": customer }, None),
        _ => (doc! { "status": (["paid", "new"][i as usize % 2]) }, None),
    }
}

/// `12.5 r/s`, `40 r/min`: calls per second.
fn per_second(freq: &str) -> f64 {
    let (number, unit) = freq.split_once(" r/").unwrap_or_else(|| panic!("not a read rate: {freq:?}"));
    let factor = match unit {
        "s" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        "day" => 86_400.0,
        _ => panic!("unit of {freq:?}"),
    };
    number.parse::<f64>().unwrap() / factor
}

#[tokio::test(flavor = "multi_thread")]
async fn check_workload_names_the_undeclared_shape_the_unused_row_and_the_row_without_its_index() {
    let db = testkit::database("check_workload").await.unwrap();
    let orders = db.collection::<Document>(COLLECTION);
    let ids: Vec<ObjectId> = (0..200).map(|_| ObjectId::new()).collect();
    let docs: Vec<Document> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            doc! {
                "_id": id,
                "customer": format!("c{}", i % 7),
                "status": (["paid", "new"][i % 2]),
                "placed_at": DateTime::from_millis(1_000_000 + i as i64 * 1000),
                "total": i as i64 * 3,
                "region": (["eu", "us"][i % 2]),
                "sku": format!("s{i}"),
            }
        })
        .collect();
    orders.insert_many(docs).await.unwrap();
    // The server's indexes: the model's but `sku_1`.
    for keys in [
        doc! { "customer": 1, "placed_at": -1 },
        doc! { "status": 1, "total": 1 },
        doc! { "region": 1 },
        doc! { "customer": 1, "region": 1 },
    ] {
        orders.create_index(IndexModel::builder().keys(keys).build()).await.unwrap();
    }

    // Each shape's calls evenly spaced over the window, all shapes interleaved.
    let mut calls: Vec<(Duration, usize, u32)> = COUNTS
        .iter()
        .enumerate()
        .flat_map(|(shape, &count)| (0..count).map(move |i| (WINDOW * i / count, shape, i)))
        .collect();
    calls.sort();
    db.run_command(doc! { "profile": 2 }).await.unwrap();
    let start = tokio::time::Instant::now();
    for (at, shape, i) in calls {
        tokio::time::sleep_until(start + at).await;
        let (filter, sort) = query(shape, i, &ids);
        let mut cursor = orders.find(filter).limit(5);
        if let Some(sort) = sort {
            cursor = cursor.sort(sort);
        }
        let mut cursor = cursor.await.unwrap();
        while cursor.advance().await.unwrap() {}
    }
    db.run_command(doc! { "profile": 0 }).await.unwrap();

    // infer: six rows, each at its shape's rate (count / window) within 20%.
    let options = InferOptions::default().workload(true).collections([COLLECTION]);
    let inferred = infer(&db, &options).await.unwrap();
    let source = inferred.source();
    let rows: Vec<&str> = source.lines().filter(|l| l.contains("#[access(name = ")).collect();
    assert_eq!(rows.len(), 6, "{source}");
    let expected = [
        ("filter(customer), sort(placed_at = -1), freq", 60),
        ("filter(status), range(total), freq", 30),
        ("filter(_id), freq", 20),
        ("filter(region), freq", 10),
        ("filter(customer, region), freq", 6),
        ("\"by_status\", filter(status), freq", 4),
    ];
    for (shape, count) in expected {
        let row = rows.iter().find(|r| r.contains(shape)).unwrap_or_else(|| panic!("{shape:?} in {source}"));
        let freq = row.split("freq = \"").nth(1).and_then(|r| r.split('"').next()).unwrap();
        let rate = f64::from(count) / WINDOW.as_secs_f64();
        let measured = per_second(freq);
        assert!((measured - rate).abs() <= 0.2 * rate, "{row}: {measured} r/s, called at {rate} r/s");
        assert!(row.contains(&format!("// {count} calls; served by")), "{row}");
        // Served by an index declared above it: an attribute, not a comment.
        assert!(row.starts_with("#[access("), "{row}");
    }
    // The generated source, rates aside (they depend on timing), is the fixture the
    // `ui` binary compiles (`ui/pass/inferred.rs`): the rows compile under docshape's
    // rules. `DOCSHAPE_INFER=overwrite` rewrites it.
    let normalized: String = source
        .replace(db.name(), "shop")
        .split("freq = \"")
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                part.to_owned()
            } else {
                format!("freq = \"1 r/s{}", &part[part.find('"').unwrap()..])
            }
        })
        .collect();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("infer/workload_inferred.rs");
    if std::env::var("DOCSHAPE_INFER").is_ok_and(|v| v == "overwrite") {
        std::fs::write(&fixture, &normalized).unwrap();
    }
    let expected = std::fs::read_to_string(&fixture).unwrap().replace("\r\n", "\n");
    assert!(
        normalized == expected,
        "the generated source differs from {} (DOCSHAPE_INFER=overwrite rewrites it):\n{normalized}",
        fixture.display()
    );

    // A planted query of `by_sku`, whose index is not on the server.
    let planted = DateTime::from_millis(DateTime::now().timestamp_millis() - 1);
    db.run_command(doc! { "profile": 2 }).await.unwrap();
    for i in 0..5 {
        orders.find_one(doc! { "sku": format!("s{i}") }).await.unwrap();
    }
    db.run_command(doc! { "profile": 0 }).await.unwrap();

    let report = check_workload::<WorkloadOrder>(&db, &WorkloadOptions::default()).await.unwrap();
    assert_eq!(report.entries, 135, "{report}");
    let without_sku_index = |finding: &WorkloadFinding| match finding {
        WorkloadFinding::WithoutIndex {
            pattern: "by_sku",
            index: "sku_1",
            calls: 5,
            plans,
            missing: true,
        } => {
            // mongod's entries say how each call ran; the local server's say nothing.
            plans.is_empty() || plans == &[("COLLSCAN".to_owned(), 5)]
        }
        _ => false,
    };
    match &report.findings[..] {
        [WorkloadFinding::Undeclared { shape, row: Some(row), served_by: Some(index) }, WorkloadFinding::Unused { pattern: "by_customer" }, sku]
            if without_sku_index(sku) =>
        {
            assert_eq!((shape.equality.as_slice(), shape.count), (&["status".to_owned()][..], 4), "{report}");
            assert!(row.starts_with("#[access(name = \"by_status\", filter(status), freq = \""), "{row}");
            assert_eq!(index, "status_1_total_1");
        }
        _ => panic!("{report}"),
    }
    assert!(!report.is_clean());
    let text = report.to_string();
    assert!(text.contains("row \"by_customer\" was never called in the window"), "{text}");
    assert!(
        text.contains("row \"by_sku\" ran without its index \"sku_1\", which is not on the server"),
        "{text}"
    );
    // Every declared row, with what was observed beside its freq, before the findings.
    let rows: Vec<(&str, u64)> = report.rows.iter().map(|r| (r.pattern, r.calls)).collect();
    assert_eq!(rows.len(), 7, "{report}");
    assert!(rows.contains(&("by_sku", 5)) && rows.contains(&("by_customer", 0)), "{rows:?}");
    let sku = report.rows.iter().find(|r| r.pattern == "by_sku").unwrap();
    assert!((sku.share - 5.0 / 135.0).abs() < 1e-9 && sku.per_second > 0.0, "{sku:?}");
    assert!(
        text.contains("row \"by_sku\": 5 call(s), ") && text.contains("of the entries; declared 100 r/s"),
        "{text}"
    );
    assert!(
        text.find("row \"by_sku\": 5 call(s)").unwrap() < text.find("was never called").unwrap(),
        "rows first, then the findings: {text}"
    );

    // Since the planted calls: only `by_sku` ran; every other row is unused.
    let since = WorkloadOptions::default().since(planted);
    let report = check_workload::<WorkloadOrder>(&db, &since).await.unwrap();
    assert_eq!(report.entries, 5, "{report}");
    let unused: Vec<&str> = report
        .findings
        .iter()
        .filter_map(|f| match f {
            WorkloadFinding::Unused { pattern } => Some(*pattern),
            _ => None,
        })
        .collect();
    assert_eq!(
        unused,
        ["recent_by_customer", "by_status_total", "by_id", "by_region", "by_customer_region", "by_customer"],
        "{report}"
    );
    assert_eq!(report.findings.len(), 7, "{report}");
    assert!(without_sku_index(&report.findings[6]), "{report}");
    assert_eq!(WorkloadOrder::ACCESS_PATTERNS.len(), 7);
}
