//! Interop with Curator 5.4.0 over SASL GSSAPI (Kerberos), with the
//! conformance crate's `gssapi` feature: a Curator client logged in through
//! a JAAS `Client` section (`Krb5LoginModule` with the client keytab) and a
//! zoolock client (the same keytab through `KRB5_CLIENT_KTNAME`) exclude
//! each other on one mutex of the Kerberized ZooKeeper that `bash .ci/run`
//! starts with `scripts/zk-kerberos.sh start DIR` (its `KEY=VALUE`
//! file in `ZOOLOCK_TEST_KERBEROS_ENV`). zoolock reads its Kerberos
//! environment from the process, so the test runs itself again as a child
//! with that environment. Skips (printing why) when the server is not
//! configured.
#![cfg(feature = "gssapi")]

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use zoolock_tokio::{GssapiClient, Options};

use zoolock_testkit::java::{Java, java_or_skip, now_us, within};

const TEST: &str = "kerberos_mutex_with_curator";
/// Set in the child that runs the scenario.
const CHILD: &str = "ZOOLOCK_TEST_KERBEROS_CHILD";
const DONE: &str = "interop over GSSAPI passed";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kerberos_mutex_with_curator() {
    let Some(file) = std::env::var("ZOOLOCK_TEST_KERBEROS_ENV").ok().filter(|f| !f.trim().is_empty()) else {
        eprintln!("skipped: ZOOLOCK_TEST_KERBEROS_ENV is not set (`bash .ci/run` starts a Kerberized server)");
        return;
    };
    let text = std::fs::read_to_string(file.trim()).expect("the rig's KEY=VALUE file");
    let vars: HashMap<String, String> =
        text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.into(), v.trim_matches('\'').into())).collect();
    let Some(java) = java_or_skip(TEST) else { return };
    if std::env::var(CHILD).is_err() {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST, "--nocapture"])
            .env(CHILD, "1")
            .env("KRB5_CONFIG", &vars["ZK_KRB5_CONF"])
            .env("KRB5_CLIENT_KTNAME", &vars["ZK_CLIENT_KEYTAB"])
            .env("KRB5CCNAME", format!("FILE:{}/krb/cc-interop-{}", vars["ZK_DIR"], std::process::id()))
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains(DONE), "{text}");
        return;
    }

    // Curator's side: ZooKeeper's client logs in with the JAAS `Client`
    // section and authenticates with GSSAPI to zookeeper/localhost.
    let jaas = format!("{}/jaas-client-{}.conf", vars["ZK_DIR"], std::process::id());
    std::fs::write(
        &jaas,
        format!(
            "Client {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  \
             keyTab=\"{}\"\n  storeKey=true\n  useTicketCache=false\n  principal=\"{}\";\n}};\n",
            vars["ZK_CLIENT_KEYTAB"], vars["ZK_CLIENT_PRINCIPAL"]
        ),
    )
    .unwrap();
    let jvm = [
        format!("-Djava.security.auth.login.config={jaas}"),
        format!("-Djava.security.krb5.conf={}", vars["ZK_KRB5_CONF"]),
    ];
    let addr = format!("localhost:{}", vars["ZK_PORT"]);
    let path = format!("/zoolock-interop-{}-gssapi", std::process::id());
    let jv = Java::start_with(java, &addr, &jvm).await;
    let mut curator = jv.peer("c1");

    let options = Options::default().connect_timeout(Duration::from_secs(15)).sasl_gssapi(GssapiClient::new());
    let z = within("zoolock connect", zoolock_tokio::connect(&addr, options)).await.expect("zoolock over GSSAPI");
    let lock = z.mutex(&path).await.unwrap();

    // Curator holds: zoolock is excluded, then gets the lock only after
    // Curator's release.
    within("curator acquire", curator.acquire("MUTEX_ACQUIRE", &path)).await;
    assert!(lock.try_acquire().await.unwrap().is_none(), "zoolock must wait for Curator's holder");
    let waiting = tokio::spawn({
        let lock = lock.clone();
        async move {
            let guard = lock.acquire().await.unwrap();
            (guard, now_us())
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "zoolock acquired while Curator held the lock");
    let (exit, _) = within("curator release", curator.release("MUTEX_RELEASE")).await;
    let (guard, entered) = within("zoolock acquire", waiting).await.unwrap();
    assert!(entered >= exit, "zoolock entered at {entered} before Curator left at {exit}");

    // zoolock holds: Curator times out, then gets it after the release.
    curator.start_acquire("MUTEX_ACQUIRE", &format!("{path} 500"));
    assert!(within("curator try", curator.acquired()).await.is_none(), "Curator acquired while zoolock held it");
    guard.release().await.unwrap();
    within("curator again", curator.acquire("MUTEX_ACQUIRE", &path)).await;
    within("curator release", curator.release("MUTEX_RELEASE")).await;
    z.close().await.unwrap();
    println!("{DONE}");
}
