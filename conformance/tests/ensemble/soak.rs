//! The soak: N clients × every recipe (mutex, read-write lock with read or
//! write at random, semaphore with 2 leases, semaphore mutex, and a
//! multi-lock of the read-write lock's write half and the mutex) on the
//! 3-server ensemble, with random server faults (leader or follower killed
//! and restarted, a server frozen, the quorum lost) for a chosen time.
//!
//! Every new hold is checked by the simulator's oracles
//! ([`check_exclusion`], [`Fencing`]) against every hold whose holder has
//! not been told `Suspended`/`Lost` (its `status()` at that moment), and
//! its node's owner must be the holder's current session. After
//! the last fault every client must hold and release again, and no lock
//! node may be left once the clients have closed.
//!
//! CI runs a short one (30 s, 5 clients). A longer one, for example 10
//! minutes with 10 clients (`ZOOLOCK_ENSEMBLE_SEED` repeats the clients'
//! choices and the fault plan, not the servers' timing):
//!
//! ```sh
//! ZOOLOCK_TEST_ENSEMBLE=1 ZOOLOCK_SOAK_SECS=600 ZOOLOCK_SOAK_CLIENTS=10 \
//!     cargo test --release -p zoolock-conformance --test ensemble soak -- --nocapture
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zoolock_conformance::sim::{Fencing, Mode, check_exclusion};
use zoolock_tokio::sans_io::{Rng, ZkPath};
use zoolock_tokio::{Client, Error, Hold, HoldStatus, Lock, LockKind, LockOptions, LockSpec};

use crate::harness::{Ensemble, now_us};
use crate::oracle::{assert_every_client_cycles, assert_no_leak};
use crate::quorum::{freeze_followers, thaw_and_wait};
use crate::workload::{Run, Section, blocking, check_owner, connect_worker, new_run, note_session, on_server};
use crate::{SESSION, ensemble, serial};

/// Leases of the soak's semaphore.
const LEASES: usize = 2;
/// Time left after the last fault for every client to cycle again.
const SETTLE: Duration = Duration::from_secs(14);

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The soak's lock paths: one per kind, named by its label.
struct Paths {
    base: String,
}

impl Paths {
    fn new(base: &str) -> Paths {
        Paths { base: base.to_owned() }
    }

    /// The lock path of `kind` (the multi-lock takes the read-write lock's
    /// and the mutex's).
    fn of(&self, kind: LockKind) -> String {
        format!("{}/{}", self.base, kind.label())
    }

    /// The folders that hold lock nodes: each kind's queue (from its
    /// layout), and beside a semaphore's `leases` its `locks`.
    fn node_folders(&self) -> Vec<String> {
        let mut v = Vec::new();
        for kind in LockKind::ALL {
            let Some(layout) = kind.layout() else { continue };
            let base = ZkPath::new(&self.of(kind)).expect("soak lock paths are valid");
            let queue = layout.queue(&base).expect("soak lock paths are short");
            if queue != base {
                v.push(format!("{base}/locks"));
            }
            v.push(queue.as_str().to_owned());
        }
        v
    }
}

/// A hold the oracle knows: whose, which paths in which mode, and how to
/// read its status at the moment of a check.
struct Held {
    who: String,
    parts: Vec<(String, Mode)>,
    status: Box<dyn Fn() -> HoldStatus + Send + Sync>,
}

#[derive(Default)]
struct Oracle {
    holds: BTreeMap<u64, Held>,
    next: u64,
    fencing: Fencing,
    violations: Vec<String>,
    checks: u64,
}

impl Oracle {
    /// A new hold: exclusion among all counting holds (this one included),
    /// then its token's order on each of its paths. A multi-lock's token is
    /// one member's, so its holds are not fenced.
    fn enter(&mut self, run: &Run, held: Held, node: &str, token: Option<i64>) -> u64 {
        let id = self.next;
        self.next += 1;
        let counts = (held.status)() == HoldStatus::Held;
        if counts {
            if let Some(token) = token {
                for (path, mode) in &held.parts {
                    if let Err(e) = self.fencing.check(&held.who, path, node, *mode, token, LEASES) {
                        self.violations.push(format!("{:.1} ms: {e}", run.ms(now_us())));
                    }
                }
            }
        }
        self.holds.insert(id, held);
        let counting = self
            .holds
            .values()
            .filter(|h| (h.status)() == HoldStatus::Held)
            .flat_map(|h| h.parts.iter().map(move |(p, m)| (h.who.as_str(), p.as_str(), *m)));
        if let Err(e) = check_exclusion(counting, LEASES) {
            self.violations.push(format!("{:.1} ms: {e}", run.ms(now_us())));
        }
        self.checks += 1;
        id
    }
}

