//! Partitions and a frozen holder process (issue 36): the ensemble runs with
//! every server-to-server link through a proxy (`ZK_LINK_PROXY=1`), and
//! one holder, pinned to the server under test by a connect string naming
//! only that server, works under a mutex until `guard.lost()` completes
//! (`select!(biased; lost, work)`, a fenced write every 10 ms). Waiters on
//! the other servers contend for the same lock meanwhile (`workload.rs`).
//!
//! Scenarios (each `partition_*` test; a run is one fault on a healthy
//! ensemble, and the runs of a test share one ensemble):
//!
//! * `partition_silent_follower`: the holder's follower isolated silently
//!   (nothing forwarded, nothing closed), Debian's server timing (tickTime
//!   2000, syncLimit 5); once per session in `ZOOLOCK_PARTITION_SESSIONS`
//!   (ms, comma-separated; default `4000`: the acceptance run is
//!   `4000,6000,9000`); Curator 5.4 beside it in every run (below);
//! * `partition_silent_follower_min_session`: the same with
//!   `minSessionTimeout=1000` and a 3 s session;
//! * `partition_reset_follower`: the holder's follower isolated with every
//!   connection closed and new ones refused; Curator beside it too;
//! * `partition_leader`: the holder's server is the leader, isolated silently;
//! * `partition_cut_link`: only the link between the holder's follower and
//!   the leader is cut (silently); the follower still reaches the other one;
//!
//! The frozen holder process is in `frozen.rs`, the rig's own check of an
//! isolated follower in `rig.rs`; both use the settings and the oracle here.
//!
//! Times in the lines are from the moment the link proxy applied the fault
//! (it answers with it). `ZOOLOCK_PARTITION_CONFIRM=0` runs the holders
//! without quorum confirmation (see `holder_options`, the one place where
//! the holders' options are set; the waiters use `workload.rs`'s).
//!
//! The oracles (asserted over every run, after all runs): no other holder
//! entered while the holder could still read `Held` (its last `status()`
//! read as `Held`, sampled before each write, or its last write), and no
//! write of the holder was rejected by a fencing resource (a write with a
//! token below one the resource has seen). Every run prints one line,
//! `partition NAME run I/N ...`, with the overlap (holds and ms), the
//! rejected writes and the timings that explain them.
//!
//! Curator beside it: in every isolation of a follower, Curator 5.4's
//! `InterProcessMutex` runs under the same fault on a lock path of its own,
//! its holder on the same server (stopping on its connection listener's
//! SUSPENDED/LOST) and its waiters on the other two. Each run prints a
//! second line for it, judged by the same oracle, and the scenario counts
//! the runs in which Curator overlapped: reported, not asserted.
//!
//! In CI, `partition_silent_follower_min_session`, `partition_leader`,
//! `partition_cut_link` and the rig's check are left out
//! (`ZOOLOCK_PARTITION_FULL=1` runs them there too).
//!
//! Runs: `ZOOLOCK_PARTITION_RUNS` (default 1) per partition test,
//! `ZOOLOCK_FROZEN_RUNS` (default 1) for the frozen holder. Enabled like the
//! rest of the ensemble tests (`ZOOLOCK_TEST_ENSEMBLE=1` or `CI`):
//!
//! Before issue 36's driver change (005f91c's code, 2 shared cores; ranges
//! over 5 runs unless said), times from the fault (in the earlier runs, from
//! just before the proxy command, which took 0.3–0.9 s: their times run late
//! by that much; durations and counts are not affected):
//!
//! * silent isolation of the holder's follower, 4 s session: the follower
//!   served its clients until +9.2–12.5 s and the holder read Suspended then;
//!   another client held from +3.5–7.0 s: overlap 4.1–6.2 s, 195–591 holds,
//!   303–508 rejected fenced writes (8 runs, 0 clean). 6 s session: 2.3–4.6 s,
//!   173–358 rejected (0 of 5 clean); 9 s: 0–2.0 s, 0–137 rejected (1 of 5
//!   clean). minSessionTimeout 1000 with a 3 s session: 5.3–6.4 s, 441–559
//!   rejected (0 of 5 clean). Curator 5.4 (4 s): SUSPENDED at +9.8–10.9 s,
//!   overlap 4.5–6.8 s, 427–581 rejected (8 runs).
//! * the follower cut from the leader only: overlap 4.1–6.0 s, 356–534 rejected.
//! * reset isolation: zoolock Suspended +13–15 ms, Curator SUSPENDED +120 ms;
//!   no overlap.
//! * silent isolation of the leader: a new leader from +9.6–10.4 s, the old
//!   one served until +10.1–10.9 s, the next holder from +14.7–15.5 s; no
//!   overlap.
//! * the frozen holder: 0 writes after resuming in 20 of 20 runs (all four
//!   shapes), told Suspended 2–8 ms after the SIGCONT.
//!
//! ```sh
//! ZOOLOCK_TEST_ENSEMBLE=1 ZOOLOCK_PARTITION_RUNS=5 ZOOLOCK_PARTITION_SESSIONS=4000,6000,9000 \
//!     cargo test -p zoolock-conformance --test ensemble partition_silent_follower -- --nocapture
//! ZOOLOCK_TEST_ENSEMBLE=1 ZOOLOCK_FROZEN_RUNS=20 \
//!     cargo test -p zoolock-conformance --test ensemble partition_frozen_holder -- --nocapture
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::harness::{Ensemble, now_us};
use crate::workload::{Section, Write, blocking, join, new_run, spawn_workers};
use crate::{CLIENTS, ensemble_with, serial};
use zoolock_testkit::java::{Java, Peer, java_or_skip};
use zoolock_tokio::{HoldStatus, Options};

