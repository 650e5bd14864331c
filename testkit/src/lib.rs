//! A real MongoDB-wire server for tests, yours and docshape's; with the `redis` feature
//! too, a real Redis (`redis`). A crate of its own, apart from `docshape`, so that an
//! application links none of it: depend on it under `[dev-dependencies]`.
//!
//! [`database`] gives each test its own database on a real server over a real
//! connection, never a mock:
//!
//! - when `MONGODB_URI` is set, the server it names (a real `mongod`); each test's
//!   database is dropped when its [`TestDb`] is;
//! - otherwise a local SecantusDB server (the Python package `secantusdb`), a
//!   MongoDB-wire-compatible server that enforces `$jsonSchema`, started once per
//!   process on a free loopback port and stopped when the process exits. When it is
//!   not installed, the testkit installs it (version [`SECANTUSDB_VERSION`]) into a
//!   virtualenv under the cache folder, as `mongodb-memory-server` does for `mongod`;
//!   that needs `python3` with `venv` and `pip`.
//!
//! Environment: `DOCSHAPE_CACHE` (the cache folder; default `$XDG_CACHE_HOME/docshape`
//! or `~/.cache/docshape`), `DOCSHAPE_SECANTUS_PYTHON` (a Python that already has
//! SecantusDB installed; skips the managed install).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let db = docshape_testkit::database("my_test").await?;
//! db.collection::<docshape::bson::Document>("c").insert_one(docshape::bson::doc! { "a": 1 }).await?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use mongodb::options::ClientOptions;
use mongodb::{Client, Database};

#[cfg(feature = "redis")]
pub mod redis;

mod monitor;
pub use monitor::{monitored, monitored_client, CommandLog};

/// The SecantusDB version the testkit installs when none is available.
pub const SECANTUSDB_VERSION: &str = "0.7.0b3";

/// How long a local server may take to accept connections (a first start includes
/// Python's imports).
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// How long a local server may take to stop once asked before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the testkit could not provide a server.
#[derive(Debug)]
pub struct TestkitError {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl TestkitError {
    /// A failure the testkit found itself (a cached one is only its message).
    fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), source: None }
    }

    /// A failure caused by `e` (an I/O error, say), which is kept as the source; the
    /// message is `context: e`, or `e` alone without a context.
    fn caused(context: impl fmt::Display, e: impl std::error::Error + Send + Sync + 'static) -> Self {
        let context = context.to_string();
        let message = if context.is_empty() { e.to_string() } else { format!("{context}: {e}") };
        Self { message, source: Some(Box::new(e)) }
    }
}

impl fmt::Display for TestkitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "docshape testkit: {}", self.message)
    }
}

impl std::error::Error for TestkitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<mongodb::error::Error> for TestkitError {
    fn from(e: mongodb::error::Error) -> Self {
        Self::caused("MongoDB", e)
    }
}

fn fail<T>(msg: impl Into<String>) -> Result<T, TestkitError> {
    Err(TestkitError::new(msg))
}

/// A MongoDB-wire server: the one `MONGODB_URI` names, or a local SecantusDB process
/// that lives as long as this value (and never longer than the process that started it).
///
/// A local server keeps its data and its log in a folder of its own under the
/// temporary directory, `docshape-secantus-<process id>-<port>`, removed when the
/// server stops (not when it [restarts](Self::restart)); a server that exits by itself
/// leaves its log there.
pub struct TestServer {
    uri: String,
    external: bool,
    /// The launcher of a local server; behind a lock so that [`TestServer::restart`]
    /// can take `&self` (a test shares the server with the code it restarts it under).
    child: Option<Mutex<Child>>,
    /// The local server's folder (in `Debug`: where its log is).
    dir: Option<PathBuf>,
    /// Where a local server listens, again after a restart.
    addr: Option<SocketAddr>,
}

impl fmt::Debug for TestServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestServer")
            .field("uri", &self.uri)
            .field("external", &self.external)
            .field("dir", &self.dir)
            .field("addr", &self.addr)
            .finish()
    }
}

