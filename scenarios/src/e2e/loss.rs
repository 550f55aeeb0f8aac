//! Loss signals: a dropped connection (Suspended, then Held again), a
//! session that expires (Lost), session renewal, and a held node or lease
//! deleted from outside (Lost for that hold alone).

use super::*;

/// A dropped connection suspends the hold (the loss signal fires); the same
/// session coming back confirms it.
pub async fn loss_suspended_then_reconnected(env: &Env) {
    let path = env.path("suspend");
    let proxy = Proxy::start(&env.addr);
    let a = env.client_at(&proxy.addr, Env::options().session_timeout(Duration::from_secs(6))).await;
    let observer = env.client().await;
    let mut states = a.state_changes().unwrap();
    assert_eq!(states.next().await, Some(ConnectionState::Connected));
    let (_la, ga) = held(&a, &path).await;
    assert!(env.timeout(Duration::from_millis(50), ga.lost()).await.is_none(), "lost() fired while held");

    proxy.cut();
    let status = env.within(Duration::from_secs(3), "loss signal on a cut connection", ga.lost()).await;
    assert_eq!(status, HoldStatus::Suspended);
    assert_eq!(states.next().await, Some(ConnectionState::Suspended));
    // Requests wait for the reconnect (or fail with ConnectionLoss).
    env.sleep(Duration::from_millis(300)).await;
    proxy.restore();
    let next = env.within(Duration::from_secs(5), "reconnect", states.next()).await;
    assert_eq!(next, Some(ConnectionState::Reconnected));
    wait_status(env, &ga, HoldStatus::Held, Duration::from_secs(3)).await;
    // Still ours: the node survived, nobody else gets in.
    assert_eq!(children(&observer, &path).await, vec![ga.node().rsplit('/').next().unwrap().to_owned()]);
    assert!(observer.mutex(&path).await.unwrap().try_acquire().await.unwrap().is_none());
    ga.release().await.unwrap();
    finish(env, &observer, &path, &[&a, &observer]).await;
}

/// Someone else deletes the held node while the session is healthy
/// (ARCHITECTURE §6.1): the guard reads `Lost` within 1 s, and `status()`,
/// `lost()` and `status_changes()` agree; a second session acquiring after
/// the delete is granted only once the first reads `Lost`; the lock handle
/// keeps working.
pub async fn loss_node_deleted(env: &Env) {
    for plan in [OpPlan::Pipelined, OpPlan::Curator] {
        let path = env.path(&format!("node-deleted-{plan:?}"));
        let a = env.client_with(Env::options().plan(plan)).await;
        let [b, operator] = env.clients::<2>().await;
        let (la, ga) = held(&a, &path).await;
        let mut changes = ga.status_changes();
        assert_eq!(changes.next().await, Some(HoldStatus::Held));
        // The held node's watch is armed by a request sent with the grant;
        // one round trip of a later request proves it answered.
        a.exists("/").await.unwrap();
        assert!(env.timeout(Duration::from_millis(100), ga.lost()).await.is_none(), "lost() fired while held");

        let deleted_at = Instant::now();
        operator.delete(ga.node(), None).await.unwrap();
        let status = env.within(Duration::from_secs(1), "loss signal on a deleted node", ga.lost()).await;
        let took = deleted_at.elapsed();
        assert_eq!(status, HoldStatus::Lost, "{plan:?}");
        assert!(took < Duration::from_secs(1), "{took:?}");
        assert_eq!(ga.status(), HoldStatus::Lost);
        assert_eq!(env.within(Duration::from_secs(1), "status_changes", changes.next()).await, Some(HoldStatus::Lost));
        eprintln!("{plan:?}: Lost {took:?} after the outside delete");

        // Another session takes the lock; the first never read Held then.
        let gb = b.mutex(&path).await.unwrap().acquire().await.unwrap();
        assert_eq!(ga.status(), HoldStatus::Lost, "a second holder while the first reads Held");
        assert!(gb.fencing_token() > ga.fencing_token());
        // Fenced writes of the lost hold are refused too.
        let write = Op::set_data(&ZkPath::new(&path).unwrap(), Bytes::from_static(b"x"), None);
        assert!(matches!(ga.fenced(vec![write]).await, Err(Error::NotHeld { .. })));
        ga.release().await.unwrap(); // lost: nothing to release
        gb.release().await.unwrap();
        // The handle keeps working.
        let again = env.within(Duration::from_secs(5), "a new acquire", la.acquire()).await.unwrap();
        assert_eq!(again.status(), HoldStatus::Held);
        again.release().await.unwrap();
        finish(env, &operator, &path, &[&a, &b, &operator]).await;
    }
}

