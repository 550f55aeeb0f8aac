//! Secured-ZooKeeper scenarios every transport runs (its `tests/secured.rs`
//! lists one `#[test]` per scenario, each calling [`run`]): digest auth with
//! a creator-only ACL (on the plain server of `ZOOLOCK_TEST_CONNECT`), SASL
//! DIGEST-MD5, and, with the `tls` feature, mutual TLS on the servers that
//! `scripts/zk-server.sh` starts with `ZK_SECURE=tls` (directories in
//! `ZOOLOCK_TEST_TLS_DIR` for ZooKeeper 3.8's TLS 1.2 default and
//! `ZOOLOCK_TEST_TLS13_DIR` for a TLS 1.3 configuration). `bash .ci/run`
//! starts them all; a scenario whose server is not configured prints why
//! and passes. With the `gssapi` feature, SASL GSSAPI against a Kerberized
//! server (`kerberos.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[cfg(feature = "gssapi")]
mod kerberos;
/// The TLS scenarios (the transports' `tls` feature; run with a provider
/// feature, `--features ring`).
#[cfg(feature = "tls")]
mod tls;
#[cfg(feature = "gssapi")]
pub use kerberos::{kerberos_failures, kerberos_recipes, kerberos_renewal};
#[cfg(feature = "tls")]
pub use tls::{
    tls_failures, tls_rotation, tls_rotation_within_session, tls_server_checks, tls12_recipes, tls13_recipes,
};

use futures_lite::future;
use zoolock_driver::RequestError;
use zoolock_driver::{AclPolicy, Client, Error, Options, ReadWriteLock, Runtime, parse_acl};
use zoolock_driver::{CreateMode, ErrorCode};

use crate::TestRuntime;

/// Runs `scenario` on `R`, blocking the test's thread until it ends; a
/// failed assertion panics the test.
pub fn run<R: TestRuntime>(scenario: impl AsyncFnOnce(&Rt)) {
    R::block_on(async { scenario(&Rt { runtime: R::runtime(), label: R::LABEL }).await })
}

/// The runtime under test and a label for unique paths ([`run`] makes it).
#[derive(Clone)]
pub struct Rt {
    runtime: Arc<dyn Runtime>,
    label: &'static str,
}

impl Rt {
    pub(crate) fn path(&self, name: &str) -> String {
        format!("/zoolock-secured-{}-{}/{name}", self.label, std::process::id())
    }

    pub(crate) async fn connect(&self, addr: &str, options: Options) -> Result<Client, Error> {
        Client::connect(self.runtime.clone(), addr, options.connect_timeout(CONNECT_TIMEOUT)).await
    }

    pub(crate) async fn within<T>(&self, what: &str, f: impl std::future::Future<Output = T>) -> T {
        let rt = self.runtime.clone();
        future::or(f, async move {
            rt.sleep_until(Instant::now() + Duration::from_secs(20)).await;
            panic!("{what}: not done within 20 s")
        })
        .await
    }

    /// What both clients of a secured server do with locks: `a` and `b`
    /// exclude each other on a mutex at `path` (`excluded` says how), and
    /// `rw` takes the write lock of `{path}-rw`, downgrades it, releases
    /// both, and takes a read lock.
    pub(crate) async fn mutex_and_rwlock(&self, a: &Client, b: &Client, path: &str, excluded: &str, rw: &Client) {
        let (la, lb) = (a.mutex(path).await.unwrap(), b.mutex(path).await.unwrap());
        let g = self.within("acquire", la.acquire()).await.unwrap();
        assert!(lb.try_acquire().await.unwrap().is_none(), "{excluded}");
        g.release().await.unwrap();
        self.within("second", lb.acquire()).await.unwrap().release().await.unwrap();

        let ReadWriteLock { read, write } = rw.read_write_lock(&format!("{path}-rw")).await.unwrap();
        let w = self.within("write", write.acquire()).await.unwrap();
        self.within("downgrade", w.downgrade()).await.unwrap().release().await.unwrap();
        w.release().await.unwrap();
        self.within("read", read.acquire()).await.unwrap().release().await.unwrap();
    }
}

pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) fn env_var(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => Some(v.trim().to_owned()),
        _ => {
            eprintln!("skipped: {name} is not set (`bash .ci/run` sets it)");
            None
        }
    }
}

pub(crate) fn port(dir: &Path, file: &str) -> String {
    let p = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{}/{file}: {e}", dir.display()));
    format!("127.0.0.1:{}", p.trim())
}

fn is_server(result: &Result<impl std::fmt::Debug, Error>, code: ErrorCode) -> bool {
    matches!(result, Err(Error::Request(RequestError::Server(c))) if *c == code)
}

/// Digest auth and `auth::cdrwa`: the lock node and its parents belong to the
/// authenticated identity; an unauthenticated client (or one with the wrong
/// password) gets NoAuth deleting the lock node or listing its parent.
pub async fn digest_acl(rt: &Rt) {
    let Some(addr) = zoolock_testkit::real_server("secured") else { return };
    let acl = AclPolicy::new(parse_acl("auth::cdrwa").unwrap());
    let owner = Options::default().auth("digest", "alice:secret").acl(acl.clone());
    let a = rt.within("connect", rt.connect(&addr, owner.clone())).await.expect("digest auth connects");
    let anonymous = rt.connect(&addr, Options::default()).await.unwrap();
    let impostor = rt.connect(&addr, Options::default().auth("digest", "alice:wrong")).await.unwrap();

    let path = rt.path("mutex");
    let lock = a.mutex(&path).await.unwrap();
    let guard = rt.within("acquire", lock.acquire()).await.unwrap();
    for other in [&anonymous, &impostor] {
        let delete = other.delete(guard.node(), None).await;
        assert!(is_server(&delete, ErrorCode::NO_AUTH), "delete by another identity: {delete:?}");
        let list = other.get_children(&path).await;
        assert!(is_server(&list, ErrorCode::NO_AUTH), "parent created with the ACL: {list:?}");
    }
    // The same identity on another session may.
    let b = rt.connect(&addr, owner.clone()).await.unwrap();
    assert_eq!(b.get_children(&path).await.unwrap().0.len(), 1);
    guard.release().await.unwrap();

    // Read-write lock and semaphore under the same ACL.
    let write = a.read_write_lock(&rt.path("rw")).await.unwrap().write;
    let w = rt.within("write", write.acquire()).await.unwrap();
    let r = rt.within("downgrade", w.downgrade()).await.unwrap();
    let delete = anonymous.delete(w.node(), None).await;
    assert!(is_server(&delete, ErrorCode::NO_AUTH), "write node: {delete:?}");
    w.release().await.unwrap();
    r.release().await.unwrap();
    let sem = b.semaphore(&rt.path("sem"), 2).await.unwrap();
    let leases = rt.within("leases", sem.acquire(2)).await.unwrap();
    let delete = anonymous.delete(leases[0].node(), None).await;
    assert!(is_server(&delete, ErrorCode::NO_AUTH), "lease node: {delete:?}");
    for lease in leases {
        lease.release().await.unwrap();
    }
    for c in [a, b, anonymous, impostor] {
        c.close().await.unwrap();
    }
}

/// Per-prefix ACLs: the prefix's ACL applies under it, the default elsewhere.
pub async fn acl_prefix(rt: &Rt) {
    let Some(addr) = zoolock_testkit::real_server("secured") else { return };
    let private = rt.path("private");
    let policy = AclPolicy::default()
        .with_prefix(zoolock_driver::ZkPath::new(&private).unwrap(), parse_acl("auth::cdrwa,world:anyone:r").unwrap());
    let a = rt.connect(&addr, Options::default().auth("digest", "carol:pw").acl(policy)).await.unwrap();
    let anonymous = rt.connect(&addr, Options::default()).await.unwrap();
    let open = a.mutex(&rt.path("open")).await.unwrap().acquire().await.unwrap();
    let closed = a.mutex(&format!("{private}/lock")).await.unwrap().acquire().await.unwrap();
    assert!(anonymous.get_children(&format!("{private}/lock")).await.is_ok(), "world may read");
    let delete = anonymous.delete(closed.node(), None).await;
    assert!(is_server(&delete, ErrorCode::NO_AUTH), "under the prefix: {delete:?}");
    anonymous.delete(open.node(), None).await.expect("outside the prefix, the open default");
    closed.release().await.unwrap();
    drop(open);
    a.close().await.unwrap();
    anonymous.close().await.unwrap();
}

