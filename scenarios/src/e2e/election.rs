//! Leader election, the maximum hold and observing (issue 27). Curator's
//! side of the same elections is in `conformance/tests/interop_election.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use futures_lite::{StreamExt, future};
use zoolock_driver::ApiMisuse;
use zoolock_driver::{
    CloseMode, ElectionKind, Error, HoldStatus, Leadership, LeadershipPolicy, LockKind, LockOptions, LossReason,
    SemaphoreOptions,
};

use super::{Env, Proxy, children, finish, wait_children};

/// Longest wait for one step.
const STEP: Duration = Duration::from_secs(20);

/// Terms pass in queue order; `leader()` and `participants()` name them.
pub async fn election_selector(env: &Env) {
    let [a, b] = env.clients::<2>().await;
    let path = env.path("election-selector");
    let first = a.leader_selector(&path, "alpha").await.unwrap();
    let second = b.leader_selector(&path, "beta").await.unwrap();
    assert_eq!(first.leader().await.unwrap(), None, "nobody queued yet");

    let leading = env.within(STEP, "alpha leads", first.leadership()).await.unwrap();
    assert_eq!(leading.status(), HoldStatus::Held);
    assert!(leading.node().starts_with(&format!("{path}/_c_")) && leading.node().contains("-lock-"));
    let waiting = env.spawn(async move { second.leadership().await.map(|l| (l, second)) });
    wait_children(env, &a, &path, 2).await;
    assert_eq!(first.leader().await.unwrap().as_deref(), Some("alpha"));
    let ids: Vec<(String, bool)> =
        first.participants().await.unwrap().into_iter().map(|p| (p.id, p.is_leader)).collect();
    assert_eq!(ids, [("alpha".to_owned(), true), ("beta".to_owned(), false)]);

    let token = leading.fencing_token();
    leading.release().await.unwrap();
    let (next, second) = env.within(STEP, "beta leads", waiting).await.unwrap();
    assert!(next.fencing_token() > token);
    assert_eq!(second.leader().await.unwrap().as_deref(), Some("beta"));
    drop(next);
    finish(env, &a, &path, &[&a, &b]).await;
}

