//! Many distinct locks on one session at once (issue 29): a burst of first
//! acquires several times larger than the requests the client lets be in
//! flight ([`IN_FLIGHT_WINDOW`](zoolock_driver::sans_io::IN_FLIGHT_WINDOW))
//! all get through, and every node goes with its release.

use std::time::Duration;

use zoolock_driver::HoldStatus;

use super::{Env, assert_empty, children, close_all, remove_tree};

/// 1,200 mutexes of one client acquired at once (a first acquire sends
/// three requests: over three windows' worth), all held together, then
/// released together; dropping the handles then leaves no recipe behind.
pub async fn many_locks_at_once(env: &Env) {
    const N: usize = 1200;
    let base = env.path("many");
    let client = env.client().await;
    let mut locks = Vec::with_capacity(N);
    for i in 0..N {
        locks.push(client.mutex(&format!("{base}/l{i}")).await.unwrap());
    }
    let acquires: Vec<_> = locks.iter().cloned().map(|lock| env.spawn(async move { lock.acquire().await })).collect();
    let mut guards = Vec::with_capacity(N);
    for acquire in acquires {
        guards.push(env.within(Duration::from_secs(60), "every acquire", acquire).await.unwrap());
    }
    assert!(guards.iter().all(|g| g.status() == HoldStatus::Held));
    assert_eq!(children(&client, &base).await.len(), N, "one lock path each");
    for i in [0, N / 2, N - 1] {
        assert_eq!(children(&client, &format!("{base}/l{i}")).await.len(), 1, "one node under l{i}");
    }
    let releases: Vec<_> = guards.into_iter().map(|g| env.spawn(async move { g.release().await })).collect();
    for release in releases {
        env.within(Duration::from_secs(60), "every release", release).await.unwrap();
    }
    for lock in &locks {
        env.within(Duration::from_secs(60), "every delete applied", lock.settled()).await.unwrap();
    }
    for i in 0..N {
        assert_empty(env, &client, &format!("{base}/l{i}")).await;
    }
    // Dropping the handles frees what they registered on the event loop.
    assert_eq!(client.registered_recipes(), N, "one recipe per lock");
    drop(locks);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while client.registered_recipes() > 0 {
        assert!(std::time::Instant::now() < deadline, "{} recipes left", client.registered_recipes());
        env.sleep(Duration::from_millis(10)).await;
    }
    remove_tree(&client, &base).await;
    close_all(&[&client]).await;
}