impl TestServer {
    /// Starts a new local SecantusDB server on a free loopback port, installing it
    /// first if needed.
    pub fn start_local() -> Result<Self, TestkitError> {
        Self::start_local_with(&[])
    }

    /// [`TestServer::start_local`] as a standalone server: no replica set is
    /// advertised, so there are no transactions and no change streams, as with a
    /// standalone `mongod`.
    pub fn start_local_standalone() -> Result<Self, TestkitError> {
        Self::start_local_with(&["--standalone"])
    }

    /// [`TestServer::start_local`] with the test commands on, `configureFailPoint`
    /// above all, as `mongod --setParameter enableTestCommands=1`: for a test that makes
    /// the server refuse commands on purpose (`failCommand`), on a server of its own so
    /// that no other test meets the refusals.
    pub fn start_local_with_test_commands() -> Result<Self, TestkitError> {
        Self::start_local_with(&["--enable-test-commands"])
    }

    /// [`TestServer::start_local`] speaking TLS only, with the server certificate
    /// `cert` and its private key `key` (PEM files). Its [`uri`](Self::uri) asks for
    /// TLS and trusts the certificate authority in `ca` (a PEM file), so a client opened
    /// from it checks the server's certificate as a deployment's would.
    pub fn start_local_tls(cert: &Path, key: &Path, ca: &Path) -> Result<Self, TestkitError> {
        let text = |p: &Path| {
            p.to_str()
                .map(str::to_owned)
                .ok_or_else(|| TestkitError::new(format!("{} is not UTF-8", p.display())))
        };
        let (cert, key, ca) = (text(cert)?, text(key)?, text(ca)?);
        let mut server = Self::start_local_with(&["--tls-cert-file", &cert, "--tls-key-file", &key])?;
        // The CA file's path goes into the URI's query: escape what would end or split it.
        let ca: String = ca
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        server.uri = format!("{}&tls=true&tlsCAFile={ca}", server.uri);
        Ok(server)
    }

    fn start_local_with(extra: &[&str]) -> Result<Self, TestkitError> {
        let python = secantus_python()?;
        let port = free_port()?;
        let dir = new_server_folder("secantus", port)?;
        let log_path = dir.join("secantus.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| TestkitError::caused(format!("cannot create {}", log_path.display()), e))?;
        let log_err = log.try_clone().map_err(|e| TestkitError::caused("", e))?;
        // The launcher exits when its stdin closes, which happens when this process
        // ends however it ends, so no server outlives the tests that started it.
        let mut child = Command::new(&python)
            .arg("-c")
            .arg(LAUNCHER)
            .arg(port.to_string())
            .arg(&dir)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| TestkitError::caused(format!("cannot run {}", python.display()), e))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        wait_until_listening(&mut child, addr, &log_path, "SecantusDB", "")?;
        Ok(Self {
            uri: format!("mongodb://{addr}/?directConnection=true"),
            external: false,
            child: Some(Mutex::new(child)),
            dir: Some(dir),
            addr: Some(addr),
        })
    }

