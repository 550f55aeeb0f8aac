//! The read-write lock's sharing rule, as `ReadWriteLock`'s docs state it
//! (the one statement; the other docs link there): readers on separate
//! handles share, readers through one handle take turns.

use std::time::Duration;

use zoolock_driver::{Error, HoldStatus, ReadWriteLock};

use super::{Env, children, finish, wait_children};

/// Two readers through one `ReadWriteLock` handle take turns, and a writer
/// of another client that queued meanwhile goes in between; two readers on
/// separate handles of one client hold at once.
pub async fn rwlock_sharing(env: &Env) {
    let path = env.path("rw-sharing");
    let [a, c] = env.clients().await;
    let one = a.read_write_lock(&path).await.unwrap();
    let ReadWriteLock { write: other_write, .. } = c.read_write_lock(&path).await.unwrap();

    // One handle: the second read waits for the first read guard.
    let first = one.read.acquire().await.unwrap();
    assert!(one.read.clone().try_acquire().await.unwrap().is_none(), "a second read through one handle");
    let second = one.read.acquire_timeout(Duration::from_millis(150)).await;
    assert!(matches!(second, Err(Error::TimedOut)), "{second:?}");
    // A writer queues on ZooKeeper behind the read node...
    let w = other_write.clone();
    let writer = env.spawn(async move { w.acquire().await });
    wait_children(env, &c, &path, 2).await;
    // ...and a second read through the handle waits its turn locally.
    let r = one.read.clone();
    let mut reader = env.spawn(async move { r.acquire().await });
    env.sleep(Duration::from_millis(100)).await;
    assert_eq!(children(&c, &path).await.len(), 2, "the second read made no node while the first holds");
    first.release().await.unwrap();
    let gw = env.within(Duration::from_secs(5), "the writer in between", writer).await.unwrap();
    assert_eq!(gw.status(), HoldStatus::Held);
    env.sleep(Duration::from_millis(100)).await;
    assert!(reader.try_take().is_none(), "the handle's second read beside the writer");
    gw.release().await.unwrap();
    let second = env.within(Duration::from_secs(5), "the handle's second read", reader).await.unwrap();
    assert!(second.node().contains("__READ__"));
    second.release().await.unwrap();

    // Separate handles (of one client here; of two clients in `rwlock`):
    // shared at once.
    let two = a.read_write_lock(&path).await.unwrap();
    let g1 = one.read.acquire().await.unwrap();
    let g2 = env.within(Duration::from_secs(5), "a read on a separate handle", two.read.acquire()).await.unwrap();
    assert_eq!((g1.status(), g2.status()), (HoldStatus::Held, HoldStatus::Held));
    assert_ne!(g1.node(), g2.node());
    g1.release().await.unwrap();
    g2.release().await.unwrap();
    one.read.settled().await.unwrap();
    two.read.settled().await.unwrap();
    finish(env, &c, &path, &[&a, &c]).await;
}
