//! TLS on a real connection: a local server that speaks TLS only, a certificate
//! authority made for the test, and the generated finder and `sync` over it. A client
//! that does not trust the authority, or does not ask for TLS, gets nothing. README's
//! test command runs it with docshape's default backend (`rustls-tls`, ring); CI runs
//! it again with `--features docshape/rustls-tls-aws-lc` (the driver then uses
//! aws-lc-rs), and with this crate's `openssl-tls` (the driver then uses OpenSSL,
//! built from source).

use std::path::Path;
use std::time::Duration;

use docshape::bson::{doc, Document};
use docshape::mongodb::options::ClientOptions;
use docshape::mongodb::Client;
use docshape::Model;
use docshape_testkit::TestServer;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "tls_accounts")]
#[access(name = "account", filter(_id))]
pub struct Account {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 40)]
    pub owner: String,
}

/// A certificate authority and a certificate it signed for `127.0.0.1` and
/// `localhost`, written as PEM files into `dir`: `(ca, cert, key)`.
fn certificates(dir: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // Distinct names for the authority and the server: rcgen gives both the same one by
    // default, and OpenSSL then takes the server's certificate for a self-signed one.
    ca_params.distinguished_name.push(DnType::CommonName, format!("docshape test CA {name}"));
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let mut server_params =
        CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    server_params.distinguished_name.push(DnType::CommonName, "localhost");
    let server_cert = server_params.signed_by(&server_key, &issuer).unwrap();
    let paths = (
        dir.join(format!("{name}-ca.pem")),
        dir.join(format!("{name}-cert.pem")),
        dir.join(format!("{name}-key.pem")),
    );
    std::fs::write(&paths.0, ca_cert.pem()).unwrap();
    std::fs::write(&paths.1, server_cert.pem()).unwrap();
    std::fs::write(&paths.2, server_key.serialize_pem()).unwrap();
    paths
}

/// A client from `uri` that gives up on selecting a server after two seconds.
async fn client(uri: &str) -> Client {
    let mut options = ClientOptions::parse(uri).await.unwrap();
    options.server_selection_timeout = Some(Duration::from_secs(2));
    Client::with_options(options).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_finder_and_sync_work_over_tls_and_nothing_works_without_it() {
    let certificates_dir = TempDir(std::env::temp_dir().join(format!("docshape-tls-{}", std::process::id())));
    let dir = &certificates_dir.0;
    std::fs::create_dir_all(dir).unwrap();
    let (ca, cert, key) = certificates(dir, "server");
    let server = TestServer::start_local_tls(&cert, &key, &ca).unwrap();
    assert!(server.uri().contains("tls=true"), "{}", server.uri());

    // Over TLS, trusting the test's authority: docshape's whole path works.
    let db = client(server.uri()).await.database("tls_test");
    docshape::sync::<Account>(&db).await.unwrap();
    let alice = Account { id: "a1".into(), owner: "Alice".into() };
    Account::collection(&db).insert_one(&alice).await.unwrap();
    assert_eq!(Account::account("a1").one(&db).await.unwrap(), Some(alice));
    // The validator reached the server too: it refuses a bad document.
    let raw = db.collection::<Document>(Account::COLLECTION);
    assert!(raw.insert_one(doc! { "_id": "a2", "owner": "x".repeat(41) }).await.is_err());

    // The same server without TLS: the handshake never completes.
    let plain = server.uri().replace("&tls=true", "&tls=false");
    let plain = plain.split("&tlsCAFile").next().unwrap().to_owned();
    let err = client(&plain).await.database("tls_test").run_command(doc! { "ping": 1 }).await.unwrap_err();
    assert!(err.to_string().to_lowercase().contains("server selection"), "{err}");

    // TLS trusting another authority: the server's certificate is refused.
    let (other_ca, _, _) = certificates(dir, "other");
    let distrust = server.uri().replace(ca.to_str().unwrap(), other_ca.to_str().unwrap());
    assert_ne!(distrust, server.uri());
    let err = client(&distrust).await.database("tls_test").run_command(doc! { "ping": 1 }).await.unwrap_err();
    let text = err.to_string().to_lowercase();
    assert!(text.contains("certificate") || text.contains("unknownissuer"), "{err}");
    // And the refusal comes from the backend this build asked for: with `openssl-tls` on,
    // the driver must have switched to OpenSSL, whose errors name its own routines.
    assert_eq!(text.contains("ssl routines"), cfg!(feature = "openssl-tls"), "{err}");

    drop(server);
}

/// The test's certificates: removed when the test ends, passed or failed.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
