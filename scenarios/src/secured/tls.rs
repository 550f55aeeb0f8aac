//! TLS scenarios (the transports' `tls` feature, with a crypto provider):
//! mutual TLS on the servers `scripts/zk-server.sh` starts with
//! `ZK_SECURE=tls` (`ZOOLOCK_TEST_TLS_DIR`, `ZOOLOCK_TEST_TLS13_DIR`), what a
//! misconfiguration fails with, and what the client checks of the server.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_lite::StreamExt;
use zoolock_driver::CreateMode;
use zoolock_driver::{ConnectionState, Error, Options, TlsConfigError, TlsError, TlsOptions};
use zoolock_testkit::proxy::Proxy;

use super::{CONNECT_TIMEOUT, Rt, env_var, port};

/// A server started with `ZK_SECURE=tls`: its plain and TLS addresses and PKI.
pub(crate) struct TlsServer {
    dir: PathBuf,
    pub(crate) tls_addr: String,
    pub(crate) plain_addr: String,
}

impl TlsServer {
    pub(crate) fn from_env(var: &str) -> Option<TlsServer> {
        let dir = PathBuf::from(env_var(var)?);
        Some(TlsServer { tls_addr: port(&dir, "tls_port"), plain_addr: port(&dir, "port"), dir })
    }

    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.dir.join("tls").join(name)
    }

    /// Mutual TLS with the CA `ca` and client identity `client` (`None`: no
    /// client certificate).
    pub(crate) fn tls(&self, ca: &str, client: Option<(&str, &str)>) -> TlsOptions {
        let (cert, key) = match client {
            Some((c, k)) => (Some(self.file(c)), Some(self.file(k))),
            None => (None, None),
        };
        TlsOptions::from_files(&self.file(ca), cert.as_deref(), key.as_deref()).expect("test PKI loads")
    }

    pub(crate) fn good(&self) -> TlsOptions {
        self.tls("ca.pem", Some(("client.pem", "client.key")))
    }
}

/// Mutual TLS on ZooKeeper 3.8's TLS 1.2 default (`ZOOLOCK_TEST_TLS_DIR`):
/// a mutex, a read-write lock and a semaphore work; the key may be PKCS#1
/// as well as PKCS#8.
pub async fn tls12_recipes(rt: &Rt) {
    tls_recipes(rt, "ZOOLOCK_TEST_TLS_DIR").await;
}

/// The same on a TLS 1.3 configuration (`ZOOLOCK_TEST_TLS13_DIR`).
pub async fn tls13_recipes(rt: &Rt) {
    tls_recipes(rt, "ZOOLOCK_TEST_TLS13_DIR").await;
}

/// The scenario of [`tls12_recipes`] on the server whose directory `var`
/// names.
async fn tls_recipes(rt: &Rt, var: &str) {
    let Some(server) = TlsServer::from_env(var) else { return };
    let a = rt.within("connect", rt.connect(&server.tls_addr, Options::default().tls(server.good()))).await.unwrap();
    let pkcs1 = server.tls("ca.pem", Some(("client.pem", "client-pkcs1.key")));
    let b = rt.connect(&server.tls_addr, Options::default().tls(pkcs1)).await.expect("PKCS#1 key");

    let path = rt.path(&format!("tls-{var}"));
    rt.mutex_and_rwlock(&a, &b, &path, "excluded over TLS", &b).await;

    let sem = a.semaphore(&format!("{path}-sem"), 1).await.unwrap();
    let lease = rt.within("lease", sem.acquire(1)).await.unwrap();
    let other = b.semaphore(&format!("{path}-sem"), 1).await.unwrap();
    let excluded = other.acquire_timeout(1, Duration::from_millis(200)).await;
    assert!(matches!(excluded, Err(Error::TimedOut)), "one lease: {excluded:?}");
    drop(lease);
    let (created, _) = a.create(&format!("{path}-plain"), b"x", CreateMode::EPHEMERAL).await.unwrap();
    assert_eq!(&b.get_data(&created).await.unwrap().0[..], b"x");
    a.close().await.unwrap();
    b.close().await.unwrap();
}

/// What is wrong, where to connect, with which TLS, and the error expected.
type FailureCase<'a> = (&'a str, &'a str, Option<TlsOptions>, fn(&TlsError) -> bool);

