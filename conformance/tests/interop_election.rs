//! Leader election with Apache Curator 5.4.0 (issue 27): Curator
//! `LeaderSelector` participants (`setId`, `autoRequeue`) and zoolock
//! [`LeaderSelector`]s take turns on one path, as do Curator `LeaderLatch`es
//! and zoolock [`LeaderLatch`]es; no two terms overlap, everyone leads
//! repeatedly, and each side's `leader()` names the other side's ids. Also
//! the maximum hold: a zoolock holder that never lets go is `Lost` at its
//! `max_hold` and a Curator waiter gets the lock. And (issue 39) a Curator
//! selector with `SessionConnectionStateErrorPolicy` and a zoolock selector
//! under the session policy take turns, the zoolock leader riding out a cut
//! connection within its term.
//!
//! Terms lie on one time line as in `interop.rs`: both sides report
//! wall-clock microseconds. A Curator term runs from `takeLeadership` (or
//! `await()`) returning to just before it gives up; a zoolock term from
//! `leadership()` returning to just before its release.
//!
//! Skipped as `interop.rs` is: without `ZOOLOCK_TEST_CONNECT`, or without
//! java or the jars outside CI (with `CI` set, they fail).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_lite::StreamExt;
use tokio::sync::Mutex as AsyncMutex;
use tokio::task::JoinHandle;
use tokio::time::sleep;
use zoolock_conformance::sim::Mode;
use zoolock_testkit::proxy::Proxy;
use zoolock_tokio::{
    Client, CloseMode, ElectionKind, HoldStatus, LeaderSelector, Leadership, LeadershipPolicy, LockOptions, OpPlan,
    Options,
};

mod holds;

use holds::{Hold, check_exclusion, max_concurrent};
use zoolock_testkit::java::{Java, Peer, STEP, java_or_skip, now_us, within};

/// Terms each participant leads at least.
const TERMS: usize = 3;
/// How long a Curator participant leads per term.
const CURATOR_TERM_MS: u64 = 300;
/// How long a zoolock participant leads per term (after its checks).
const ZOOLOCK_TERM: Duration = Duration::from_millis(150);

fn base_path(test: &str) -> String {
    format!("/zoolock-interop/{test}-{}-{}", std::process::id(), now_us())
}

async fn connect(addr: &str, plan: OpPlan) -> Client {
    let options = Options::default().session_timeout(Duration::from_secs(10)).plan(plan);
    within("zoolock connect", zoolock_tokio::connect(addr, options)).await.expect("zoolock connect")
}

/// The terms recorded so far, shared by every participant's task.
type Terms = Arc<Mutex<Vec<Hold>>>;

/// A zoolock term under way: recorded when it ends, however it ends (the
/// task aborted mid-term included), before its node can be deleted (a
/// dropped leadership's delete goes through the event loop afterwards).
struct Term {
    who: String,
    node: String,
    enter: i64,
    terms: Terms,
}

impl Drop for Term {
    fn drop(&mut self) {
        let hold = Hold {
            who: self.who.clone(),
            mode: Mode::Exclusive,
            node: self.node.clone(),
            enter: self.enter,
            exit: now_us(),
        };
        self.terms.lock().unwrap().push(hold);
    }
}

/// Asks Curator (an unstarted recipe on the admin session) who leads `path`.
async fn curator_leader(query: &AsyncMutex<Peer>, kind: &str, path: &str) -> String {
    let mut q = query.lock().await;
    q.send("LEADER_OF", &format!("{kind} {path}"));
    let words = q.expect("LEADER_IS").await;
    words[2].clone()
}

/// Curator's participants of `path`: `(id, leader)` in its order.
async fn curator_electorate(query: &AsyncMutex<Peer>, kind: &str, path: &str) -> Vec<(String, bool)> {
    let mut q = query.lock().await;
    q.send("ELECTORATE", &format!("{kind} {path}"));
    let words = q.expect("IDS").await;
    words[3..]
        .iter()
        .map(|w| {
            let (id, leader) = w.rsplit_once(':').expect("id:leader");
            (id.to_owned(), leader == "true")
        })
        .collect()
}

