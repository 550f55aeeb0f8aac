//! Foreign clients against zoolock's own server: Apache Curator 5.4.0 (Java)
//! and kazoo (Python) take and release their own locks against
//! [`TestingServer`], the in-memory model that `zoolock serve` runs.
//!
//! Curator: `testkit/java/CuratorDriver.java` via `zoolock_testkit::java`. Two
//! contenders loop over an `InterProcessMutex` 10 times each; a read-write
//! lock is shown to let readers share and keep the writer exclusive, then
//! contended; `InterProcessSemaphoreV2` with 2 leases hands out at most 2 and
//! refuses a third; `InterProcessSemaphoreMutex` is contended. Critical
//! sections (wall-clock microseconds from one JVM) must not conflict, and no
//! lock node may be left behind.
//!
//! kazoo: `conformance/python/kazoo_locks.py` does the same with kazoo's
//! `Lock`, `ReadLock`/`WriteLock` and `Semaphore(max_leases=2)`, checks
//! itself and exits 0 when all is well.
//!
//! Skipped, with the reason printed, when java, javac, the jars or kazoo are
//! missing, unless `CI` is set (to anything but `0`/`false`): then missing
//! tools fail the test (`scripts/install-deps.sh` installs them).

mod holds;

use holds::{Hold, check_exclusion, max_concurrent};
use zoolock_conformance::sim::Mode;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio::time::sleep;
use zoolock_model::TestingServer;
use zoolock_tokio::{Client, Error, Options};

use zoolock_testkit::in_ci;
use zoolock_testkit::java::{Java, Peer, STEP, java_or_skip, within};

// ---- helpers -----------------------------------------------------------------------------

async fn connect(addr: &str) -> Client {
    let options = Options::default().session_timeout(Duration::from_secs(10));
    within("zoolock connect", zoolock_tokio::connect(addr, options)).await.expect("zoolock connect")
}

async fn children(client: &Client, path: &str) -> Vec<String> {
    match client.get_children(path).await {
        Ok((names, _)) => names,
        Err(Error::Request(zoolock_tokio::RequestError::Server(code))) if code == zoolock_tokio::ErrorCode::NO_NODE => {
            Vec::new()
        }
        Err(e) => panic!("getChildren {path}: {e}"),
    }
}