/// Plain creates and shared counts follow the ACL policy too: a digest
/// client's `auth::cdrwa` node cannot be read, written or deleted by an
/// unauthenticated client, while `create_with_acl` sets the ACL it is given.
pub async fn plain_create_acl(rt: &Rt) {
    let Some(addr) = zoolock_testkit::real_server("secured") else { return };
    let policy = AclPolicy::new(parse_acl("auth::cdrwa").unwrap());
    let a = rt.connect(&addr, Options::default().auth("digest", "alice:secret").acl(policy)).await.unwrap();
    let anonymous = rt.connect(&addr, Options::default()).await.unwrap();
    // A top-level node of its own: the other scenarios' parents have other ACLs.
    let top = format!("/zoolock-plain-acl-{}-{}", rt.label, std::process::id());
    a.create(&top, b"", CreateMode::PERSISTENT).await.unwrap();
    let (node, _) = a.create(&format!("{top}/node"), b"mine", CreateMode::PERSISTENT).await.unwrap();
    let (seq, _) = a.create(&format!("{top}/seq-"), b"", CreateMode::EPHEMERAL_SEQUENTIAL).await.unwrap();
    // ZooKeeper checks a delete against the parent's ACL, the rest against
    // the node's own.
    for path in [&node, &seq] {
        let delete = anonymous.delete(path, None).await;
        assert!(is_server(&delete, ErrorCode::NO_AUTH), "delete {path}: {delete:?}");
    }
    for path in [&top, &node, &seq] {
        let write = anonymous.set_data(path, b"theirs", None).await;
        assert!(is_server(&write, ErrorCode::NO_AUTH), "write {path}: {write:?}");
        let read = anonymous.get_data(path).await;
        assert!(is_server(&read, ErrorCode::NO_AUTH), "read {path}: {read:?}");
    }
    let under = anonymous.create(&format!("{top}/other"), b"", CreateMode::PERSISTENT).await;
    assert!(is_server(&under, ErrorCode::NO_AUTH), "create under it: {under:?}");
    assert_eq!(&a.get_data(&node).await.unwrap().0[..], b"mine", "the owner reads it");

    let count = a.shared_count(&format!("{top}/count"), 3).await.unwrap();
    let write = anonymous.set_data(&format!("{top}/count"), &7i32.to_be_bytes(), None).await;
    assert!(is_server(&write, ErrorCode::NO_AUTH), "shared count: {write:?}");
    drop(count);

    // An explicit ACL wins over the policy: world-readable, owner-written.
    let explicit = format!("{top}/explicit");
    let readable = parse_acl("world:anyone:r,auth::cdrwa").unwrap();
    a.create_with_acl(&explicit, b"shown", CreateMode::PERSISTENT, readable).await.unwrap();
    assert_eq!(&anonymous.get_data(&explicit).await.unwrap().0[..], b"shown");
    let write = anonymous.set_data(&explicit, b"x", None).await;
    assert!(is_server(&write, ErrorCode::NO_AUTH), "explicit read-only: {write:?}");
    let open = format!("{top}/open");
    let acl = zoolock_driver::Acl::open_unsafe();
    a.create_with_acl(&open, b"", CreateMode::PERSISTENT, acl).await.unwrap();
    anonymous.set_data(&open, b"anyone", None).await.expect("explicit open ACL: anyone writes");
    let delete = anonymous.delete(&open, None).await;
    assert!(is_server(&delete, ErrorCode::NO_AUTH), "its parent still guards the delete: {delete:?}");

    for child in ["node", "count", "explicit", "open"] {
        a.delete(&format!("{top}/{child}"), None).await.unwrap();
    }
    a.delete(&seq, None).await.unwrap();
    a.delete(&top, None).await.unwrap();
    a.close().await.unwrap();
    anonymous.close().await.unwrap();
}

