//! Key families over a Redis Cluster: what a cluster connection cannot do by routing
//! one command by its key. Today that is `SCAN`, which must visit every primary.

use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::FromRedisValue;

use super::error::KeyError;
use super::family::{KeyFamily, ScanReport, Scanning};

/// Scans every primary of the cluster to its end, each with its own cursor.
pub(crate) async fn scan_report<T: KeyFamily>(
    conn: &mut ClusterConnection,
) -> Result<ScanReport<T>, KeyError> {
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query_async(conn).await?;
    let pattern = T::SPEC.match_pattern();
    let mut scanning = Scanning::<T>::new();
    for (host, port) in primaries(&nodes) {
        let mut cursor: u64 = 0;
        loop {
            let mut scan = redis::cmd("SCAN");
            scan.arg(cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(500);
            let route =
                RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host: host.clone(), port });
            let reply = conn.route_command(scan, route).await?;
            // Bytes, not text: one key that is not UTF-8 must not fail the reply.
            let (next, keys): (u64, Vec<Vec<u8>>) =
                FromRedisValue::from_redis_value(reply).map_err(redis::RedisError::from)?;
            scanning.absorb(keys);
            match scanning.advance(cursor, next)? {
                Some(next) => cursor = next,
                None => break,
            }
        }
    }
    Ok(scanning.report)
}

/// The primaries `CLUSTER NODES` lists as reachable: `(host, port)` from each line's
/// `ip:port@bus[,hostname]` whose flags say `master` and not `fail` or `noaddr`.
fn primaries(nodes: &str) -> Vec<(String, u16)> {
    let mut out = Vec::new();
    for line in nodes.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(address), Some(flags)) = (fields.get(1), fields.get(2)) else { continue };
        let flags: Vec<&str> = flags.split(',').collect();
        if !flags.contains(&"master") || flags.iter().any(|f| matches!(*f, "fail" | "fail?" | "noaddr")) {
            continue;
        }
        let address = address.split(['@', ',']).next().unwrap_or_default();
        let Some((host, port)) = address.rsplit_once(':') else { continue };
        if let Ok(port) = port.parse() {
            out.push((host.to_owned(), port));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::primaries;

    #[test]
    fn primaries_are_read_from_cluster_nodes() {
        let nodes = "\
07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host-4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master,fail - 0 1426238318243 3 connected 10923-16383
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001,host-1 myself,master - 0 0 1 connected 0-5460
";
        assert_eq!(primaries(nodes), [("127.0.0.1".to_owned(), 30002), ("127.0.0.1".to_owned(), 30001)]);
    }
}
