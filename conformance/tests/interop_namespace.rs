//! Interop with Curator 5.4.0 for issue 24: Curator's `namespace("ns")` and
//! zoolock connected to `host:port/ns` share one namespace that ZooKeeper
//! reaps while both are idle; each then acquires again, making the
//! namespace again as a container (as Curator's `ZKPaths.mkdirs` does), and
//! they still exclude each other.
//!
//! The test runs its own ZooKeeper (`scripts/zk-server.sh`, Debian's jars)
//! with `znode.container.checkIntervalMs` at 100 ms, so the reaper runs
//! within the test; it needs no `ZOOLOCK_TEST_CONNECT`. Skipped, with the
//! reason printed, when java, javac or the jars are missing outside CI
//! (with `CI` set that fails, as for `interop.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tokio::time::sleep;
use zoolock_tokio::{Client, Lock, Options};

use zoolock_testkit::java::{Java, Peer, STEP, java_or_skip, within};

/// A private ZooKeeper with a fast container reaper; stopped on drop.
struct Server {
    dir: PathBuf,
    addr: String,
}

impl Server {
    fn start(test: &str) -> Server {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("zk-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(&dir)
            .env("ZK_FORCE_SYNC", "no")
            .env("ZK_JAVA_OPTS", "-Xms32m -Xmx256m -XX:+UseSerialGC -Dznode.container.checkIntervalMs=100")
            .output()
            .expect("run scripts/zk-server.sh");
        assert!(
            out.status.success(),
            "{test}: cannot start ZooKeeper: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        let addr = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Server { dir, addr }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(script()).arg("stop").arg(&self.dir).output();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/zk-server.sh")
}

async fn connect(addr: &str) -> Client {
    let options = Options::default().connect_timeout(Duration::from_secs(15));
    within("zoolock connect", zoolock_tokio::connect(addr, options)).await.expect("zoolock connect")
}

/// Waits until ZooKeeper has reaped `path` (the reaper runs every 100 ms).
/// Only a container is reaped (a client reads no mark of one: ZooKeeper
/// reports a container's `ephemeralOwner` as 0), so this is also the proof
/// that whoever made `path` made a container.
async fn reaped(admin: &Client, path: &str) {
    let deadline = Instant::now() + STEP;
    while admin.exists(path).await.expect("exists").is_some() {
        assert!(Instant::now() < deadline, "{path} was not reaped within {STEP:?}");
        sleep(Duration::from_millis(50)).await;
    }
}

/// zoolock holds while Curator's acquire waits, then Curator gets it once
/// zoolock releases.
async fn zoolock_then_curator(lock: &Lock, curator: &mut Peer) {
    let guard = within("zoolock acquire", lock.acquire()).await.expect("zoolock acquire");
    curator.start_acquire("MUTEX_ACQUIRE", "/lock");
    sleep(Duration::from_millis(200)).await;
    assert!(curator.try_next().is_none(), "Curator got the lock zoolock holds");
    guard.release().await.expect("zoolock release");
    let (node, _) = curator.acquired().await.expect("Curator acquires once zoolock released");
    assert!(node.starts_with("/lock/"), "Curator reports namespace paths: {node}");
    curator.release("MUTEX_RELEASE").await;
}

/// Curator holds while zoolock's acquire waits, then zoolock gets it once
/// Curator releases.
async fn curator_then_zoolock(lock: &Lock, curator: &mut Peer) {
    curator.acquire("MUTEX_ACQUIRE", "/lock").await;
    assert!(lock.try_acquire().await.expect("zoolock try_acquire").is_none(), "zoolock got the lock Curator holds");
    let waiting = lock.clone();
    let zoolock = tokio::spawn(async move { waiting.acquire().await });
    sleep(Duration::from_millis(200)).await;
    assert!(!zoolock.is_finished(), "zoolock got the lock Curator holds");
    curator.release("MUTEX_RELEASE").await;
    let guard = within("zoolock acquire", zoolock).await.expect("task").expect("zoolock acquire");
    guard.release().await.expect("zoolock release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_namespace_reaped_and_made_again() {
    let test = "interop_namespace_reaped_and_made_again";
    let Some(java) = java_or_skip(test) else { return };
    let server = Server::start(test);
    let ns = format!("zoolock-ns-{}", std::process::id());
    let root = format!("/{ns}");
    let jv = Java::start_in_namespace(java, &server.addr, &ns).await;
    let admin = connect(&server.addr).await;
    let mut curator = jv.peer("c1");

    // Curator makes the namespace on first use, as a container.
    curator.acquire("MUTEX_ACQUIRE", "/lock").await;
    assert!(admin.exists(&root).await.expect("exists").is_some(), "Curator made no {root}");
    let z = connect(&format!("{}{root}", server.addr)).await;
    let lock = z.mutex("/lock").await.expect("zoolock mutex");
    assert!(lock.try_acquire().await.expect("zoolock try_acquire").is_none(), "zoolock got the lock Curator holds");
    curator.release("MUTEX_RELEASE").await;
    lock.settled().await.expect("settled");

    // Both idle: the reaper takes the lock's container, then the namespace.
    reaped(&admin, &root).await;
    // zoolock first: it makes the namespace again.
    zoolock_then_curator(&lock, &mut curator).await;
    lock.settled().await.expect("settled");

    // Reaped again, so zoolock made a container as Curator did; Curator
    // first this time (its lock's mkdirs makes the namespace).
    reaped(&admin, &root).await;
    curator_then_zoolock(&lock, &mut curator).await;
    lock.settled().await.expect("settled");

    // And zoolock's plain requests under `/` see the same namespace.
    let (names, _) = z.get_children("/").await.expect("children of the namespace");
    assert!(names.iter().all(|n| n == "lock"), "unexpected nodes in the namespace: {names:?}");
    drop(lock);
    for c in [z, admin] {
        c.close().await.expect("close");
    }
    drop(jv);
    drop(server);
}
