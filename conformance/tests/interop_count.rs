//! Interop with Curator 5.4.0 for issue 18: a semaphore sized by a shared
//! count, Curator's `InterProcessSemaphoreV2(client, path, SharedCount)` and
//! zoolock's `semaphore_with(path, sized_by(count))` on the same paths, and
//! Curator's `SharedCount` reading and writing the count zoolock writes and
//! reads; and revocable leases: Curator's `Revoker` reaches a zoolock
//! revocable lease, and a Curator lease (never revocable) ignores zoolock's
//! revoke. Same set-up and skipping rules as `interop.rs`.

use std::time::Duration;

use tokio::time::sleep;
use zoolock_tokio::{Client, Options, SemaphoreOptions};

use zoolock_testkit::java::{Java, Peer, java_or_skip, within};

async fn connect(addr: &str) -> Client {
    let options = Options::default().connect_timeout(Duration::from_secs(15));
    zoolock_tokio::connect(addr, options).await.expect("zoolock connect")
}

/// Curator's `SharedCount.getCount()` (or `setCount(n)` first).
async fn curator_count(peer: &mut Peer, path: &str, set: Option<i32>) -> i32 {
    match set {
        Some(n) => peer.send("COUNT_SET", &format!("{path} {n}")),
        None => peer.send("COUNT_GET", path),
    }
    peer.expect("COUNT").await[2].parse().expect("a count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_semaphore_sized_by_count() {
    let test = "interop_semaphore_sized_by_count";
    let Some(addr) = zoolock_testkit::real_server(test) else { return };
    let Some(java) = java_or_skip(test) else { return };
    let pid = std::process::id();
    let path = format!("/zoolock-interop-{pid}-sized");
    let count_path = format!("/zoolock-interop-{pid}-sized-count");
    let jv = Java::start(java, &addr).await;
    let (admin, z1) = (connect(&addr).await, connect(&addr).await);
    let count = admin.shared_count(&count_path, 1).await.unwrap();
    let sem = z1.semaphore_with(&path, SemaphoreOptions::sized_by(&count_path, 1)).await.unwrap();

    // Count 1: Curator holds the one lease, zoolock waits.
    let (mut c1, mut c2, mut reader) = (jv.peer("c1"), jv.peer("c2"), jv.peer("reader"));
    let (c1_node, _) = c1.acquire("SEMCOUNT_ACQUIRE", &format!("{path} {count_path}")).await;
    let waiting = sem.clone();
    let mut z1_wait = tokio::spawn(async move { waiting.acquire(1).await });
    sleep(Duration::from_millis(300)).await;
    assert!(!z1_wait.is_finished(), "zoolock got a second lease of 1");

    // zoolock sets 2: its waiter gets in within a second, Curator still
    // holding; Curator's SharedCount reads 2.
    count.set(2).await.unwrap();
    let lease = tokio::time::timeout(Duration::from_secs(1), &mut z1_wait)
        .await
        .expect("the waiter within 1 s of the count going to 2")
        .unwrap()
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(curator_count(&mut reader, &count_path, None).await, 2);

    // Curator sets 3: zoolock sees it, and a Curator waiter sized by the
    // same count gets the third lease.
    c2.start_acquire("SEMCOUNT_ACQUIRE", &format!("{path} {count_path} 300"));
    assert!(c2.acquired().await.is_none(), "Curator got a third lease of 2");
    assert_eq!(curator_count(&mut reader, &count_path, Some(3)).await, 3);
    within("zoolock sees 3", async {
        while count.get().value != 3 || sem.size() != 3 {
            sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    c2.acquire("SEMCOUNT_ACQUIRE", &format!("{path} {count_path}")).await;

    // A Curator lease is never revocable: a revoke leaves it held.
    admin.revoke(&c1_node).await.unwrap();
    sleep(Duration::from_millis(200)).await;
    assert!(c1.try_next().is_none(), "Curator's holder reacted to a revoke");
    assert!(admin.exists(&c1_node).await.unwrap().is_some());

    c1.release("SEM_RETURN").await;
    c2.release("SEM_RETURN").await;
    lease.release().await.unwrap();
    sem.settled().await.unwrap();
    let leases = format!("{path}/leases");
    within("no leases left", async {
        while !admin.get_children(&leases).await.map(|(c, _)| c.is_empty()).unwrap_or(true) {
            sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    for p in [format!("{path}/leases"), format!("{path}/locks"), path.clone(), count_path.clone()] {
        let _ = admin.delete(&p, None).await;
    }
    drop(sem);
    for c in [z1, admin] {
        c.close().await.unwrap();
    }
}

/// Curator's `Revoker.attemptRevoke` on a zoolock revocable lease reaches
/// its holder; the lease given back, its node is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_curator_revokes_a_zoolock_lease() {
    let test = "interop_curator_revokes_a_zoolock_lease";
    let Some(addr) = zoolock_testkit::real_server(test) else { return };
    let Some(java) = java_or_skip(test) else { return };
    let path = format!("/zoolock-interop-{}-revocable-lease", std::process::id());
    let jv = Java::start(java, &addr).await;
    let z = connect(&addr).await;
    let sem = z.semaphore_with(&path, SemaphoreOptions::leases(2).revocable(true)).await.unwrap();
    let lease = sem.acquire(1).await.unwrap().pop().unwrap();
    let mut revoker = jv.peer("revoker");
    revoker.send("REVOKE", lease.node());
    revoker.expect("REVOKE_SENT").await;
    within("the revocation request", lease.revocation_requested()).await;
    let node = lease.node().to_owned();
    lease.release().await.unwrap();
    within("the lease node's delete", async {
        while z.exists(&node).await.unwrap().is_some() {
            sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    for p in [format!("{path}/leases"), format!("{path}/locks"), path.clone()] {
        let _ = z.delete(&p, None).await;
    }
    drop(sem);
    z.close().await.unwrap();
}
