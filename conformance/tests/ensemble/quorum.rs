//! The loss of quorum (CURATOR-604): both followers frozen for longer than
//! the session timeout while clients hold the lock for 1 s at a time. Every
//! session expires on the client side and is renewed; the nodes of the old
//! sessions stay on the server until the new leader expires them.
//!
//! zoolock must keep exclusion (no overlapping holds among holders that were
//! not told, no hold on a node of an old session) and come back with no user
//! code. The same schedule then runs with Curator 5.4.0's `InterProcessMutex`
//! (`testkit/java/CuratorDriver.java`) on a fresh ensemble, and the test
//! prints both stalls side by side: how long the lock stood still, and how
//! long after the followers resumed the first hold began.

use std::sync::Arc;
use std::time::Duration;

use crate::harness::{Ensemble, now_us};
use crate::oracle::{Analysis, analyse, assert_every_client_cycles, assert_no_leak, check_common};
use crate::workload::{Run, Section, at, blocking, join, new_run_holding, spawn_workers};
use crate::{CLIENTS, SESSION, ensemble, serial};
use zoolock_testkit::java::{Java, JavaSetup, Peer, java_or_skip};
use zoolock_tokio::ConnectionState;

/// Each critical section: long enough that a hold on an old session's node
/// outlives that session (Curator's overlap).
const HOLD: Duration = Duration::from_secs(1);
/// When the followers are frozen, and for how long (twice the session).
const FREEZE_AT: Duration = Duration::from_secs(3);
const OUTAGE: Duration = Duration::from_secs(8);
/// The whole run: the outage plus time for every client to cycle again.
const RUN: Duration = Duration::from_secs(25);
/// The longest wait for one reply of the Curator driver (its retry loops can
/// block an acquire or a release for several connection timeouts).
const REPLY: Duration = Duration::from_secs(60);

/// When the quorum went and came back.
struct Outage {
    frozen_at: i64,
    thawed_at: i64,
    /// When two servers served again (leader or follower), if they did.
    serving_at: Option<i64>,
}

/// Freezes both followers at `FREEZE_AT` for `OUTAGE`, then waits until a
/// quorum serves again.
async fn quorum_outage(name: &str, ens: &Arc<Ensemble>, run: &Run) -> Outage {
    at(run, FREEZE_AT).await;
    let (followers, frozen_at) = freeze_followers(ens).await;
    println!("  {name}: SIGSTOP followers {followers:?} at {:.1} ms", run.ms(frozen_at));
    at(run, FREEZE_AT + OUTAGE).await;
    let (thawed_at, serving_at) = thaw_and_wait(ens, followers).await;
    println!(
        "  {name}: SIGCONT at {:.1} ms; a quorum serves again {}",
        run.ms(thawed_at),
        serving_at.map_or("never (30 s)".to_owned(), |t| format!("at {:.1} ms", run.ms(t)))
    );
    Outage { frozen_at, thawed_at, serving_at }
}

/// SIGSTOPs both followers: which, and when the second was frozen.
pub(crate) async fn freeze_followers(ens: &Arc<Ensemble>) -> (Vec<usize>, i64) {
    let ens = ens.clone();
    blocking(move || {
        let leader = ens.leader();
        let followers: Vec<usize> = (1..=3).filter(|&n| n != leader).collect();
        for &n in &followers {
            ens.freeze(n);
        }
        (followers, now_us())
    })
    .await
}

