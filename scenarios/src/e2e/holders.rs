//! Revocation, participants, queue positions and fenced writes: what a
//! hold shows to its holder and to others.

use super::*;

/// Another client's revoke reaches the holder of a revocable mutex.
pub async fn revocation(env: &Env) {
    let path = env.path("revoke");
    let [a, b] = env.clients().await;
    let la = a.revocable_mutex(&path).await.unwrap();
    let ga = la.acquire().await.unwrap();
    assert!(env.timeout(Duration::from_millis(100), ga.revocation_requested()).await.is_none());
    b.revoke(ga.node()).await.unwrap();
    env.within(Duration::from_secs(5), "revocation request", ga.revocation_requested()).await;
    // Still seen after it came (it belongs to this hold).
    env.within(Duration::from_millis(100), "revocation seen again", ga.revocation_requested()).await;
    ga.release().await.unwrap();
    // Another client finds it free once the server has the (pipelined) delete.
    la.settled().await.unwrap();
    let gb = b.mutex(&path).await.unwrap().try_acquire().await.unwrap().expect("free after revoked release");
    drop(gb);
    // A new hold does not see the old request.
    let ga = env.within(Duration::from_secs(5), "re-acquire", la.acquire()).await.unwrap();
    assert!(env.timeout(Duration::from_millis(100), ga.revocation_requested()).await.is_none());
    ga.release().await.unwrap();
    // Revoking a node that is gone says so.
    let gone = b.revoke(&format!("{path}/nobody")).await;
    assert!(matches!(gone, Err(Error::Request(RequestError::Server(code))) if code == ErrorCode::NO_NODE), "{gone:?}");
    finish(env, &a, &path, &[&a, &b]).await;
}

