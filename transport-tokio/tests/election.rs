//! Leader election, the maximum hold and observing on tokio (issue 27),
//! against the real server from `ZOOLOCK_TEST_CONNECT` or, without it, the
//! in-process model server. Curator's side of the same elections is in
//! `conformance/tests/interop_election.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_lite::StreamExt;
use tokio::time::{sleep, timeout};
use zoolock_tokio::{
    Client, CloseMode, ElectionKind, Error, HoldStatus, Leadership, LockOptions, Options, ParticipantsOf,
};

/// Longest wait for one step.
const STEP: Duration = Duration::from_secs(20);

fn unique(name: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    format!("/zoolock-election-{name}-{}-{nanos}", std::process::id())
}

async fn client() -> Client {
    let addr = zoolock_testkit::any_server();
    zoolock_tokio::connect(&addr, Options::default().connect_timeout(Duration::from_secs(10))).await.unwrap()
}

async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    timeout(STEP, f).await.unwrap_or_else(|_| panic!("{what}: nothing within {STEP:?}"))
}

/// Waits until `path` has `n` children.
async fn children(client: &Client, path: &str, n: usize) {
    let deadline = Instant::now() + STEP;
    loop {
        let have = client.get_children(path).await.map(|(c, _)| c.len()).unwrap_or(0);
        if have == n {
            return;
        }
        assert!(Instant::now() < deadline, "{path}: {have} children, waiting for {n}");
        sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_terms_pass_in_queue_order_and_name_the_leader() {
    let [a, b] = [client().await, client().await];
    let path = unique("selector");
    let first = a.leader_selector(&path, "alpha").await.unwrap();
    let second = b.leader_selector(&path, "beta").await.unwrap();
    assert_eq!(first.leader().await.unwrap(), None, "nobody queued yet");

    let leading = within("alpha leads", first.leadership()).await.unwrap();
    assert_eq!(leading.status(), HoldStatus::Held);
    assert!(leading.node().starts_with(&format!("{path}/_c_")) && leading.node().contains("-lock-"));
    let waiting = tokio::spawn(async move { second.leadership().await.map(|l| (l, second)) });
    children(&a, &path, 2).await;
    assert_eq!(first.leader().await.unwrap().as_deref(), Some("alpha"));
    let ids: Vec<(String, bool)> =
        first.participants().await.unwrap().into_iter().map(|p| (p.id, p.is_leader)).collect();
    assert_eq!(ids, [("alpha".to_owned(), true), ("beta".to_owned(), false)]);

    let token = leading.fencing_token();
    leading.release().await.unwrap();
    let (next, second) = within("beta leads", waiting).await.unwrap().unwrap();
    assert!(next.fencing_token() > token);
    assert_eq!(second.leader().await.unwrap().as_deref(), Some("beta"));
    drop(next);
    children(&a, &path, 0).await;
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_or_dropped_wait_leaves_no_node() {
    let [a, b] = [client().await, client().await];
    let path = unique("cancel");
    let held = a.leader_selector(&path, "holder").await.unwrap().leadership().await.unwrap();
    let waiter = b.leader_selector(&path, "waiter").await.unwrap();
    let started = Instant::now();
    let timed_out = waiter.leadership_timeout(Duration::from_millis(300)).await;
    assert!(matches!(timed_out, Err(Error::TimedOut)), "{timed_out:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    children(&a, &path, 1).await;
    // Dropped while queued.
    let dropped = timeout(Duration::from_millis(200), waiter.leadership()).await;
    assert!(dropped.is_err(), "it waited");
    children(&a, &path, 1).await;
    drop(held);
    children(&a, &path, 0).await;
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_auto_requeue_takes_turns() {
    let [a, b] = [client().await, client().await];
    let path = unique("requeue");
    let terms = Arc::new(AtomicUsize::new(0));
    let mut runs = Vec::new();
    for (client, id) in [(&a, "a"), (&b, "b")] {
        let selector = client.leader_selector(&path, id).await.unwrap().auto_requeue(true);
        let terms = terms.clone();
        runs.push(tokio::spawn(async move {
            selector
                .run(|leadership: Leadership| {
                    let terms = terms.clone();
                    async move {
                        assert_eq!(leadership.status(), HoldStatus::Held);
                        terms.fetch_add(1, Ordering::SeqCst);
                        sleep(Duration::from_millis(20)).await;
                    }
                })
                .await
        }));
    }
    let deadline = Instant::now() + STEP;
    while terms.load(Ordering::SeqCst) < 6 {
        assert!(Instant::now() < deadline, "only {} terms", terms.load(Ordering::SeqCst));
        sleep(Duration::from_millis(10)).await;
    }
    for run in &runs {
        run.abort();
    }
    for run in runs {
        assert!(run.await.unwrap_err().is_cancelled());
    }
    children(&a, &path, 0).await;
    // Without auto_requeue, run returns after one term.
    let once = a.leader_selector(&path, "once").await.unwrap();
    within("one term", once.run(|_leadership| async {})).await.unwrap();
    children(&a, &path, 0).await;
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_leads_until_closed_and_reports_changes() {
    let [a, b] = [client().await, client().await];
    let path = unique("latch");
    let first = a.leader_latch(&path, "one").await.unwrap();
    within("one leads", first.leadership()).await.unwrap();
    let second = b.leader_latch(&path, "two").await.unwrap();
    let mut second_changes = second.leadership_changes();
    assert_eq!(within("two's first change", second_changes.next()).await, Some(false));
    assert!(first.has_leadership() && !second.has_leadership());
    assert_eq!(second.leader().await.unwrap().as_deref(), Some("one"));
    let ids: Vec<String> = first.participants().await.unwrap().into_iter().map(|p| p.id).collect();
    assert_eq!(ids, ["one", "two"]);
    assert!(a.get_children(&path).await.unwrap().0.iter().all(|n| n.contains("-latch-")));

    let mut first_changes = first.leadership_changes();
    assert_eq!(first_changes.next().await, Some(true));
    first.close(CloseMode::NotifyLeader).await.unwrap();
    assert_eq!(within("one's last change", first_changes.next()).await, Some(false));
    assert_eq!(first_changes.next().await, None);
    within("two leads", second.leadership()).await.unwrap();
    assert_eq!(within("two's change", second_changes.next()).await, Some(true));
    second.close(CloseMode::Silent).await.unwrap();
    assert_eq!(within("silent close", second_changes.next()).await, None);
    children(&a, &path, 0).await;
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_node_ends_the_term_and_the_latch_queues_again() {
    let [a, admin] = [client().await, client().await];
    let path = unique("deleted");
    let leadership = a.leader_selector(&path, "s").await.unwrap().leadership().await.unwrap();
    admin.delete(leadership.node(), None).await.unwrap();
    assert_eq!(within("selector loss", leadership.lost()).await, HoldStatus::Lost);
    assert_eq!(leadership.status(), HoldStatus::Lost);
    leadership.release().await.unwrap();

    let latch_path = unique("deleted-latch");
    let latch = a.leader_latch(&latch_path, "l").await.unwrap();
    within("latch leads", latch.leadership()).await.unwrap();
    let node = latch.participants().await.unwrap().remove(0).node;
    admin.delete(&node, None).await.unwrap();
    let deadline = Instant::now() + STEP;
    loop {
        let now = latch.participants().await.unwrap();
        if latch.has_leadership() && now.len() == 1 && now[0].node != node {
            break;
        }
        assert!(Instant::now() < deadline, "the latch did not queue again: {now:?}");
        sleep(Duration::from_millis(10)).await;
    }
    drop(latch);
    children(&admin, &latch_path, 0).await;
    a.close().await.unwrap();
    admin.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_hold_ends_a_hold_a_term_and_a_lease() {
    const D: Duration = Duration::from_millis(400);
    let [a, b] = [client().await, client().await];
    let path = unique("max-hold");
    // A mutex guard.
    let guard = a.mutex_with(&path, LockOptions::default().max_hold(D)).await.unwrap().acquire().await.unwrap();
    let granted = Instant::now();
    let waiter = b.mutex(&path).await.unwrap();
    let next = tokio::spawn(async move { waiter.acquire().await });
    assert_eq!(within("expiry", guard.lost()).await, HoldStatus::Lost);
    let held = granted.elapsed();
    assert!(held >= D && held < D + Duration::from_millis(500), "{held:?}");
    within("the waiter", next).await.unwrap().unwrap().release().await.unwrap();
    guard.release().await.unwrap();
    // A term of leadership.
    let selector = a.election_participant(&path, ElectionKind::Selector, "x", LockOptions::default().max_hold(D));
    let leadership = selector.await.unwrap().leadership().await.unwrap();
    assert_eq!(within("term expiry", leadership.lost()).await, HoldStatus::Lost);
    drop(leadership);
    // A semaphore lease.
    let options = zoolock_tokio::SemaphoreOptions::leases(1).max_hold(D);
    let lease = a.semaphore_with(&unique("max-hold-sem"), options).await.unwrap().acquire_one().await.unwrap();
    assert_eq!(within("lease expiry", lease.lost()).await, HoldStatus::Lost);
    children(&a, &path, 0).await;
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_reports_each_holder_and_leader_without_polling() {
    let [a, b, watcher] = [client().await, client().await, client().await];
    let path = unique("observe");
    let mut leaders = watcher.observe_leader(&path, ElectionKind::Selector).await.unwrap();
    assert_eq!(within("first", leaders.next()).await.unwrap().unwrap(), None);
    let first = a.leader_selector(&path, "first").await.unwrap().leadership().await.unwrap();
    assert_eq!(within("first leads", leaders.next()).await.unwrap().unwrap().as_deref(), Some("first"));
    let second = b.leader_selector(&path, "second").await.unwrap();
    let waiting = tokio::spawn(async move { second.leadership().await });
    children(&a, &path, 2).await;
    first.release().await.unwrap();
    assert_eq!(within("second leads", leaders.next()).await.unwrap().unwrap().as_deref(), Some("second"));
    drop(within("second's term", waiting).await.unwrap().unwrap());
    assert_eq!(within("nobody", leaders.next()).await.unwrap().unwrap(), None);

    let lock_path = unique("observe-lock");
    let mut holders = watcher.observe(&lock_path, ParticipantsOf::Mutex).await.unwrap();
    assert_eq!(within("no holder", holders.next()).await.unwrap().unwrap(), None);
    let guard = a.mutex(&lock_path).await.unwrap().acquire().await.unwrap();
    let holder = within("holder", holders.next()).await.unwrap().unwrap().expect("a holder");
    assert_eq!(holder.path, guard.node());
    guard.release().await.unwrap();
    assert_eq!(within("released", holders.next()).await.unwrap().unwrap(), None);
    for c in [a, b, watcher] {
        c.close().await.unwrap();
    }
}