/// SIGCONTs `frozen`, then waits (30 s at most) until two servers serve:
/// when they were thawed, and when a quorum served again.
pub(crate) async fn thaw_and_wait(ens: &Arc<Ensemble>, frozen: Vec<usize>) -> (i64, Option<i64>) {
    let ens = ens.clone();
    blocking(move || {
        for &n in &frozen {
            ens.thaw(n);
        }
        let thawed_at = now_us();
        let serving = || (1..=3).filter(|&n| matches!(ens.mode(n).as_str(), "leader" | "follower")).count();
        let waited = std::time::Instant::now();
        while waited.elapsed() < Duration::from_secs(30) {
            if serving() >= 2 {
                return (thawed_at, Some(now_us()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        (thawed_at, None)
    })
    .await
}

/// How long the lock stood still.
#[derive(Debug, Clone, Copy)]
struct Stall {
    /// The longest time with nobody holding (the outage included), ms.
    longest_ms: f64,
    /// From the followers' SIGCONT to the first hold that began after it, ms.
    after_resume_ms: Option<f64>,
}

impl Stall {
    fn of(run: &Run, a: &Analysis, outage: &Outage) -> Stall {
        let first = run
            .log()
            .sections
            .iter()
            .filter(|s| s.enter > outage.thawed_at && s.abandoned.is_none())
            .map(|s| s.enter)
            .min();
        Stall {
            longest_ms: a.longest_gap_us as f64 / 1000.0,
            after_resume_ms: first.map(|t| (t - outage.thawed_at) as f64 / 1000.0),
        }
    }

    fn describe(&self) -> String {
        format!(
            "stood still {:.0} ms at most, first hold {} after the followers resumed",
            self.longest_ms,
            self.after_resume_ms.map_or("never".to_owned(), |t| format!("{t:.0} ms"))
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_loss() {
    let _serial = serial().await;
    let name = "quorum-loss";
    let Some(zoolock) = zoolock_side(name).await else { return };
    let Some(java) = java_or_skip(name) else { return };
    let curator = curator_side("quorum-loss-curator", java).await;
    println!(
        "quorum-loss stall (session {SESSION:?}, followers frozen {OUTAGE:?}, {HOLD:?} holds, {CLIENTS} clients): zoolock {}; Curator 5.4.0 {}",
        zoolock.describe(),
        curator.describe()
    );
}

async fn zoolock_side(name: &str) -> Option<Stall> {
    let ens = ensemble(name)?;
    let run = new_run_holding(&ens, name, RUN, HOLD);
    let workers = spawn_workers(&run, CLIENTS, SESSION);
    let outage = quorum_outage(name, &ens, &run).await;
    join(workers).await;
    let a = analyse(&run, &[], &[]);
    check_common(name, &run, &a);
    let stall = Stall::of(&run, &a, &outage);
    let old = run.log().old_session_holds.clone();
    println!(
        "  {name}: zoolock {}; holds on a node of an old session: {}; sessions renewed: {}",
        stall.describe(),
        old.len(),
        run.log().new_sessions
    );
    let renewed: Vec<String> = run
        .log()
        .transitions
        .iter()
        .filter(|(t, _, s)| *t > outage.thawed_at && *s == ConnectionState::Connected)
        .map(|(t, who, _)| format!("{who} +{:.0} ms", (t - outage.thawed_at) as f64 / 1000.0))
        .collect();
    println!("  {name}: new sessions after the followers resumed: {}", renewed.join(", "));
    assert!(old.is_empty(), "{name}: holds on a node of an old session: {old:#?}");
    assert!(a.stale_writes.is_empty(), "{name}: stale writes: {:?}", a.stale_writes);
    let back = outage.serving_at.unwrap_or_else(|| panic!("{name}: the ensemble never served again"));
    assert!(
        run.log().sections.iter().any(|s| s.enter < outage.frozen_at && s.abandoned.is_none()),
        "{name}: nobody held the lock before the outage"
    );
    assert_every_client_cycles(name, &run, CLIENTS, back);
    assert_no_leak(&ens, name, &run.path, SESSION + Duration::from_secs(3)).await;
    Some(stall)
}

/// The same schedule with Curator's `InterProcessMutex`, one session per
/// client; reported, not asserted (its exclusion breaks here: CURATOR-604).
async fn curator_side(name: &str, java: &JavaSetup) -> Stall {
    let ens = ensemble(name).expect("enabled: the zoolock side ran");
    let run = new_run_holding(&ens, name, RUN, HOLD);
    let driver = Java::start_with_session(java, &ens.connect, &[], SESSION).await;
    let contenders: Vec<_> =
        (0..CLIENTS).map(|i| tokio::spawn(curator_worker(run.clone(), driver.peer(&format!("c{i}"))))).collect();
    let outage = quorum_outage(name, &ens, &run).await;
    join(contenders).await;
    drop(driver);
    let a = analyse(&run, &[], &[]);
    let stall = Stall::of(&run, &a, &outage);
    let log = run.log();
    println!(
        "  {name}: Curator {}; overlapping holds {} (counting each hold until its release), errors {}",
        stall.describe(),
        a.overlaps.len(),
        log.errors.len()
    );
    for o in &a.overlaps {
        println!("  {name}: overlap: {o}");
    }
    for (t, who, e) in log.errors.iter().take(10) {
        println!("  {name}: error at {:.1} ms {who}: {e}", run.ms(*t));
    }
    stall
}

/// A Curator contender in a loop: acquire, hold, release, until the
/// deadline. Curator tells a holder nothing, so every section lasts until
/// just before its release; the token is the node's sequence number.
pub(crate) async fn curator_worker(run: Arc<Run>, mut peer: Peer) {
    let who = peer.id.clone();
    loop {
        let left_ms = (run.deadline - now_us()) / 1000;
        if left_ms <= 0 {
            break;
        }
        peer.send("MUTEX_ACQUIRE", &format!("{} {}", run.path, left_ms.min(20_000)));
        let Some(words) = peer.next_or_error(REPLY).await else {
            return run.error(&who, format!("acquire: no reply within {REPLY:?}"));
        };
        match words[0].as_str() {
            "ACQUIRED" => {
                let enter = Peer::micros(&words, 3);
                let token = words[2].rsplit('-').next().and_then(|s| s.parse().ok()).unwrap_or(0);
                tokio::time::sleep(run.hold).await;
                peer.send("MUTEX_RELEASE", "");
                let Some(reply) = peer.next_or_error(REPLY).await else {
                    return run.error(&who, format!("release: no reply within {REPLY:?}"));
                };
                let exit = if reply[0] == "RELEASED" {
                    run.log().releases.push((now_us(), who.clone()));
                    Peer::micros(&reply, 2)
                } else {
                    run.error(&who, reply.join(" "));
                    now_us()
                };
                run.log().sections.push(Section { who: who.clone(), enter, exit, token, abandoned: None });
            }
            "TIMEOUT" => {}
            _ => {
                run.error(&who, words.join(" "));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}
