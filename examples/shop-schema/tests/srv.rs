//! `mongodb+srv://` URIs, resolved for real: `shopctl` and the testkit's `MONGODB_URI`
//! reach a server through SRV and TXT records served by a DNS responder on loopback.
//!
//! The driver's resolver reads its nameservers from `/etc/resolv.conf` (no option points
//! it elsewhere), and the host an SRV record names is then looked up by the system's
//! resolver, which reads the same file. So the test runs itself again in namespaces of
//! its own (`unshare`: a user namespace, a mount namespace in which `/etc/resolv.conf`
//! is a file saying `nameserver 127.0.0.1`, and a network namespace with only its own
//! loopback, so port 53 there is nobody else's), with a SecantusDB server and the
//! responder inside. Nothing outside the namespaces changes.

use std::net::UdpSocket;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use docshape::bson::{doc, Document};
use docshape_testkit::{self as testkit, TestServer};

/// Set in the re-run inside the namespaces.
const INSIDE: &str = "DOCSHAPE_SRV_TEST_INSIDE";
/// The SRV name the URIs use, under the domain reserved for tests (RFC 6761), and the
/// host its record names (in the same domain, as the driver requires).
const SRV_NAME: &str = "db.docshape.test";
const TARGET: &str = "node.docshape.test";

/// Brings up the new network namespace's loopback (`ip link set lo up`, with only
/// python3, which the testkit needs anyway): SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP.
const LOOPBACK_UP: &str = r#"
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))
"#;

#[test]
fn srv_uris_reach_the_server_through_dns() {
    if std::env::var_os(INSIDE).is_some() {
        inside();
        return;
    }
    // Installs SecantusDB (when it is not yet in the cache) out here, where the package
    // index is reachable; the namespace has no network but its loopback.
    drop(TestServer::start_local().expect("a local SecantusDB"));
    let resolv = std::env::temp_dir().join(format!("docshape-srv-resolv-{}.conf", std::process::id()));
    std::fs::write(&resolv, "nameserver 127.0.0.1\noptions timeout:2 attempts:2\n").unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "--net", "--", "sh", "-c"])
        .arg(r#"python3 -c "$1" && mount --bind "$0" /etc/resolv.conf && shift && exec "$@""#)
        .arg(&resolv)
        .arg(LOOPBACK_UP)
        .arg(&exe)
        .args(["srv_uris_reach_the_server_through_dns", "--exact", "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1")
        .env_remove("MONGODB_URI")
        .output()
        .expect("run unshare (util-linux)");
    let _ = std::fs::remove_file(&resolv);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{text}");
    assert!(
        out.status.success(),
        "the test inside its namespaces failed (user, mount and network namespaces must be \
         available to this user: `unshare --user --map-root-user --mount --net true`)"
    );
    // The run inside did run the test, not filter it away.
    assert!(text.contains("1 passed"), "the re-run inside the namespaces ran no test");
}

fn inside() {
    let server = TestServer::start_local().expect("a local SecantusDB");
    let port: u16 = server
        .uri()
        .strip_prefix("mongodb://127.0.0.1:")
        .and_then(|rest| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("a loopback URI with a port: {}", server.uri()));
    let dns = Responder::start(port);

    // The testkit, with MONGODB_URI naming the server only through DNS. (Set before any
    // thread of this process reads the environment.)
    let srv_uri = format!("mongodb+srv://{SRV_NAME}/?tls=false");
    std::env::set_var("MONGODB_URI", &srv_uri);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let shared = testkit::server().unwrap();
        assert!(shared.is_external());
        assert_eq!(shared.uri(), srv_uri);
        let db = testkit::database("srv").await.unwrap();
        db.collection::<Document>("notes")
            .insert_one(doc! { "_id": 1, "text": "through SRV" })
            .await
            .unwrap();
        // The same document, read back from the server the SRV record names.
        let direct = server.client().await.unwrap();
        let found =
            direct.database(db.name()).collection::<Document>("notes").find_one(doc! {}).await.unwrap();
        assert_eq!(found, Some(doc! { "_id": 1, "text": "through SRV" }));
    });
    assert!(dns.srv_queries() >= 1, "the driver asked the responder for the SRV record");
    assert!(dns.txt_queries() >= 1, "the driver asked the responder for the TXT record");

    // docshape_cli (shopctl) with an SRV URI: sync, then a check that finds no drift.
    let uri = format!("mongodb+srv://{SRV_NAME}/shop_srv?tls=false");
    let before = dns.srv_queries();
    let sync = shopctl(&["sync", "--uri", &uri]);
    assert!(sync.status.success(), "shopctl sync through SRV failed");
    let check = shopctl(&["check", "--uri", &uri]);
    assert_eq!(check.status.code(), Some(0), "shopctl check through SRV found drift or failed");
    assert!(dns.srv_queries() >= before + 2, "each shopctl run resolved the SRV record");

    // A name the responder does not serve is a DNS error, said as one.
    let missing = shopctl(&["check", "--uri", "mongodb+srv://absent.docshape.test/shop_srv?tls=false"]);
    assert_eq!(missing.status.code(), Some(2));
    let said = String::from_utf8_lossy(&missing.stderr).to_lowercase();
    assert!(said.contains("bad uri") && (said.contains("dns") || said.contains("srv")), "{said}");
    assert!(!said.contains("feature"), "the driver's DNS resolver is compiled in: {said}");
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