    /// Kills the local server as a crash would (SIGKILL: no shutdown, no last flush),
    /// starts it again on the same port over the same data, and waits until it accepts
    /// connections again. Clients keep working from the same [`uri`](Self::uri); what
    /// they had open on the old process (connections, cursors, sessions) is gone, as
    /// after a real crash and restart.
    ///
    /// What survives is what survives a crash of `mongod`: every write acknowledged
    /// with `j: true` (a write concern with `journal(true)`). A `w: 1` write without it
    /// may be lost when it was acknowledged just before the kill, on both servers: it
    /// was still in the journal's memory buffer (SecantusDB 0.7.0b3, killed during a
    /// stream of inserts, lost the last ~60 of 2,700 acknowledged that way, and none
    /// acknowledged with `j: true`). A test that counts on its writes surviving asks
    /// for `j: true`.
    ///
    /// It blocks until the server is back (about a second): from async code, call it
    /// where blocking is allowed (`spawn_blocking`, a thread of its own). An error for
    /// a server named by `MONGODB_URI` (the testkit does not run it), and when the
    /// server does not listen again within the start timeout (with the tail of its log;
    /// the server is stopped then).
    pub fn restart(&self) -> Result<(), TestkitError> {
        let (Some(child), Some(dir), Some(addr)) = (&self.child, &self.dir, self.addr) else {
            return fail(format!("cannot restart {}: the testkit does not run it", self.uri));
        };
        // One restart at a time: each waits for the launcher's count to move past its own.
        let mut child = child.lock().unwrap_or_else(PoisonError::into_inner);
        let counter = dir.join("restarts");
        let before = restarts(&counter);
        let log_path = dir.join("secantus.log");
        let asked = match child.stdin.as_mut() {
            Some(stdin) => stdin.write_all(b"r").and_then(|()| stdin.flush()),
            None => return fail("cannot restart a stopped server"),
        };
        asked.map_err(|e| TestkitError::caused("cannot ask SecantusDB's launcher for a restart", e))?;
        // The old process is gone once the count moves: only then can a connection
        // tell that the new one listens (the old one would accept it too).
        let deadline = Instant::now() + STOP_TIMEOUT;
        while restarts(&counter) <= before {
            if let Ok(Some(status)) = child.try_wait() {
                return fail(format!(
                    "SecantusDB's launcher exited ({status}) during a restart:\n{}",
                    tail(&log_path)
                ));
            }
            if Instant::now() > deadline {
                let log = tail(&log_path);
                stop_child(&mut child);
                return fail(format!(
                    "SecantusDB was not killed and started again within {STOP_TIMEOUT:?}:\n{log}"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        wait_until_listening(&mut child, addr, &log_path, "SecantusDB", " after a restart")
    }

    /// The connection string.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Whether this is a server named by `MONGODB_URI` rather than one the testkit runs.
    pub fn is_external(&self) -> bool {
        self.external
    }

    /// A new client connected to this server.
    ///
    /// Make one client per async runtime: the driver's background tasks live on the
    /// runtime that created the client.
    pub async fn client(&self) -> Result<Client, TestkitError> {
        self.client_with(|_| {}).await
    }

    /// A new client, with its options adjusted first (to install a command event
    /// handler that counts round trips, say).
    pub async fn client_with(&self, adjust: impl FnOnce(&mut ClientOptions)) -> Result<Client, TestkitError> {
        let mut options = ClientOptions::parse(&self.uri).await?;
        options.app_name.get_or_insert_with(|| "docshape-testkit".to_owned());
        options.server_selection_timeout.get_or_insert(Duration::from_secs(20));
        adjust(&mut options);
        Ok(Client::with_options(options)?)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            stop_child(child.get_mut().unwrap_or_else(PoisonError::into_inner));
        }
    }
}

/// How many times the launcher has restarted its server: the number in `counter`,
/// which it replaces after each restart (0 before the first).
fn restarts(counter: &Path) -> u64 {
    std::fs::read_to_string(counter).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
}

/// Stops a server the testkit started under a launcher (SecantusDB's) or a watchdog
/// (Redis's): both stop their server and clean up when their stdin closes, which is
/// what this does first. Killing them instead would orphan the server and leave its
/// files behind, so that only happens to one still running after a few seconds.
pub(crate) fn stop_child(child: &mut Child) {
    drop(child.stdin.take());
    let deadline = Instant::now() + STOP_TIMEOUT;
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Where the local `what` server on `port` keeps its files (see [`new_server_folder`]).
pub(crate) fn server_folder(what: &str, port: u16) -> PathBuf {
    std::env::temp_dir().join(format!("docshape-{what}-{}-{port}", std::process::id()))
}

/// A new, empty folder `docshape-<what>-<process id>-<port>` under the temporary
/// directory for a local server's files. What a killed server of an earlier process
/// with the same id and port left there is removed first: a server must start empty
/// (Redis would load a stale `dump.rdb` or cluster configuration, SecantusDB stale
/// data).
pub(crate) fn new_server_folder(what: &str, port: u16) -> Result<PathBuf, TestkitError> {
    let dir = server_folder(what, port);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .map_err(|e| TestkitError::caused(format!("cannot create {}", dir.display()), e))?;
    Ok(dir)
}

/// A local server of the test's own with the test commands on
/// ([`TestServer::start_local_with_test_commands`]), and a client that polls it: after
/// a failure the test provoked (a closed connection, a "shutting down" answer) the
/// driver checks the server again at once, where a streamed check would wait out its
/// 10 s first. `None` when `MONGODB_URI` is set: the test needs failpoints no other
/// test meets, so it skips (and says so).
pub async fn failpoint_server() -> Result<Option<(TestServer, Client)>, TestkitError> {
    if server()?.is_external() {
        eprintln!("skipped: MONGODB_URI is set, and this test needs a server of its own with failpoints");
        return Ok(None);
    }
    let server = tokio::task::spawn_blocking(TestServer::start_local_with_test_commands)
        .await
        .map_err(|e| TestkitError::caused("starting a server with test commands", e))??;
    let client = server
        .client_with(|o| o.server_monitoring_mode = Some(mongodb::options::ServerMonitoringMode::Poll))
        .await?;
    Ok(Some((server, client)))
}

/// The process-wide server: `MONGODB_URI` when set, otherwise one local SecantusDB
/// started on first use.
pub fn server() -> Result<&'static TestServer, TestkitError> {
    static SERVER: OnceLock<Result<TestServer, String>> = OnceLock::new();
    SERVER
        .get_or_init(|| match std::env::var("MONGODB_URI") {
            Ok(uri) if !uri.trim().is_empty() => {
                Ok(TestServer { uri, external: true, child: None, dir: None, addr: None })
            }
            _ => TestServer::start_local().map_err(|e| e.message),
        })
        .as_ref()
        .map_err(|e| TestkitError::new(e.clone()))
}

/// A database of its own for one test, on [`server`]. Dereferences to
/// [`mongodb::Database`].
pub struct TestDb {
    db: Database,
    client: Client,
    drop_on_exit: bool,
}

impl TestDb {
    /// The client the database belongs to.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The same database reached through another client of the same server (one with
    /// command monitoring, say); the returned value now owns the clean-up.
    fn with_client(mut self, client: Client) -> TestDb {
        let db = client.database(self.db.name());
        let drop_on_exit = std::mem::replace(&mut self.drop_on_exit, false);
        TestDb { db, client, drop_on_exit }
    }
}

impl std::ops::Deref for TestDb {
    type Target = Database;
    fn deref(&self) -> &Database {
        &self.db
    }
}

impl fmt::Debug for TestDb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestDb").field("name", &self.db.name()).finish()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if !self.drop_on_exit {
            return;
        }
        // Drop cannot await, and the test's runtime may be single-threaded: drop the
        // database from a thread with its own runtime and its own client.
        let name = self.db.name().to_owned();
        let Ok(server) = server() else { return };
        let uri = server.uri.clone();
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            rt.block_on(async move {
                if let Ok(client) = Client::with_uri_str(&uri).await {
                    let _ =
                        tokio::time::timeout(Duration::from_secs(10), client.database(&name).drop()).await;
                }
            });
        })
        .join();
    }
}

