//! Issue 24: the chroot comes back. A client connected under a chroot
//! (`host:port/app`) keeps it in place as Curator keeps its namespace, so
//! its root going away (an operator, or ZooKeeper reaping an empty
//! container) does not end the client's usefulness.

use std::time::Duration;

use zoolock_driver::{Acl, Bytes, CreateMode, ErrorCode};
use zoolock_driver::{Client, Error};
use zoolock_driver::{Op, RequestError, ZkPath};

use super::{Env, children, close_all, held, remove_tree};

/// The chroot deleted (both levels) under a live client: its next acquire
/// makes it again and succeeds within 5 s; so does a plain create under `/`.
pub async fn chroot_recreated(env: &Env) {
    let root = env.path("chroot-back");
    let observer = env.client().await;
    let a = env.client_at(&format!("{}{root}/app", env.addr), Env::options()).await;
    let (lock, g) = held(&a, "/lock").await;
    g.release().await.unwrap();
    lock.settled().await.unwrap();

    remove_tree(&observer, &root).await;
    assert!(observer.exists(&root).await.unwrap().is_none());
    let g = env.within(Duration::from_secs(5), "the acquire after the chroot went", lock.acquire()).await.unwrap();
    assert_eq!(g.node().rsplit_once('/').map(|(dir, _)| dir), Some("/lock"), "paths are client paths");
    assert_eq!(children(&observer, &format!("{root}/app/lock")).await.len(), 1);
    g.release().await.unwrap();
    lock.settled().await.unwrap();

    remove_tree(&observer, &root).await;
    let create = a.create("/plain", b"x", CreateMode::PERSISTENT);
    let (path, _) = env.within(Duration::from_secs(5), "a plain create after the chroot went", create).await.unwrap();
    assert_eq!(path, "/plain");
    assert!(observer.exists(&format!("{root}/app/plain")).await.unwrap().is_some());

    drop(lock);
    close_all(&[&a]).await;
    remove_tree(&observer, &root).await;
    observer.close().await.unwrap();
}

/// A chroot that cannot be made (its parent refuses creates to us) fails
/// connect with a typed error naming the server's answer, at once.
pub async fn chroot_unavailable(env: &Env) {
    let root = env.path("chroot-refused");
    let observer = env.client().await;
    let read_only = Op::create(&ZkPath::new(&root).unwrap(), Bytes::new(), Acl::read_unsafe(), CreateMode::PERSISTENT);
    observer.multi(vec![read_only]).await.unwrap();
    let at = format!("{}{root}/app", env.addr);
    let refused = Client::connect(env.runtime.clone(), &at, Env::options());
    match env.within(Duration::from_secs(5), "connect under a refused chroot", refused).await {
        Err(Error::Request(RequestError::ChrootUnavailable(code))) => assert_eq!(code, ErrorCode::NO_AUTH),
        Err(e) => panic!("connect under a refused chroot: {e}"),
        Ok(_) => panic!("connect under a refused chroot succeeded"),
    }
    assert!(observer.exists(&format!("{root}/app")).await.unwrap().is_none());
    remove_tree(&observer, &root).await;
    observer.close().await.unwrap();
}