/// Follows a Curator participant's `LEADER`/`RESIGN` lines until `STOPPED`:
/// each term is recorded, and at each term's start zoolock's `leader()`
/// must name `id`. Returns how many terms it led.
async fn follow_curator(
    mut peer: Peer,
    id: String,
    observer: Client,
    path: String,
    election: ElectionKind,
    terms: Terms,
) -> usize {
    let mut led = 0;
    let mut enter = None;
    loop {
        let words = peer.next().await;
        match words[0].as_str() {
            "LEADER" => {
                enter = Some(Peer::micros(&words, 2));
                let seen = within("zoolock leader()", observer.leader(&path, election)).await.expect("leader()");
                assert_eq!(seen.as_deref(), Some(id.as_str()), "zoolock's leader() while Curator's {id} leads");
                led += 1;
            }
            "RESIGN" => {
                let enter = enter.take().expect("RESIGN without LEADER");
                let exit = Peer::micros(&words, 2);
                terms.lock().unwrap().push(Hold {
                    who: id.clone(),
                    mode: Mode::Exclusive,
                    node: "-".into(),
                    enter,
                    exit,
                });
            }
            "STOPPED" => return led,
            other => panic!("java {}: unexpected {other}", peer.id),
        }
    }
}

/// Leads counted per participant id.
fn counts(terms: &[Hold]) -> HashMap<String, usize> {
    let mut n = HashMap::new();
    for t in terms {
        *n.entry(t.who.clone()).or_default() += 1;
    }
    n
}

/// Waits until every id in `ids` has led `TERMS` times.
async fn until_everyone_led(terms: &Terms, ids: &[String]) {
    let deadline = Instant::now() + STEP * 2;
    loop {
        let n = counts(&terms.lock().unwrap());
        if ids.iter().all(|id| n.get(id).copied().unwrap_or(0) >= TERMS) {
            return;
        }
        assert!(Instant::now() < deadline, "not everyone led {TERMS} times: {n:?}");
        sleep(Duration::from_millis(20)).await;
    }
}

/// No two terms overlap, and the leadership passed between the
/// implementations; prints a summary.
fn check_terms(test: &str, terms: &mut [Hold], started: Instant) {
    terms.sort_by_key(|h| h.enter);
    check_exclusion(terms, false);
    assert_eq!(max_concurrent(terms), 1);
    let handoffs = terms.windows(2).filter(|w| w[0].who.starts_with('c') != w[1].who.starts_with('c')).count();
    assert!(handoffs >= 2, "leadership never passed between Curator and zoolock: {terms:?}");
    println!("{test}: {} terms, {handoffs} handoffs between implementations, {:?}", terms.len(), started.elapsed());
}

/// A zoolock `LeaderSelector` participant with `auto_requeue`: each term
/// checks that Curator names it leader and that it reads `Held`.
fn zoolock_selector(
    selector: LeaderSelector,
    query: Arc<AsyncMutex<Peer>>,
    path: String,
    terms: Terms,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let id = selector.id().to_owned();
        let selector = selector.auto_requeue(true);
        let run = selector.run(|leadership: Leadership| {
            let (id, query, path, terms) = (id.clone(), query.clone(), path.clone(), terms.clone());
            async move {
                let term = Term { who: id.clone(), node: leadership.node().to_owned(), enter: now_us(), terms };
                assert_eq!(leadership.status(), HoldStatus::Held);
                assert_eq!(
                    curator_leader(&query, "selector", &path).await,
                    id,
                    "Curator's getLeader() while {id} leads"
                );
                sleep(ZOOLOCK_TERM).await;
                // The term's record first, then the leadership goes.
                drop(term);
                leadership.release().await.unwrap();
            }
        });
        run.await.expect("zoolock selector");
    })
}

