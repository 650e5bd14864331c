//! The shop's artifacts: committed copies match the code, output is reproducible, the
//! exported JSON means the same to another client, and `shopctl check` finds drift on a
//! live database.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use docshape::artifacts::{self, Artifact};
use docshape::bson::{doc, Bson, Document};
use docshape::check::Drift;
use docshape::Model;
use docshape_testkit::{self as testkit, TestDb};
use shop_models::Product;
use shop_schema::{ARTIFACTS, COMMITTED_DIR};

fn build_time() -> Vec<Artifact> {
    ARTIFACTS
        .iter()
        .map(|(f, c)| Artifact { file_name: (*f).to_owned(), contents: (*c).to_owned() })
        .collect()
}

fn shopctl(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_shopctl")).args(args).output().expect("run shopctl");
    eprintln!(
        "shopctl {}: {}\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("shop-schema-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    Scratch(dir)
}

/// A scratch directory, removed when dropped: also when its test fails half-way, so a
/// run leaves nothing behind in the temporary directory.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Fails when `schema/` drifts from the models. `DOCSHAPE_BLESS=1` rewrites it instead.
#[test]
fn committed_artifacts_match_the_code() {
    let dir = Path::new(COMMITTED_DIR);
    if std::env::var_os("DOCSHAPE_BLESS").is_some() {
        artifacts::write(dir, &build_time()).expect("write schema/");
    }
    let drift = artifacts::compare(dir, &build_time()).expect("read schema/");
    assert!(
        drift.is_empty(),
        "the committed artifacts in {COMMITTED_DIR} differ from the code:\n{}\n\nrefresh them with \
         `cargo run -p shop-schema --bin shopctl -- export examples/shop-schema/schema` \
         (or DOCSHAPE_BLESS=1 cargo test -p shop-schema) and review the diff",
        drift.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    );
    // What the build script wrote is what this process's registry produces.
    assert_eq!(build_time(), artifacts::registered().unwrap());
    let names: Vec<&str> = ARTIFACTS.iter().map(|(f, _)| *f).collect();
    assert_eq!(
        names,
        [
            "ACCESS_PATTERNS.md",
            "DESIGN_DECISIONS.md",
            "KEYS.md",
            "MODEL.md",
            "customers.indexes.json",
            "customers.validator.json",
            "orders.indexes.json",
            "orders.validator.json",
            "products.indexes.json",
            "products.validator.json"
        ]
    );
}

/// The guide's artifacts chapter shows the shop's diagram: the committed one, so a
/// change to the models that redraws it fails here until the guide shows it too.
#[test]
fn the_guide_shows_the_committed_diagram() {
    let model = &ARTIFACTS.iter().find(|(f, _)| *f == "MODEL.md").expect("MODEL.md").1;
    let chart = &model[model.find("```mermaid").expect("a mermaid block")..];
    let guide = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../runtime/src/guide/artifacts.md");
    let guide = std::fs::read_to_string(&guide).expect("read the guide's artifacts chapter");
    assert!(
        guide.contains(chart.trim_end()),
        "runtime/src/guide/artifacts.md does not show the shop's MODEL.md chart:\n{chart}"
    );
}

#[test]
fn a_tampered_or_stale_directory_is_reported_file_by_file() {
    let dir = scratch("tampered");
    artifacts::write(&dir, &build_time()).unwrap();
    assert!(shopctl(&["verify", dir.to_str().unwrap()]).status.success());
    let path = dir.join("products.validator.json");
    let text = std::fs::read_to_string(&path).unwrap().replace("\"maxLength\"", "\"maxLen\"");
    std::fs::write(&path, text).unwrap();
    std::fs::remove_file(dir.join("orders.indexes.json")).unwrap();
    std::fs::write(dir.join("invoices.validator.json"), "{}\n").unwrap();
    std::fs::write(dir.join("README.md"), "not an artifact\n").unwrap();
    let out = shopctl(&["verify", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let drift = artifacts::compare(&dir, &build_time()).unwrap();
    let described: Vec<String> = drift.iter().map(ToString::to_string).collect();
    assert_eq!(drift.len(), 3, "{described:#?}");
    assert!(
        matches!(&drift[0], artifacts::FileDrift::Missing { file_name } if file_name == "orders.indexes.json")
    );
    assert!(matches!(&drift[1], artifacts::FileDrift::Differs { file_name, found, .. }
        if file_name == "products.validator.json" && found.contains("maxLen")));
    assert!(
        matches!(&drift[2], artifacts::FileDrift::Stale { file_name } if file_name == "invoices.validator.json")
    );
    for line in &described {
        assert!(stdout(&out).contains(line.lines().next().unwrap()), "shopctl verify should say: {line}");
    }
}

#[test]
fn two_runs_produce_byte_identical_output() {
    let (a, b) = (scratch("run-a"), scratch("run-b"));
    for dir in [&a, &b] {
        assert!(shopctl(&["export", dir.to_str().unwrap()]).status.success());
    }
    let read = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
            })
            .collect();
        files.sort();
        files
    };
    let (first, second) = (read(&a), read(&b));
    assert_eq!(first.len(), ARTIFACTS.len());
    assert_eq!(first, second, "two separate runs wrote different bytes");
    // And both equal what the build script wrote at build time.
    let build: Vec<(String, Vec<u8>)> =
        ARTIFACTS.iter().map(|(f, c)| ((*f).to_owned(), c.as_bytes().to_vec())).collect();
    assert_eq!(first, build);
    // Exported files read back into the very specs the code declares.
    assert_eq!(artifacts::specs_from(&build_time()).unwrap(), docshape::registry::specs().unwrap());
}

