//! Smoke test against the real server from `ZOOLOCK_TEST_CONNECT`.

use std::time::Duration;

use zoolock_tokio::{Error, HoldStatus, Options};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutex_round_trip() {
    let Some(addr) = zoolock_testkit::real_server("mutex_round_trip") else { return };
    let a = zoolock_tokio::connect(&addr, Options::default()).await.unwrap();
    let b = zoolock_tokio::connect(&addr, Options::default()).await.unwrap();
    let path = format!("/zoolock-smoke-{}", std::process::id());
    let la = a.mutex(&path).await.unwrap();
    let lb = b.mutex(&path).await.unwrap();
    let ga = la.acquire().await.unwrap();
    assert_eq!(ga.status(), HoldStatus::Held);
    assert!(matches!(lb.acquire_timeout(Duration::from_millis(200)).await, Err(Error::TimedOut)));
    let t1 = ga.fencing_token();
    ga.release().await.unwrap();
    let gb = lb.acquire().await.unwrap();
    assert!(gb.fencing_token() > t1);
    gb.release().await.unwrap();
    let (children, _) = a.get_children(&path).await.unwrap();
    assert!(children.is_empty(), "{children:?}");
    a.delete(&path, None).await.unwrap();
    a.close().await.unwrap();
    b.close().await.unwrap();
}
