//! SASL GSSAPI (Kerberos) against the Kerberized ZooKeeper and private MIT
//! KDC that `scripts/zk-kerberos.sh start DIR` starts: `bash
//! .ci/run` starts it and writes its `KEY=VALUE` lines to the file named by
//! `ZOOLOCK_TEST_KERBEROS_ENV`. The credentials come from the Kerberos
//! environment of the process (`KRB5_CONFIG`, `KRB5CCNAME`,
//! `KRB5_CLIENT_KTNAME`), which a test cannot change for itself: each
//! scenario runs in a child process of this test binary with the
//! environment it needs (see [`child`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use zoolock_driver::{ConnectionState, Error, GssapiClient, Options};
use zoolock_driver::{RequestError, SaslError};

use super::{CONNECT_TIMEOUT, Rt, env_var};
use zoolock_testkit::proxy::Proxy;

/// Names the scenario a child process runs.
const CASE: &str = "ZOOLOCK_TEST_KERBEROS_CASE";
/// What a child prints once its scenario has passed.
const DONE: &str = "kerberos scenario passed:";

/// The rig's `KEY=VALUE` lines.
struct KrbServer {
    vars: HashMap<String, String>,
    addr: String,
}

impl KrbServer {
    fn from_env() -> Option<KrbServer> {
        let file = PathBuf::from(env_var("ZOOLOCK_TEST_KERBEROS_ENV")?);
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let vars: HashMap<String, String> = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.into(), v.trim_matches('\'').into()))
            .collect();
        // The server's principal is zookeeper/localhost: connect by that name.
        let addr = format!("localhost:{}", vars["ZK_PORT"]);
        Some(KrbServer { vars, addr })
    }

    fn var(&self, key: &str) -> &str {
        &self.vars[key]
    }
}

/// In the parent: runs this test binary's test `test` again, with `case`
/// and the Kerberos environment `env` (a ticket cache of its own in the
/// rig's directory), and asserts that the child ran `case` and passed.
/// In a child: `Some(case)`, the scenario to run.
fn child(server: &KrbServer, test: &str, case: &str, env: &[(&str, &str)]) {
    let cache = format!("FILE:{}/krb/cc-{test}-{case}-{}", server.var("ZK_DIR"), std::process::id());
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CASE, case)
        .env("KRB5_CONFIG", server.var("ZK_KRB5_CONF"))
        .env("KRB5CCNAME", &cache)
        .env_remove("KRB5_CLIENT_KTNAME");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains(&format!("{DONE} {case}")), "{test} {case}:\n{text}");
}

/// The scenario this process runs as a child, if it is one.
fn case() -> Option<String> {
    std::env::var(CASE).ok()
}

fn gssapi() -> Options {
    Options::default().sasl_gssapi(GssapiClient::new())
}

/// Over GSSAPI with a client keytab (`KRB5_CLIENT_KTNAME`): locks,
/// read-write locks and semaphores work, and two clients exclude each
/// other; then, with the ticket `kinit` put in the cache, the same.
pub async fn kerberos_recipes(rt: &Rt) {
    let Some(server) = KrbServer::from_env() else { return };
    let Some(case) = case() else {
        child(&server, "kerberos_recipes", "keytab", &[("KRB5_CLIENT_KTNAME", server.var("ZK_CLIENT_KEYTAB"))]);
        return child(&server, "kerberos_recipes", "kinit", &[]);
    };
    if case == "kinit" {
        let kinit = Command::new("kinit")
            .args(["-kt", server.var("ZK_CLIENT_KEYTAB"), server.var("ZK_CLIENT_PRINCIPAL")])
            .status()
            .unwrap();
        assert!(kinit.success(), "kinit");
    }
    let a = rt.within("connect", rt.connect(&server.addr, gssapi())).await.expect("a authenticates");
    let b = rt.within("connect", rt.connect(&server.addr, gssapi())).await.expect("b authenticates");
    let path = rt.path(&format!("kerberos-{case}"));
    rt.mutex_and_rwlock(&a, &b, &path, "excluded over GSSAPI", &b).await;
    let leases = rt.within("lease", a.semaphore(&format!("{path}-sem"), 2).await.unwrap().acquire(2)).await.unwrap();
    for lease in leases {
        lease.release().await.unwrap();
    }
    // Without SASL the same server refuses every request.
    super::refused_without_sasl(rt, &server.addr, &path).await;
    a.close().await.unwrap();
    b.close().await.unwrap();
    println!("{DONE} {case}");
}

