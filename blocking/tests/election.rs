//! Leader election and observing through the blocking face, on threads,
//! against `zoolock_testkit::any_server()` (the real ZooKeeper from
//! `ZOOLOCK_TEST_CONNECT`, else the in-process model server). The async
//! scenarios (`transport-tokio/tests/election.rs`) cover the rest.

use std::thread;
use std::time::Duration;

use zoolock_blocking::{Client, CloseMode, ElectionKind, Error, HoldStatus, Options, connect};

fn client() -> Client {
    connect(&zoolock_testkit::any_server(), Options::default().connect_timeout(Duration::from_secs(10))).unwrap()
}

fn path(name: &str) -> String {
    format!("/zoolock-blocking-test/{}/{name}", std::process::id())
}

#[test]
fn selector_latch_and_observer_on_threads() {
    let (a, b) = (client(), client());
    let p = path("selector");
    let mut leaders = b.observe_leader(&p, ElectionKind::Selector).unwrap();
    assert_eq!(leaders.next().unwrap().unwrap(), None);
    let leadership = a.leader_selector(&p, "t1").unwrap().leadership().unwrap();
    assert_eq!(leaders.next().unwrap().unwrap().as_deref(), Some("t1"));
    assert_eq!(leadership.status(), HoldStatus::Held);
    let other = b.leader_selector(&p, "t2").unwrap();
    assert!(matches!(other.leadership_timeout(Duration::from_millis(200)), Err(Error::TimedOut)));
    let waiter = thread::spawn(move || other.leadership());
    thread::sleep(Duration::from_millis(100));
    assert_eq!(leadership.lost_timeout(Duration::from_millis(50)), None);
    leadership.release().unwrap();
    let second = waiter.join().unwrap().unwrap();
    assert!(second.node().contains("-lock-"));
    assert_eq!(leaders.next().unwrap().unwrap().as_deref(), Some("t2"));
    drop(second);
    assert_eq!(leaders.next().unwrap().unwrap(), None);

    let q = path("latch");
    let latch = a.leader_latch(&q, "l1").unwrap();
    assert!(latch.leadership_timeout(Duration::from_secs(10)).unwrap());
    assert!(latch.has_leadership());
    assert_eq!(b.leader(&q, ElectionKind::Latch).unwrap().as_deref(), Some("l1"));
    let mut changes = latch.leadership_changes();
    assert_eq!(changes.next(), Some(true));
    latch.close(CloseMode::NotifyLeader).unwrap();
    assert_eq!(changes.next(), Some(false));
    assert_eq!(changes.next(), None);
    a.close().unwrap();
    b.close().unwrap();
}
