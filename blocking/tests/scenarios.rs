//! The transports' key scenarios through the blocking face, on threads:
//! exclusion across threads and clients, FIFO, time-outs, cancellation by
//! time-out leaving no node, drop releasing, loss signals (a cut connection,
//! a deleted node), renewal after expiry, and the semaphore. They run
//! against `zoolock_testkit::any_server()`: the real ZooKeeper from
//! `ZOOLOCK_TEST_CONNECT` (as in CI), else the in-process model server.
//! The async scenarios (`zoolock-scenarios`) cover the rest of the surface
//! this crate only forwards to.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use zoolock_blocking::{Client, ConnectionState, Error, HoldStatus, Options, connect};
use zoolock_testkit::proxy::Proxy;

fn options() -> Options {
    Options::default().connect_timeout(Duration::from_secs(10))
}

fn client() -> Client {
    connect(&zoolock_testkit::any_server(), options()).unwrap()
}

/// A path unique to this process and scenario.
fn path(name: &str) -> String {
    format!("/zoolock-blocking-test/{}/{name}", std::process::id())
}

/// The lock and lease nodes left under `path`.
fn nodes(client: &Client, path: &str) -> Vec<String> {
    client.get_children(path).map(|(c, _)| c).unwrap_or_default()
}

/// Polls `f` until it holds, for at most `within`.
fn eventually(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !f() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn exclusion_across_threads_and_clients() {
    let path = path("exclusion");
    let clients = [client(), client(), client()];
    let inside = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    // One handle per client, cloned across its threads: clones share a queue.
    let locks: Vec<_> = clients.iter().map(|c| c.mutex(&path).unwrap()).collect();
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let lock = locks[i % 3].clone();
            let (inside, done) = (inside.clone(), done.clone());
            thread::spawn(move || {
                for _ in 0..8 {
                    let guard = lock.acquire().unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                    thread::sleep(Duration::from_millis(1));
                    inside.fetch_sub(1, Ordering::SeqCst);
                    done.fetch_add(1, Ordering::SeqCst);
                    drop(guard); // dropping releases
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(done.load(Ordering::SeqCst), 48);
    clients[0].mutex(&path).unwrap().settled().unwrap();
    eventually("dropped guards released", Duration::from_secs(5), || nodes(&clients[0], &path).is_empty());
    clients.iter().for_each(|c| c.close().unwrap());
}

#[test]
fn waiters_are_granted_in_queue_order() {
    let path = path("fifo");
    let clients: Vec<Client> = (0..5).map(|_| client()).collect();
    let first = clients[0].mutex(&path).unwrap().acquire().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for (i, c) in clients.iter().enumerate().skip(1) {
        let (lock, order) = (c.mutex(&path).unwrap(), order.clone());
        waiters.push(thread::spawn(move || {
            let g = lock.acquire().unwrap();
            order.lock().unwrap().push(i);
            g.release().unwrap();
        }));
        // Each waiter's node is on the server before the next one starts.
        eventually("waiter queued", Duration::from_secs(5), || nodes(&clients[0], &path).len() == i + 1);
    }
    first.release().unwrap();
    waiters.into_iter().for_each(|w| w.join().unwrap());
    assert_eq!(*order.lock().unwrap(), vec![1, 2, 3, 4]);
    clients.iter().for_each(|c| c.close().unwrap());
}

#[test]
fn timed_out_acquires_leave_no_node() {
    let path = path("timeout");
    let [a, b] = [client(), client()];
    let held = a.mutex(&path).unwrap().acquire().unwrap();
    let lock = b.mutex(&path).unwrap();
    let started = Instant::now();
    assert!(matches!(lock.acquire_timeout(Duration::from_millis(400)), Err(Error::TimedOut)));
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(400) && took < Duration::from_secs(3), "{took:?}");
    assert!(lock.try_acquire().unwrap().is_none());
    // A thread blocked in a timed acquire is woken by the time-out.
    let l2 = lock.clone();
    let blocked = thread::spawn(move || l2.acquire_timeout(Duration::from_millis(300)).map(drop));
    assert!(matches!(blocked.join().unwrap(), Err(Error::TimedOut)));
    lock.settled().unwrap();
    assert_eq!(nodes(&a, &path), vec![held.node().rsplit('/').next().unwrap().to_owned()], "a cancelled node stayed");
    let token = held.fencing_token();
    held.release().unwrap();
    let next = lock.acquire_timeout(Duration::from_secs(5)).unwrap();
    assert!(next.fencing_token() > token);
    next.release().unwrap();
    lock.settled().unwrap();
    assert!(nodes(&a, &path).is_empty());

    // The same for a semaphore.
    let sem_path = self::path("timeout-sem");
    let leases = a.semaphore(&sem_path, 1).unwrap().acquire(1).unwrap();
    let sem = b.semaphore(&sem_path, 1).unwrap();
    assert!(matches!(sem.acquire_timeout(1, Duration::from_millis(300)), Err(Error::TimedOut)));
    sem.settled().unwrap();
    assert_eq!(nodes(&a, &format!("{sem_path}/leases")).len(), 1);
    drop(leases);
    let lease = sem.acquire_timeout(1, Duration::from_secs(5)).unwrap().pop().unwrap();
    lease.release().unwrap();
    [a, b].iter().for_each(|c| c.close().unwrap());
}

#[test]
fn a_deleted_node_reads_lost() {
    let path = path("deleted");
    let [a, operator] = [client(), client()];
    let lock = a.mutex(&path).unwrap();
    let guard = lock.acquire().unwrap();
    let mut changes = guard.status_changes();
    assert_eq!(changes.next(), Some(HoldStatus::Held));
    a.exists("/").unwrap(); // the held node's watch is armed
    assert_eq!(guard.lost_timeout(Duration::from_millis(100)), None);
    operator.delete(guard.node(), None).unwrap();
    assert_eq!(guard.lost_timeout(Duration::from_secs(2)), Some(HoldStatus::Lost));
    assert_eq!(guard.status(), HoldStatus::Lost);
    assert_eq!(changes.next(), Some(HoldStatus::Lost));
    assert_eq!(changes.next(), None);
    guard.release().unwrap(); // lost: nothing to release
    lock.acquire().unwrap().release().unwrap();
    [a, operator].iter().for_each(|c| c.close().unwrap());
}

#[test]
fn a_cut_connection_suspends_then_holds_again() {
    let path = path("suspend");
    let proxy = Proxy::start(&zoolock_testkit::any_server());
    let a = connect(&proxy.addr, options().session_timeout(Duration::from_secs(6))).unwrap();
    let observer = client();
    let mut states = a.state_changes().unwrap();
    assert_eq!(states.next(), Some(ConnectionState::Connected));
    let guard = a.mutex(&path).unwrap().acquire().unwrap();
    proxy.cut();
    assert_eq!(guard.lost_timeout(Duration::from_secs(3)), Some(HoldStatus::Suspended));
    assert_eq!(states.next(), Some(ConnectionState::Suspended));
    thread::sleep(Duration::from_millis(300));
    proxy.restore();
    assert_eq!(states.next(), Some(ConnectionState::Reconnected));
    eventually("held again", Duration::from_secs(3), || guard.status() == HoldStatus::Held);
    assert!(observer.mutex(&path).unwrap().try_acquire().unwrap().is_none(), "still ours");
    guard.release().unwrap();
    [a, observer].iter().for_each(|c| c.close().unwrap());
}

#[test]
fn the_same_handles_work_again_after_expiry() {
    let path = path("renew");
    let timeout = Duration::from_secs(3);
    let proxy = Proxy::start(&zoolock_testkit::any_server());
    let a = connect(&proxy.addr, options().session_timeout(timeout)).unwrap();
    let first_session = a.session_id();
    let lock = a.mutex(&path).unwrap();
    let sem = a.semaphore(&format!("{path}-sem"), 1).unwrap();
    let guard = lock.acquire().unwrap();
    let lease = sem.acquire(1).unwrap().pop().unwrap();
    // Another thread waits behind the guard, in the process.
    let l2 = lock.clone();
    let waiting = thread::spawn(move || l2.acquire());

    let cut = Instant::now();
    proxy.cut();
    let limit = timeout * 2 / 3 + Duration::from_millis(500);
    let g = guard.lost_timeout(limit + Duration::from_secs(1)).expect("guard loss signal");
    let l = lease.lost_timeout(Duration::from_secs(1)).expect("lease loss signal");
    assert!(cut.elapsed() <= limit + Duration::from_millis(200), "{:?}", cut.elapsed());
    assert!(matches!(g, HoldStatus::Suspended | HoldStatus::Lost), "{g:?}");
    assert!(matches!(l, HoldStatus::Suspended | HoldStatus::Lost), "{l:?}");
    eventually("lost after the session timeout", timeout * 2, || guard.status() == HoldStatus::Lost);
    assert_eq!(lease.status(), HoldStatus::Lost);
    guard.release().unwrap();
    lease.release().unwrap();

    proxy.restore();
    // The waiting thread gets the lock on a new session; no new Client.
    let renewed = waiting.join().unwrap().unwrap();
    assert_ne!(a.session_id(), first_session);
    assert_eq!(renewed.status(), HoldStatus::Held);
    renewed.release().unwrap();
    sem.acquire_timeout(1, Duration::from_secs(10)).unwrap().pop().unwrap().release().unwrap();
    a.close().unwrap();
}

#[test]
fn semaphore_bounds_holders_across_threads() {
    let path = path("semaphore");
    let [a, b] = [client(), client()];
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let sem = if i % 2 == 0 { &a } else { &b }.semaphore(&path, 2).unwrap();
            let (inside, most) = (inside.clone(), most.clone());
            thread::spawn(move || {
                for _ in 0..4 {
                    let leases = sem.acquire(1).unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(now <= 2, "{now} lease holders");
                    most.fetch_max(now, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(3));
                    inside.fetch_sub(1, Ordering::SeqCst);
                    leases.into_iter().for_each(|l| l.release().unwrap());
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(most.load(Ordering::SeqCst), 2, "two leases were never used at once");
    [a, b].iter().for_each(|c| c.close().unwrap());
}
