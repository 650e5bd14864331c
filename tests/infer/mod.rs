//! `docshape infer` on a real server: a database seeded by a plain driver client with
//! messy data is sampled, and the generated models and report say what was planted.
//!
//! The generated source must compile: it is compared, byte for byte, with
//! `inferred.rs` beside this file, which the `ui` test binary compiles as one of its
//! pass cases (`ui/pass/mod.rs`) and whose types read documents shaped like the seed's.
//! Checking it with a crate of its own (or with rustc against the libraries of another
//! cargo selection) rebuilt the driver's tree on every run, about 90 s; the fixture
//! costs nothing. After a deliberate change to the generator, `DOCSHAPE_INFER=overwrite`
//! rewrites the fixture (review the diff; the `ui` binary then checks it compiles).

mod anomalies;
mod patterns;
mod references;
mod server;
mod workload;

use docshape::bson::{doc, Bson, DateTime, Document};
use docshape_cli::infer::{infer, InferOptions};
use docshape_testkit as testkit;
use mongodb::options::IndexOptions;
use mongodb::IndexModel;

const YEAR: u64 = 365 * 24 * 3600;

/// Customers: a non-identifier name, mixed int/double, a nullable date, a field missing
/// from some documents, a field of mixed types, a sub-document, an array of
/// sub-documents, a long repeated name; a TTL, a partial unique and a compound index.
async fn seed_customers(db: &mongodb::Database) {
    let customers = db.collection::<Document>("customers");
    let now = DateTime::now();
    let levels = ["gold", "silver", "bronze"];
    let cities = ["Lyon", "Oslo", "Lima"];
    let docs: Vec<Document> = (0..300)
        .map(|i| {
            let mut d = doc! {
                "first-name": format!("name{i}"),
                "email": format!("c{i}@example.com"),
                "age": if i % 7 == 0 { Bson::Double(30.5) } else { Bson::Int32(20 + i % 50) },
                "active": i % 3 != 0,
                "last_login": if i % 4 == 0 { Bson::Null } else { Bson::DateTime(now) },
                "score": if i % 5 == 0 { Bson::String("n/a".into()) } else { Bson::Int32(i) },
                "address": { "city": cities[i as usize % 3], "zip": format!("{:05}", i) },
                "orders": (0..(i % 6)).map(|n| Bson::Document(doc! {
                    "sku": format!("S-{n}"),
                    "qty": n + 1,
                    "tags": ["a", "b"],
                })).collect::<Vec<_>>(),
                "customer_loyalty_program_membership_level": levels[i as usize % 3],
                "created_at": now,
                "type": "person",
            };
            if i % 2 == 0 {
                d.insert("nickname", format!("nick{i}"));
            }
            d
        })
        .collect();
    customers.insert_many(docs).await.unwrap();
    let indexes = vec![
        IndexModel::builder()
            .keys(doc! { "email": 1 })
            .options(
                IndexOptions::builder()
                    .unique(true)
                    .partial_filter_expression(doc! { "active": true })
                    .build(),
            )
            .build(),
        IndexModel::builder()
            .keys(doc! { "created_at": 1 })
            .options(IndexOptions::builder().expire_after(std::time::Duration::from_secs(YEAR)).build())
            .build(),
        IndexModel::builder().keys(doc! { "address.city": 1, "age": -1 }).build(),
    ];
    customers.create_indexes(indexes).await.unwrap();
}

/// Feeds: one document with a 5,000-element array of sub-documents and one over 2 MB.
async fn seed_feeds(db: &mongodb::Database) {
    let feeds = db.collection::<Document>("feeds");
    let now = DateTime::now();
    let big: Vec<Bson> =
        (0..5_000).map(|i| Bson::Document(doc! { "at": now, "kind": format!("k{}", i % 4) })).collect();
    feeds
        .insert_many(vec![
            doc! { "_id": 1, "items": big },
            doc! { "_id": 2, "items": [{ "at": now, "kind": "k0" }], "blob": "x".repeat(2_200_000) },
            doc! { "_id": 3, "items": [] },
        ])
        .await
        .unwrap();
}