// ---- the one place for issue 36's driver options -----------------------------------------

/// Whether the holders confirm the quorum (`Options::confirm_quorum`):
/// `ZOOLOCK_PARTITION_CONFIRM=0` turns it off, to see the oracles catch the
/// overlap again.
fn confirmation() -> bool {
    std::env::var("ZOOLOCK_PARTITION_CONFIRM").map_or(true, |v| v != "0")
}

/// The options of every holder in these scenarios (the in-process holder and
/// the frozen child process): `session`, the servers' `tick` when the
/// client must be told it ([`ServerTiming::client_tick`]) and
/// [`confirmation`]. The one place where issue 36's driver options are set
/// for these scenarios; the waiters use `workload.rs`'s options (the
/// driver's defaults).
pub(crate) fn holder_options(session: Duration, tick: Option<Duration>) -> Options {
    let options = Options::default()
        .session_timeout(session)
        .connect_timeout(Duration::from_secs(10))
        .confirm_quorum(confirmation());
    match tick {
        Some(tick) => options.tick_time(tick),
        None => options,
    }
}

// ---- settings --------------------------------------------------------------------------

/// The servers' timing, as `zk-ensemble.sh` is told it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServerTiming {
    pub(crate) tick: Duration,
    pub(crate) sync_limit: u32,
    /// `minSessionTimeout`, or `None` for the server's default (2 × tick).
    pub(crate) min_session: Option<Duration>,
}

/// Debian's `zoo.cfg`: tickTime 2000, initLimit 10, syncLimit 5.
pub(crate) const DEBIAN: ServerTiming = ServerTiming { tick: Duration::from_secs(2), sync_limit: 5, min_session: None };
/// `zk-ensemble.sh`'s own fast timing (tickTime 500, minSessionTimeout 1000).
pub(crate) const FAST: ServerTiming =
    ServerTiming { tick: Duration::from_millis(500), sync_limit: 5, min_session: Some(Duration::from_secs(1)) };

impl ServerTiming {
    /// What the holder is told of the tick: nothing at the server's default
    /// `minSessionTimeout` (the client's default assumption, half the
    /// session, holds then), the tick itself when it was lowered (as the
    /// README asks of such deployments).
    pub(crate) fn client_tick(&self) -> Option<Duration> {
        self.min_session.filter(|min| *min < self.tick * 2).map(|_| self.tick)
    }

    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("ZK_LINK_PROXY", "1".to_owned()),
            ("ZK_TICK_TIME", self.tick.as_millis().to_string()),
            ("ZK_SYNC_LIMIT", self.sync_limit.to_string()),
            ("ZK_INIT_LIMIT", "10".to_owned()),
            ("ZK_MIN_SESSION_TIMEOUT", self.min_session.map_or("default".to_owned(), |d| d.as_millis().to_string())),
        ]
    }

    /// syncLimit × tickTime: how long an isolated follower goes on serving.
    fn sync_window(&self) -> Duration {
        self.tick * self.sync_limit
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "tickTime {} ms, syncLimit {}, minSessionTimeout {}",
            self.tick.as_millis(),
            self.sync_limit,
            self.min_session.map_or("default".to_owned(), |d| format!("{} ms", d.as_millis()))
        )
    }
}