/// Each misconfiguration fails with its typed error within the connect
/// timeout, without a retry loop.
pub async fn tls_failures(rt: &Rt) {
    let Some(server) = TlsServer::from_env("ZOOLOCK_TEST_TLS_DIR") else { return };
    let cases: [FailureCase<'_>; 6] = [
        (
            "unknown CA",
            server.tls_addr.as_str(),
            Some(server.tls("other-ca.pem", Some(("client.pem", "client.key")))),
            |e| matches!(e, TlsError::ServerCertificate(m) if m.contains("UnknownIssuer")),
        ),
        ("no client certificate", server.tls_addr.as_str(), Some(server.tls("ca.pem", None)), |e| {
            matches!(e, TlsError::Rejected(_))
        }),
        (
            "client certificate from another CA",
            server.tls_addr.as_str(),
            Some(server.tls("ca.pem", Some(("other-client.pem", "other-client.key")))),
            |e| matches!(e, TlsError::Rejected(_)),
        ),
        (
            "expired client certificate",
            server.tls_addr.as_str(),
            Some(server.tls("ca.pem", Some(("expired-client.pem", "expired-client.key")))),
            |e| matches!(e, TlsError::Rejected(_)),
        ),
        ("plaintext to the TLS port", server.tls_addr.as_str(), None, |e| matches!(e, TlsError::PlaintextRefused(_))),
        ("TLS to the plain port", server.plain_addr.as_str(), Some(server.good()), |e| {
            matches!(e, TlsError::ClosedInHandshake | TlsError::Handshake(_))
        }),
    ];
    for (what, addr, tls, expected) in cases {
        let options = match tls {
            Some(tls) => Options::default().tls(tls),
            None => Options::default(),
        };
        let start = Instant::now();
        let result = rt.connect(addr, options).await;
        let elapsed = start.elapsed();
        match &result {
            Err(Error::Tls(e)) if expected(e) => {}
            other => panic!("{what}: {other:?}"),
        }
        assert!(elapsed < CONNECT_TIMEOUT, "{what}: took {elapsed:?}");
    }
}