/// Wide: 31 indexes besides `_id_`, past the report's 30 and docshape's default budget.
async fn seed_wide(db: &mongodb::Database) {
    let wide = db.collection::<Document>("wide");
    let mut d = Document::new();
    for f in 0..31 {
        d.insert(format!("f{f}"), f);
    }
    wide.insert_one(d).await.unwrap();
    let models: Vec<IndexModel> =
        (0..31).map(|f| IndexModel::builder().keys(doc! { format!("f{f}"): 1 }).build()).collect();
    wide.create_indexes(models).await.unwrap();
}

/// Odd things: names that are no Rust identifiers (one that would end a comment's line),
/// names that collide once made identifiers, names MongoDB cannot query, a compound
/// `_id`, a map keyed by data, arrays of arrays and of nullable sub-documents, only
/// empty arrays, only nulls, decimals and binaries, and indexes docshape must waive
/// (a prefix, `unique` inside an array) or cannot declare (on no field, on a field of
/// mixed types, text), a partial filter holding `"#`.
async fn seed_odd(db: &mongodb::Database) {
    use docshape::bson::spec::BinarySubtype;
    use docshape::bson::{Binary, Decimal128};
    let odd = db.collection::<Document>("odd-things");
    let mut counts = Document::new();
    for k in 0..250 {
        counts.insert(format!("user{k}"), k);
    }
    let first = doc! {
        "_id": { "tenant": "t1", "n": 1 },
        "firstName": "a",
        "first_name": "b",
        "line\n// injected\nfn evil() {}": 1,
        "Self": "s",
        "é": 1,
        "2fa": true,
        "grid": [[1, 2], [3]],
        "maybe": [{ "x": 1 }, Bson::Null],
        "mixed_obj": { "k": 1 },
        "empty": [],
        "nothing": Bson::Null,
        "price": Decimal128::from_bytes([0; 16]),
        "raw": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2] },
        "counts": counts,
        "lines": [{ "sku": "a", "codes": ["x"] }],
        "note": "a\"#b",
    };
    let second = doc! {
        "_id": { "tenant": "t1", "n": 2 },
        "firstName": "c",
        "first_name": "d",
        "mixed_obj": "text",
        "empty": [],
        "nothing": Bson::Null,
        "lines": [],
        "note": "n",
        "a.b": 1,
        "$x": 2,
        "": 3,
    };
    odd.insert_many(vec![first, second]).await.unwrap();
    let index = |keys: Document, options: Option<IndexOptions>| {
        IndexModel::builder().keys(keys).options(options).build()
    };
    odd.create_indexes(vec![
        index(doc! { "lines.sku": 1 }, Some(IndexOptions::builder().unique(true).build())),
        index(doc! { "firstName": 1 }, None),
        index(doc! { "firstName": 1, "first_name": -1 }, None),
        index(
            doc! { "note": 1 },
            Some(
                IndexOptions::builder()
                    .partial_filter_expression(doc! { "note": { "$eq": "a\"#b" } })
                    .build(),
            ),
        ),
        index(doc! { "missing_field": 1 }, None),
        index(doc! { "mixed_obj.k": 1 }, None),
    ])
    .await
    .unwrap();
}

/// Members: a collection with a `$jsonSchema` validator, read back where it maps simply.
async fn seed_members(db: &mongodb::Database) {
    let schema = doc! {
        "bsonType": "object",
        "required": ["name"],
        "properties": {
            "name": { "bsonType": "string", "minLength": 2, "maxLength": 40 },
            "level": { "enum": ["a", "b"] },
            "score": { "bsonType": "int", "minimum": 0, "maximum": 100 },
            "ratio": { "bsonType": "double", "minimum": 0, "maximum": 1, "exclusiveMaximum": true },
        },
    };
    db.create_collection("members").validator(doc! { "$jsonSchema": schema }).await.unwrap();
    let members = db.collection::<Document>("members");
    members
        .insert_many(vec![
            doc! { "name": "Ada", "level": "a", "score": 10, "ratio": 0.5 },
            doc! { "name": "Bo", "level": "b", "score": 100, "ratio": 0.25 },
            doc! { "name": "Cy", "level": "a", "score": 0, "ratio": 0.0 },
        ])
        .await
        .unwrap();
}