/// A DNS server for one zone, on 127.0.0.1:53 of the test's own network namespace:
/// the SRV record `_mongodb._tcp.db.docshape.test` naming `node.docshape.test` at the
/// given port, that host's A record (127.0.0.1), an empty TXT record set, and NXDOMAIN
/// for every other name. UDP only: every answer fits in 512 bytes.
struct Responder {
    stop: Arc<AtomicBool>,
    srv: Arc<AtomicUsize>,
    txt: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

const TYPE_A: u16 = 1;
const TYPE_TXT: u16 = 16;
const TYPE_SRV: u16 = 33;

impl Responder {
    fn start(port: u16) -> Self {
        let socket = UdpSocket::bind("127.0.0.1:53").expect("port 53 of the namespace's loopback");
        // Short reads, so the thread notices `stop` (bounded: it ends with the test).
        socket.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let (stop, srv, txt) = (Arc::new(AtomicBool::new(false)), Arc::default(), Arc::default());
        let thread = std::thread::spawn({
            let (stop, srv, txt): (Arc<AtomicBool>, Arc<AtomicUsize>, Arc<AtomicUsize>) =
                (Arc::clone(&stop), Arc::clone(&srv), Arc::clone(&txt));
            move || {
                let mut buf = [0u8; 1500];
                while !stop.load(Ordering::Relaxed) {
                    let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
                    let Some(query) = Query::parse(&buf[..n]) else { continue };
                    match query.qtype {
                        TYPE_SRV => srv.fetch_add(1, Ordering::Relaxed),
                        TYPE_TXT => txt.fetch_add(1, Ordering::Relaxed),
                        _ => 0,
                    };
                    let _ = socket.send_to(&answer(&query, port), from);
                }
            }
        });
        Self { stop, srv, txt, thread: Some(thread) }
    }

    fn srv_queries(&self) -> usize {
        self.srv.load(Ordering::Relaxed)
    }

    fn txt_queries(&self) -> usize {
        self.txt.load(Ordering::Relaxed)
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The one question of a query, with what is needed to answer it.
struct Query {
    id: [u8; 2],
    recursion_desired: bool,
    /// The question section as sent (name, type, class), repeated in the answer.
    question: Vec<u8>,
    name: String,
    qtype: u16,
}

impl Query {
    fn parse(packet: &[u8]) -> Option<Self> {
        if packet.len() < 12 || packet[2] & 0x80 != 0 || u16::from_be_bytes([packet[4], packet[5]]) != 1 {
            return None;
        }
        let mut at = 12;
        let mut labels = Vec::new();
        loop {
            let len = usize::from(*packet.get(at)?);
            at += 1;
            if len == 0 {
                break;
            }
            // Compression pointers never occur in a question name sent first.
            if len > 63 {
                return None;
            }
            labels.push(String::from_utf8_lossy(packet.get(at..at + len)?).to_ascii_lowercase());
            at += len;
        }
        let qtype = u16::from_be_bytes([*packet.get(at)?, *packet.get(at + 1)?]);
        packet.get(at + 3)?;
        Some(Self {
            id: [packet[0], packet[1]],
            recursion_desired: packet[2] & 0x01 != 0,
            question: packet[12..at + 4].to_vec(),
            name: labels.join("."),
            qtype,
        })
    }
}

fn encode_name(name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for label in name.split('.') {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out
}

/// The response to `query`: its records, none (NOERROR) for a known name without
/// records of the type asked, NXDOMAIN for any other name.
fn answer(query: &Query, port: u16) -> Vec<u8> {
    let srv_name = format!("_mongodb._tcp.{SRV_NAME}");
    let mut records: Vec<(u16, Vec<u8>)> = Vec::new();
    let known = match query.name.as_str() {
        n if n == srv_name => {
            if query.qtype == TYPE_SRV {
                let mut data = Vec::new();
                data.extend_from_slice(&0u16.to_be_bytes()); // priority
                data.extend_from_slice(&0u16.to_be_bytes()); // weight
                data.extend_from_slice(&port.to_be_bytes());
                data.extend_from_slice(&encode_name(TARGET));
                records.push((TYPE_SRV, data));
            }
            true
        }
        n if n == TARGET => {
            if query.qtype == TYPE_A {
                records.push((TYPE_A, vec![127, 0, 0, 1]));
            }
            true
        }
        n => n == SRV_NAME,
    };
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(&query.id);
    // QR, opcode 0, AA, RD as asked; RA; rcode 0 or 3 (NXDOMAIN).
    out.push(0x84 | u8::from(query.recursion_desired));
    out.push(0x80 | if known { 0 } else { 3 });
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&(records.len() as u16).to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&query.question);
    for (rtype, data) in records {
        out.extend_from_slice(&[0xc0, 12]); // the question's name
        out.extend_from_slice(&rtype.to_be_bytes());
        out.extend_from_slice(&1u16.to_be_bytes()); // IN
        out.extend_from_slice(&60u32.to_be_bytes()); // TTL
        out.extend_from_slice(&(data.len() as u16).to_be_bytes());
        out.extend_from_slice(&data);
    }
    out
}