/// A fresh, uniquely named database on the process-wide [`server`] for one test.
/// `hint` goes into the name to make it recognisable.
pub async fn database(hint: &str) -> Result<TestDb, TestkitError> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let server = block_in_place_if_possible(server)?;
    let client = server.client().await?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let clean: String =
        hint.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).take(32).collect();
    let name = format!("ds_{}_{n}_{clean}", std::process::id());
    let db = client.database(&name);
    Ok(TestDb { db, client, drop_on_exit: server.external })
}

/// Starting the server blocks for a moment; on a multi-threaded runtime let the other
/// tasks move elsewhere meanwhile.
fn block_in_place_if_possible<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// Asserts that the server serves every access pattern of `T` with the index docshape
/// expects: `explain` of each pattern's query shows an index scan of it and no
/// collection scan. Syncs `T` first. Call it in your own tests.
///
/// ```no_run
/// # use docshape::{Model, validator::Schema};
/// # #[derive(serde::Serialize, serde::Deserialize, Model)]
/// # #[model(collection = "posts")]
/// # #[index(keys(author_id))]
/// # #[access(name = "by_author", filter(author_id))]
/// # struct Post { author_id: String }
/// # async fn run() {
/// let db = docshape_testkit::database("posts").await.unwrap();
/// docshape_testkit::assert_access_patterns_use_indexes::<Post>(&db).await;
/// # }
/// ```
pub async fn assert_access_patterns_use_indexes<T: docshape::Model>(db: &Database) {
    if let Err(e) = docshape::sync::<T>(db).await {
        panic!("sync of {} failed: {e}", T::COLLECTION);
    }
    let outcomes = match docshape::access::explain_access_patterns::<T>(db).await {
        Ok(o) => o,
        Err(e) => panic!("explain on {} failed: {e}", T::COLLECTION),
    };
    let failures: Vec<String> = outcomes.iter().filter(|o| !o.is_served()).map(ToString::to_string).collect();
    assert!(
        failures.is_empty(),
        "{}: access patterns not served as declared:\n{}",
        T::COLLECTION,
        failures.join("\n")
    );
}

