//! The testkit's own tests: errors, server folders, and a local server's life.

use docshape::bson;

use super::*;

#[test]
fn a_failure_caused_by_another_error_keeps_it_as_the_source() {
    let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "no");
    let e = TestkitError::caused("cannot create /x", io);
    assert_eq!(e.to_string(), "docshape testkit: cannot create /x: no");
    let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<std::io::Error>());
    assert_eq!(source.map(std::io::Error::kind), Some(std::io::ErrorKind::PermissionDenied));
    let driver = mongodb::error::Error::custom("refused");
    let e = TestkitError::from(driver);
    assert!(e.to_string().starts_with("docshape testkit: MongoDB: "), "{e}");
    assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<mongodb::error::Error>()));
    assert!(std::error::Error::source(&TestkitError::new("no server")).is_none());
}

#[test]
fn a_server_folder_starts_empty() {
    let stale = server_folder("folder-test", 1);
    std::fs::create_dir_all(stale.join("data")).unwrap();
    std::fs::write(stale.join("data/dump.rdb"), b"stale").unwrap();
    let dir = new_server_folder("folder-test", 1).unwrap();
    assert_eq!(dir, stale);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{} is not empty", dir.display());
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn a_local_server_leaves_no_files_behind() {
    let server = TestServer::start_local().unwrap();
    let dir = server.dir.clone().unwrap();
    assert!(dir.join("secantus.log").is_file(), "no log in {}", dir.display());
    assert!(dir.join("data").is_dir(), "no data in {}", dir.display());
    drop(server);
    assert!(!dir.exists(), "{} is left behind", dir.display());
}
/// The server process's id, as `serverStatus` reports it (`mongod` does too).
async fn server_pid(client: &Client) -> i64 {
    let status = client.database("admin").run_command(bson::doc! { "serverStatus": 1 }).await.unwrap();
    match status.get("pid") {
        Some(bson::Bson::Int32(p)) => i64::from(*p),
        Some(bson::Bson::Int64(p)) => *p,
        other => panic!("serverStatus has no pid: {other:?}"),
    }
}

#[test]
fn a_restarted_server_keeps_its_data_and_still_leaves_no_files_behind() {
    use futures_util::TryStreamExt;
    let server = TestServer::start_local().unwrap();
    let dir = server.dir.clone().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Journaled writes: what a crash must not lose (see `restart`).
    let journaled = mongodb::options::WriteConcern::builder().journal(true).build();
    let client = rt.block_on(server.client_with(|o| o.write_concern = Some(journaled))).unwrap();
    let docs = client.database("restart").collection::<bson::Document>("docs");
    let (pid, mut cursor) = rt.block_on(async {
        docs.insert_many((0..100).map(|i| bson::doc! { "_id": i })).await.unwrap();
        let mut cursor = docs.find(bson::doc! {}).batch_size(10).await.unwrap();
        for _ in 0..10 {
            cursor.try_next().await.unwrap().unwrap();
        }
        (server_pid(&client).await, cursor)
    });
    server.restart().unwrap();
    assert!(dir.join("data").is_dir(), "no data in {}", dir.display());
    rt.block_on(async {
        // A new process: the old one's cursor is gone with it.
        assert!(cursor.try_next().await.is_err(), "a cursor outlived the restart");
        assert_ne!(server_pid(&client).await, pid, "the server process is the same");
        assert_eq!(docs.count_documents(bson::doc! {}).await.unwrap(), 100);
        docs.insert_one(bson::doc! { "_id": 100 }).await.unwrap();
    });
    // A second restart keeps what was written after the first.
    server.restart().unwrap();
    let ids: Vec<i32> = rt.block_on(async {
        let found: Vec<bson::Document> = docs
            .find(bson::doc! {})
            .sort(bson::doc! { "_id": 1 })
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        found.iter().map(|d| d.get_i32("_id").unwrap()).collect()
    });
    assert_eq!(ids, (0..=100).collect::<Vec<_>>());
    drop((docs, client, rt));
    drop(server);
    assert!(!dir.exists(), "{} is left behind", dir.display());
}

#[test]
fn only_a_server_the_testkit_runs_can_be_restarted() {
    let server = TestServer {
        uri: "mongodb://127.0.0.1:1/".to_owned(),
        external: true,
        child: None,
        dir: None,
        addr: None,
    };
    let e = server.restart().unwrap_err();
    assert!(e.to_string().contains("the testkit does not run it"), "{e}");
}