/// A credential the server rejects ends the connect with AuthFailed at once.
pub async fn auth_failed(rt: &Rt) {
    let Some(addr) = zoolock_testkit::real_server("secured") else { return };
    let start = Instant::now();
    let result = rt.connect(&addr, Options::default().auth("no-such-scheme", "x")).await;
    assert!(matches!(result, Err(Error::Request(RequestError::AuthFailed))), "{result:?}");
    assert!(start.elapsed() < CONNECT_TIMEOUT, "failed fast: {:?}", start.elapsed());
}

/// A server started with `ZK_SECURE=sasl`: its address and the DIGEST-MD5
/// users of its JAAS file.
pub(crate) struct SaslServer {
    pub(crate) addr: String,
    vars: std::collections::HashMap<String, String>,
}

impl SaslServer {
    pub(crate) fn from_env() -> Option<SaslServer> {
        let dir = PathBuf::from(env_var("ZOOLOCK_TEST_SASL_DIR")?);
        let text = std::fs::read_to_string(dir.join("sasl.env")).expect("sasl.env");
        let vars = text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect();
        Some(SaslServer { addr: port(&dir, "port"), vars })
    }

    pub(crate) fn user(&self, n: &str) -> (&str, &str) {
        (&self.vars[&format!("SASL_USER{n}")], &self.vars[&format!("SASL_PASSWORD{n}")])
    }
}

/// SASL DIGEST-MD5 on a server that requires it of every session: locks,
/// read-write locks and semaphores work for two users; a wrong password
/// fails the connect with AuthFailed at once; a client without SASL gets
/// the typed SaslAuthRequired, not a hang (`refused_without_sasl`).
pub async fn sasl(rt: &Rt) {
    let Some(server) = SaslServer::from_env() else { return };
    let (alice, alice_pw) = server.user("");
    let (bob, bob_pw) = server.user("2");
    let a = rt.within("connect", rt.connect(&server.addr, Options::default().sasl_digest(alice, alice_pw))).await;
    let a = a.expect("alice authenticates");
    let b = rt.connect(&server.addr, Options::default().sasl_digest(bob, bob_pw)).await.expect("bob authenticates");

    let path = rt.path("sasl");
    rt.mutex_and_rwlock(&a, &b, &path, "excluded", &a).await;
    let leases = rt.within("lease", b.semaphore(&format!("{path}-sem"), 2).await.unwrap().acquire(2)).await.unwrap();
    for lease in leases {
        lease.release().await.unwrap();
    }

    let start = Instant::now();
    let wrong = rt.connect(&server.addr, Options::default().sasl_digest(alice, "wrong")).await;
    assert!(matches!(wrong, Err(Error::Request(RequestError::AuthFailed))), "wrong password: {wrong:?}");
    let unknown = rt.connect(&server.addr, Options::default().sasl_digest("mallory", "x")).await;
    assert!(matches!(unknown, Err(Error::Request(RequestError::AuthFailed))), "unknown user: {unknown:?}");
    assert!(start.elapsed() < CONNECT_TIMEOUT, "fast: {:?}", start.elapsed());

    refused_without_sasl(rt, &server.addr, &path).await;
    a.close().await.unwrap();
    b.close().await.unwrap();
}

/// A client without SASL on a server that requires it is refused with the
/// typed `SaslAuthRequired`. Not following the membership, its handshake is
/// allowed and its first request refused. Following (the default), the
/// membership read is its session's first request: the refusal comes at
/// `connect` if that read's answer arrives before the connect sees the
/// session, else at the first request.
pub(crate) async fn refused_without_sasl(rt: &Rt, addr: &str, path: &str) {
    let none = rt.connect(addr, Options::default().follow_ensemble(false)).await.expect("the handshake is allowed");
    let refused = rt.within("refused", none.mutex(path).await.unwrap().acquire()).await;
    assert!(matches!(refused, Err(Error::Request(RequestError::SaslAuthRequired))), "no SASL: {refused:?}");
    let following = match rt.connect(addr, Options::default()).await {
        Ok(client) => rt.within("refused", client.mutex(path).await.unwrap().acquire()).await.map(drop),
        Err(e) => Err(e),
    };
    let sasl_required = matches!(following, Err(Error::Request(RequestError::SaslAuthRequired)));
    assert!(sasl_required, "no SASL, following the membership: {following:?}");
}