/// What one soak client shares.
struct Soak {
    run: Arc<Run>,
    oracle: Mutex<Oracle>,
    paths: Paths,
}

impl Soak {
    fn oracle(&self) -> std::sync::MutexGuard<'_, Oracle> {
        self.oracle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One hold: known to the oracle from the acquire until just before the
    /// release (or until its holder is told, by its status), held for
    /// `hold` unless `lost()` completes first.
    async fn hold(
        &self,
        who: &str,
        client: &Client,
        h: impl Into<Hold>,
        parts: Vec<(String, Mode)>,
        fenced: bool,
        hold: Duration,
    ) {
        let enter = now_us();
        let h: Arc<Hold> = Arc::new(h.into());
        let status = {
            let h = h.clone();
            Box::new(move || h.status())
        };
        let id = self.oracle().enter(
            &self.run,
            Held { who: who.to_owned(), parts, status },
            h.node(),
            fenced.then(|| h.fencing_token().0),
        );
        // The simulator also checks that a counting hold's node is owned by
        // the holder's current session: here one read per hold (not for a
        // multi-lock, whose node is one member's).
        let owner = async {
            if fenced {
                check_owner(&self.run, who, client, h.node(), || h.status(), SESSION).await;
            }
        };
        let during = async {
            tokio::select! {
                () = tokio::time::sleep(hold) => None,
                s = h.lost() => Some((now_us(), s)),
            }
        };
        let (abandoned, ()) = tokio::join!(during, owner);
        self.oracle().holds.remove(&id);
        let exit = abandoned.map_or_else(now_us, |a| a.0);
        let section = Section { who: who.to_owned(), enter, exit, token: h.fencing_token().0, abandoned };
        self.run.log().sections.push(section);
        let Ok(h) = Arc::try_unwrap(h) else { panic!("{who}: the oracle kept a hold") };
        match tokio::time::timeout(SESSION * 2, h.release()).await {
            Ok(Ok(())) => self.run.log().releases.push((now_us(), who.to_owned())),
            Ok(Err(e)) => self.run.error(who, format!("release: {e}")),
            Err(_) => self.run.error(who, "release: no answer within 2 session timeouts"),
        }
    }
}

/// A lock handle of one kind.
enum Handle {
    Lock(Lock, Vec<(String, Mode)>, bool),
    Rw { read: Lock, write: Lock, path: String },
    Semaphore(zoolock_tokio::Semaphore, String),
}

/// The handle of `kind`: the read-write lock (both halves), the semaphore
/// and the multi-lock have their own workloads; every other kind is one
/// exclusive lock on one path, built from its [`LockSpec`], so a new such
/// kind needs no arm here.
async fn handle(client: &Client, kind: LockKind, paths: &Paths) -> Result<Handle, String> {
    let ex = |p: &str| (p.to_owned(), Mode::Exclusive);
    Ok(match kind {
        LockKind::MultiLock => {
            let (rw, mutex) = (paths.of(LockKind::ReadWriteLock), paths.of(LockKind::Mutex));
            let lock = client
                .multi_lock_of(vec![LockSpec::Write(rw.clone()), LockSpec::Mutex(mutex.clone())])
                .await
                .map_err(|e| e.to_string())?;
            Handle::Lock(lock, vec![(rw, Mode::Write), ex(&mutex)], false)
        }
        LockKind::ReadWriteLock => {
            let path = paths.of(kind);
            let zoolock_tokio::ReadWriteLock { read, write } =
                client.read_write_lock(&path).await.map_err(|e| e.to_string())?;
            Handle::Rw { read, write, path }
        }
        LockKind::Semaphore => {
            let path = paths.of(kind);
            Handle::Semaphore(client.semaphore(&path, LEASES).await.map_err(|e| e.to_string())?, path)
        }
        one_path => {
            let path = paths.of(one_path);
            let spec = LockSpec::of(one_path, path.clone())
                .ok_or_else(|| format!("{one_path:?} is not one lock on one path: the soak needs a workload for it"))?;
            let lock = client.lock_of(spec, LockOptions::default()).await.map_err(|e| e.to_string())?;
            Handle::Lock(lock, vec![ex(&path)], true)
        }
    })
}

