//! Scenarios of issue 18: a semaphore sized by a shared count and resized
//! live, the shared count itself, and revocable leases.

use std::time::Duration;

use futures_lite::StreamExt;
use zoolock_driver::{Error, SemaphoreOptions};

use super::{Env, assert_empty, children, close_all, remove_tree};

/// The count is 1, one holder, one waiter: setting it to 2 lets the waiter
/// in within a second without the holder releasing. `available()` follows
/// the listings; shrinking back takes no lease away.
pub async fn semaphore_resized(env: &Env) {
    let path = env.path("resized");
    let count_path = env.path("resized-count");
    let (a, b, c) = (env.client().await, env.client().await, env.client().await);
    let sized = || SemaphoreOptions::sized_by(&count_path, 1);
    let sa = a.semaphore_with(&path, sized()).await.unwrap();
    let sb = b.semaphore_with(&path, sized()).await.unwrap();
    let held = sa.acquire(1).await.unwrap();
    assert_eq!(sa.size(), 1);
    assert_eq!(sa.available(), Some(0));

    let sb2 = sb.clone();
    let mut waiter = env.spawn(async move { sb2.acquire(1).await });
    env.sleep(Duration::from_millis(300)).await;
    assert!(waiter.try_take().is_none(), "a second lease out of one");

    let count = c.shared_count(&count_path, 7).await.unwrap();
    assert_eq!(count.get().value, 1, "the seed of an existing count is ignored");
    count.set(2).await.unwrap();
    let second = env.within(Duration::from_secs(1), "the waiter after the count went to 2", waiter).await.unwrap();
    assert_eq!(children(&a, &format!("{path}/leases")).await.len(), 2);
    assert_eq!(sb.size(), 2);
    assert_eq!(sb.available(), Some(0));

    // Shrinking keeps both leases; a third acquire waits.
    let seen = count.get();
    assert!(count.try_set(seen.version, 1).await.unwrap());
    assert!(!count.try_set(seen.version, 5).await.unwrap(), "a stale version must not write");
    env.within(Duration::from_secs(5), "the resize to 1", async {
        while sa.size() != 1 {
            env.sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(matches!(sa.acquire_timeout(1, Duration::from_millis(200)).await, Err(Error::TimedOut)));
    assert_eq!(children(&a, &format!("{path}/leases")).await.len(), 2, "shrinking took a lease away");

    drop(held);
    drop(second);
    assert_empty(env, &a, &format!("{path}/leases")).await;
    remove_tree(&a, &path).await;
    a.delete(&count_path, None).await.unwrap();
    close_all(&[&a, &b, &c]).await;
}

/// A shared count: the seed only when absent, Curator's bytes, compare and
/// set, a stream of changes, and a malformed node reported as such.
pub async fn shared_count(env: &Env) {
    let path = format!("{}/nested/count", env.path("count"));
    let (a, b) = (env.client().await, env.client().await);
    let ca = a.shared_count(&path, 3).await.unwrap();
    assert_eq!(ca.get().value, 3);
    let (data, _) = a.get_data(&path).await.unwrap();
    assert_eq!(&data[..], &[0, 0, 0, 3], "a 4-byte big-endian int, as Curator writes");
    let cb = b.shared_count(&path, 9).await.unwrap();
    assert_eq!(cb.get().value, 3);
    let mut changes = cb.changes();
    assert_eq!(changes.next().await.unwrap().value, 3);
    ca.set(-4).await.unwrap();
    let next = env.within(Duration::from_secs(5), "the change", changes.next()).await.unwrap();
    assert_eq!(next.value, -4);
    assert!(!cb.try_set(0, 10).await.unwrap());
    assert!(cb.try_set(next.version, 10).await.unwrap());
    assert_eq!(cb.get().value, 10);

    let bad = format!("{}/bad", env.path("count"));
    a.create(&bad, b"xy", zoolock_driver::CreateMode::PERSISTENT).await.unwrap();
    assert!(matches!(a.shared_count(&bad, 1).await, Err(Error::CountMalformed { len: 2, .. })));
    let sized = zoolock_driver::SemaphoreOptions::sized_by(&bad, 1);
    let sem = a.semaphore_with(&format!("{}/sem", env.path("count")), sized).await;
    assert!(matches!(sem, Err(Error::CountMalformed { len: 2, .. })));

    remove_tree(&a, &env.path("count")).await;
    close_all(&[&a, &b]).await;
}

/// A revocable lease: `revoke` on its node reaches its holder only; a
/// lease of a non-revocable semaphore ignores it.
pub async fn lease_revocation(env: &Env) {
    let path = env.path("lease-revocation");
    let (a, b) = (env.client().await, env.client().await);
    let sem = a.semaphore_with(&path, SemaphoreOptions::leases(2).revocable(true)).await.unwrap();
    let mut leases = sem.acquire(2).await.unwrap();
    let (kept, asked) = (leases.remove(0), leases.remove(0));
    b.revoke(asked.node()).await.unwrap();
    env.within(Duration::from_secs(5), "the revocation request", asked.revocation_requested()).await;
    assert!(env.timeout(Duration::from_millis(200), kept.revocation_requested()).await.is_none());
    let node = asked.node().to_owned();
    asked.release().await.unwrap();
    env.within(Duration::from_secs(5), "the revoked lease node's delete", async {
        while a.exists(&node).await.unwrap().is_some() {
            env.sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    drop(kept);

    let plain = format!("{path}-plain");
    let lease = a.semaphore(&plain, 1).await.unwrap().acquire(1).await.unwrap().pop().unwrap();
    b.revoke(lease.node()).await.unwrap();
    assert!(env.timeout(Duration::from_millis(300), lease.revocation_requested()).await.is_none());
    drop(lease);
    remove_tree(&a, &path).await;
    remove_tree(&a, &plain).await;
    close_all(&[&a, &b]).await;
}
