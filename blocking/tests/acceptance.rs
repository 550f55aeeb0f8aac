//! The acceptance program, written only from the names a
//! thread-based program's first lines use (`connect`, `Client::mutex`,
//! `Lock::acquire`/`acquire_timeout`/`try_acquire`, `Guard::release`/
//! `status`/`fencing_token`/`lost_timeout`, `Client::semaphore`,
//! `Semaphore::acquire`, `Lease::release`, `Client::close`), against the real
//! ZooKeeper from `ZOOLOCK_TEST_CONNECT` (skipped without it, failing under
//! CI): five threads on two clients cycling one mutex, a timed and a
//! non-blocking acquire while another client holds, fencing tokens rising,
//! and a 2-lease semaphore under four threads.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use zoolock_blocking::{Error, HoldStatus, Options, connect};

/// The handles a thread-based program shares between threads.
#[test]
fn handles_are_shareable() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<zoolock_blocking::Client>();
    shareable::<zoolock_blocking::Lock>();
    shareable::<zoolock_blocking::Semaphore>();
    fn sendable<T: Send + 'static>() {}
    sendable::<zoolock_blocking::Guard>();
    sendable::<zoolock_blocking::Lease>();
}

#[test]
fn blocking_program_holds_exclusion_on_a_real_server() {
    let Some(addr) = zoolock_testkit::real_server("blocking_program_holds_exclusion_on_a_real_server") else {
        return;
    };
    let base = format!("/zoolock-blocking-acceptance/{}", std::process::id());
    let clients = [connect(&addr, Options::default()).unwrap(), connect(&addr, Options::default()).unwrap()];

    // Five threads on two clients cycle one mutex; at most one is inside.
    let path = format!("{base}/mutex");
    let inside = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(std::sync::Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..5)
        .map(|i| {
            let lock = clients[i % 2].mutex(&path).unwrap();
            let (inside, tokens) = (inside.clone(), tokens.clone());
            thread::spawn(move || {
                for _ in 0..10 {
                    let guard = lock.acquire().unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                    assert_eq!(guard.status(), HoldStatus::Held);
                    tokens.lock().unwrap().push(guard.fencing_token());
                    thread::sleep(Duration::from_millis(2));
                    inside.fetch_sub(1, Ordering::SeqCst);
                    guard.release().unwrap();
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    // Grants are serialized, so tokens rise in the order they were taken.
    let tokens = tokens.lock().unwrap().clone();
    assert_eq!(tokens.len(), 50);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens do not rise: {tokens:?}");

    // While client 0 holds, client 1's timed acquire times out and its
    // non-blocking one comes back empty.
    let held = clients[0].mutex(&path).unwrap().acquire().unwrap();
    let other = clients[1].mutex(&path).unwrap();
    assert!(matches!(other.acquire_timeout(Duration::from_millis(300)), Err(Error::TimedOut)));
    assert!(other.try_acquire().unwrap().is_none());
    assert_eq!(held.lost_timeout(Duration::from_millis(100)), None, "the hold reads lost while held");
    let last = held.fencing_token();
    held.release().unwrap();
    let next = other.acquire_timeout(Duration::from_secs(10)).unwrap();
    assert!(next.fencing_token() > last);
    next.release().unwrap();

    // A 2-lease semaphore under four threads: never more than two inside.
    let sem_path = format!("{base}/semaphore");
    let inside = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..4)
        .map(|i| {
            let sem = clients[i % 2].semaphore(&sem_path, 2).unwrap();
            let inside = inside.clone();
            thread::spawn(move || {
                for _ in 0..5 {
                    let mut leases = sem.acquire(1).unwrap();
                    assert!(inside.fetch_add(1, Ordering::SeqCst) < 2, "three lease holders at once");
                    thread::sleep(Duration::from_millis(5));
                    inside.fetch_sub(1, Ordering::SeqCst);
                    leases.pop().unwrap().release().unwrap();
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());

    for client in &clients {
        client.close().unwrap();
    }
}