fn struct_body<'a>(source: &'a str, name: &str) -> &'a str {
    let start = source
        .find(&format!("pub struct {name} {{"))
        .unwrap_or_else(|| panic!("no struct {name}:\n{source}"));
    let end = source[start..].find("\n}\n").unwrap() + start;
    &source[start..end]
}

/// The lines just above `pub <field>:` in a struct body, and that line.
fn field_block<'a>(body: &'a str, field: &str) -> &'a str {
    let at = body.find(&format!("    pub {field}: ")).unwrap_or_else(|| panic!("no field {field}:\n{body}"));
    let start = body[..at].rfind(": in ").and_then(|p| body[..p].rfind("\n")).unwrap_or(0);
    let end = body[at..].find('\n').map_or(body.len(), |e| at + e);
    &body[start..end]
}

#[tokio::test(flavor = "multi_thread")]
async fn infer_writes_models_that_compile_and_a_report_naming_every_anti_pattern() {
    let db = testkit::database("infer").await.unwrap();
    seed_customers(&db).await;
    seed_feeds(&db).await;
    seed_wide(&db).await;
    seed_odd(&db).await;
    seed_members(&db).await;

    let inferred = infer(&db, &InferOptions::default()).await.unwrap();
    let names: Vec<&str> = inferred.collections.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["customers", "feeds", "members", "odd-things", "wide"]);
    // Smaller than the sample: read whole.
    assert_eq!(inferred.collections[0].sampled, 300);
    let source = inferred.source();

    let customer = struct_body(&source, "Customer");
    assert!(
        source.contains(
            "#[derive(Debug, Clone, Serialize, Deserialize, Model)]\n#[model(collection = \"customers\")]"
        ),
        "{source}"
    );
    assert!(customer.contains("    #[serde(rename = \"_id\")]\n    pub id: ObjectId,"), "{customer}");
    assert!(
        customer.contains("    #[serde(rename = \"first-name\")]\n    pub first_name: String,"),
        "{customer}"
    );
    assert!(customer.contains("    #[serde(rename = \"type\")]\n    pub type_: String,"), "{customer}");
    let age = field_block(customer, "age");
    assert!(age.contains("integers and doubles mixed") && age.ends_with("pub age: f64,"), "{age}");
    // A validator of doubles would refuse the integers stored: the field takes any number.
    assert!(age.contains("    #[validate(bson_type = \"number\")]\n    pub age: f64,"), "{age}");
    assert!(age.contains("minimum = 20, maximum = 69") || age.contains("minimum = 20.0"), "{age}");
    // Nullable, never missing: an Option serde writes as null.
    let login = field_block(customer, "last_login");
    assert!(
        login.ends_with("pub last_login: Option<DateTime>,") && !login.contains("skip_serializing_if"),
        "{login}"
    );
    // Missing from half the documents: left out when None.
    let nick = field_block(customer, "nickname");
    assert!(nick.contains("in 150 of 300 (50%)"), "{nick}");
    assert!(
        nick.contains(
            "#[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub nickname: Option<String>,"
        ),
        "{nick}"
    );
    // A clean mix of scalars: an untagged enum, one variant per stored type.
    let score = field_block(customer, "score");
    assert!(
        score.contains("mixed types (int 240 (80%), string 60 (20%)): one variant per type")
            && score.ends_with("pub score: CustomerScoreValue,"),
        "{score}"
    );
    assert!(
        source.contains(
            "#[serde(untagged)]\npub enum CustomerScoreValue {\n    Text(String),\n    Number(i32),\n}"
        ),
        "{source}"
    );
    assert!(customer.contains("pub address: CustomerAddress,"), "{customer}");
    assert!(struct_body(&source, "CustomerAddress").contains("pub city: String,"), "{source}");
    let orders = field_block(customer, "orders");
    assert!(orders.contains("#[embed(max = 5, reason = \"TODO: "), "{orders}");
    assert!(orders.ends_with("pub orders: Vec<CustomerOrder>,"), "{orders}");
    assert!(struct_body(&source, "CustomerOrder").contains("pub tags: Vec<String>,"), "{source}");
    // Bounds from the data are comments; a string of three values, every document
    // read, is also `allowed`.
    let level = field_block(customer, "customer_loyalty_program_membership_level");
    assert!(
        level.contains("    #[validate(allowed = [\"bronze\", \"gold\", \"silver\"])]\n    pub customer_loyalty_program_membership_level: String,"),
        "{level}"
    );
    assert!(level.contains("// proposed (observed, not enforced): #[validate(max_length = 6, allowed = [\"bronze\", \"gold\", \"silver\"])]"), "{level}");
    // The indexes, in docshape's syntax.
    assert!(source.contains("#[index(keys(email), unique, partial_filter = r#\"{\"active\":"), "{source}");
    assert!(source.contains(&format!("#[index(keys(created_at), expire_after = \"{YEAR}s\")]")), "{source}");
    assert!(source.contains("#[index(keys(\"address.city\", age = -1))]"), "{source}");

    let feed = struct_body(&source, "Feed");
    assert!(feed.contains("pub id: i32,"), "{feed}");
    assert!(feed.contains("#[embed(max = 5000, reason = \"TODO: "), "{feed}");
    assert!(feed.contains("1 array(s) past 1000 elements"), "{feed}");
    assert!(
        feed.contains(
            "#[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub blob: Option<String>,"
        ),
        "{feed}"
    );
    assert!(source.contains("#[model(collection = \"wide\", max_indexes = 31)]"), "{source}");

    let odd = struct_body(&source, "OddThing");
    // A stored name never reaches the source unescaped: no line of it starts the
    // injected function.
    assert!(!source.lines().any(|l| l.trim_start().starts_with("fn evil")), "{source}");
    assert!(odd.contains("    #[serde(rename = \"line\\n// injected\\nfn evil() {}\")]"), "{odd}");
    for (name, ident) in
        [("firstName", "first_name"), ("first_name", "first_name_2"), ("Self", "self_"), ("2fa", "f_2fa")]
    {
        assert!(odd.contains(&format!("#[serde(rename = \"{name}\")]")), "{name} in {odd}");
        assert!(odd.contains(&format!("pub {ident}: ")), "{ident} in {odd}");
    }
    assert!(odd.contains("pub id: OddThingId,"), "{odd}");
    assert!(odd.contains("pub grid: Option<Vec<Vec<i32>>>,"), "{odd}");
    assert!(odd.contains("#[embed(max = 2, reason = \"TODO: "), "{odd}");
    assert!(odd.contains("pub maybe: Option<Vec<Option<OddThingMaybe>>>,"), "{odd}");
    assert!(odd.contains("pub counts: Option<Document>,"), "{odd}");
    assert!(odd.contains("pub empty: Vec<Bson>,") && odd.contains("pub nothing: Option<Bson>,"), "{odd}");
    assert!(
        odd.contains("pub price: Option<Decimal128>,") && odd.contains("pub raw: Option<Binary>,"),
        "{odd}"
    );
    for left_out in ["\"a.b\"", "\"$x\"", "\"\""] {
        assert!(
            odd.contains(&format!("// left out: the field {left_out} (1 values)")),
            "{left_out} in {odd}"
        );
    }
    assert!(source.contains("#[index(keys(firstName), allow(redundant_index, reason = \"TODO: "), "{source}");
    assert!(
        source.contains("#[index(keys(\"lines.sku\"), unique, allow(unique_in_array, reason = \"TODO: "),
        "{source}"
    );
    assert!(
        source.contains(r###"#[index(keys(note), partial_filter = r##"{"note":{"$eq":"a\"#b"}}"##)]"###),
        "{source}"
    );
    assert!(source.contains("// index \"missing_field_1\" not declared (`missing_field` is not a field of the inferred types)"), "{source}");
    assert!(source.contains("// index \"mixed_obj.k_1\" not declared"), "{source}");

    // The server's validator, read back where it maps onto the field's type.
    let member = struct_body(&source, "Member");
    let enforced = "    // enforced by the server's $jsonSchema validator already\n";
    assert!(
        member.contains(&format!(
            "{enforced}    #[validate(min_length = 2, max_length = 40)]\n    pub name: String,"
        )),
        "{member}"
    );
    assert!(
        member.contains(&format!(
            "{enforced}    #[validate(allowed = [\"a\", \"b\"])]\n    pub level: String,"
        )),
        "{member}"
    );
    assert!(
        member
            .contains(&format!("{enforced}    #[validate(minimum = 0, maximum = 100)]\n    pub score: i32,")),
        "{member}"
    );
    // Draft 4's `exclusiveMaximum: true`: an exclusive bound.
    assert!(
        member.contains(&format!(
            "{enforced}    #[validate(minimum = 0.0, exclusive_maximum = 1.0)]\n    pub ratio: f64,"
        )),
        "{member}"
    );
    // The validator's four, the integer/double mix's wider type, and the four strings
    // of a handful of values in collections read whole (`allowed`); no bound from the
    // sample.
    assert_eq!(source.matches("\n    #[validate(").count(), 9, "{source}");
    let plain = docshape_cli::infer::Inferred { plain: true, ..inferred.clone() }.source();
    assert_eq!(plain.matches("\n    #[validate(").count(), 5, "--plain: {plain}");

    let report = inferred.report();
    for planted in [
        "**unbounded array** `items`: 1 of 3 documents (33.3%) hold more than 1,000 elements (longest: `1` (5,000))",
        "**large documents**: 1 of 3 documents (33.3%) are over 2.0 MiB: `2` (2.1 MiB)",
        "GridFS",
        "**redundant index** `firstName_1` is a prefix of `firstName_1_first_name_-1`",
        "**too many indexes**: 32 (with `_id_`), more than 30",
        "**long field name** `customer_loyalty_program_membership_level` (41 bytes) at `customer_loyalty_program_membership_level`, 300 times in 300 sampled documents: a 2-byte name would save about 39 bytes per document",
        "| `first-name` | 100% (300 of 300) | string 300 (100%) |",
        "| `nickname` | 50% (150 of 300) | string 150 (100%) |",
        "| `last_login` | 100% (300 of 300) | date 225 (75%), null 75 (25%) |",
        "| `orders.sku` |",
    ] {
        assert!(report.contains(planted), "{planted:?} not in:\n{report}");
    }
    assert_eq!(inferred.collections[0].anti_patterns().len(), 1, "customers: only the long name");

    let dir = std::env::temp_dir().join(format!("docshape-infer-{}", std::process::id()));
    let written = inferred.write(&dir).unwrap();
    assert_eq!(written, [dir.join("models.rs"), dir.join("INFERRED.md")]);
    assert_eq!(std::fs::read_to_string(&written[0]).unwrap(), source);
    assert_eq!(std::fs::read_to_string(&written[1]).unwrap(), report);
    let _ = std::fs::remove_dir_all(&dir);

    // The source, with the test database's name as the fixture writes it, is the
    // fixture the `ui` binary compiles.
    let source = source.replace(db.name(), "shop");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("infer/inferred.rs");
    if std::env::var("DOCSHAPE_INFER").is_ok_and(|v| v == "overwrite") {
        std::fs::write(&fixture, &source).unwrap();
    }
    let expected = std::fs::read_to_string(&fixture).unwrap().replace("\r\n", "\n");
    assert!(
        expected == source,
        "the generated source differs from {} (DOCSHAPE_INFER=overwrite rewrites it):\n{source}",
        fixture.display()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn infer_samples_at_most_the_sample_size_and_only_the_named_collections() {
    let db = testkit::database("infer_sample").await.unwrap();
    seed_customers(&db).await;
    seed_wide(&db).await;
    let options = InferOptions::default().sample(40).collections(["customers", "missing"]);
    let inferred = infer(&db, &options).await.unwrap();
    let names: Vec<&str> = inferred.collections.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["customers", "missing"]);
    assert_eq!(inferred.collections[0].sampled, 40);
    assert_eq!(inferred.collections[0].estimated_count, 300);
    assert_eq!(inferred.collections[1].sampled, 0);
    // An empty collection still gives a model that compiles: its `_id` is a Bson.
    assert!(inferred.source().contains("pub struct Missing {"), "{}", inferred.source());
}

// The fixture's models, in this binary too: they sync, and read what was seeded.
#[rustfmt::skip]
#[allow(dead_code)]
#[path = "inferred.rs"]
mod inferred;

/// Every document of `T`'s collection in `from` reads into `T` and is accepted by the
/// validator and indexes `T` puts on the same collection in `to`.
async fn copy_through<T>(from: &mongodb::Database, to: &mongodb::Database) -> usize
where
    T: docshape::Model + serde::Serialize + serde::de::DeserializeOwned + Send + Sync,
{
    use futures_util::TryStreamExt;
    docshape::sync::<T>(to).await.unwrap();
    let all: Vec<T> = T::collection(from).find(doc! {}).await.unwrap().try_collect().await.unwrap();
    if !all.is_empty() {
        T::collection(to).insert_many(&all).await.unwrap_or_else(|e| panic!("{}: {e}", T::COLLECTION));
    }
    let report = docshape::check::<T>(to).await.unwrap();
    assert!(report.is_clean(), "{report}");
    all.len()
}

#[tokio::test(flavor = "multi_thread")]
async fn inferred_models_read_every_document_sync_and_match_the_original_indexes() {
    use docshape::check::Drift;
    use inferred::{Customer, Feed, Member, OddThing, Wide};
    let db = testkit::database("infer_round").await.unwrap();
    seed_customers(&db).await;
    seed_feeds(&db).await;
    seed_wide(&db).await;
    seed_odd(&db).await;
    seed_members(&db).await;
    let fresh = testkit::database("infer_fresh").await.unwrap();
    assert_eq!(copy_through::<Customer>(&db, &fresh).await, 300);
    assert_eq!(copy_through::<Feed>(&db, &fresh).await, 3);
    assert_eq!(copy_through::<Wide>(&db, &fresh).await, 1);
    assert_eq!(copy_through::<OddThing>(&db, &fresh).await, 2);
    assert_eq!(copy_through::<Member>(&db, &fresh).await, 3);

    // The original has no validator, and every index the models declare, as declared:
    // the only other drift is the two indexes the source left as comments.
    let index_drift = |report: &docshape::CheckReport| -> Vec<String> {
        report
            .drift
            .iter()
            .filter(|d| !matches!(d, Drift::MissingValidator))
            .map(|d| match d {
                Drift::ExtraIndex { name, .. } => format!("extra {name}"),
                other => format!("{other}"),
            })
            .collect()
    };
    for report in [
        docshape::check::<Customer>(&db).await.unwrap(),
        docshape::check::<Feed>(&db).await.unwrap(),
        docshape::check::<Wide>(&db).await.unwrap(),
    ] {
        assert_eq!(index_drift(&report), Vec::<String>::new(), "{report}");
    }
    let odd = docshape::check::<OddThing>(&db).await.unwrap();
    assert_eq!(index_drift(&odd), ["extra missing_field_1", "extra mixed_obj.k_1"], "{odd}");
}

#[tokio::test(flavor = "multi_thread")]
async fn infer_proposes_access_rows_from_the_profiler() {
    let db = testkit::database("infer_workload").await.unwrap();
    seed_customers(&db).await;
    let customers = db.collection::<Document>("customers");
    db.run_command(doc! { "profile": 2 }).await.unwrap();
    for i in 0..6 {
        customers.find_one(doc! { "first-name": format!("name{i}") }).await.unwrap();
    }
    for _ in 0..3 {
        let mut cursor = customers
            .find(doc! { "address.city": "Oslo", "age": { "$gte": 30 } })
            .sort(doc! { "age": -1 })
            .await
            .unwrap();
        while cursor.advance().await.unwrap() {}
    }
    customers
        .update_one(doc! { "email": "c1@example.com" }, doc! { "$set": { "active": true } })
        .await
        .unwrap();
    customers.find_one(doc! { "$or": [{ "age": 20 }, { "type": "x" }] }).await.unwrap();
    customers.insert_one(doc! { "email": "new@example.com" }).await.unwrap();
    db.run_command(doc! { "profile": 0 }).await.unwrap();

    let options = InferOptions::default().workload(true).collections(["customers"]);
    let inferred = infer(&db, &options).await.unwrap();
    let workload = inferred.collections[0].workload.as_ref().unwrap();
    let counts: Vec<u64> = workload.shapes.iter().map(|s| s.count).collect();
    assert_eq!(counts, [6, 3, 1, 1], "{workload:?}");
    let source = inferred.source();
    for row in [
        "// #[access(name = \"by_first_name\", filter(\"first-name\"), freq = ",
        "// 6 calls; served by no index: it would not compile (rule `unserved`) until one is added",
        // A range on the sort key is bounded by that key: the row is an attribute.
        "\n#[access(name = \"by_address_city_age\", filter(\"address.city\"), sort(age = -1), range(age), freq = ",
        "// 3 calls; served by \"address.city_1_age_-1\"\n",
        "// #[access(name = \"write_by_email\", filter(email), freq = \"1 w/s\")] // 1 calls; served by \"email_1 (partial or sparse: only for queries that imply its filter)\"; a write: add its update(...)",
        "// 1 calls; not expressible as a row: \"$or\"",
    ] {
        assert!(source.contains(row), "{row:?} not in:\n{source}");
    }
    let report = inferred.report();
    assert!(report.contains("### Workload (`system.profile`)"), "{report}");
    assert!(report.contains("| 3 | "), "{report}");
    assert!(
        report.contains("| read | address.city | age desc | age |  | `address.city_1_age_-1` |"),
        "{report}"
    );
}

/// An event store written without docshape: `kind` tells three shapes apart, `status`
/// has two values over one shape. `kind` is the polymorphic model's tag, in the report
/// and as the enum's `#[serde(tag)]` in the source (a comment under `--plain`);
/// `status` is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_that_tells_shapes_apart_is_proposed_as_a_polymorphic_tag() {
    let db = testkit::database("infer_kinds").await.unwrap();
    let events = db.collection::<Document>("events");
    let mut all = Vec::new();
    for i in 0..30_i64 {
        let status = if i % 2 == 0 { "new" } else { "seen" };
        all.push(match i % 3 {
            0 => doc! { "_id": i, "kind": "click", "status": status, "user": "u1", "target": "buy" },
            1 => doc! { "_id": i, "kind": "view", "status": status, "user": "u1", "page": "/", "ms": i },
            _ => doc! { "_id": i, "kind": "buy", "status": status, "user": "u1", "order_id": format!("o{i}"), "amount": i },
        });
    }
    events.insert_many(all).await.unwrap();
    let options = InferOptions::default().collections(["events"]);
    let inferred = infer(&db, &options).await.unwrap();
    let d = inferred.collections[0].discriminator().expect("a discriminator");
    assert_eq!(d.field, "kind");
    let own =
        |v: &str| d.variants.iter().find(|(value, _, _)| value == v).map(|(_, n, own)| (*n, own.clone()));
    let names = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(own("click"), Some((10, names(&["status", "target", "user"]))));
    assert_eq!(own("view"), Some((10, names(&["ms", "page", "status", "user"]))));
    assert_eq!(own("buy"), Some((10, names(&["amount", "order_id", "status", "user"]))));
    let report = inferred.report();
    assert!(report.contains("`kind` looks like a discriminator"), "{report}");
    assert!(!report.contains("`status` looks like"), "{report}");
    let source = inferred.source();
    assert!(
        source.contains("#[derive(Debug, Clone, Serialize, Deserialize, Model)]\n#[serde(tag = \"kind\")]\n#[model(collection = \"events\")]\npub enum Event {"),
        "{source}"
    );
    assert!(source.contains("    #[serde(rename = \"click\")]\n    Click {\n"), "{source}");
    assert!(
        source.contains("        user: String,") && !source.contains("\n        pub "),
        "a variant's fields are not `pub`: {source}"
    );
    let plain = docshape_cli::infer::Inferred { plain: true, ..inferred.clone() }.source();
    assert!(plain.contains("//   #[serde(tag = \"kind\")]"), "{plain}");
    assert!(plain.contains("//       Click { /* _id, status, target, user */ },"), "{plain}");
    assert!(plain.contains("pub struct Event {"), "{plain}");
}