/// Runs the server as a child process, its data in `data` inside the folder `argv[2]`
/// (which also holds the log), and stops it when stdin closes (the parent is gone or
/// dropped its [`TestServer`]) or on SIGTERM. Then it removes the folder; a server
/// that exited by itself loses only its data, and its log stays for the error message.
/// The data is removed only once the server is dead: removing it under a running
/// server raced with the server's own writes and left folders behind.
///
/// A byte `r` on stdin restarts the server ([`TestServer::restart`]): it is killed
/// (SIGKILL, as a crash), waited for, and started again with the same arguments, data
/// kept; then the file `restarts` in the folder holds how many restarts are done. One
/// lock orders a restart and a stop, so a stop never lets a new server slip past it.
const LAUNCHER: &str = r#"
import os, shutil, signal, subprocess, sys, threading
port, folder = sys.argv[1], sys.argv[2]
data = os.path.join(folder, "data")
# Calls `then` once stdin is closed: the server ends that way.
ON_EOF = """
import os, sys, threading
def on_eof(then):
    def watch():
        try:
            while sys.stdin.buffer.read(1):
                pass
        except Exception:
            pass
        then()
    threading.Thread(target=watch, daemon=True).start()
"""
# The server's stdin is a pipe from here, so that it ends when this launcher is gone,
# however it went, and no server outlives it.
run = ON_EOF + """
on_eof(lambda: os._exit(0))
sys.argv[0] = "secantusd-py"
from secantus.cli import main
sys.exit(main())
"""
args = ["--host", "127.0.0.1", "--port", port, "--storage-path", data, "--log-level", "WARNING"]
def start():
    return subprocess.Popen([sys.executable, "-c", run] + args + sys.argv[3:], stdin=subprocess.PIPE)
# Reentrant: SIGTERM's handler runs on the main thread, which may hold it.
lock = threading.RLock()
stopped = threading.Event()
restarting = threading.Event()
server = start()
def stop(*_):
    with lock:
        stopped.set()
        server.kill()
def restart():
    with lock:
        if not stopped.is_set():
            restarting.set()
            server.kill()
# Commands on stdin until it closes: `r` restarts; the end stops.
def watch():
    try:
        while True:
            command = os.read(0, 1)
            if not command:
                break
            if command == b"r":
                restart()
    except Exception:
        pass
    stop()
signal.signal(signal.SIGTERM, stop)
threading.Thread(target=watch, daemon=True).start()
restarts = 0
while True:
    status = server.wait()
    server.stdin.close()
    with lock:
        if not restarting.is_set() or stopped.is_set():
            break
        restarting.clear()
        server = start()
        restarts += 1
    # Replaced whole, so that a reader sees the old count or the new one.
    with open(os.path.join(folder, "restarts.new"), "w") as f:
        f.write(str(restarts))
    os.replace(os.path.join(folder, "restarts.new"), os.path.join(folder, "restarts"))