/// The documents of a command's first batch (a test database's collections and
/// indexes fit in one).
async fn first_batch(db: &TestDb, command: Document) -> Vec<Document> {
    let reply = db.run_command(command).await.unwrap();
    let batch = reply.get_document("cursor").unwrap().get_array("firstBatch").unwrap();
    batch.iter().filter_map(Bson::as_document).cloned().collect()
}

async fn options_of(db: &TestDb) -> Vec<(String, Document)> {
    let mut out: Vec<(String, Document)> = first_batch(db, doc! { "listCollections": 1 })
        .await
        .into_iter()
        .map(|c| {
            (c.get_str("name").unwrap().to_owned(), c.get_document("options").cloned().unwrap_or_default())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

async fn indexes_of(db: &TestDb, collection: &str) -> Vec<Document> {
    let mut out = first_batch(db, doc! { "listIndexes": collection }).await;
    for d in &mut out {
        // Per-namespace detail, not part of the definition.
        d.remove("ns");
    }
    out.sort_by(|a, b| a.get_str("name").unwrap().cmp(b.get_str("name").unwrap()));
    out
}

/// What `pymongo` does with the exported files: `create` with the validator file's
/// options as `bson.json_util` reads them, `createIndexes` with the indexes file.
const PYMONGO_APPLY: &str = r#"
import glob, os, sys
from bson import json_util
from pymongo import MongoClient
uri, name, folder = sys.argv[1:4]
db = MongoClient(uri)[name]
for path in sorted(glob.glob(os.path.join(folder, "*.validator.json"))):
    coll = os.path.basename(path)[: -len(".validator.json")]
    with open(path) as f:
        options = json_util.loads(f.read())
    db.command({"create": coll, **options})
    with open(os.path.join(folder, coll + ".indexes.json")) as f:
        indexes = json_util.loads(f.read())
    if indexes:
        db.command({"createIndexes": coll, "indexes": indexes})
    print("applied", coll)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pymongo_applies_the_exported_json_as_sync_does() {
    let by_sync = testkit::database("by_sync").await.unwrap();
    let by_pymongo = testkit::database("by_pymongo").await.unwrap();
    docshape::sync_all(&by_sync, Default::default()).await.unwrap();

    let dir = scratch("pymongo");
    artifacts::write(&dir, &build_time()).unwrap();
    let python = testkit::pymongo_python().unwrap();
    let uri = testkit::server().unwrap().uri().to_owned();
    let out = Command::new(python)
        .args(["-c", PYMONGO_APPLY, &uri, by_pymongo.name(), dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "pymongo failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);

    // The same options, BSON types included (strict equality, not numeric), and the
    // same indexes.
    let (a, b) = (options_of(&by_sync).await, options_of(&by_pymongo).await);
    assert_eq!(a.len(), 3);
    assert_eq!(a, b, "pymongo's collections differ from sync's");
    for (collection, _) in &a {
        assert_eq!(indexes_of(&by_sync, collection).await, indexes_of(&by_pymongo, collection).await);
    }
    // And docshape sees no drift in what pymongo made.
    for report in docshape::check::check_all(&by_pymongo).await.unwrap() {
        assert!(report.is_clean(), "{report}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reports_exactly_the_changes_made_by_hand() {
    let db = testkit::database("check").await.unwrap();
    let uri = testkit::server().unwrap().uri().to_owned();
    let connect = ["--uri", uri.as_str(), "--db", db.name()];
    let run = |command: &str| {
        let mut args = vec![command];
        args.extend(connect);
        tokio::task::block_in_place(|| shopctl(&args))
    };

    // Nothing there yet: every collection is reported missing.
    let out = run("check");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out).matches("the collection does not exist").count(), 3, "{}", stdout(&out));

    assert!(run("sync").status.success());
    let out = run("check");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(stdout(&out).matches("matches the code").count(), 3);

    // By hand: a shorter maxLength for a product's name, and no index for tag browsing.
    let mut validator = Product::validator();
    validator
        .get_document_mut("$jsonSchema")
        .and_then(|s| s.get_document_mut("properties"))
        .and_then(|p| p.get_document_mut("name"))
        .unwrap()
        .insert("maxLength", 60_i32);
    db.run_command(doc! { "collMod": "products", "validator": validator }).await.unwrap();
    db.run_command(doc! { "dropIndexes": "products", "index": "tags_1_price_cents_1" }).await.unwrap();

    let reports = docshape::check::check_all(&db).await.unwrap();
    let drift: Vec<(&str, &Drift)> =
        reports.iter().flat_map(|r| r.drift.iter().map(move |d| (r.collection.as_str(), d))).collect();
    assert_eq!(drift.len(), 2, "{drift:#?}");
    match drift[0] {
        ("products", Drift::ValidatorDiffers { differences }) => {
            assert_eq!(differences.len(), 1, "{differences:#?}");
            assert_eq!(differences[0].path, "$jsonSchema.properties.name.maxLength");
            assert_eq!(differences[0].server, Some(Bson::Int32(60)));
            assert_eq!(differences[0].code, Some(Bson::Int64(120)));
        }
        other => panic!("expected the validator change first, got {other:?}"),
    }
    assert!(
        matches!(drift[1], ("products", Drift::MissingIndex { name, .. }) if name == "tags_1_price_cents_1"),
        "{:?}",
        drift[1]
    );
    let out = run("check");
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains(
        "products: the validator differs from the code\n    at `$jsonSchema.properties.name.maxLength` the server has 60, the code has 120\n"
    ), "{text}");
    assert!(text.contains("products: index tags_1_price_cents_1 { \"tags\": 1, \"price_cents\": 1 } is missing on the server"), "{text}");
    assert_eq!(text.matches("matches the code").count(), 2, "{text}");

    // A dry run gates a deploy: exit 1 with the pending changes, nothing touched.
    let mut dry = vec!["sync", "--dry-run"];
    dry.extend(connect);
    let out = tokio::task::block_in_place(|| shopctl(&dry));
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    // The changes in apply order, and the validator's differing paths under them.
    assert!(
        stdout(&out).contains(
            "would: products: replaced the validator; created index tags_1_price_cents_1\n    at `$jsonSchema.properties.name.maxLength` the server has 60, the code has 120\n"
        ),
        "{}",
        stdout(&out)
    );
    assert_eq!(run("check").status.code(), Some(1), "the dry run changed nothing");

    // sync repairs both; check is clean again.
    let out = run("sync");
    assert!(out.status.success());
    assert!(stdout(&out).contains("products: replaced the validator; created index tags_1_price_cents_1"));
    let out = run("check");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // Nothing pending: the dry run exits 0.
    let out = tokio::task::block_in_place(|| shopctl(&dry));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    // The workload against the access tables: nothing was profiled, so every row went
    // uncalled. `check` alone is clean: the status 1 is the workload's.
    let rows: usize = docshape::registry::models().iter().map(|m| m.access_patterns.len()).sum();
    assert!(rows > 0);
    for window in [&[][..], &["--since", "1h"], &["--since", "2020-01-01T00:00:00Z"]] {
        let mut workload = vec!["check", "--workload"];
        workload.extend(window);
        workload.extend(connect);
        let out = tokio::task::block_in_place(|| shopctl(&workload));
        assert_eq!(out.status.code(), Some(1), "{window:?}: {}", stdout(&out));
        let text = stdout(&out);
        assert_eq!(text.matches("matches the code").count(), 3, "{text}");
        assert_eq!(text.matches("was never called in the window").count(), rows, "{text}");
    }
    let mut bad = vec!["check", "--workload", "--since", "last week"];
    bad.extend(connect);
    assert_eq!(tokio::task::block_in_place(|| shopctl(&bad)).status.code(), Some(2));
}

#[test]
fn usage_errors_exit_with_status_2_and_say_why() {
    let out = shopctl(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown command `frobnicate`"));
    let out =
        Command::new(env!("CARGO_BIN_EXE_shopctl")).arg("check").env_remove("MONGODB_URI").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --uri or set MONGODB_URI"));
}

/// `--uri` falls back to `MONGODB_URI`, and the command line wins over it.
#[test]
fn the_uri_comes_from_mongodb_uri_unless_given() {
    let closed = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (from_env, from_flag) = (closed(), closed());
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_shopctl"))
            .args(args)
            .env("MONGODB_URI", format!("mongodb://127.0.0.1:{from_env}/shop"))
            .output()
            .unwrap()
    };
    let out = run(&["check", "--timeout", "0.5"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("127.0.0.1:{from_env}")), "{err}");
    let out = run(&["check", "--timeout", "0.5", "--uri", &format!("mongodb://127.0.0.1:{from_flag}/shop")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("127.0.0.1:{from_flag}")) && !err.contains(&from_env.to_string()), "{err}");
    // `help` shows the fallback, not the variable's value (a URI may hold a password).
    let out = run(&["help", "check"]);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("[env: MONGODB_URI]") && !help.contains(&from_env.to_string()), "{help}");
}

/// Every failure that is not drift exits 2 with one line naming its cause, and soon.
#[test]
fn failures_that_are_not_drift_exit_2_with_one_line_naming_the_cause() {
    let one_line = |out: &Output| {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        err
    };
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let uri = format!("mongodb://127.0.0.1:{port}/shop");
    let started = std::time::Instant::now();
    let out = shopctl(&["check", "--uri", &uri]);
    assert!(started.elapsed() < std::time::Duration::from_secs(15), "{:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(2));
    let err = one_line(&out);
    assert!(err.contains("connection refused") && err.contains(&port.to_string()), "{err}");
    let started = std::time::Instant::now();
    let out = shopctl(&["sync", "--uri", &uri, "--timeout", "0.5"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "{:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(2));
    one_line(&out);
    // The URI's own timeout is kept.
    let started = std::time::Instant::now();
    let out = shopctl(&["check", "--uri", &format!("{uri}?serverSelectionTimeoutMS=300")]);
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "{:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(2));

    // A directory that does not exist is not drift.
    let missing = scratch("no-such-dir");
    let out = shopctl(&["verify", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out).contains("no such directory"));

    // An empty database name is refused before anything is created.
    for args in [&["sync", "--uri", &uri, "--db", ""][..], &["sync", "--uri", &uri, "--db="][..]] {
        let out = shopctl(args);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("the database name is empty"));
    }

    // A file that is not UTF-8 is named.
    let dir = scratch("not-utf8");
    assert!(shopctl(&["export", dir.to_str().unwrap()]).status.success());
    std::fs::write(dir.join("products.validator.json"), b"{\"x\": \"\xff\xfe\"}").unwrap();
    let out = shopctl(&["verify", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = one_line(&out);
    assert!(err.contains("products.validator.json") && err.contains("UTF-8"), "{err}");

    // A link to an endless device is refused for what it is, not read; a regular file
    // above the cap is read no further than the cap.
    #[cfg(unix)]
    {
        let dir = scratch("endless");
        assert!(shopctl(&["export", dir.to_str().unwrap()]).status.success());
        std::fs::remove_file(dir.join("orders.indexes.json")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("orders.indexes.json")).unwrap();
        let started = std::time::Instant::now();
        let out = shopctl(&["verify", dir.to_str().unwrap()]);
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
        assert_eq!(out.status.code(), Some(2));
        let err = one_line(&out);
        assert!(err.contains("orders.indexes.json: is a character device, not a regular file"), "{err}");
        std::fs::remove_file(dir.join("orders.indexes.json")).unwrap();
        // Sparse: no disk space.
        let big = std::fs::File::create(dir.join("orders.indexes.json")).unwrap();
        big.set_len(artifacts::MAX_ARTIFACT_BYTES + 1).unwrap();
        let out = shopctl(&["verify", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        let err = one_line(&out);
        assert!(err.contains("orders.indexes.json") && err.contains("larger than"), "{err}");
    }
}

/// A FIFO where an artifact is expected would block `open` until a writer came:
/// `verify` and `export` refuse it at once (exit 2, naming the path and what it is),
/// and so does the library's reader.
#[cfg(unix)]
#[test]
fn a_fifo_where_an_artifact_is_expected_is_refused_within_seconds() {
    let dir = scratch("fifo");
    assert!(shopctl(&["export", dir.to_str().unwrap()]).status.success());
    let fifo = dir.join("products.validator.json");
    std::fs::remove_file(&fifo).unwrap();
    let made = Command::new("mkfifo").arg(&fifo).status().expect("run mkfifo");
    assert!(made.success());
    for command in ["verify", "export"] {
        // Killed after 10 s, so that a command that blocks fails the test instead of
        // hanging it.
        let started = std::time::Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_shopctl"))
            .args([command, dir.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run shopctl");
        while child.try_wait().unwrap().is_none() && started.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{command}: {:?}", started.elapsed());
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        let named = format!("{}: is a FIFO (named pipe), not a regular file", fifo.display());
        assert!(err.contains(&named), "{command}: {err}");
    }
    // Still a FIFO: export did not write over it.
    use std::os::unix::fs::FileTypeExt as _;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    // The library's readers, on the same directory.
    let e = artifacts::read(&dir).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("is a FIFO"), "{e}");
    let e = artifacts::compare(&dir, &build_time()).unwrap_err();
    assert!(e.to_string().contains("is a FIFO"), "{e}");
}