/// One of two leases from one `acquire(2)` is deleted from outside: only
/// that lease reads `Lost`; the other stays `Held` and can still be
/// returned.
pub async fn loss_lease_deleted(env: &Env) {
    let path = env.path("lease-deleted");
    let [a, operator] = env.clients::<2>().await;
    let sem = a.semaphore(&path, 3).await.unwrap();
    let mut leases = sem.acquire(2).await.unwrap();
    let second = leases.pop().unwrap();
    let first = leases.pop().unwrap();
    a.exists("/").await.unwrap();
    assert_eq!((first.status(), second.status()), (HoldStatus::Held, HoldStatus::Held));

    let deleted_at = Instant::now();
    operator.delete(first.node(), None).await.unwrap();
    let status = env.within(Duration::from_secs(1), "loss signal on a deleted lease", first.lost()).await;
    assert_eq!(status, HoldStatus::Lost);
    eprintln!("lease Lost {:?} after the outside delete", deleted_at.elapsed());
    // The other lease keeps its own truth.
    env.sleep(Duration::from_millis(300)).await;
    assert_eq!(second.status(), HoldStatus::Held);
    assert!(env.timeout(Duration::from_millis(100), second.lost()).await.is_none(), "the other lease's lost()");
    let write = Op::set_data(&ZkPath::new(&path).unwrap(), Bytes::from_static(b"x"), None);
    assert!(matches!(first.fenced(vec![write.clone()]).await, Err(Error::NotHeld { .. })));
    second.fenced(vec![write]).await.unwrap();
    first.release().await.unwrap();
    // Both leases are free again for others.
    let more = sem.acquire(2).await.unwrap();
    assert_eq!(more.iter().map(|l| l.status()).collect::<Vec<_>>(), vec![HoldStatus::Held; 2]);
    assert_eq!(second.status(), HoldStatus::Held);
    second.release().await.unwrap();
    drop(more);
    sem.settled().await.unwrap();
    finish_semaphore(env, &operator, &path, &[&a, &operator]).await;
}