// ---- LeaderSelector ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_leader_selector() {
    let test = "interop_leader_selector";
    let Some(addr) = zoolock_testkit::real_server(test) else { return };
    let Some(java) = java_or_skip(test) else { return };
    let started = Instant::now();
    let jv = Java::start(java, &addr).await;
    let path = base_path("leader-selector");
    let observer = connect(&addr, OpPlan::default()).await;
    let query = Arc::new(AsyncMutex::new(jv.peer("q")));
    let terms: Terms = Arc::default();

    // An observer sees every leader, Curator's and ours, by watches alone.
    let mut leaders = observer.observe_leader(&path, ElectionKind::Selector).await.unwrap();
    let seen = tokio::spawn(async move {
        let mut seen = std::collections::HashSet::new();
        while let Some(leader) = leaders.next().await {
            if let Some(id) = leader.expect("observe") {
                seen.insert(id);
                if seen.len() == 4 {
                    break;
                }
            }
        }
        seen
    });
    let curator_ids = ["c-alice", "c-bob"];
    let mut followers = Vec::new();
    for (peer, id) in ["ca", "cb"].into_iter().zip(curator_ids) {
        let peer = jv.peer(peer);
        peer.send("SELECTOR_START", &format!("{path} {id} {CURATOR_TERM_MS}"));
        followers.push(tokio::spawn(follow_curator(
            peer,
            id.to_owned(),
            observer.clone(),
            path.clone(),
            ElectionKind::Selector,
            terms.clone(),
        )));
    }
    // One zoolock participant in each op plan, each on its own session.
    let mut clients = Vec::new();
    let mut zoolock = Vec::new();
    for (id, plan) in [("z-carol", OpPlan::Pipelined), ("z-dave", OpPlan::Curator)] {
        let client = connect(&addr, plan).await;
        let selector = client.leader_selector(&path, id).await.unwrap();
        zoolock.push(zoolock_selector(selector, query.clone(), path.clone(), terms.clone()));
        clients.push(client);
    }

    // Both sides list the same electorate, with one leader, the same one.
    let mut all: Vec<String> = curator_ids.iter().map(|s| (*s).to_owned()).collect();
    all.extend(["z-carol".to_owned(), "z-dave".to_owned()]);
    let deadline = Instant::now() + STEP;
    loop {
        let ours = observer.election(&path, ElectionKind::Selector).await.unwrap();
        let theirs = curator_electorate(&query, "selector", &path).await;
        let ours: Vec<(String, bool)> = ours.into_iter().map(|p| (p.id, p.is_leader)).collect();
        let mut ids: Vec<&String> = ours.iter().map(|(id, _)| id).collect();
        ids.sort();
        // Terms end and re-queue meanwhile: compare only a stable listing.
        if ours.len() == 4 && ours == theirs {
            assert_eq!(ids, all.iter().collect::<Vec<_>>());
            assert_eq!(ours.iter().filter(|(_, leader)| *leader).count(), 1);
            break;
        }
        assert!(Instant::now() < deadline, "no stable listing of all four: ours {ours:?}, Curator's {theirs:?}");
        sleep(Duration::from_millis(30)).await;
    }

    until_everyone_led(&terms, &all).await;
    let seen = within("the observer saw every leader", seen).await.unwrap();
    assert_eq!(seen.len(), 4, "{seen:?}");
    for task in &zoolock {
        task.abort();
    }
    for task in zoolock {
        assert!(within("zoolock participant", task).await.unwrap_err().is_cancelled());
    }
    for peer in ["ca", "cb"] {
        jv.send(&format!("SELECTOR_STOP {peer}"));
    }
    for follower in followers {
        assert!(within("Curator participant", follower).await.unwrap() >= TERMS);
    }
    for c in clients {
        c.close().await.unwrap();
    }
    observer.close().await.unwrap();
    let mut terms = terms.lock().unwrap().clone();
    check_terms(test, &mut terms, started);
}

// ---- SessionConnectionStateErrorPolicy ------------------------------------------------------

/// Waits until `leadership` reads `want`.
async fn until_status(leadership: &Leadership, want: HoldStatus) {
    let mut changes = leadership.status_changes();
    while let Some(status) = changes.next().await {
        if status == want {
            return;
        }
    }
    panic!("the status stream ended before {want:?}");
}

