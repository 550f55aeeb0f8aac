//! Interop of the multi-lock with Curator's `InterProcessMultiLock`: Curator
//! and zoolock clients take two mutexes as one, beside plain mutexes on one of
//! them, against the real ZooKeeper from `ZOOLOCK_TEST_CONNECT`. A multi-lock
//! is its members' queues and nothing else, so the two implementations must
//! exclude each other on every member. Skipped as `interop.rs` is.

use std::time::{Duration, Instant};

use tokio::time::sleep;
use zoolock_conformance::sim::Mode;
use zoolock_tokio::{Client, Lock, OpPlan, Options};

mod holds;

use holds::{Hold, check_exclusion, max_concurrent};
use zoolock_testkit::java::{Java, Peer, java_or_skip, now_us, within};

const CYCLES: usize = 6;

async fn connect(addr: &str, plan: OpPlan) -> Client {
    let options = Options::default().session_timeout(Duration::from_secs(10)).plan(plan);
    within("zoolock connect", zoolock_tokio::connect(addr, options)).await.expect("zoolock connect")
}

async fn curator_loop(mut peer: Peer, verb: &'static str, args: String) -> Vec<Hold> {
    let mut holds = Vec::new();
    for _ in 0..CYCLES {
        let (node, enter) = peer.acquire(verb, &args).await;
        sleep(Duration::from_millis(2)).await;
        let (exit, _) = peer.release("MUTEX_RELEASE").await;
        holds.push(Hold { who: peer.id.clone(), mode: Mode::Exclusive, node, enter, exit });
    }
    holds
}

async fn zoolock_loop(who: &'static str, lock: Lock) -> Vec<Hold> {
    let mut holds = Vec::new();
    for _ in 0..CYCLES {
        let guard = within(who, lock.acquire()).await.expect("zoolock acquire");
        let enter = now_us();
        sleep(Duration::from_millis(2)).await;
        let exit = now_us();
        let node = guard.node().to_owned();
        within(who, guard.release()).await.expect("zoolock release");
        holds.push(Hold { who: who.into(), mode: Mode::Exclusive, node, enter, exit });
    }
    holds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_multi_lock() {
    const TEST: &str = "interop_multi_lock";
    let Some(addr) = zoolock_testkit::real_server(TEST) else { return };
    let Some(java) = java_or_skip(TEST) else { return };
    let started = Instant::now();
    let jv = Java::start(java, &addr).await;
    let base = format!("/zoolock-interop/multi-lock-{}-{}", std::process::id(), now_us());
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let (z1, z2) = (connect(&addr, OpPlan::default()).await, connect(&addr, OpPlan::Curator).await);

    // Every contender needs `b`: Curator and zoolock multi-locks on [a, b],
    // and a plain mutex on `b` from each side.
    let both = format!("{a},{b}");
    let mut tasks = vec![
        tokio::spawn(curator_loop(jv.peer("c1"), "MULTI_ACQUIRE", both.clone())),
        tokio::spawn(curator_loop(jv.peer("c2"), "MUTEX_ACQUIRE", b.clone())),
    ];
    tasks.push(tokio::spawn(zoolock_loop("z1", z1.multi_lock(&[&a, &b]).await.unwrap())));
    tasks.push(tokio::spawn(zoolock_loop("z2", z2.mutex(&b).await.unwrap())));
    let mut holds = Vec::new();
    for task in tasks {
        holds.extend(within("contender", task).await.expect("contender task"));
    }
    holds.sort_by_key(|h| h.enter);
    assert_eq!(holds.len(), 4 * CYCLES);
    // Members are queued one after another, so grants follow no one sequence.
    check_exclusion(&holds, false);
    for path in [&a, &b] {
        let left = z1.get_children(path).await.map(|(names, _)| names).unwrap_or_default();
        assert!(left.is_empty(), "nodes left under {path}: {left:?}");
    }
    assert_eq!(max_concurrent(&holds), 1);
    let curator = holds.iter().filter(|h| h.who.starts_with('c')).count();
    println!("{TEST}: {} holds ({curator} Curator), {:?}", holds.len(), started.elapsed());
    z1.close().await.unwrap();
    z2.close().await.unwrap();
}
