//! The workload of every scenario: clients contending for one mutex in a
//! loop, what they record, and the helpers that time a run.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::HOLD;
use crate::harness::{Ensemble, now_us};
use zoolock_tokio::{Client, ConnectionState, Error, Guard, HoldStatus, Options};

// ---- what the clients record ----------------------------------------------------------

/// One critical section.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    pub(crate) who: String,
    pub(crate) enter: i64,
    /// When it stopped acting as holder (the abandon time for abandoned ones).
    pub(crate) exit: i64,
    pub(crate) token: i64,
    /// When it was told the hold was `Suspended`/`Lost`, and which.
    pub(crate) abandoned: Option<(i64, HoldStatus)>,
}

/// A write to the protected resource, carrying the writer's fencing token.
#[derive(Debug, Clone)]
pub(crate) struct Write {
    pub(crate) at: i64,
    pub(crate) who: String,
    pub(crate) token: i64,
}

#[derive(Debug, Default)]
pub(crate) struct Log {
    pub(crate) sections: Vec<Section>,
    pub(crate) writes: Vec<Write>,
    pub(crate) transitions: Vec<(i64, String, ConnectionState)>,
    pub(crate) errors: Vec<(i64, String, String)>,
    /// The current session id of each in-process client.
    pub(crate) sessions: BTreeMap<usize, i64>,
    /// Sessions that replaced an expired one (renewals seen by the workers).
    pub(crate) new_sessions: usize,
    /// Each release that succeeded: when, and by whom.
    pub(crate) releases: Vec<(i64, String)>,
    /// Holds whose node belonged to another session than the holder's
    /// current one (CURATOR-604), when the run checks owners.
    pub(crate) old_session_holds: Vec<String>,
}

/// What one run of the workload shares.
pub(crate) struct Run {
    pub(crate) connect: String,
    pub(crate) path: String,
    pub(crate) start: i64,
    pub(crate) deadline: i64,
    pub(crate) seed: u64,
    /// How long each critical section lasts when nothing goes wrong.
    pub(crate) hold: Duration,
    /// Read each held node's owner at the start of the section (one extra
    /// read per hold: for runs with long holds).
    pub(crate) owner_check: bool,
    pub(crate) log: Mutex<Log>,
}

impl Run {
    pub(crate) fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fenced write: stamped under the log's lock, so the stamps order the writes.
    pub(crate) fn write(&self, who: &str, token: i64) {
        let mut log = self.log();
        let at = now_us();
        log.writes.push(Write { at, who: who.to_owned(), token });
    }

    pub(crate) fn error(&self, who: &str, e: impl std::fmt::Display) {
        self.log().errors.push((now_us(), who.to_owned(), e.to_string()));
    }

    pub(crate) fn ms(&self, t: i64) -> f64 {
        (t - self.start) as f64 / 1000.0
    }
}