shutil.rmtree(folder if stopped.is_set() else data, ignore_errors=True)
sys.exit(0 if stopped.is_set() else status if status >= 0 else 128 - status)
"#;

/// Waits until a server the testkit started accepts connections on `addr`; an error
/// with the tail of its log when it exits first or does not listen in time (then it is
/// killed). `hint` follows the "exited" message: how to get the server.
pub(crate) fn wait_until_listening(
    child: &mut Child,
    addr: SocketAddr,
    log_path: &Path,
    what: &str,
    hint: &str,
) -> Result<(), TestkitError> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return fail(format!(
                "{what} exited ({status}) before accepting connections{hint}:\n{}",
                tail(log_path)
            ));
        }
        if Instant::now() > deadline {
            // The log first: a server stopped this way removes it.
            let log = tail(log_path);
            stop_child(child);
            return fail(format!("{what} did not listen on {addr} within {START_TIMEOUT:?}:\n{log}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn free_port() -> Result<u16, TestkitError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| TestkitError::caused("no free port", e))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| TestkitError::caused("", e))
}

fn tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// The cache folder the managed SecantusDB is installed under.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("DOCSHAPE_CACHE") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("docshape");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".cache").join("docshape"),
        None => std::env::temp_dir().join("docshape-cache"),
    }
}

fn has_secantus(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import secantus.cli"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A Python with pymongo, for tests that check what another client makes of docshape's
/// output: the one SecantusDB is installed in (pymongo is one of its dependencies),
/// installed into the cache when needed.
pub fn pymongo_python() -> Result<PathBuf, TestkitError> {
    let python = secantus_python()?;
    let ok = Command::new(&python)
        .args(["-c", "import pymongo, bson.json_util"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(python)
    } else {
        fail(format!("{} cannot import pymongo", python.display()))
    }
}

/// A Python that can import SecantusDB, installing it into the cache when needed.
fn secantus_python() -> Result<PathBuf, TestkitError> {
    if let Some(p) = std::env::var_os("DOCSHAPE_SECANTUS_PYTHON") {
        let p = PathBuf::from(p);
        if has_secantus(&p) {
            return Ok(p);
        }
        return fail(format!("DOCSHAPE_SECANTUS_PYTHON={} cannot import secantus", p.display()));
    }
    let venv = cache_dir().join(format!("secantusdb-{SECANTUSDB_VERSION}"));
    let python = venv.join("bin").join("python");
    if has_secantus(&python) {
        return Ok(python);
    }
    install(&venv)?;
    if has_secantus(&python) {
        Ok(python)
    } else {
        fail(format!("installed SecantusDB into {} but cannot import it", venv.display()))
    }
}

/// Installs into a private folder and renames it into place, so processes installing
/// at the same time never see a half-made virtualenv.
fn install(venv: &Path) -> Result<(), TestkitError> {
    let parent = venv.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| TestkitError::caused(format!("cannot create {}", parent.display()), e))?;
    let staging = parent.join(format!(".install-{}-{}", std::process::id(), SECANTUSDB_VERSION));
    let _ = std::fs::remove_dir_all(&staging);
    let python3 = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    eprintln!("docshape testkit: installing SecantusDB {SECANTUSDB_VERSION} into {} (once)", venv.display());
    run(Command::new(&python3).arg("-m").arg("venv").arg(&staging), "python3 -m venv")?;
    run(
        Command::new(staging.join("bin").join("python"))
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .arg(format!("secantusdb=={SECANTUSDB_VERSION}")),
        "pip install secantusdb",
    )?;
    if std::fs::rename(&staging, venv).is_err() {
        // Someone else finished first; theirs is as good as ours.
        let _ = std::fs::remove_dir_all(&staging);
    }
    Ok(())
}

/// Runs a setup command to its end; an error with its stderr when it fails.
pub(crate) fn run(cmd: &mut Command, what: &str) -> Result<(), TestkitError> {
    let out = cmd.output().map_err(|e| TestkitError::caused(what, e))?;
    if out.status.success() {
        Ok(())
    } else {
        fail(format!("{what} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr)))
    }
}

#[cfg(test)]
mod tests;
