//! The semaphore's conveniences beside `acquire(qty)`: `try_acquire(qty)`
//! never waits, `acquire_one()` hands back a single lease.

use super::*;

/// Two leases: `try_acquire` takes free ones at once and answers `None`
/// (keeping no lease node once settled) when they are not all free; `acquire_one`
/// waits for one lease like `acquire(1)`.
pub async fn semaphore_try_acquire_and_acquire_one(env: &Env) {
    let path = env.path("semaphore-try");
    let leases_path = format!("{path}/leases");
    let [a, b] = env.clients().await;
    let sa = a.semaphore(&path, 2).await.unwrap();
    let sb = b.semaphore(&path, 2).await.unwrap();

    let first = env.within(Duration::from_secs(5), "acquire_one", sa.acquire_one()).await.unwrap();
    assert_eq!(children(&a, &leases_path).await.len(), 1);
    // One free of two: asking for two gets nothing and keeps nothing.
    let none = env.within(Duration::from_secs(5), "try_acquire(2)", sb.try_acquire(2)).await.unwrap();
    assert!(none.is_none(), "two leases with one free");
    // A lease taken on the way is returned in the background; once the
    // handle owes the server nothing, only `first` is left.
    env.within(Duration::from_secs(5), "settled", sb.settled()).await.unwrap();
    assert_eq!(children(&a, &leases_path).await.len(), 1, "a refused try_acquire kept a lease node");
    let second = env.within(Duration::from_secs(5), "try_acquire(1)", sb.try_acquire(1)).await.unwrap();
    let second = second.expect("a free lease");
    assert_eq!(second.len(), 1);
    assert_ne!(second[0].node(), first.node());
    // Full: try_acquire answers at once, acquire_one waits for a return.
    let start = Instant::now();
    assert!(sa.try_acquire(1).await.unwrap().is_none(), "a third lease out of two");
    assert!(start.elapsed() < Duration::from_secs(2), "try_acquire waited {:?}", start.elapsed());
    let sa2 = sa.clone();
    let mut waiting = env.spawn(async move { sa2.acquire_one().await });
    env.sleep(Duration::from_millis(150)).await;
    assert!(waiting.try_take().is_none(), "acquire_one got a lease of a full semaphore");
    first.release().await.unwrap();
    let third = env.within(Duration::from_secs(5), "acquire_one after a return", waiting).await.unwrap();
    assert!(third.fencing_token() > second[0].fencing_token());

    drop(second);
    drop(third);
    finish_semaphore(env, &a, &path, &[&a, &b]).await;
}