/// A server cut off from the quorum that keeps answering its clients' pings
/// (the proxy answers them, forwards nothing): with quorum confirmation (the
/// default) the holder reads `Suspended` (`QuorumUnconfirmed`) and `lost()`
/// completes before the server expires the session and grants the lock to
/// the next holder; with it off, the holder still reads `Held` after the
/// next holder was granted (the fault the confirmation exists for).
pub async fn loss_quorum_unconfirmed(env: &Env) {
    for confirm in [true, false] {
        let path = env.path(&format!("quorum-{confirm}"));
        let proxy = Proxy::start(&env.addr);
        let options = Env::options().session_timeout(Duration::from_secs(4)).confirm_quorum(confirm);
        let a = env.client_at(&proxy.addr, options).await;
        let observer = env.client().await;
        let (_la, ga) = held(&a, &path).await;
        let lo = observer.mutex(&path).await.unwrap();
        let lo2 = lo.clone();
        let taken = env.spawn(async move {
            let guard = lo2.acquire().await;
            (Instant::now(), guard)
        });
        // Two confirmations go by, then the server is cut off.
        env.sleep(Duration::from_millis(1_500)).await;
        assert_eq!(ga.status(), HoldStatus::Held);
        let cut = Instant::now();
        proxy.isolate();
        if confirm {
            let status = env.within(Duration::from_secs(4), "the holder's loss signal", ga.lost()).await;
            let noticed = Instant::now();
            assert_eq!(status, HoldStatus::Suspended);
            assert_eq!(ga.suspension(), Some(Suspension::QuorumUnconfirmed));
            // A fenced write is refused at once, without a request.
            let write = Op::set_data(&ZkPath::new(&path).unwrap(), Bytes::from_static(b"x"), None);
            assert!(matches!(ga.fenced(vec![write]).await, Err(Error::Suspended { .. })));
            let (granted, go) = env.within(Duration::from_secs(15), "the next holder", taken).await;
            let go = go.unwrap();
            assert!(
                noticed < granted,
                "the holder read Suspended {:?} after the cut, the next holder was granted {:?} after it",
                noticed - cut,
                granted - cut
            );
            println!(
                "quorum-unconfirmed: holder Suspended at +{:?}, next holder granted at +{:?} after the isolation",
                noticed - cut,
                granted - cut
            );
            go.release().await.unwrap();
        } else {
            let (granted, go) = env.within(Duration::from_secs(15), "the next holder", taken).await;
            // The isolated server still answers pings: nothing tells the
            // holder, which overlaps the next holder.
            assert_eq!(ga.status(), HoldStatus::Held, "{:?} after the grant", granted.elapsed());
            println!("quorum confirmation off: next holder granted at +{:?}, the holder still Held", granted - cut);
            go.unwrap().release().await.unwrap();
        }
        drop(ga);
        proxy.restore();
        a.close().await.ok();
        finish(env, &observer, &path, &[&observer]).await;
    }
}

/// A silent network past the session timeout, renewal off: Suspended, then
/// Lost; the server expires the session and another client takes the lock;
/// the client stays ended.
pub async fn loss_lost_after_session_timeout(env: &Env) {
    let path = env.path("lost");
    let proxy = Proxy::start(&env.addr);
    let options = Env::options().session_timeout(Duration::from_secs(2)).renew_session(false);
    let a = env.client_at(&proxy.addr, options).await;
    let observer = env.client().await;
    let mut states = a.state_changes().unwrap();
    assert_eq!(states.next().await, Some(ConnectionState::Connected));
    let (la, ga) = held(&a, &path).await;
    let lo = observer.mutex(&path).await.unwrap();
    let lo2 = lo.clone();
    let taken = env.spawn(async move { lo2.acquire().await });

    let started = Instant::now();
    proxy.freeze();
    // No bytes arrive: the client gives the connection up after 2/3 of the
    // session timeout.
    let status = env.within(Duration::from_secs(4), "loss signal on a silent connection", ga.lost()).await;
    assert_eq!(status, HoldStatus::Suspended, "after {:?}", started.elapsed());
    wait_status(env, &ga, HoldStatus::Lost, Duration::from_secs(6)).await;
    assert_eq!(env.within(Duration::from_secs(1), "lost()", ga.lost()).await, HoldStatus::Lost);
    let seen: Vec<_> = std::iter::from_fn(|| states.try_recv().ok()).collect();
    assert_eq!(seen, vec![ConnectionState::Suspended, ConnectionState::Lost]);
    assert_eq!(a.state(), Some(ConnectionState::Lost));
    // The server expires the session too; the waiter gets the lock.
    let go = env.within(Duration::from_secs(10), "the lock after the holder's expiry", taken).await.unwrap();
    assert!(go.fencing_token() > ga.fencing_token());
    assert!(matches!(la.acquire().await, Err(Error::Request(RequestError::SessionExpired))));
    ga.release().await.unwrap(); // lost: nothing to release
    go.release().await.unwrap();
    proxy.restore();
    a.close().await.unwrap(); // already ended: returns at once
    finish(env, &observer, &path, &[&observer]).await;
    drop(proxy);
}