/// No lock or lease node is left under any of `paths` (waits a little for
/// releases still in flight).
async fn assert_no_children(client: &Client, paths: &[String]) {
    let deadline = Instant::now() + STEP;
    for path in paths {
        loop {
            let names = children(client, path).await;
            if names.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "{path} still has children: {names:?}");
            sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A Curator contender looping `cycles` times over acquire, hold, release.
async fn java_loop(
    mut peer: Peer,
    verbs: (&'static str, &'static str),
    args: String,
    mode: Mode,
    cycles: usize,
    hold: Duration,
) -> Vec<Hold> {
    let mut holds = Vec::new();
    for i in 0..cycles {
        let (node, enter) = peer.acquire(verbs.0, &args).await;
        sleep(hold).await;
        let (exit, _) = peer.release(verbs.1).await;
        holds.push(Hold { who: peer.id.clone(), mode, node, enter, exit });
        sleep(Duration::from_millis([0, 1, 3][i % 3])).await;
    }
    holds
}

async fn collect(tasks: Vec<JoinHandle<Vec<Hold>>>) -> Vec<Hold> {
    let mut all = Vec::new();
    for task in tasks {
        let holds = within("contender", task).await.expect("contender task");
        assert!(holds.iter().all(|h| h.who == holds[0].who), "one contender per task");
        all.extend(holds);
    }
    all.sort_by_key(|h| h.enter);
    // Every hold had a node of its own (a semaphore mutex may not tell: "-").
    let mut nodes: Vec<&str> = all.iter().map(|h| h.node.as_str()).filter(|n| *n != "-").collect();
    nodes.sort_unstable();
    assert!(nodes.windows(2).all(|w| w[0] != w[1]), "a node was granted twice: {nodes:?}");
    all
}

/// Asserts that an acquire sent with a short timeout came back TIMEOUT.
async fn assert_times_out(peer: &mut Peer, verb: &str, args: &str, what: &str) {
    peer.start_acquire(verb, args);
    let got = peer.acquired().await;
    assert!(got.is_none(), "{what}: {} acquired {got:?}, but should have waited", peer.id);
}

// ---- Curator --------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn curator_locks_against_the_model() {
    let test = "curator_locks_against_the_model";
    let Some(java) = java_or_skip(test) else { return };
    let started = Instant::now();
    let server = TestingServer::start().await;
    let addr = server.connect_string().to_owned();
    let jv = Java::start(java, &addr).await;
    let admin = connect(&addr).await;

    // InterProcessMutex: 2 contenders x 10.
    let mutex = "/curator/mutex".to_owned();
    let tasks = ["c1", "c2"]
        .map(|id| {
            let hold = Duration::from_millis(2);
            tokio::spawn(java_loop(
                jv.peer(id),
                ("MUTEX_ACQUIRE", "MUTEX_RELEASE"),
                mutex.clone(),
                Mode::Exclusive,
                10,
                hold,
            ))
        })
        .into();
    let holds = collect(tasks).await;
    assert_eq!(holds.len(), 20);
    check_exclusion(&holds, false);
    assert_eq!(max_concurrent(&holds), 1);
    assert_no_children(&admin, std::slice::from_ref(&mutex)).await;
    println!("{test}: InterProcessMutex: 20 holds, never 2 at once");

    // InterProcessReadWriteLock: readers share, the writer waits for both and
    // then keeps readers out.
    let rw = "/curator/rw".to_owned();
    let (mut r1, mut r2, mut w1) = (jv.peer("r1"), jv.peer("r2"), jv.peer("w1"));
    let (_, r1_enter) = r1.acquire("READ_ACQUIRE", &rw).await;
    let (_, r2_enter) = r2.acquire("READ_ACQUIRE", &format!("{rw} 10000")).await;
    assert_times_out(&mut w1, "WRITE_ACQUIRE", &format!("{rw} 300"), "write while 2 readers hold").await;
    w1.start_acquire("WRITE_ACQUIRE", &rw);
    sleep(Duration::from_millis(200)).await;
    assert!(w1.try_next().is_none(), "the writer got in while readers hold");
    let (r1_exit, _) = r1.release("READ_RELEASE").await;
    let (r2_exit, _) = r2.release("READ_RELEASE").await;
    assert!(r1_enter.max(r2_enter) < r1_exit.min(r2_exit), "the readers held at the same time");
    let (_, w_enter) = w1.acquired().await.expect("writer after the readers");
    assert!(w_enter >= r1_exit.max(r2_exit), "the writer entered before the readers left");
    assert_times_out(&mut r1, "READ_ACQUIRE", &format!("{rw} 300"), "read while the writer holds").await;
    w1.release("WRITE_RELEASE").await;
    let tasks = vec![
        tokio::spawn(java_loop(
            r1,
            ("READ_ACQUIRE", "READ_RELEASE"),
            rw.clone(),
            Mode::Read,
            5,
            Duration::from_millis(20),
        )),
        tokio::spawn(java_loop(
            r2,
            ("READ_ACQUIRE", "READ_RELEASE"),
            rw.clone(),
            Mode::Read,
            5,
            Duration::from_millis(20),
        )),
        tokio::spawn(java_loop(
            w1,
            ("WRITE_ACQUIRE", "WRITE_RELEASE"),
            rw.clone(),
            Mode::Write,
            5,
            Duration::from_millis(5),
        )),
    ];
    let holds = collect(tasks).await;
    assert_eq!(holds.len(), 15);
    check_exclusion(&holds, false);
    assert_no_children(&admin, std::slice::from_ref(&rw)).await;
    println!("{test}: InterProcessReadWriteLock: readers shared, writer exclusive, 15 contended holds");

    // InterProcessSemaphoreV2 with 2 leases: a third contender waits.
    let sem = "/curator/sem".to_owned();
    let sem_args = format!("{sem} 2");
    let (mut s1, mut s2, mut s3) = (jv.peer("s1"), jv.peer("s2"), jv.peer("s3"));
    s1.acquire("SEM_ACQUIRE", &sem_args).await;
    s2.acquire("SEM_ACQUIRE", &format!("{sem_args} 10000")).await;
    assert_times_out(&mut s3, "SEM_ACQUIRE", &format!("{sem_args} 300"), "a third lease of 2").await;
    s1.release("SEM_RETURN").await;
    s3.acquire("SEM_ACQUIRE", &format!("{sem_args} 10000")).await;
    s2.release("SEM_RETURN").await;
    s3.release("SEM_RETURN").await;
    let tasks = [s1, s2, s3]
        .map(|p| {
            let hold = Duration::from_millis(10);
            tokio::spawn(java_loop(p, ("SEM_ACQUIRE", "SEM_RETURN"), sem_args.clone(), Mode::Lease, 5, hold))
        })
        .into();
    let holds = collect(tasks).await;
    assert_eq!(holds.len(), 15);
    let most = max_concurrent(&holds);
    assert!(most <= 2, "{most} leases of 2 at once: {holds:#?}");
    assert_no_children(&admin, &[format!("{sem}/leases"), format!("{sem}/locks")]).await;
    println!("{test}: InterProcessSemaphoreV2(2): third lease refused, 15 contended holds, at most {most} at once");

    // InterProcessSemaphoreMutex: 2 contenders x 5.
    let semmutex = "/curator/semmutex".to_owned();
    let tasks = ["m1", "m2"]
        .map(|id| {
            let hold = Duration::from_millis(2);
            let verbs = ("SEMMUTEX_ACQUIRE", "SEMMUTEX_RELEASE");
            tokio::spawn(java_loop(jv.peer(id), verbs, semmutex.clone(), Mode::Exclusive, 5, hold))
        })
        .into();
    let holds = collect(tasks).await;
    assert_eq!(holds.len(), 10);
    check_exclusion(&holds, false);
    assert_no_children(&admin, &[format!("{semmutex}/leases"), format!("{semmutex}/locks")]).await;
    println!("{test}: InterProcessSemaphoreMutex: 10 holds, never 2 at once");

    drop(jv);
    admin.close().await.unwrap();
    server.stop().await;
    println!("{test}: ok, {:?}", started.elapsed());
}

// ---- kazoo ----------------------------------------------------------------------------------

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// `Ok` when `python3 -c 'import kazoo'` works, else why not.
fn kazoo_available() -> Result<(), String> {
    match Command::new(python()).args(["-c", "import kazoo"]).stdout(Stdio::null()).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!("kazoo is not importable: {}", String::from_utf8_lossy(&out.stderr).trim())),
        Err(e) => Err(format!("{} not found ({e})", python())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_locks_against_the_model() {
    let test = "kazoo_locks_against_the_model";
    if let Err(reason) = kazoo_available() {
        assert!(!in_ci(), "{test}: {reason} (CI is set: scripts/install-deps.sh installs kazoo)");
        eprintln!("skipped {test}: {reason}");
        return;
    }
    let server = TestingServer::start().await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/kazoo_locks.py");
    let mut child = Command::new(python())
        .arg(&script)
        .arg(server.connect_string())
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for kazoo_locks.py") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{test}: kazoo_locks.py did not finish within 180 s");
        }
        sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{test}: kazoo_locks.py failed ({status}); see its output above");
    server.stop().await;
}