/// Curator's session policy and zoolock's take turns on one path with no
/// overlap. The zoolock participant connects through a proxy, which is cut
/// for 1 s (its session is 10 s) in its first term: the term goes on,
/// reading `Suspended` and then `Held`, and Curator does not lead
/// meanwhile (the exclusion check covers the cut: it is inside the term).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_session_policy_selectors() {
    let test = "interop_session_policy_selectors";
    let Some(addr) = zoolock_testkit::real_server(test) else { return };
    let Some(java) = java_or_skip(test) else { return };
    let started = Instant::now();
    let jv = Java::start(java, &addr).await;
    let path = base_path("session-policy");
    let observer = connect(&addr, OpPlan::default()).await;
    let terms: Terms = Arc::default();

    let mut peer = jv.peer("cs");
    peer.send("SELECTOR_START", &format!("{path} c-erin {CURATOR_TERM_MS} session"));
    let policy = within("Curator's policy", peer.expect("POLICY")).await;
    assert_eq!(policy[2], "SessionConnectionStateErrorPolicy");
    let follower = tokio::spawn(follow_curator(
        peer,
        "c-erin".to_owned(),
        observer.clone(),
        path.clone(),
        ElectionKind::Selector,
        terms.clone(),
    ));

    let proxy = Arc::new(Proxy::start(&addr));
    let client = connect(&proxy.addr, OpPlan::default()).await;
    let options = LockOptions::default().leadership(LeadershipPolicy::Session);
    let selector = client.election_participant(&path, ElectionKind::Selector, "z-frank", options).await.unwrap();
    let kept = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let zoolock = {
        let (terms, proxy, kept) = (terms.clone(), proxy.clone(), kept.clone());
        tokio::spawn(async move {
            let selector = selector.auto_requeue(true);
            let run = selector.run(|leadership: Leadership| {
                let (terms, proxy, kept) = (terms.clone(), proxy.clone(), kept.clone());
                async move {
                    let term =
                        Term { who: "z-frank".into(), node: leadership.node().to_owned(), enter: now_us(), terms };
                    assert_eq!(leadership.status(), HoldStatus::Held);
                    if !kept.load(std::sync::atomic::Ordering::SeqCst) {
                        proxy.cut();
                        within("Suspended on the cut", until_status(&leadership, HoldStatus::Suspended)).await;
                        sleep(Duration::from_secs(1)).await;
                        proxy.restore();
                        within("Held after the reconnect", until_status(&leadership, HoldStatus::Held)).await;
                        kept.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                    sleep(ZOOLOCK_TERM).await;
                    drop(term);
                    leadership.release().await.unwrap();
                }
            });
            run.await.expect("zoolock selector");
        })
    };

    until_everyone_led(&terms, &["c-erin".to_owned(), "z-frank".to_owned()]).await;
    assert!(kept.load(std::sync::atomic::Ordering::SeqCst), "the cut term went on");
    zoolock.abort();
    assert!(within("zoolock participant", zoolock).await.unwrap_err().is_cancelled());
    jv.send("SELECTOR_STOP cs");
    assert!(within("Curator participant", follower).await.unwrap() >= TERMS);
    client.close().await.unwrap();
    observer.close().await.unwrap();
    let mut terms = terms.lock().unwrap().clone();
    check_terms(test, &mut terms, started);
}

// ---- LeaderLatch ---------------------------------------------------------------------------