/// What the client checks of the server: the name (the connect string's
/// host, or the override) and the validity dates. The expired server is an
/// `openssl s_server` with the test PKI's expired-server certificate.
pub async fn tls_server_checks(rt: &Rt) {
    let Some(server) = TlsServer::from_env("ZOOLOCK_TEST_TLS_DIR") else { return };
    let named = server.good().server_name("localhost").unwrap();
    let client = rt.connect(&server.tls_addr, Options::default().tls(named)).await.expect("name override");
    client.close().await.unwrap();
    let wrong = server.good().server_name("zk.invalid").unwrap();
    let result = rt.connect(&server.tls_addr, Options::default().tls(wrong)).await;
    assert!(
        matches!(&result, Err(Error::Tls(TlsError::ServerCertificate(m))) if m.contains("NotValidForName")),
        "{result:?}"
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut s_server = std::process::Command::new("openssl")
        .args(["s_server", "-quiet", "-accept"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("-cert")
        .arg(server.file("expired-server.pem"))
        .arg("-key")
        .arg(server.file("expired-server.key"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("openssl s_server");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "openssl s_server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let start = Instant::now();
    let result = rt.connect(&format!("127.0.0.1:{port}"), Options::default().tls(server.good())).await;
    let _ = s_server.kill();
    let _ = s_server.wait();
    assert!(matches!(&result, Err(Error::Tls(TlsError::ServerCertificate(m))) if m.contains("Expired")), "{result:?}");
    assert!(start.elapsed() < CONNECT_TIMEOUT);
}

/// Certificates that rotate (issue 39): options from files read again at
/// each new connection ([`TlsOptions::reloading_files`]). The CA and the
/// client certificate rotate between connections, and each connection
/// presents the files as they are then: a CA that did not sign the server
/// is refused, then (the CA rotated in) a client certificate the server
/// does not trust, then (the certificate rotated in) the session opens.
/// Within the session, a key file that no longer loads is named by
/// [`TlsOptions::reload_error`], and the reconnect after a cut uses the
/// last good configuration.
pub async fn tls_rotation(rt: &Rt) {
    let Some(server) = TlsServer::from_env("ZOOLOCK_TEST_TLS_DIR") else { return };
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("zoolock-tls-rotation-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ca, cert, key) = (dir.join("ca.pem"), dir.join("client.pem"), dir.join("client.key"));
    let put = |to: &Path, from: &str| {
        std::fs::copy(server.file(from), to).unwrap();
    };
    put(&ca, "other-ca.pem");
    put(&cert, "client.pem");
    put(&key, "client.key");
    let tls = TlsOptions::reloading_files(&ca, Some(&cert), Some(&key)).expect("the files load");
    let options = || Options::default().tls(tls.clone()).session_timeout(Duration::from_secs(10));

    let refused = rt.within("connect", rt.connect(&server.tls_addr, options())).await;
    assert!(
        matches!(&refused, Err(Error::Tls(TlsError::ServerCertificate(m))) if m.contains("UnknownIssuer")),
        "{refused:?}"
    );
    put(&ca, "ca.pem");
    put(&cert, "other-client.pem");
    put(&key, "other-client.key");
    let refused = rt.within("connect", rt.connect(&server.tls_addr, options())).await;
    assert!(matches!(&refused, Err(Error::Tls(TlsError::Rejected(_)))), "{refused:?}");
    put(&cert, "client.pem");
    put(&key, "client.key");
    let proxy = Proxy::start(&server.tls_addr);
    let client = rt.within("connect", rt.connect(&proxy.addr, options())).await.expect("the rotated files");
    assert_eq!(tls.reload_error(), None);

    std::fs::write(&key, "half written").unwrap();
    let mut states = client.state_changes().unwrap();
    assert_eq!(states.next().await, Some(ConnectionState::Connected));
    proxy.cut();
    assert_eq!(rt.within("suspended", states.next()).await, Some(ConnectionState::Suspended));
    proxy.restore();
    assert_eq!(rt.within("reconnected", states.next()).await, Some(ConnectionState::Reconnected));
    assert_eq!(tls.reload_error(), Some(TlsConfigError::NoKey { what: key.display().to_string() }));
    let path = format!("/zoolock-tls-rotation-{}-{nanos}", std::process::id());
    let (created, _) = client.create(&path, b"x", CreateMode::EPHEMERAL).await.expect("over the new connection");
    assert_eq!(created, path);
    client.close().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Rotation within one session (issue 39): the client's certificate, key
/// and CA files are replaced with a different valid set while the client
/// is connected, and the session's next connection presents them. The
/// server's x509 provider names each connection by its certificate's
/// subject: a node readable only by `CN=zoolock-rotated-client` (the test
/// PKI's second client of the server's CA) answers NoAuth over the first
/// connection and its data after the cut, on the same session. The CA file
/// becomes a bundle of an unrelated CA and the server's, so it too is a
/// different file that still verifies the server.
pub async fn tls_rotation_within_session(rt: &Rt) {
    use zoolock_driver::sans_io::wire::{Id, Perms};
    use zoolock_driver::{Acl, ErrorCode};
    let Some(server) = TlsServer::from_env("ZOOLOCK_TEST_TLS_DIR") else { return };
    if !server.file("rotated-client.pem").exists() {
        // A server started before the test PKI had a second client.
        eprintln!("tls_rotation_within_session: no rotated-client.pem in the test PKI; skipped");
        return;
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("zoolock-tls-rotation-session-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ca, cert, key) = (dir.join("ca.pem"), dir.join("client.pem"), dir.join("client.key"));
    let put = |to: &Path, from: &str| {
        std::fs::copy(server.file(from), to).unwrap();
    };
    put(&ca, "ca.pem");
    put(&cert, "client.pem");
    put(&key, "client.key");
    let tls = TlsOptions::reloading_files(&ca, Some(&cert), Some(&key)).expect("the files load");
    let options = Options::default().tls(tls.clone()).session_timeout(Duration::from_secs(10));
    let proxy = Proxy::start(&server.tls_addr);
    let client = rt.within("connect", rt.connect(&proxy.addr, options)).await.expect("the first certificate");
    let session = client.session_id();

    let path = format!("/zoolock-tls-rotation-session-{}-{nanos}", std::process::id());
    let rotated = Id { scheme: "x509".into(), id: "CN=zoolock-rotated-client".into() };
    let acl = vec![Acl { perms: Perms::ALL, id: rotated }];
    client.create_with_acl(&path, b"x", CreateMode::PERSISTENT, acl).await.expect("an x509 ACL");
    let first = client.get_data(&path).await;
    assert!(super::is_server(&first, ErrorCode::NO_AUTH), "the first certificate is not the rotated one: {first:?}");

    // Rotate: a CA bundle (an unrelated CA, then the server's) and the
    // second client's certificate and key.
    let mut bundle = std::fs::read(server.file("other-ca.pem")).unwrap();
    bundle.extend(std::fs::read(server.file("ca.pem")).unwrap());
    std::fs::write(&ca, bundle).unwrap();
    put(&cert, "rotated-client.pem");
    put(&key, "rotated-client.key");
    let mut states = client.state_changes().unwrap();
    assert_eq!(states.next().await, Some(ConnectionState::Connected));
    proxy.cut();
    assert_eq!(rt.within("suspended", states.next()).await, Some(ConnectionState::Suspended));
    proxy.restore();
    assert_eq!(rt.within("reconnected", states.next()).await, Some(ConnectionState::Reconnected));
    assert_eq!(tls.reload_error(), None);
    assert_eq!(client.session_id(), session, "the same session");
    let (data, _) = client.get_data(&path).await.expect("the rotated certificate reads the node");
    assert_eq!(&data[..], b"x");
    client.delete(&path, None).await.unwrap();
    client.close().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