/// A soak client: one client and one handle for the whole run (sessions
/// renew by themselves), acquiring and holding for 1-50 ms in a loop.
async fn soak_worker(soak: Arc<Soak>, i: usize) {
    let run = &soak.run;
    let who = format!("c{i}");
    // Client `i` runs the `i`-th lock kind, in turn (elections, which are
    // no lock a task acquires, run in the simulator and the interop tests).
    let locks: Vec<LockKind> = LockKind::ALL.into_iter().filter(|k| k.election().is_none()).collect();
    let kind = locks[i % locks.len()];
    let mut rng = Rng::with_seed(run.seed ^ ((i as u64 + 1) << 32));
    let Some(client) = connect_worker(run, i, SESSION).await else { return };
    let handle = match handle(&client, kind, &soak.paths).await {
        Ok(h) => h,
        Err(e) => return run.error(&who, format!("{kind:?}: {e}")),
    };
    loop {
        let left = run.deadline - now_us();
        if left <= 0 {
            break;
        }
        let wait = Duration::from_micros(left as u64).min(SESSION * 3);
        let hold = Duration::from_millis(1 + rng.next_u64() % 50);
        let got = match &handle {
            Handle::Lock(lock, parts, fenced) => match lock.acquire_timeout(wait).await {
                Ok(g) => {
                    note_session(run, i, &client);
                    soak.hold(&who, &client, g, parts.clone(), *fenced, hold).await;
                    Ok(())
                }
                Err(e) => Err(e),
            },
            Handle::Rw { read, write, path } => {
                let (lock, mode) = if rng.next_u64() % 2 == 0 { (read, Mode::Read) } else { (write, Mode::Write) };
                match lock.acquire_timeout(wait).await {
                    Ok(g) => {
                        note_session(run, i, &client);
                        soak.hold(&who, &client, g, vec![(path.clone(), mode)], true, hold).await;
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Handle::Semaphore(sem, path) => match sem.acquire_timeout(1, wait).await {
                Ok(leases) => {
                    note_session(run, i, &client);
                    for lease in leases {
                        soak.hold(&who, &client, lease, vec![(path.clone(), Mode::Lease)], true, hold).await;
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            },
        };
        match got {
            Ok(()) | Err(Error::TimedOut) => {}
            Err(Error::ClientClosed(_)) => break,
            Err(e) => {
                run.error(&who, format!("acquire: {e}"));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    if tokio::time::timeout(SESSION, client.close()).await.is_err() {
        run.error(&who, "close: no answer within the session timeout");
    }
}

/// Random faults, one at a time with 1-4 s between them, each over by
/// `until`: a leader or a follower killed for 0.5-3 s, a server frozen for
/// 1-6 s, both followers frozen for 1-9 s (the quorum lost; past the 4 s
/// session every session expires and is renewed).
/// Returns what was done and when the last fault ended.
async fn inject_faults(ens: Arc<Ensemble>, run: Arc<Run>, until: i64) -> (Vec<String>, i64) {
    let mut rng = Rng::with_seed(run.seed ^ 0xfa17);
    let between =
        |rng: &mut Rng, lo_ms: u64, hi_ms: u64| Duration::from_millis(lo_ms + rng.next_u64() % (hi_ms - lo_ms));
    let mut done = Vec::new();
    let mut last_end = run.start;
    loop {
        tokio::time::sleep(between(&mut rng, 1000, 4000)).await;
        let pick = rng.next_u64() % 6;
        let length = match pick {
            0..=2 => between(&mut rng, 500, 3000),
            3 | 4 => between(&mut rng, 1000, 6000),
            _ => between(&mut rng, 1000, 9000),
        };
        // A fault must be over by `until`: a restart or a new leader takes
        // a few seconds more than the fault itself.
        if now_us() + (length + Duration::from_secs(4)).as_micros() as i64 > until {
            break;
        }
        let start = now_us();
        let what = match pick {
            pick @ (0..=2) => {
                let e = ens.clone();
                let (n, role) = blocking(move || {
                    let leader = e.leader();
                    if pick == 0 { (leader, "leader") } else { (leader % 3 + 1, "follower") }
                })
                .await;
                on_server(&ens, Ensemble::kill, n).await;
                tokio::time::sleep(length).await;
                on_server(&ens, Ensemble::restart, n).await;
                format!("kill {role} {n}")
            }
            3 | 4 => {
                let n = (rng.next_u64() % 3) as usize + 1;
                on_server(&ens, Ensemble::freeze, n).await;
                tokio::time::sleep(length).await;
                on_server(&ens, Ensemble::thaw, n).await;
                format!("freeze server {n}")
            }
            _ => {
                let (followers, _) = freeze_followers(&ens).await;
                tokio::time::sleep(length).await;
                thaw_and_wait(&ens, followers.clone()).await;
                format!("freeze followers {followers:?} (quorum lost)")
            }
        };
        last_end = now_us();
        done.push(format!("{what} [{:.1}, {:.1}] ms", run.ms(start), run.ms(last_end)));
    }
    (done, last_end)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak() {
    let _serial = serial().await;
    let name = "soak";
    let Some(ens) = ensemble(name) else { return };
    let secs = env_or("ZOOLOCK_SOAK_SECS", 30).max(SETTLE.as_secs() + 5);
    let clients = env_or("ZOOLOCK_SOAK_CLIENTS", 5).max(1) as usize;
    let run = new_run(&ens, name, Duration::from_secs(secs));
    let soak = Arc::new(Soak { run: run.clone(), oracle: Mutex::new(Oracle::default()), paths: Paths::new(&run.path) });
    println!("  {name}: {clients} clients, {secs} s, seed {:#x}", run.seed);
    let workers: Vec<_> = (0..clients).map(|i| tokio::spawn(soak_worker(soak.clone(), i))).collect();
    let until = run.deadline - SETTLE.as_micros() as i64;
    let (faults, last_fault) = inject_faults(ens.clone(), run.clone(), until).await;
    for w in workers {
        w.await.expect("soak worker panicked");
    }
    {
        let oracle = soak.oracle();
        let log = run.log();
        let mut per_client: BTreeMap<&str, usize> = BTreeMap::new();
        for s in &log.sections {
            *per_client.entry(s.who.as_str()).or_default() += 1;
        }
        println!(
            "scenario {name}: holds {} ({} checked by the oracles), per client {per_client:?}, abandoned {}, sessions renewed {}, errors {}, violations {}, holds on an old session's node {}",
            log.sections.len(),
            oracle.checks,
            log.sections.iter().filter(|s| s.abandoned.is_some()).count(),
            log.new_sessions,
            log.errors.len(),
            oracle.violations.len(),
            log.old_session_holds.len()
        );
        for f in &faults {
            println!("  {name}: fault: {f}");
        }
        // Holds whose holder was told at once or during the hold, per client:
        // how many, and the first and last of them.
        let mut told: BTreeMap<&str, Vec<&Section>> = BTreeMap::new();
        for s in log.sections.iter().filter(|s| s.abandoned.is_some()) {
            told.entry(s.who.as_str()).or_default().push(s);
        }
        for (who, list) in &told {
            let show = |s: &Section| format!("{:.1} ms {:?}", run.ms(s.enter), s.abandoned.map(|a| a.1));
            println!(
                "  {name}: {who}: {} holds told Suspended/Lost (first at {}, last at {})",
                list.len(),
                show(list[0]),
                show(list[list.len() - 1])
            );
        }
        for (t, who, e) in log.errors.iter().take(10) {
            println!("  {name}: error at {:.1} ms {who}: {e}", run.ms(*t));
        }
        assert!(oracle.violations.is_empty(), "{name}: oracle violations: {:#?}", oracle.violations);
        assert!(
            log.old_session_holds.is_empty(),
            "{name}: holds on a node of an old session: {:#?}",
            log.old_session_holds
        );
    }
    assert_every_client_cycles(name, &run, clients, last_fault);
    for folder in soak.paths.node_folders() {
        assert_no_leak(&ens, name, &folder, SESSION + Duration::from_secs(3)).await;
    }
}