/// A free election is taken with a zero time-out; a wait that times out
/// or is dropped leaves the queue and no node.
pub async fn election_cancelled_wait(env: &Env) {
    let [a, b] = env.clients::<2>().await;
    let path = env.path("election-cancel");
    // A free election is taken even with no time to wait, as a free lock.
    let selector = a.leader_selector(&path, "holder").await.unwrap();
    let held = selector.leadership_timeout(Duration::ZERO).await.unwrap();
    // One participant per selector: a second call, or a clone's, is refused
    // while the first leads, and nothing is queued for it.
    let again = selector.clone().leadership().await;
    assert!(matches!(again, Err(Error::Misuse(ApiMisuse::AcquireInProgress))), "{again:?}");
    let waiter = b.leader_selector(&path, "waiter").await.unwrap();
    let started = Instant::now();
    let timed_out = waiter.leadership_timeout(Duration::from_millis(300)).await;
    assert!(matches!(timed_out, Err(Error::TimedOut)), "{timed_out:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    wait_children(env, &a, &path, 1).await;
    assert!(env.timeout(Duration::from_millis(200), waiter.leadership()).await.is_none(), "it waited");
    wait_children(env, &a, &path, 1).await;
    drop(held);
    // The first term ended: the selector may queue again.
    let next = env.within(STEP, "a second term", selector.leadership()).await.unwrap();
    drop(next);
    finish(env, &a, &path, &[&a, &b]).await;
}

/// `run` with `auto_requeue` takes turn after turn; without it, one term.
pub async fn election_run_requeues(env: &Env) {
    let [a, b] = env.clients::<2>().await;
    let path = env.path("election-requeue");
    let terms = Arc::new(AtomicUsize::new(0));
    let mut selectors = Vec::new();
    for (client, id) in [(&a, "a"), (&b, "b")] {
        selectors.push(client.leader_selector(&path, id).await.unwrap().auto_requeue(true));
    }
    let lead = |leadership: Leadership| {
        let terms = terms.clone();
        async move {
            assert_eq!(leadership.status(), HoldStatus::Held);
            terms.fetch_add(1, Ordering::SeqCst);
            env.sleep(Duration::from_millis(20)).await;
        }
    };
    let runs = future::zip(selectors[0].run(lead), selectors[1].run(lead));
    let enough = async {
        while terms.load(Ordering::SeqCst) < 6 {
            env.sleep(Duration::from_millis(10)).await;
        }
    };
    // Dropping the runs ends the term under way and leaves the queue.
    env.within(STEP, "six terms", future::or(async { drop(runs.await) }, enough)).await;
    wait_children(env, &a, &path, 0).await;
    let once = a.leader_selector(&path, "once").await.unwrap();
    env.within(STEP, "one term", once.run(|_leadership| async {})).await.unwrap();
    finish(env, &a, &path, &[&a, &b]).await;
}

/// A latch leads until closed; its change stream and close modes.
pub async fn election_latch(env: &Env) {
    let [a, b] = env.clients::<2>().await;
    let path = env.path("election-latch");
    let first = a.leader_latch(&path, "one").await.unwrap();
    env.within(STEP, "one leads", first.leadership()).await.unwrap();
    let second = b.leader_latch(&path, "two").await.unwrap();
    let mut second_changes = second.leadership_changes();
    assert_eq!(env.within(STEP, "two's first change", second_changes.next()).await, Some(false));
    assert!(first.has_leadership() && !second.has_leadership());
    assert_eq!(second.leader().await.unwrap().as_deref(), Some("one"));
    wait_children(env, &a, &path, 2).await;
    let ids: Vec<String> = first.participants().await.unwrap().into_iter().map(|p| p.id).collect();
    assert_eq!(ids, ["one", "two"]);
    assert!(children(&a, &path).await.iter().all(|n| n.contains("-latch-")));

    let mut first_changes = first.leadership_changes();
    assert_eq!(first_changes.next().await, Some(true));
    first.close(CloseMode::NotifyLeader).await.unwrap();
    assert_eq!(env.within(STEP, "one's last change", first_changes.next()).await, Some(false));
    assert_eq!(first_changes.next().await, None);
    env.within(STEP, "two leads", second.leadership()).await.unwrap();
    assert_eq!(env.within(STEP, "two's change", second_changes.next()).await, Some(true));
    second.close(CloseMode::Silent).await.unwrap();
    assert_eq!(env.within(STEP, "silent close", second_changes.next()).await, None);
    finish(env, &a, &path, &[&a, &b]).await;
}

/// A deleted node ends a term at once; a latch queues again.
pub async fn election_node_deleted(env: &Env) {
    let [a, admin] = env.clients::<2>().await;
    let path = env.path("election-deleted");
    let leadership = a.leader_selector(&path, "s").await.unwrap().leadership().await.unwrap();
    admin.delete(leadership.node(), None).await.unwrap();
    assert_eq!(env.within(STEP, "selector loss", leadership.lost()).await, HoldStatus::Lost);
    assert_eq!(leadership.status(), HoldStatus::Lost);
    assert_eq!(leadership.loss(), Some(LossReason::SessionOrNode));
    leadership.release().await.unwrap();

    let latch_path = env.path("election-deleted-latch");
    let latch = a.leader_latch(&latch_path, "l").await.unwrap();
    env.within(STEP, "latch leads", latch.leadership()).await.unwrap();
    let node = latch.participants().await.unwrap().remove(0).node;
    admin.delete(&node, None).await.unwrap();
    let deadline = Instant::now() + STEP;
    loop {
        let now = latch.participants().await.unwrap();
        if latch.has_leadership() && now.len() == 1 && now[0].node != node {
            break;
        }
        assert!(Instant::now() < deadline, "the latch did not queue again: {now:?}");
        env.sleep(Duration::from_millis(10)).await;
    }
    drop(latch);
    finish(env, &admin, &latch_path, &[]).await;
    finish(env, &admin, &path, &[&a, &admin]).await;
}

/// `max_hold` ends a guard's hold (a waiter gets the lock), a term of
/// leadership and a lease, at `d` after the grant.
pub async fn max_hold(env: &Env) {
    const D: Duration = Duration::from_millis(400);
    let [a, b] = env.clients::<2>().await;
    let path = env.path("max-hold");
    let lock = a.mutex_with(&path, LockOptions::default().max_hold(D)).await.unwrap();
    // The grant happens between these two instants: the expiry is at least
    // `D` after the first and, on time, less than `D` + 0.5 s after the second.
    let asked = Instant::now();
    let guard = lock.acquire().await.unwrap();
    let granted = Instant::now();
    assert_eq!(guard.loss(), None, "held");
    let waiter = b.mutex(&path).await.unwrap();
    let next = env.spawn(async move { waiter.acquire().await });
    assert_eq!(env.within(STEP, "expiry", guard.lost()).await, HoldStatus::Lost);
    let (since_asked, held) = (asked.elapsed(), granted.elapsed());
    assert!(since_asked >= D && held < D + Duration::from_millis(500), "{since_asked:?} {held:?}");
    assert_eq!(guard.loss(), Some(LossReason::MaxHold));
    env.within(STEP, "the waiter", next).await.unwrap().release().await.unwrap();
    guard.release().await.unwrap();

    let term_path = env.path("max-hold-term");
    let options = LockOptions::default().max_hold(D);
    let selector = a.election_participant(&term_path, ElectionKind::Selector, "x", options).await.unwrap();
    let leadership = selector.leadership().await.unwrap();
    assert_eq!(env.within(STEP, "term expiry", leadership.lost()).await, HoldStatus::Lost);
    assert_eq!(leadership.loss(), Some(LossReason::MaxHold));
    drop(leadership);

    let sem_path = env.path("max-hold-sem");
    let semaphore = a.semaphore_with(&sem_path, SemaphoreOptions::leases(1).max_hold(D)).await.unwrap();
    let lease = semaphore.acquire_one().await.unwrap();
    assert_eq!(env.within(STEP, "lease expiry", lease.lost()).await, HoldStatus::Lost);
    assert_eq!(lease.loss(), Some(LossReason::MaxHold));
    drop(lease);
    finish(env, &a, &term_path, &[]).await;
    finish(env, &a, &path, &[&a, &b]).await;
}

/// `observe_leader` and `observe` report each leader and holder, told by
/// watches.
pub async fn observe(env: &Env) {
    let [a, b, watcher] = env.clients::<3>().await;
    let path = env.path("observe");
    let mut leaders = watcher.observe_leader(&path, ElectionKind::Selector).await.unwrap();
    assert_eq!(env.within(STEP, "first", leaders.next()).await.unwrap().unwrap(), None);
    let first = a.leader_selector(&path, "first").await.unwrap().leadership().await.unwrap();
    assert_eq!(env.within(STEP, "first leads", leaders.next()).await.unwrap().unwrap().as_deref(), Some("first"));
    let second = b.leader_selector(&path, "second").await.unwrap();
    let waiting = env.spawn(async move { second.leadership().await });
    wait_children(env, &a, &path, 2).await;
    first.release().await.unwrap();
    let next = env.within(STEP, "second leads", leaders.next()).await.unwrap().unwrap();
    assert_eq!(next.as_deref(), Some("second"));
    drop(env.within(STEP, "second's term", waiting).await.unwrap());
    assert_eq!(env.within(STEP, "nobody", leaders.next()).await.unwrap().unwrap(), None);

    let lock_path = env.path("observe-lock");
    let mut holders = watcher.observe(&lock_path, LockKind::Mutex).await.unwrap();
    assert_eq!(env.within(STEP, "no holder", holders.next()).await.unwrap().unwrap(), None);
    let guard = a.mutex(&lock_path).await.unwrap().acquire().await.unwrap();
    let holder = env.within(STEP, "holder", holders.next()).await.unwrap().unwrap().expect("a holder");
    assert_eq!(holder.path, guard.node());
    guard.release().await.unwrap();
    assert_eq!(env.within(STEP, "released", holders.next()).await.unwrap().unwrap(), None);
    finish(env, &watcher, &lock_path, &[]).await;
    finish(env, &watcher, &path, &[&a, &b, &watcher]).await;
}

/// A cut shorter than the session (issue 39), through a proxy the test
/// controls, with a second participant queued behind the leader: under the
/// session policy the term goes on (its status reads `Suspended`, then
/// `Held`) and the second never leads; under the standard policy the same
/// cut ends the term and the second leads.
pub async fn election_policy_on_a_short_cut(env: &Env) {
    for policy in LeadershipPolicy::ALL {
        let path = env.path(&format!("election-policy-{}", policy.name()));
        let proxy = Proxy::start(&env.addr);
        let a = env.client_at(&proxy.addr, Env::options().session_timeout(Duration::from_secs(6))).await;
        let b = env.client().await;
        let options = LockOptions::default().leadership(policy);
        let first = a.election_participant(&path, ElectionKind::Selector, "a", options.clone()).await.unwrap();
        let second = b.election_participant(&path, ElectionKind::Selector, "b", options).await.unwrap();
        let statuses = Arc::new(StdMutex::new(Vec::new()));
        let terms = AtomicUsize::new(0);
        let lead = |leadership: Leadership| {
            let (statuses, terms) = (statuses.clone(), &terms);
            async move {
                terms.fetch_add(1, Ordering::SeqCst);
                let mut changes = leadership.status_changes();
                while let Some(status) = changes.next().await {
                    statuses.lock().unwrap().push(status);
                }
                future::pending::<()>().await
            }
        };
        let ran = AtomicUsize::new(0);
        let run = async {
            first.run(lead).await.unwrap();
            ran.fetch_add(1, Ordering::SeqCst);
            future::pending::<()>().await
        };
        let last = || statuses.lock().unwrap().last().copied();
        let until = |want: HoldStatus| async move {
            while last() != Some(want) {
                env.sleep(Duration::from_millis(10)).await;
            }
        };
        let body = async {
            env.within(STEP, "a leads", until(HoldStatus::Held)).await;
            let mut next = std::pin::pin!(second.leadership());
            assert!(env.timeout(Duration::from_millis(200), next.as_mut()).await.is_none(), "b waits");
            wait_children(env, &b, &path, 2).await;
            proxy.cut();
            // (Under the standard policy the term may end before its lead
            // future sees the status.)
            let suspended = async {
                while last() != Some(HoldStatus::Suspended) && ran.load(Ordering::SeqCst) == 0 {
                    env.sleep(Duration::from_millis(10)).await;
                }
            };
            env.within(STEP, "a reads Suspended", suspended).await;
            env.sleep(Duration::from_millis(500)).await;
            proxy.restore();
            match policy {
                LeadershipPolicy::Session => {
                    env.within(STEP, "a reads Held again", until(HoldStatus::Held)).await;
                    assert!(env.timeout(Duration::from_millis(300), next.as_mut()).await.is_none(), "b led");
                    assert_eq!(b.leader(&path, ElectionKind::Selector).await.unwrap().as_deref(), Some("a"));
                    let seen = statuses.lock().unwrap().clone();
                    assert_eq!(seen, [HoldStatus::Held, HoldStatus::Suspended, HoldStatus::Held]);
                    assert_eq!(ran.load(Ordering::SeqCst), 0, "the term ended");
                }
                _ => {
                    let term = env.within(STEP, "b leads", next.as_mut()).await.unwrap();
                    assert_eq!(ran.load(Ordering::SeqCst), 1, "a's run ended with its term");
                    let seen = statuses.lock().unwrap().clone();
                    assert!(seen[0] == HoldStatus::Held && !seen[1..].contains(&HoldStatus::Held), "{seen:?}");
                    drop(term);
                }
            }
            assert_eq!(terms.load(Ordering::SeqCst), 1);
        };
        future::or(run, body).await;
        drop((first, second));
        finish(env, &b, &path, &[&a, &b]).await;
    }
}