/// The acceptance test of session renewal: a proxy cut for longer than the
/// session timeout. The guard's and the lease's `lost()` fire within 2T/3 +
/// 0.5 s of the cut, releasing them afterwards is `Ok`, an acquire that was
/// waiting re-queues, and once the proxy is back the same handles acquire
/// again on a new session, with no new `Client`.
pub async fn loss_renewal(env: &Env) {
    let path = env.path("renew");
    let sem_path = env.path("renew-sem");
    let timeout = Duration::from_secs(3);
    let proxy = Proxy::start(&env.addr);
    let a = env.client_at(&proxy.addr, Env::options().session_timeout(timeout)).await;
    let observer = env.client().await;
    let first_session = a.session_id();
    let mut states = a.state_changes().unwrap();
    assert_eq!(states.next().await, Some(ConnectionState::Connected));
    let lock = a.mutex(&path).await.unwrap();
    let sem = a.semaphore(&sem_path, 1).await.unwrap();
    let guard = lock.acquire().await.unwrap();
    let lease = sem.acquire(1).await.unwrap().pop().unwrap();
    let mut guard_changes = guard.status_changes();
    assert_eq!(guard_changes.next().await, Some(HoldStatus::Held));
    // A second task waits behind the guard, in the process.
    let lock2 = lock.clone();
    let waiting = env.spawn(async move { lock2.acquire().await });

    let cut = Instant::now();
    proxy.cut();
    let limit = timeout * 2 / 3 + Duration::from_millis(500);
    let (g, l) =
        env.within(limit + Duration::from_secs(1), "loss signals", future::zip(guard.lost(), lease.lost())).await;
    let fired = cut.elapsed();
    assert!(fired <= limit, "lost() fired {fired:?} after the cut, limit {limit:?}");
    assert!(matches!(g, HoldStatus::Suspended | HoldStatus::Lost), "{g:?}");
    assert!(matches!(l, HoldStatus::Suspended | HoldStatus::Lost), "{l:?}");
    assert_eq!(guard_changes.next().await, Some(HoldStatus::Suspended));
    // Past the session timeout the client gives the session up: Lost.
    wait_status(env, &guard, HoldStatus::Lost, timeout * 2).await;
    assert_eq!(lease.status(), HoldStatus::Lost);
    assert_eq!(guard_changes.next().await, Some(HoldStatus::Lost));
    assert_eq!(guard_changes.next().await, None, "the stream ends after Lost");
    guard.release().await.unwrap();
    lease.release().await.unwrap();

    proxy.restore();
    // The waiting task gets the lock on the new session, with a new node.
    let g2 = env.within(Duration::from_secs(20), "the re-queued acquire", waiting).await.unwrap();
    assert_ne!(a.session_id(), first_session, "a new session");
    assert_eq!(g2.status(), HoldStatus::Held);
    g2.release().await.unwrap();
    let g3 = env.within(Duration::from_secs(10), "acquire on the new session", lock.acquire()).await.unwrap();
    let lease2 = env.within(Duration::from_secs(10), "lease on the new session", sem.acquire(1)).await.unwrap();
    assert_eq!(lease2[0].status(), HoldStatus::Held);
    let seen: Vec<_> = std::iter::from_fn(|| states.try_recv().ok()).collect();
    assert!(seen.contains(&ConnectionState::Lost) && seen.ends_with(&[ConnectionState::Connected]), "{seen:?}");
    g3.release().await.unwrap();
    drop(lease2);
    lock.settled().await.unwrap();
    sem.settled().await.unwrap();
    // The old session's nodes are gone (expired or deleted by the new one).
    assert_empty(env, &observer, &path).await;
    assert_empty(env, &observer, &format!("{sem_path}/leases")).await;
    remove_tree(&observer, &path).await;
    remove_tree(&observer, &sem_path).await;
    close_all(&[&a, &observer]).await;
}
