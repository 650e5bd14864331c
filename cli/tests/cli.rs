//! The `docshape` binary as a user runs it: a process, its exit status and stderr.
//! It links no models, so the commands over models refuse to pretend they checked
//! something; `infer` runs against the testkit's real server and refuses a database or
//! a collection that is not there, writing nothing.
//!
//! `cargo test -p docshape-cli --test cli`

use std::path::PathBuf;
use std::process::{Command, Output};

use docshape::bson::doc;
use docshape_testkit as testkit;

fn docshape(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_docshape"))
        .args(args)
        .env_remove("MONGODB_URI")
        .output()
        .expect("run docshape");
    eprintln!(
        "docshape {}: {}\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("docshape-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `check`, `check --workload`, `sync`, `export` and `verify` over no models exit 2
/// with a line saying so, before reaching any server (a port nothing listens on would
/// otherwise be the error) and without writing anything.
#[test]
fn commands_over_no_models_say_so_and_exit_2() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let uri = format!("mongodb://127.0.0.1:{port}/shop");
    let dir = scratch("no-models");
    std::fs::create_dir_all(&dir).unwrap();
    let out_dir = dir.join("export");
    for args in [
        vec!["check", "--uri", &uri],
        vec!["check", "--workload", "--uri", &uri],
        vec!["check", "--workload", "--since", "1h", "--uri", &uri],
        vec!["sync", "--uri", &uri],
        vec!["sync", "--dry-run", "--uri", &uri],
        vec!["export", out_dir.to_str().unwrap()],
        vec!["verify", dir.to_str().unwrap()],
    ] {
        let out = docshape(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with("error: this program links no models"), "{args:?}: {err}");
        assert!(err.contains(&format!("`{}`", args[0])), "names the command: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed {}", String::from_utf8_lossy(&out.stdout));
    }
    assert!(!out_dir.exists(), "export wrote {}", out_dir.display());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `infer --db` of a database the server does not hold exits 2 naming it and the
/// databases there; `--collection` of one the database does not hold exits 2 naming it,
/// with the close name it may have meant. Neither writes a file; a right name does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infer_refuses_a_database_or_collection_that_does_not_exist() {
    let db = testkit::database("cli_infer").await.unwrap();
    db.collection("customers").insert_one(doc! { "name": "Ada" }).await.unwrap();
    db.collection("orders").insert_one(doc! { "total": 3 }).await.unwrap();
    let uri = testkit::server().unwrap().uri().to_owned();
    let out_dir = scratch("infer");
    let infer = |extra: &[&str]| {
        let mut args = vec!["infer", "--uri", uri.as_str(), "--out", out_dir.to_str().unwrap()];
        args.extend(extra);
        tokio::task::block_in_place(|| docshape(&args))
    };

    let missing = format!("{}_nosuch", db.name());
    let out = infer(&["--db", &missing]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(&format!("database `{missing}` does not exist")), "{err}");
    assert!(err.contains(db.name()), "lists the databases there: {err}");
    assert!(!out_dir.exists(), "infer wrote into {}", out_dir.display());

    let out = infer(&["--db", db.name(), "--collection", "customers", "--collection", "ordres"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("collection `ordres` does not exist"), "{err}");
    assert!(err.contains("did you mean `orders`?"), "{err}");
    assert!(!out_dir.exists(), "infer wrote into {}", out_dir.display());

    let out = infer(&["--db", db.name(), "--collection", "invoices"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("collection `invoices` does not exist"), "{err}");
    assert!(err.contains("its collections: customers, orders"), "{err}");
    assert!(!out_dir.exists(), "infer wrote into {}", out_dir.display());

    // The names that are there: the files, with the collection's model.
    let out = infer(&["--db", db.name(), "--collection", "orders"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let source = std::fs::read_to_string(out_dir.join("models.rs")).unwrap();
    assert!(source.contains("collection = \"orders\""), "{source}");
    assert!(!source.contains("customers"), "{source}");
    let _ = std::fs::remove_dir_all(&out_dir);
}