/// Records every connection state change of `client` until `done`.
pub(crate) async fn watch_states(run: Arc<Run>, who: String, client: Client, done: Arc<AtomicBool>) {
    let Ok(mut changes) = client.state_changes() else { return };
    drop(client);
    loop {
        let finished = done.load(Ordering::Acquire);
        while let Ok(state) = changes.try_recv() {
            run.log().transitions.push((now_us(), who.clone(), state));
        }
        if finished {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// One critical section under `guard`: checks `Held` at enter and exit,
/// writes to the resource at both ends, and stops at once on `Suspended`/`Lost`.
pub(crate) async fn critical_section(run: &Run, who: &str, guard: &Guard, hold: Duration) -> Section {
    let enter = now_us();
    let token = guard.fencing_token().0;
    let status = guard.status();
    if status != HoldStatus::Held {
        return Section { who: who.to_owned(), enter, exit: enter, token, abandoned: Some((enter, status)) };
    }
    run.write(who, token);
    let mut abandoned = tokio::select! {
        () = tokio::time::sleep(hold) => None,
        s = guard.lost() => Some((now_us(), s)),
    };
    if abandoned.is_none() {
        let s = guard.status();
        if s == HoldStatus::Held {
            run.write(who, token);
        } else {
            abandoned = Some((now_us(), s));
        }
    }
    let exit = abandoned.map_or_else(now_us, |a| a.0);
    Section { who: who.to_owned(), enter, exit, token, abandoned }
}

/// Reads the held node's owner: a hold (still `Held` by `status`) on a node
/// of another session than the client's current one is recorded (the
/// CURATOR-604 pattern). The read waits `bound` at most.
pub(crate) async fn check_owner(
    run: &Run,
    who: &str,
    client: &Client,
    node: &str,
    status: impl Fn() -> HoldStatus,
    bound: Duration,
) {
    let session = client.session_id();
    let read = tokio::time::timeout(bound, client.exists(node)).await;
    if let Ok(Ok(Some(stat))) = read {
        if stat.ephemeral_owner != session && status() == HoldStatus::Held {
            run.log().old_session_holds.push(format!(
                "{who} at {:.1} ms on {node} (owner {:#x}, session {session:#x})",
                run.ms(now_us()),
                stat.ephemeral_owner
            ));
        }
    }
}

/// A client in a loop: acquire, critical section, release, until the
/// deadline. One client and one lock handle for the whole run: after `Lost`
/// the client renews its session by itself (`Options::renew_session`, on by
/// default) and the same loop goes on, with no code of its own for faults.
pub(crate) async fn worker(run: Arc<Run>, i: usize, session: Duration) {
    let who = format!("c{i}");
    let Some(client) = connect_worker(&run, i, session).await else { return };
    let done = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn(watch_states(run.clone(), who.clone(), client.clone(), done.clone()));
    match client.mutex(&run.path).await {
        Ok(lock) => loop {
            let left = run.deadline - now_us();
            if left <= 0 {
                break;
            }
            let guard = match lock.acquire_timeout(Duration::from_micros(left as u64)).await {
                Ok(g) => g,
                Err(Error::TimedOut) => break,
                Err(e) => {
                    run.error(&who, format!("acquire: {e}"));
                    if matches!(e, Error::ClientClosed(_)) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            };
            note_session(&run, i, &client);
            let owner_check = async {
                if run.owner_check {
                    check_owner(&run, &who, &client, guard.node(), || guard.status(), run.hold).await;
                }
            };
            let (section, ()) = tokio::join!(critical_section(&run, &who, &guard, run.hold), owner_check);
            run.log().sections.push(section);
            match tokio::time::timeout(session * 2, guard.release()).await {
                Ok(Ok(())) => run.log().releases.push((now_us(), who.clone())),
                Ok(Err(e)) => run.error(&who, format!("release: {e}")),
                Err(_) => run.error(&who, "release: no answer within 2 session timeouts"),
            }
        },
        Err(e) => run.error(&who, format!("mutex: {e}")),
    }
    if tokio::time::timeout(session, client.close()).await.is_err() {
        run.error(&who, "close: no answer within the session timeout");
    }
    done.store(true, Ordering::Release);
    let _ = watcher.await;
}

/// Worker `i`'s client (`c{i}`), connected with retries until the deadline.
pub(crate) async fn connect_worker(run: &Run, i: usize, session: Duration) -> Option<Client> {
    let who = format!("c{i}");
    let options = Options::default()
        .session_timeout(session)
        .connect_timeout(Duration::from_secs(10))
        .seed(run.seed ^ ((i as u64 + 1) << 40));
    loop {
        match zoolock_tokio::connect(&run.connect, options.clone()).await {
            Ok(c) => {
                run.log().sessions.insert(i, c.session_id());
                return Some(c);
            }
            Err(e) => {
                run.error(&who, format!("connect: {e}"));
                if now_us() >= run.deadline {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Counts a renewal when client `i`'s session id changed since last seen.
pub(crate) fn note_session(run: &Run, i: usize, client: &Client) {
    let mut log = run.log();
    let id = client.session_id();
    if log.sessions.insert(i, id).is_some_and(|old| old != id) {
        log.new_sessions += 1;
    }
}

// ---- helpers --------------------------------------------------------------------------

pub(crate) fn new_run(ens: &Ensemble, name: &str, run_for: Duration) -> Arc<Run> {
    new_run_holding(ens, name, run_for, HOLD)
}

/// [`new_run`] with critical sections of `hold`; holds of 100 ms or more
/// also check their node's owner.
pub(crate) fn new_run_holding(ens: &Ensemble, name: &str, run_for: Duration, hold: Duration) -> Arc<Run> {
    let start = now_us();
    Arc::new(Run {
        connect: ens.connect.clone(),
        path: format!("/zoolock-ensemble/{name}"),
        start,
        deadline: start + run_for.as_micros() as i64,
        // Host order and jitter of every client; ZOOLOCK_ENSEMBLE_SEED repeats a run's.
        seed: std::env::var("ZOOLOCK_ENSEMBLE_SEED")
            .ok()
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .unwrap_or(start as u64),
        hold,
        owner_check: hold >= Duration::from_millis(100),
        log: Mutex::new(Log::default()),
    })
}

pub(crate) fn spawn_workers(run: &Arc<Run>, n: usize, session: Duration) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n).map(|i| tokio::spawn(worker(run.clone(), i, session))).collect()
}

pub(crate) async fn join(workers: Vec<tokio::task::JoinHandle<()>>) {
    for w in workers {
        w.await.expect("worker panicked");
    }
}

/// Sleeps until `run.start + at`.
pub(crate) async fn at(run: &Run, at: Duration) {
    let target = run.start + at.as_micros() as i64;
    let left = target - now_us();
    if left > 0 {
        tokio::time::sleep(Duration::from_micros(left as u64)).await;
    }
}

/// Runs a blocking ensemble command off the async workers.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("ensemble command panicked")
}

/// Runs `command` (`Ensemble::kill`, `restart`, `freeze` or `thaw`) on
/// server `n`, off the workers.
pub(crate) async fn on_server(ens: &Arc<Ensemble>, command: fn(&Ensemble, usize), n: usize) {
    let ens = ens.clone();
    blocking(move || command(&ens, n)).await;
}

/// Which server each in-process client is on, and the server with the most.
pub(crate) fn placement(ens: &Ensemble, run: &Run) -> (Vec<Option<usize>>, usize, usize) {
    let sessions: Vec<i64> = run.log().sessions.values().copied().collect();
    let servers = ens.server_of(&sessions);
    let mut count = [0usize; 3];
    for s in servers.iter().flatten() {
        count[s - 1] += 1;
    }
    let busiest = (1..=3).max_by_key(|n| count[n - 1]).unwrap_or(1);
    (servers, busiest, count[busiest - 1])
}

/// Sections that entered after `t` (liveness after a fault).
pub(crate) fn sections_after(run: &Run, t: i64) -> usize {
    run.log().sections.iter().filter(|s| s.enter > t && s.abandoned.is_none()).count()
}
