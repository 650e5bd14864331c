//! A real Redis Cluster for tests (feature `redis-cluster`): three primaries on
//! loopback ports, the 16,384 slots split between them, started once per process and
//! stopped when it exits; or the cluster `REDIS_CLUSTER_URLS` names.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut conn = docshape_testkit::redis::cluster()?.connection().await?;
//! docshape::redis::cmd("SET").arg("k").arg("v").exec_async(&mut conn).await?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::net::TcpListener;
use std::process::Child;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use docshape::redis;
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;

use super::{redis_server_binary, spawn};
use crate::{fail, stop_child, TestkitError};

/// How many primaries the local cluster has.
const PRIMARIES: usize = 3;

/// A Redis Cluster: the one `REDIS_CLUSTER_URLS` names (comma-separated node URLs), or
/// three local primaries that live as long as this value.
pub struct RedisCluster {
    urls: Vec<String>,
    external: bool,
    children: Vec<Child>,
}

impl fmt::Debug for RedisCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisCluster").field("urls", &self.urls).field("external", &self.external).finish()
    }
}

impl RedisCluster {
    /// Starts three `redis-server`s in cluster mode on free loopback ports, gives each a
    /// third of the slots, joins them, and waits until every node reports the cluster
    /// up. The binary is found as [`RedisServer::start_local`](super::RedisServer::start_local)
    /// finds it.
    pub fn start_local() -> Result<Self, TestkitError> {
        let binary = redis_server_binary()?;
        let ports = cluster_ports()?;
        let mut cluster = RedisCluster {
            urls: ports.iter().map(|p| format!("redis://127.0.0.1:{p}")).collect(),
            external: false,
            children: Vec::new(),
        };
        for port in &ports {
            let args: Vec<String> = [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "2000",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            // Pushed as started, so that an error below still stops what was started.
            cluster.children.push(spawn(&binary, *port, &args)?);
        }
        let mut nodes = Vec::new();
        for url in &cluster.urls {
            nodes.push(redis::Client::open(url.as_str())?.get_connection()?);
        }
        // Slots in three ranges, as `redis-cli --cluster create` would split them.
        // ADDSLOTS rather than ADDSLOTSRANGE, which Redis 6.2 lacks.
        let per = 16_384 / PRIMARIES;
        for (i, node) in nodes.iter_mut().enumerate() {
            let start = i * per;
            let end = if i + 1 == PRIMARIES { 16_384 } else { start + per };
            let slots: Vec<usize> = (start..end).collect();
            redis::cmd("CLUSTER").arg("ADDSLOTS").arg(&slots).exec(node)?;
        }
        for port in &ports[1..] {
            redis::cmd("CLUSTER").arg("MEET").arg("127.0.0.1").arg(*port).exec(&mut nodes[0])?;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut up = true;
            for node in &mut nodes {
                let info: String = redis::cmd("CLUSTER").arg("INFO").query(node)?;
                up &= info.lines().any(|l| l.trim() == "cluster_state:ok")
                    && info.lines().any(|l| l.trim() == format!("cluster_known_nodes:{PRIMARIES}"));
            }
            if up {
                return Ok(cluster);
            }
            if Instant::now() > deadline {
                return fail(format!(
                    "the local Redis Cluster on {:?} did not come up within 30 s",
                    cluster.urls
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The nodes' URLs.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// Whether this is the cluster `REDIS_CLUSTER_URLS` names rather than one the
    /// testkit runs.
    pub fn is_external(&self) -> bool {
        self.external
    }

    /// A cluster client of these nodes.
    pub fn client(&self) -> Result<ClusterClient, TestkitError> {
        Ok(ClusterClient::new(self.urls.clone())?)
    }

    /// A cluster connection: each command goes to the primary that serves its key's
    /// slot.
    pub async fn connection(&self) -> Result<ClusterConnection, TestkitError> {
        Ok(self.client()?.get_async_connection().await?)
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            stop_child(child);
        }
    }
}

/// Three free loopback ports whose cluster bus ports (port + 10,000) are free too.
fn cluster_ports() -> Result<Vec<u16>, TestkitError> {
    let mut ports = Vec::new();
    // Bound: a busy machine may hand out ports whose bus port is taken; a few hundred
    // tries are plenty, and the loop must end either way.
    for _ in 0..500 {
        if ports.len() == PRIMARIES {
            return Ok(ports);
        }
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| TestkitError::caused("no free port", e))?;
        let port = listener.local_addr().map_err(|e| TestkitError::caused("", e))?.port();
        let Some(bus) = port.checked_add(10_000) else { continue };
        if ports.contains(&port) || ports.iter().any(|p| p + 10_000 == port || *p == bus) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", bus)).is_ok() {
            ports.push(port);
        }
    }
    fail("no three free loopback ports with free cluster bus ports")
}

/// The process-wide cluster: `REDIS_CLUSTER_URLS` when set, otherwise three local
/// primaries started on first use.
pub fn cluster() -> Result<&'static RedisCluster, TestkitError> {
    static CLUSTER: OnceLock<Result<RedisCluster, String>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| match std::env::var("REDIS_CLUSTER_URLS") {
            Ok(urls) if !urls.trim().is_empty() => Ok(RedisCluster {
                urls: urls.split(',').map(|u| u.trim().to_owned()).collect(),
                external: true,
                children: Vec::new(),
            }),
            _ => crate::block_in_place_if_possible(RedisCluster::start_local).map_err(|e| e.message),
        })
        .as_ref()
        .map_err(|e| TestkitError::new(e.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_cluster_leaves_no_files_behind() {
        let cluster = RedisCluster::start_local().unwrap();
        let dirs: Vec<_> = cluster
            .urls()
            .iter()
            .map(|url| crate::server_folder("redis", url.rsplit(':').next().unwrap().parse().unwrap()))
            .collect();
        assert_eq!(dirs.len(), PRIMARIES);
        for dir in &dirs {
            assert!(dir.join("nodes.conf").is_file(), "no node configuration in {}", dir.display());
        }
        drop(cluster);
        for dir in &dirs {
            assert!(!dir.exists(), "{} is left behind", dir.display());
        }
    }
}