/// Queue positions: five waiters, each queued after the previous one,
/// first see positions 1..5 in queue order (the holder counts in the total),
/// a position never goes up, and each gets the lock in that order. A
/// semaphore waiter behind a full semaphore sees a position too.
pub async fn queue_positions(env: &Env) {
    let path = env.path("positions");
    let holder = env.client().await;
    let gh = holder.mutex(&path).await.unwrap().acquire().await.unwrap();
    let order = Arc::new(StdMutex::new(Vec::new()));
    let mut clients = Vec::new();
    let mut tasks = Vec::new();
    let mut seen = Vec::new();
    for i in 1..=5usize {
        let c = env.client().await;
        let lock = c.mutex(&path).await.unwrap();
        let positions = Arc::new(StdMutex::new(Vec::new()));
        let (order, env2, record) = (order.clone(), env.clone(), positions.clone());
        tasks.push(env.spawn(async move {
            let g = lock.acquire_with_progress(None, move |q| record.lock().unwrap().push(q)).await?;
            order.lock().unwrap().push(i);
            env2.sleep(Duration::from_millis(20)).await;
            g.release().await
        }));
        clients.push(c);
        // Queue strictly one after the other; wait for the first position.
        wait_children(env, &holder, &path, i + 1).await;
        env.within(Duration::from_secs(5), "first position", async {
            while positions.lock().unwrap().is_empty() {
                env.sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        seen.push(positions);
    }
    for (i, positions) in seen.iter().enumerate() {
        let first = positions.lock().unwrap()[0];
        assert_eq!((first.position, first.total), (i + 1, i + 2), "waiter {}: {first:?}", i + 1);
    }
    gh.release().await.unwrap();
    for t in tasks {
        env.within(Duration::from_secs(10), "queued waiter", t).await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![1, 2, 3, 4, 5]);
    for (i, positions) in seen.iter().enumerate() {
        let all: Vec<usize> = positions.lock().unwrap().iter().map(|q| q.position).collect();
        assert!(all.windows(2).all(|w| w[1] <= w[0]) && all[0] == i + 1, "waiter {}: {all:?}", i + 1);
        eprintln!("waiter {} saw positions {all:?}", i + 1);
    }
    assert_empty(env, &holder, &path).await;

    // A semaphore of one lease: the waiter holds the internal lock and is
    // next in line for a lease.
    let sem_path = env.path("positions-sem");
    let held = holder.semaphore(&sem_path, 1).await.unwrap().acquire(1).await.unwrap();
    // The holder gives its internal lock back once it has the lease, in a
    // request of its own; until the server has applied it, a new waiter
    // truly queues behind it (position 2 of 2).
    wait_children(env, &holder, &format!("{sem_path}/locks"), 0).await;
    let sem = clients[0].semaphore(&sem_path, 1).await.unwrap();
    let positions = Arc::new(StdMutex::new(Vec::new()));
    let record = positions.clone();
    let waiter = env.spawn(async move {
        let leases = sem.acquire_with_progress(1, None, move |q| record.lock().unwrap().push(q)).await?;
        for lease in leases {
            lease.release().await?;
        }
        Ok::<(), Error>(())
    });
    env.within(Duration::from_secs(5), "semaphore position", async {
        while positions.lock().unwrap().is_empty() {
            env.sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let first = positions.lock().unwrap()[0];
    assert_eq!((first.position, first.total), (1, 2), "{first:?}");
    drop(held);
    env.within(Duration::from_secs(10), "semaphore waiter", waiter).await.unwrap();
    close_all(&clients.iter().collect::<Vec<_>>()).await;
    remove_tree(&holder, &sem_path).await;
    remove_tree(&holder, &path).await;
    holder.close().await.unwrap();
}

/// Fenced writes: the ops apply together while the hold is good; a failed
/// op writes nothing; once someone else deleted the hold's node, `fenced`
/// fails with `NotHeld` and writes nothing. The same for a semaphore lease.
pub async fn fenced_writes(env: &Env) {
    let path = env.path("fenced");
    let target = env.path("fenced-data");
    let [a, b] = env.clients().await;
    let p = |s: &str| ZkPath::new(s).unwrap();
    a.create(&target, b"v0", CreateMode::PERSISTENT).await.unwrap();
    let child = format!("{target}/child");
    let child2 = format!("{target}/child2");
    let guard = a.mutex(&path).await.unwrap().acquire().await.unwrap();
    let results = guard
        .fenced(vec![
            Op::set_data(&p(&target), Bytes::from_static(b"v1"), None),
            Op::create(&p(&child), Bytes::new(), Acl::open_unsafe(), CreateMode::PERSISTENT),
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 2, "the check's result is left out: {results:?}");
    assert_eq!(&b.get_data(&target).await.unwrap().0[..], b"v1");
    assert!(b.exists(&child).await.unwrap().is_some());
    // A failing op: nothing of the multi is written.
    let failed = guard
        .fenced(vec![
            Op::set_data(&p(&target), Bytes::from_static(b"lost"), None),
            Op::create(&p(&child), Bytes::new(), Acl::open_unsafe(), CreateMode::PERSISTENT),
        ])
        .await;
    assert_eq!(failed, Err(Error::FencedOpFailed { index: 1, code: ErrorCode::NODE_EXISTS }));
    assert_eq!(&b.get_data(&target).await.unwrap().0[..], b"v1");

    // Someone else deletes the hold's node (an admin, or the server after
    // the holder was paused past its session).
    b.delete(guard.node(), None).await.unwrap();
    let fenced = guard
        .fenced(vec![
            Op::set_data(&p(&target), Bytes::from_static(b"v2"), None),
            Op::create(&p(&child2), Bytes::new(), Acl::open_unsafe(), CreateMode::PERSISTENT),
        ])
        .await;
    assert_eq!(fenced, Err(Error::NotHeld { node: guard.node().to_owned() }));
    eprintln!("fenced after the node was deleted: {}", fenced.unwrap_err());
    assert_eq!(&b.get_data(&target).await.unwrap().0[..], b"v1", "nothing written");
    assert!(b.exists(&child2).await.unwrap().is_none(), "nothing created");
    guard.release().await.unwrap();

    // A multi-lock is held through every member: the write checks them all.
    let (m1, m2) = (env.path("fenced-m1"), env.path("fenced-m2"));
    let guard = a.multi_lock(&[&m1, &m2]).await.unwrap().acquire().await.unwrap();
    guard.fenced(vec![Op::set_data(&p(&target), Bytes::from_static(b"m"), None)]).await.unwrap();
    let second = format!("{m2}/{}", children(&b, &m2).await[0]);
    b.delete(&second, None).await.unwrap();
    // The member's node is watched: the hold is known lost without the
    // server's check, and the write is refused in the guard's name.
    wait_status(env, &guard, HoldStatus::Lost, Duration::from_secs(1)).await;
    let fenced = guard.fenced(vec![Op::set_data(&p(&target), Bytes::from_static(b"x"), None)]).await;
    assert_eq!(fenced, Err(Error::NotHeld { node: guard.node().to_owned() }));
    assert_eq!(&b.get_data(&target).await.unwrap().0[..], b"m", "nothing written");
    guard.release().await.unwrap();
    remove_tree(&b, &m1).await;
    remove_tree(&b, &m2).await;

    let sem_path = env.path("fenced-sem");
    let lease = a.semaphore(&sem_path, 2).await.unwrap().acquire(1).await.unwrap().pop().unwrap();
    lease.fenced(vec![Op::set_data(&p(&target), Bytes::from_static(b"v3"), None)]).await.unwrap();
    assert_eq!(&b.get_data(&target).await.unwrap().0[..], b"v3");
    b.delete(lease.node(), None).await.unwrap();
    let fenced = lease.fenced(vec![Op::set_data(&p(&target), Bytes::from_static(b"v4"), None)]).await;
    assert_eq!(fenced, Err(Error::NotHeld { node: lease.node().to_owned() }));
    assert_eq!(&b.get_data(&target).await.unwrap().0[..], b"v3", "nothing written");
    lease.release().await.unwrap();

    remove_tree(&b, &target).await;
    remove_tree(&b, &sem_path).await;
    remove_tree(&b, &path).await;
    close_all(&[&a, &b]).await;
}

/// Participants: holder first, lock data = the local address by default.
pub async fn participants(env: &Env) {
    let path = env.path("participants");
    let a = env.client().await;
    let b = env.client_with(Env::options().lock_data(Bytes::from_static(b"worker-b"))).await;
    let ga = a.mutex(&path).await.unwrap().acquire().await.unwrap();
    let lb = b.mutex(&path).await.unwrap();
    let waiting = env.spawn(async move { lb.acquire().await });
    wait_children(env, &a, &path, 2).await;
    let list = b.participants(&path, LockKind::Mutex).await.unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    assert_eq!(list[0].path, ga.node());
    assert_eq!(list[0].data.as_deref(), Some(&b"127.0.0.1"[..]));
    assert_eq!(list[1].data.as_deref(), Some(&b"worker-b"[..]));
    drop(ga);
    let gb = env.within(Duration::from_secs(5), "second participant", waiting).await.unwrap();
    let list = a.participants(&path, LockKind::Mutex).await.unwrap();
    assert_eq!(list.iter().map(|p| p.path.as_str()).collect::<Vec<_>>(), vec![gb.node()]);
    drop(gb);
    assert_empty(env, &a, &path).await;
    assert!(a.participants(&path, LockKind::Mutex).await.unwrap().is_empty());
    remove_tree(&a, &path).await;
    let none = a.participants(&path, LockKind::Mutex).await.unwrap();
    assert!(none.is_empty(), "no path, no participants: {none:?}");
    close_all(&[&a, &b]).await;
}