pub(crate) fn env_count(name: &str) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(1)
}

fn sessions() -> Vec<Duration> {
    let list = std::env::var("ZOOLOCK_PARTITION_SESSIONS").unwrap_or_else(|_| "4000".to_owned());
    list.split(',').filter_map(|s| s.trim().parse().ok()).map(Duration::from_millis).collect()
}

/// How the holder's server is cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Every link of the holder's follower.
    IsolateFollower(&'static str),
    /// Every link of the leader, which the holder is on.
    IsolateLeader(&'static str),
    /// The link between the holder's follower and the leader only.
    CutFromLeader(&'static str),
}

impl Fault {
    fn mode(self) -> &'static str {
        match self {
            Fault::IsolateFollower(m) | Fault::IsolateLeader(m) | Fault::CutFromLeader(m) => m,
        }
    }
}

// ---- the ensemble's health and the fault -----------------------------------------------

/// Waits (60 s at most) until one server leads and two follow.
pub(crate) async fn healthy(ens: &Arc<Ensemble>) {
    let ens = ens.clone();
    blocking(move || {
        let waited = std::time::Instant::now();
        loop {
            let modes: Vec<String> = (1..=3).map(|n| ens.mode(n)).collect();
            let leaders = modes.iter().filter(|m| *m == "leader").count();
            let followers = modes.iter().filter(|m| *m == "follower").count();
            if leaders == 1 && followers == 2 {
                return;
            }
            assert!(
                waited.elapsed() < Duration::from_secs(60),
                "the ensemble did not come back (modes {modes:?}; logs in {})",
                ens.dir().display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await;
}

/// What the servers said while the fault lasted.
struct Served {
    /// The last time server `n` served (said leader or follower).
    last: i64,
    /// When another server first said leader, if `n` was the leader.
    new_leader: Option<i64>,
}

/// Polls `srvr` of the servers every 50 ms until `stop`.
fn watch_serving(ens: Arc<Ensemble>, n: usize, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<Served> {
    tokio::task::spawn_blocking(move || {
        let was_leader = ens.mode(n) == "leader";
        let mut served = Served { last: now_us(), new_leader: None };
        while !stop.load(Ordering::Acquire) {
            if matches!(ens.mode(n).as_str(), "leader" | "follower") {
                served.last = now_us();
            }
            if was_leader && served.new_leader.is_none() && (1..=3).any(|m| m != n && ens.mode(m) == "leader") {
                served.new_leader = Some(now_us());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        served
    })
}

// ---- the holder that obeys lost() -------------------------------------------------------

/// What the holder did.
#[derive(Debug, Default, Clone)]
struct HolderLog {
    enter: i64,
    token: i64,
    writes: Vec<i64>,
    /// The last time `status()` read `Held` (sampled before each write).
    last_held: i64,
    /// When `lost()` completed, and with what.
    told: Option<(i64, HoldStatus)>,
}

/// Connects to `connect` only, takes the lock, tells `held`, then writes
/// every 10 ms until `lost()` completes (polled first) or `until`.
async fn obeying_holder(
    connect: String,
    path: String,
    options: Options,
    held: tokio::sync::oneshot::Sender<()>,
    until: i64,
) -> HolderLog {
    let client = zoolock_tokio::connect(&connect, options).await.expect("the holder connects");
    let lock = client.mutex(&path).await.expect("mutex");
    let guard = lock.acquire().await.expect("the holder acquires");
    let mut log = HolderLog { enter: now_us(), token: guard.fencing_token().0, ..HolderLog::default() };
    log.last_held = log.enter;
    let _ = held.send(());
    while now_us() < until {
        tokio::select! {
            biased;
            s = guard.lost() => {
                log.told = Some((now_us(), s));
                break;
            }
            () = tokio::time::sleep(Duration::from_millis(10)) => {
                let t = now_us();
                if guard.status() == HoldStatus::Held {
                    log.last_held = t;
                }
                log.writes.push(t);
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), guard.release()).await;
    let _ = tokio::time::timeout(Duration::from_secs(2), client.close()).await;
    log
}

// ---- the oracle -----------------------------------------------------------------------

/// One run's verdict.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    /// Other holders that entered while the holder could still read Held.
    pub(crate) overlapping: usize,
    /// From the first of them to the holder's last Held read or write, ms.
    pub(crate) overlap_ms: f64,
    /// The holder's writes a fencing resource rejected.
    pub(crate) rejected: usize,
    /// All of the holder's writes.
    pub(crate) writes: usize,
    /// The first other holder after the fault.
    pub(crate) takeover: Option<i64>,
    /// Overlaps among the other holders (waiters never told to stop).
    pub(crate) waiter_overlaps: usize,
}

impl Verdict {
    fn clean(&self) -> bool {
        self.overlapping == 0 && self.rejected == 0 && self.waiter_overlaps == 0
    }
}

/// The oracle: `holder` against the other holders' sections and writes.
/// `holder_until` is the last moment the holder could read Held or wrote.
pub(crate) fn judge(
    others: &[Section],
    other_writes: &[Write],
    token: i64,
    holder_writes: &[i64],
    holder_until: i64,
    fault_at: i64,
) -> Verdict {
    let mut v = Verdict { writes: holder_writes.len(), ..Verdict::default() };
    let entered: Vec<i64> = others.iter().filter(|s| s.token > token).map(|s| s.enter).collect();
    v.takeover = entered.iter().copied().filter(|t| *t >= fault_at).min();
    let overlapping: Vec<i64> = entered.iter().copied().filter(|t| *t < holder_until).collect();
    v.overlapping = overlapping.len();
    if let Some(first) = overlapping.iter().min() {
        v.overlap_ms = (holder_until - first) as f64 / 1000.0;
    }
    let mut writes: Vec<(i64, i64, bool)> = other_writes.iter().map(|w| (w.at, w.token, false)).collect();
    writes.extend(holder_writes.iter().map(|t| (*t, token, true)));
    writes.sort_by_key(|w| w.0);
    let mut max = i64::MIN;
    for (_, t, ours) in writes {
        if t < max {
            v.rejected += usize::from(ours);
        } else {
            max = t;
        }
    }
    v
}

pub(crate) fn rel(t: Option<i64>, from: i64) -> String {
    t.map_or("never".to_owned(), |t| format!("+{:.0} ms", (t - from) as f64 / 1000.0))
}

// ---- one partition run ----------------------------------------------------------------

/// How long a fault lasts before the heal: the isolated server stops
/// serving within syncLimit × tickTime, the leader (or a new one, which
/// first gives every session a full timeout) expires the holder's session
/// within a session timeout and a tick, and 3 s more to see the takeover.
/// The waiters stop 1 s after the heal.
fn fault_window(timing: ServerTiming, session: Duration) -> Duration {
    timing.sync_window() + session + timing.tick + Duration::from_secs(3)
}

async fn partition_run(
    name: &str,
    ens: &Arc<Ensemble>,
    timing: ServerTiming,
    fault: Fault,
    session: Duration,
    run_no: (usize, usize),
) -> (Verdict, Option<Verdict>) {
    healthy(ens).await;
    let leader = blocking({
        let ens = ens.clone();
        move || ens.leader()
    })
    .await;
    let follower = (1..=3).find(|&n| n != leader).expect("a follower");
    let target = match fault {
        Fault::IsolateLeader(_) => leader,
        _ => follower,
    };
    let others: Vec<usize> = (1..=3).filter(|&n| n != target).collect();
    let others_connect = others.iter().map(|&n| ens.addr(n)).collect::<Vec<_>>().join(",");
    let fault_after = Duration::from_secs(2);
    let observe = fault_window(timing, session);
    // Curator beside it when a follower is isolated: its JVM starts first,
    // so that both runs span the same fault.
    let curator_driver = match fault {
        Fault::IsolateFollower(_) => match java_or_skip(name) {
            Some(java) => Some(Java::start_with_session(java, &others_connect, &[], session).await),
            None => None,
        },
        _ => None,
    };
    let run_name = format!("{name}-{}ms-{}", session.as_millis(), run_no.0);
    let window = fault_after + observe + Duration::from_secs(1);
    let mut run = new_run(ens, &run_name, window);
    Arc::get_mut(&mut run).expect("fresh run").connect = others_connect.clone();
    let curator_run = curator_driver.as_ref().map(|_| {
        let mut run = new_run(ens, &format!("{run_name}-curator"), window);
        Arc::get_mut(&mut run).expect("fresh run").connect = others_connect.clone();
        run
    });

    let (held_tx, held_rx) = tokio::sync::oneshot::channel();
    let holder = tokio::spawn(obeying_holder(
        ens.addr(target),
        run.path.clone(),
        holder_options(session, timing.client_tick()).seed(run.seed ^ 0x36e),
        held_tx,
        run.deadline,
    ));
    tokio::time::timeout(Duration::from_secs(20), held_rx)
        .await
        .unwrap_or_else(|_| panic!("{name}: the holder did not get the lock"))
        .expect("holder");
    let workers = spawn_workers(&run, CLIENTS - 1, session);
    let curator = match (&curator_driver, curator_run) {
        (Some(driver), Some(run)) => Some(CuratorSide::start(driver, ens, run, target).await),
        _ => None,
    };
    tokio::time::sleep(fault_after).await;

    let stop = Arc::new(AtomicBool::new(false));
    let asked_at = now_us();
    let applied = blocking({
        let ens = ens.clone();
        move || match fault {
            Fault::IsolateFollower(m) | Fault::IsolateLeader(m) => ens.isolate(target, m),
            Fault::CutFromLeader(m) => ens.cut(target, leader, m),
        }
    })
    .await;
    // Times are from the moment the proxy applied the fault (it says when);
    // the command itself (bash, python, the control socket) takes a while.
    let fault_at = applied.unwrap_or(asked_at);
    let applied_ms = (now_us() - asked_at) as f64 / 1000.0;
    let serving = watch_serving(ens.clone(), target, stop.clone());
    let heal_at = fault_at + observe.as_micros() as i64;
    tokio::time::sleep(Duration::from_micros((heal_at - now_us()).max(0) as u64)).await;
    stop.store(true, Ordering::Release);
    let served = serving.await.expect("watch");
    let healed_at = now_us();
    blocking({
        let ens = ens.clone();
        move || ens.heal()
    })
    .await;
    join(workers).await;
    let h = holder.await.expect("holder panicked");
    let curator = match curator {
        Some(side) => Some(side.finish(name, run_no, fault_at).await),
        None => None,
    };
    drop(curator_driver);

    // The waiters among themselves: the same promise (`oracle.rs`).
    let among = crate::oracle::analyse(&run, &[], &[]);
    let log = run.log();
    let holder_until = h.last_held.max(h.writes.last().copied().unwrap_or(h.enter));
    let mut v = judge(&log.sections, &log.writes, h.token, &h.writes, holder_until, fault_at);
    v.waiter_overlaps = among.overlaps.len();
    for o in among.overlaps.iter().take(5) {
        println!("  {name}: waiters overlap: {o}");
    }
    println!(
        "partition {name} run {}/{} (session {} ms, {}): {} of server {target} ({}), holder there, {} waiters on {others:?}: \
         overlap {} holds / {:.0} ms while the holder read Held; rejected fenced writes from the holder {} of {}; \
         server {target} served its clients until {}{}; holder told {}; first other holder {}; healed {}; \
         overlaps among the waiters {}; {}",
        run_no.0,
        run_no.1,
        session.as_millis(),
        timing.describe(),
        match fault {
            Fault::IsolateFollower(_) | Fault::IsolateLeader(_) => "isolation",
            Fault::CutFromLeader(_) => "cut from the leader",
        },
        if target == leader { "leader" } else { "follower" },
        CLIENTS - 1,
        v.overlapping,
        v.overlap_ms,
        v.rejected,
        v.writes,
        rel(Some(served.last), fault_at),
        served.new_leader.map_or(String::new(), |t| format!(" (a new leader from {})", rel(Some(t), fault_at))),
        h.told.map_or("never".to_owned(), |(t, s)| format!("{s:?} {}", rel(Some(t), fault_at))),
        rel(v.takeover, fault_at),
        rel(Some(healed_at), fault_at),
        v.waiter_overlaps,
        if v.clean() { "ok" } else { "FAIL" },
    );
    println!(
        "  mode {}; the proxy applied it {} after the command began, which returned after {applied_ms:.0} ms; seed {:#x}; run path {}",
        fault.mode(),
        rel(applied, asked_at),
        run.seed,
        run.path
    );
    (v, curator)
}

/// Runs `fault` `ZOOLOCK_PARTITION_RUNS` times per session on one ensemble
/// with `timing`; asserts the oracles over all runs.
async fn partition_scenario(name: &str, timing: ServerTiming, fault: Fault, sessions: &[Duration]) {
    let _serial = serial().await;
    let Some(ens) = ensemble_with(name, &timing.env()) else { return };
    let runs = env_count("ZOOLOCK_PARTITION_RUNS");
    let mut failed = Vec::new();
    let mut total = 0;
    // Curator's runs beside zoolock's: (runs, runs that overlapped, rejected writes).
    let mut curator = (0, 0, 0);
    for &session in sessions {
        for i in 1..=runs {
            let (v, c) = partition_run(name, &ens, timing, fault, session, (i, runs)).await;
            total += 1;
            if let Some(c) = c {
                curator.0 += 1;
                curator.1 += usize::from(c.overlapping > 0 || c.rejected > 0);
                curator.2 += c.rejected;
            }
            if !v.clean() {
                failed.push(format!(
                    "session {} ms run {i}: {} overlapping holds ({:.0} ms), {} rejected writes, {} overlaps among the waiters",
                    session.as_millis(),
                    v.overlapping,
                    v.overlap_ms,
                    v.rejected,
                    v.waiter_overlaps
                ));
            }
        }
    }
    let beside = if curator.0 > 0 {
        format!(
            "; in the same runs Curator 5.4 overlapped in {} of {} ({} rejected fenced writes)",
            curator.1, curator.0, curator.2
        )
    } else {
        String::new()
    };
    println!(
        "partition {name}: {} of {total} runs clean (confirmation {}){beside}",
        total - failed.len(),
        if confirmation() { "on" } else { "off" },
    );
    assert!(failed.is_empty(), "{name}: a hold that read Held overlapped another holder: {failed:#?}");
}

/// Scenarios that CI leaves out to keep `.ci/run` short (it runs the silent
/// and reset isolation of the holder's follower and the frozen holder): the
/// same rule at another timing (`minSessionTimeout`), the isolated leader
/// and the cut link (no overlap before issue 36 either, or the same rule)
/// and the rig's own check. They run outside CI, or in CI with
/// `ZOOLOCK_PARTITION_FULL=1`.
pub(crate) fn left_out_of_ci(name: &str) -> bool {
    let left_out = zoolock_testkit::in_ci() && std::env::var("ZOOLOCK_PARTITION_FULL").map_or(true, |v| v != "1");
    if left_out {
        eprintln!("{name}: left out of CI (ZOOLOCK_PARTITION_FULL=1 runs it)");
    }
    left_out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_silent_follower() {
    partition_scenario("partition-silent-follower", DEBIAN, Fault::IsolateFollower("silent"), &sessions()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_silent_follower_min_session() {
    if left_out_of_ci("partition-silent-min-session") {
        return;
    }
    let timing = ServerTiming { min_session: Some(Duration::from_secs(1)), ..DEBIAN };
    partition_scenario(
        "partition-silent-min-session",
        timing,
        Fault::IsolateFollower("silent"),
        &[Duration::from_secs(3)],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_reset_follower() {
    partition_scenario("partition-reset-follower", DEBIAN, Fault::IsolateFollower("reset"), &[Duration::from_secs(4)])
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_leader() {
    if left_out_of_ci("partition-leader") {
        return;
    }
    partition_scenario("partition-leader", DEBIAN, Fault::IsolateLeader("silent"), &[Duration::from_secs(4)]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_cut_link() {
    if left_out_of_ci("partition-cut-link") {
        return;
    }
    partition_scenario("partition-cut-link", DEBIAN, Fault::CutFromLeader("silent"), &[Duration::from_secs(4)]).await;
}

// ---- Curator beside it ------------------------------------------------------------------

/// The Curator holder's writes, and what it was told (state, time).
type CuratorHolderLog = (Vec<i64>, Option<(String, i64)>);

/// Curator 5.4's side of an isolation run, under the same fault as
/// zoolock's: an `InterProcessMutex` holder on the same isolated server (its
/// own session there, a connection listener that stops it on
/// SUSPENDED/LOST) and Curator waiters on the other two servers, on a lock
/// path of its own. Judged by the same oracle; reported, not asserted
/// (Curator is expected to overlap).
struct CuratorSide {
    run: Arc<crate::workload::Run>,
    /// The holder's node sequence (its fencing token here) and when it entered.
    token: i64,
    enter: i64,
    /// Reads the holder's `WORK` lines until `TOLD` (or its `DONE`): its
    /// writes, and what it was told when.
    holder: tokio::task::JoinHandle<CuratorHolderLog>,
    waiters: Vec<tokio::task::JoinHandle<()>>,
}

impl CuratorSide {
    /// Starts the holder on `target` and the waiters; returns once the holder holds.
    async fn start(driver: &Java, ens: &Ensemble, run: Arc<crate::workload::Run>, target: usize) -> CuratorSide {
        let mut holder = driver.peer("holder");
        let max_ms = (run.deadline - now_us()) / 1000;
        holder.send("HOLD_UNTIL_TOLD", &format!("{} {} 10 {max_ms}", ens.addr(target), run.path));
        let acquired = holder.expect("ACQUIRED").await;
        let token = seq_of(&acquired[2]);
        let enter = Peer::micros(&acquired, 3);
        let waiters = (0..CLIENTS - 1)
            .map(|i| tokio::spawn(crate::quorum::curator_worker(run.clone(), driver.peer(&format!("c{i}")))))
            .collect();
        let deadline = run.deadline;
        let holder = tokio::spawn(async move {
            let mut writes = Vec::new();
            let told = loop {
                let left = Duration::from_micros((deadline - now_us()).max(0) as u64) + Duration::from_secs(1);
                let Some(words) = holder.next_or_error(left).await else { break None };
                match words[0].as_str() {
                    "WORK" => writes.push(Peer::micros(&words, 2)),
                    "TOLD" => break Some((words[2].clone(), Peer::micros(&words, 3))),
                    _ => {
                        println!("  Curator holder: {}", words.join(" "));
                        break None;
                    }
                }
            };
            let _ = holder.next_or_error(Duration::from_secs(10)).await; // DONE
            (writes, told)
        });
        CuratorSide { run, token, enter, holder, waiters }
    }

    /// Waits for the waiters and the holder; judges and prints the run.
    async fn finish(self, name: &str, run_no: (usize, usize), fault_at: i64) -> Verdict {
        join(self.waiters).await;
        let (writes, told) = self.holder.await.expect("Curator holder reader");
        let log = self.run.log();
        // A Curator waiter writes at both ends of its section.
        let other_writes: Vec<Write> = log
            .sections
            .iter()
            .flat_map(|s| {
                [
                    Write { at: s.enter, who: s.who.clone(), token: s.token },
                    Write { at: s.exit, who: s.who.clone(), token: s.token },
                ]
            })
            .collect();
        let until = told.as_ref().map_or(self.enter, |(_, t)| *t).max(writes.last().copied().unwrap_or(self.enter));
        let v = judge(&log.sections, &other_writes, self.token, &writes, until, fault_at);
        println!(
            "partition {name} run {}/{} Curator 5.4 beside it (same fault, its holder on the same server, {} Curator waiters, \
             path {}): overlap {} holds / {:.0} ms while the holder went on; rejected fenced writes from the holder {} of {}; \
             holder told {}; first other holder {}; errors {}",
            run_no.0,
            run_no.1,
            CLIENTS - 1,
            self.run.path,
            v.overlapping,
            v.overlap_ms,
            v.rejected,
            v.writes,
            told.as_ref().map_or("never".to_owned(), |(s, t)| format!("{s} {}", rel(Some(*t), fault_at))),
            rel(v.takeover, fault_at),
            log.errors.len()
        );
        for (t, who, e) in log.errors.iter().take(5) {
            println!("  {name}: Curator error at {:.1} ms {who}: {e}", self.run.ms(*t));
        }
        v
    }
}

/// The sequence number of a lock node (Curator's order, its fencing token here).
fn seq_of(node: &str) -> i64 {
    node.rsplit('-').next().and_then(|s| s.parse().ok()).unwrap_or(0)
}