/// Each failure its own typed error, well within the connect timeout: no
/// ticket and no keytab, a stale keytab (the KDC has rotated the key), a
/// wrong service name, and a KDC that does not answer.
pub async fn kerberos_failures(rt: &Rt) {
    let Some(server) = KrbServer::from_env() else { return };
    let Some(case) = case() else {
        let keytab = server.var("ZK_CLIENT_KEYTAB");
        child(&server, "kerberos_failures", "no-credentials", &[]);
        child(&server, "kerberos_failures", "stale-keytab", &[("KRB5_CLIENT_KTNAME", server.var("ZK_BAD_KEYTAB"))]);
        child(&server, "kerberos_failures", "wrong-service", &[("KRB5_CLIENT_KTNAME", keytab)]);
        // A krb5.conf whose KDC port refuses connections.
        let conf = std::fs::read_to_string(server.var("ZK_KRB5_CONF")).unwrap();
        let kdc = format!("127.0.0.1:{}", server.var("ZK_KDC_PORT"));
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let dead = format!("{}/krb/krb5-dead-kdc-{}.conf", server.var("ZK_DIR"), std::process::id());
        std::fs::write(&dead, conf.replace(&kdc, &closed.to_string())).unwrap();
        return child(
            &server,
            "kerberos_failures",
            "kdc-down",
            &[("KRB5_CLIENT_KTNAME", keytab), ("KRB5_CONFIG", &dead)],
        );
    };
    let (options, expected) = match case.as_str() {
        "no-credentials" => (gssapi(), SaslError::NoCredentials),
        "stale-keytab" => (gssapi(), SaslError::CredentialsRejected),
        "wrong-service" => {
            (Options::default().sasl_gssapi(GssapiClient::new().service("zookeeper-nope")), SaslError::UnknownServer)
        }
        "kdc-down" => (gssapi(), SaslError::KdcUnreachable),
        other => panic!("unknown case {other}"),
    };
    let start = Instant::now();
    let result = rt.within("connect", rt.connect(&server.addr, options)).await;
    let elapsed = start.elapsed();
    assert!(matches!(&result, Err(Error::Request(RequestError::Sasl(e))) if *e == expected), "{case}: {result:?}");
    assert!(elapsed < CONNECT_TIMEOUT / 2, "{case}: fast, took {elapsed:?}");
    println!("{DONE} {case}");
}

/// A session over GSSAPI that expires (a proxy cut past the session
/// timeout) is renewed by itself, and the new session authenticates again:
/// the lock is taken again on it. Through the proxy the connect string's
/// host is 127.0.0.1, so the server principal's host is given explicitly.
pub async fn kerberos_renewal(rt: &Rt) {
    let Some(server) = KrbServer::from_env() else { return };
    if case().is_none() {
        return child(
            &server,
            "kerberos_renewal",
            "renewal",
            &[("KRB5_CLIENT_KTNAME", server.var("ZK_CLIENT_KEYTAB"))],
        );
    }
    let proxy = Proxy::start(&format!("127.0.0.1:{}", server.var("ZK_PORT")));
    let timeout = Duration::from_secs(2);
    let options = Options::default().sasl_gssapi(GssapiClient::new().host("localhost")).session_timeout(timeout);
    let a = rt.within("connect", rt.connect(&proxy.addr, options)).await.expect("authenticates through the proxy");
    let mut states = a.state_changes().unwrap();
    let first = a.session_id();
    let lock = a.mutex(&rt.path("kerberos-renewal")).await.unwrap();
    rt.within("acquire", lock.acquire()).await.unwrap().release().await.unwrap();

    proxy.cut();
    let deadline = Instant::now() + timeout * 3;
    while !std::iter::from_fn(|| states.try_recv().ok()).any(|s| s == ConnectionState::Lost) {
        assert!(Instant::now() < deadline, "no Lost within {:?}", timeout * 3);
        rt.runtime.sleep_until(Instant::now() + Duration::from_millis(50)).await;
    }
    proxy.restore();
    // Nothing is served before SASL completes: an acquire that succeeds is
    // the new session's authentication at work.
    let guard = rt.within("acquire on the renewed session", lock.acquire()).await.unwrap();
    assert_ne!(a.session_id(), first, "a new session");
    guard.release().await.unwrap();
    a.close().await.unwrap();
    println!("{DONE} renewal");
}