/// A zoolock participant taking `TERMS` terms, each one `LeaderLatch` from
/// start to close (alternately notifying and silent); each term checks
/// `has_leadership`, the change stream and that Curator names it leader.
async fn zoolock_latch(client: Client, id: String, query: Arc<AsyncMutex<Peer>>, path: String, terms: Terms) {
    for k in 0..TERMS {
        let latch = client.leader_latch(&path, &id).await.unwrap();
        let mut changes = latch.leadership_changes();
        within(&id, latch.leadership()).await.expect("latch leadership");
        let term = Term { who: id.clone(), node: "-".into(), enter: now_us(), terms: terms.clone() };
        assert!(latch.has_leadership());
        assert_eq!(within(&id, changes.next()).await, Some(true));
        assert_eq!(latch.id(), id);
        assert_eq!(curator_leader(&query, "latch", &path).await, id, "Curator's getLeader() while {id} leads");
        sleep(ZOOLOCK_TERM).await;
        drop(term);
        let mode = if k % 2 == 0 { CloseMode::NotifyLeader } else { CloseMode::Silent };
        within(&id, latch.close(mode)).await.expect("latch close");
        if mode == CloseMode::NotifyLeader {
            assert_eq!(within(&id, changes.next()).await, Some(false), "NotifyLeader reports the loss");
        }
        assert_eq!(within(&id, changes.next()).await, None, "the change stream ends with the latch");
    }
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_leader_latch() {
    let test = "interop_leader_latch";
    let Some(addr) = zoolock_testkit::real_server(test) else { return };
    let Some(java) = java_or_skip(test) else { return };
    let started = Instant::now();
    let jv = Java::start(java, &addr).await;
    let path = base_path("leader-latch");
    let observer = connect(&addr, OpPlan::default()).await;
    let query = Arc::new(AsyncMutex::new(jv.peer("q")));
    let terms: Terms = Arc::default();

    let mut followers = Vec::new();
    for (peer, id) in [("ca", "c-erin"), ("cb", "c-frank")] {
        let peer = jv.peer(peer);
        peer.send("LATCH_START", &format!("{path} {id} {CURATOR_TERM_MS} {TERMS}"));
        followers.push(tokio::spawn(follow_curator(
            peer,
            id.to_owned(),
            observer.clone(),
            path.clone(),
            ElectionKind::Latch,
            terms.clone(),
        )));
    }
    let mut zoolock = Vec::new();
    for (id, plan) in [("z-grace", OpPlan::Pipelined), ("z-heidi", OpPlan::Curator)] {
        let client = connect(&addr, plan).await;
        zoolock.push(tokio::spawn(zoolock_latch(client, id.to_owned(), query.clone(), path.clone(), terms.clone())));
    }
    for task in zoolock {
        within("zoolock latch", task).await.unwrap();
    }
    for follower in followers {
        assert_eq!(within("Curator latch", follower).await.unwrap(), TERMS);
    }
    // Everyone is gone: nobody leads, on either side. Curator's
    // `LeaderLatch.close()` deletes its node in the background (a
    // guaranteed delete), so its last node may outlive STOPPED briefly.
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Some(leader) = observer.leader(&path, ElectionKind::Latch).await.unwrap() {
        assert!(Instant::now() < deadline, "{leader} still leads 10 s after every latch closed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(curator_leader(&query, "latch", &path).await, "-");
    observer.close().await.unwrap();
    let mut terms = terms.lock().unwrap().clone();
    let n = counts(&terms);
    assert!(n.values().all(|&k| k == TERMS) && n.len() == 4, "{n:?}");
    check_terms(test, &mut terms, started);
}

// ---- maximum hold --------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_max_hold() {
    const MAX_HOLD: Duration = Duration::from_millis(1500);
    const SLACK: Duration = Duration::from_millis(500);
    let test = "interop_max_hold";
    let Some(addr) = zoolock_testkit::real_server(test) else { return };
    let Some(java) = java_or_skip(test) else { return };
    let jv = Java::start(java, &addr).await;
    let path = base_path("max-hold");
    let holder = connect(&addr, OpPlan::default()).await;
    let waiter = connect(&addr, OpPlan::default()).await;

    // A holder that never lets go, with its session alive throughout.
    let lock = holder.mutex_with(&path, LockOptions::default().max_hold(MAX_HOLD)).await.unwrap();
    let guard = within("holder", lock.acquire()).await.unwrap();
    let granted = Instant::now();
    // A Curator waiter, then a zoolock one.
    let mut curator = jv.peer("cw");
    curator.start_acquire("MUTEX_ACQUIRE", &path);
    let deadline = Instant::now() + STEP;
    while holder.get_children(&path).await.unwrap().0.len() < 2 {
        assert!(Instant::now() < deadline, "the Curator waiter never queued");
        sleep(Duration::from_millis(10)).await;
    }
    let zoolock_waiter = waiter.mutex(&path).await.unwrap();
    let waiting = {
        let lock = zoolock_waiter.clone();
        tokio::spawn(async move { lock.acquire().await.map(|g| (g, now_us())) })
    };

    let status = within("the hold's end", guard.lost()).await;
    let held_for = granted.elapsed();
    assert_eq!(status, HoldStatus::Lost);
    assert_eq!(guard.status(), HoldStatus::Lost);
    assert!(
        held_for + SLACK >= MAX_HOLD && held_for <= MAX_HOLD + SLACK,
        "lost after {held_for:?}, not at {MAX_HOLD:?} ± {SLACK:?}"
    );
    let lost_at = now_us();
    // The node is gone: the Curator waiter (queued first) holds now.
    let (node, enter) = curator.acquired().await.expect("the Curator waiter acquires");
    assert!(enter >= lost_at - i64::try_from(SLACK.as_micros()).unwrap(), "{node} at {enter}, lost at {lost_at}");
    assert!(!waiting.is_finished(), "the zoolock waiter is behind Curator's");
    let (exit, _) = curator.release("MUTEX_RELEASE").await;
    let (next, enter) = within("zoolock waiter", waiting).await.unwrap().expect("zoolock waiter acquires");
    assert!(enter >= exit);
    // Releasing the expired guard is not an error, and leaves the new holder be.
    guard.release().await.unwrap();
    assert_eq!(next.status(), HoldStatus::Held);
    next.release().await.unwrap();
    holder.close().await.unwrap();
    waiter.close().await.unwrap();
    println!("{test}: lost after {held_for:?}");
}
