//! Lock safety on a real 3-server ZooKeeper ensemble under faults.
//!
//! Each scenario starts its own ensemble on 127.0.0.1 with
//! `scripts/zk-ensemble.sh` (Debian's jars; about 2.5 s) and runs clients
//! that contend for one mutex in a loop (5 ms critical sections, a fenced
//! write at each end) while a fault is injected:
//!
//! * `kill_leader`, `kill_follower`: SIGKILL at 2 s, restart at 6 s;
//! * `pause_busiest_server`: SIGSTOP the server most clients use, 5 s;
//! * `frozen_holder`: a `zoolock` CLI holder and its command, SIGSTOPped
//!   together (own process group) for 5 s with a 3 s session;
//! * `paused_in_process_holder`: an in-process holder whose thread and
//!   runtime block for 5 s with a 3 s session (a GC pause);
//! * `paused_holder_checks_only_lost`: the same pause, with a holder that
//!   writes every 10 ms and stops on nothing but `guard.lost()`: it must
//!   make no write after the takeover.
//!
//! Then it checks:
//!
//! * exclusion: critical sections whose holder was never told `Suspended` or
//!   `Lost` do not overlap (wall-clock µs, one host clock);
//! * fencing: tokens strictly increase in enter order over all sections, and
//!   a resource that rejects lower tokens rejected every stale write (the
//!   stale writes made before the writer was told are counted apart);
//! * no leaked lock nodes once every client has closed;
//! * liveness: the lock moves again after the fault; sessions on a faulted
//!   server reconnect elsewhere within the session.
//!
//! and prints one `scenario NAME: cycles ...` summary line, with details.
//!
//! The CLI binary is `ZOOLOCK_BIN` if set, else built with
//! `cargo build -p zoolock` into this test's target folder (its dependencies'
//! features differ from a workspace build, so the first time compiles a few
//! crates).
//!
//! Skipped, with the reason printed, unless `ZOOLOCK_TEST_ENSEMBLE=1` or `CI`
//! is set; then a failure to start the ensemble fails the test. Scenarios run
//! one at a time (a lock serializes them) since they measure timing. Each
//! prints its seed (clients' host order and jitter);
//! `ZOOLOCK_ENSEMBLE_SEED=0x...` repeats it.
//!
//! ```sh
//! ZOOLOCK_TEST_ENSEMBLE=1 cargo test -p zoolock-conformance --test ensemble -- --nocapture
//! ```

#[path = "ensemble/harness.rs"]
mod harness;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use harness::{Ensemble, now_us};
use zoolock_tokio::{Client, ConnectionState, Error, Guard, HoldStatus, Options};

/// In-process clients per scenario.
const CLIENTS: usize = 4;
/// Their session timeout.
const SESSION: Duration = Duration::from_secs(4);
/// How long each critical section lasts when nothing goes wrong.
const HOLD: Duration = Duration::from_millis(5);
/// A gap between critical sections longer than this counts as a stall.
const STALL_US: i64 = 250_000;
/// The frozen CLI holder's session timeout, and how long it stays frozen.
const CLI_SESSION: Duration = Duration::from_secs(3);
const FREEZE: Duration = Duration::from_secs(5);

/// One scenario at a time: they measure timing. (A tokio mutex: each test has
/// its own runtime, and the guard is held across awaits.)
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}

/// The ensemble for `name`, or `None` (with the reason printed) when these
/// tests are not enabled.
fn ensemble(name: &str) -> Option<Arc<Ensemble>> {
    if !harness::enabled() {
        eprintln!("skipped: set ZOOLOCK_TEST_ENSEMBLE=1 (or CI) to run the 3-server ensemble fault tests");
        return None;
    }
    match Ensemble::start(name) {
        Ok(e) => Some(Arc::new(e)),
        Err(e) => panic!("{name}: cannot start the ensemble: {e}"),
    }
}

// ---- what the clients record ----------------------------------------------------------

/// One critical section.
#[derive(Debug, Clone)]
struct Section {
    who: String,
    enter: i64,
    /// When it stopped acting as holder (the abandon time for abandoned ones).
    exit: i64,
    token: i64,
    /// When it was told the hold was `Suspended`/`Lost`, and which.
    abandoned: Option<(i64, HoldStatus)>,
}

/// A write to the protected resource, carrying the writer's fencing token.
#[derive(Debug, Clone)]
struct Write {
    at: i64,
    who: String,
    token: i64,
}

#[derive(Debug, Default)]
struct Log {
    sections: Vec<Section>,
    writes: Vec<Write>,
    transitions: Vec<(i64, String, ConnectionState)>,
    errors: Vec<(i64, String, String)>,
    /// The current session id of each in-process client.
    sessions: BTreeMap<usize, i64>,
    /// Sessions that were replaced after `Lost`.
    new_sessions: usize,
}

/// What one run of the workload shares.
struct Run {
    connect: String,
    path: String,
    start: i64,
    deadline: i64,
    seed: u64,
    log: Mutex<Log>,
}

impl Run {
    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fenced write: stamped under the log's lock, so the stamps order the writes.
    fn write(&self, who: &str, token: i64) {
        let mut log = self.log();
        let at = now_us();
        log.writes.push(Write { at, who: who.to_owned(), token });
    }

    fn error(&self, who: &str, e: impl std::fmt::Display) {
        self.log().errors.push((now_us(), who.to_owned(), e.to_string()));
    }

    fn ms(&self, t: i64) -> f64 {
        (t - self.start) as f64 / 1000.0
    }
}

/// Records every connection state change of `client` until `done`.
async fn watch_states(run: Arc<Run>, who: String, client: Client, done: Arc<AtomicBool>) {
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
async fn critical_section(run: &Run, who: &str, guard: &Guard, hold: Duration) -> Section {
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

/// A client in a loop: acquire, critical section, release, until the
/// deadline; a new session after `Lost`.
async fn worker(run: Arc<Run>, i: usize, session: Duration) {
    let who = format!("c{i}");
    let mut generation = 0u64;
    while now_us() < run.deadline {
        let options = Options::default()
            .session_timeout(session)
            .connect_timeout(Duration::from_secs(10))
            .seed(run.seed ^ ((i as u64 + 1) << 40) ^ generation);
        generation += 1;
        let client = match zoolock_tokio::connect(&run.connect, options).await {
            Ok(c) => c,
            Err(e) => {
                run.error(&who, format!("connect: {e}"));
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        {
            let mut log = run.log();
            if generation > 1 {
                log.new_sessions += 1;
            }
            log.sessions.insert(i, client.session_id());
        }
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
                        if session_over(&client, &e) {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let section = critical_section(&run, &who, &guard, HOLD).await;
                run.log().sections.push(section);
                match tokio::time::timeout(session * 2, guard.release()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => run.error(&who, format!("release: {e}")),
                    Err(_) => run.error(&who, "release: no answer within 2 session timeouts"),
                }
                if matches!(client.state(), Some(ConnectionState::Lost | ConnectionState::Closed)) {
                    break;
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
}

fn session_over(client: &Client, e: &Error) -> bool {
    use zoolock_tokio::core::RequestError;
    matches!(e, Error::ClientClosed | Error::Request(RequestError::SessionExpired | RequestError::Closed))
        || matches!(client.state(), Some(ConnectionState::Lost | ConnectionState::Closed))
}

// ---- the oracle ---------------------------------------------------------------------

#[derive(Debug, Default)]
struct Analysis {
    cycles: usize,
    per_sec: f64,
    stalls: usize,
    /// Each stall: when it began (ms into the run) and how long it lasted (ms).
    stall_list: Vec<(f64, f64)>,
    longest_gap_us: i64,
    /// Overlaps among sections never told Suspended/Lost (must be none).
    overlaps: Vec<String>,
    /// Overlaps counting each section until it stopped acting (abandoned
    /// ones until they were told): reported, not required.
    overlaps_incl_abandoned: usize,
    token_inversions: Vec<String>,
    /// Writes a fencing resource rejected (token below one it had seen).
    stale_writes: Vec<Write>,
    /// Those of them made before their writer had been told Suspended/Lost:
    /// exclusion broken among holders that were not told (fencing caught it).
    untold_stale_writes: Vec<Write>,
    abandoned: usize,
    transitions: BTreeMap<String, usize>,
}

fn analyse(run: &Run, extra_sections: &[Section], extra_writes: &[Write]) -> Analysis {
    let log = run.log();
    let mut sections: Vec<Section> = log.sections.iter().chain(extra_sections).cloned().collect();
    sections.sort_by_key(|s| s.enter);
    let mut a = Analysis { cycles: sections.len(), ..Analysis::default() };
    let secs = (run.deadline - run.start) as f64 / 1e6;
    a.per_sec = a.cycles as f64 / secs;
    a.abandoned = sections.iter().filter(|s| s.abandoned.is_some()).count();

    // Exclusion among sections never told to stop.
    let mut latest: Option<&Section> = None;
    for s in sections.iter().filter(|s| s.abandoned.is_none()) {
        if let Some(p) = latest {
            if s.enter < p.exit {
                a.overlaps.push(format!(
                    "{} [{:.1}, {:.1}] token {} overlaps {} [{:.1}, {:.1}] token {}",
                    s.who,
                    run.ms(s.enter),
                    run.ms(s.exit),
                    s.token,
                    p.who,
                    run.ms(p.enter),
                    run.ms(p.exit),
                    p.token
                ));
            }
        }
        if latest.is_none_or(|p| s.exit > p.exit) {
            latest = Some(s);
        }
    }
    // The same counting abandoned sections until they stopped; gaps and stalls.
    let mut max_exit: Option<i64> = None;
    for s in &sections {
        if let Some(m) = max_exit {
            if s.enter < m {
                a.overlaps_incl_abandoned += 1;
            } else {
                let gap = s.enter - m;
                a.longest_gap_us = a.longest_gap_us.max(gap);
                if gap > STALL_US {
                    a.stalls += 1;
                    a.stall_list.push((run.ms(m), gap as f64 / 1000.0));
                }
            }
        }
        max_exit = Some(max_exit.map_or(s.exit, |m| m.max(s.exit)));
    }
    // Fencing tokens strictly increase in enter order.
    for w in sections.windows(2) {
        if w[1].token <= w[0].token {
            a.token_inversions.push(format!(
                "{} token {} at {:.1} ms after {} token {} at {:.1} ms",
                w[1].who,
                w[1].token,
                run.ms(w[1].enter),
                w[0].who,
                w[0].token,
                run.ms(w[0].enter)
            ));
        }
    }
    // Replay every write against a resource that rejects lower tokens.
    let mut writes: Vec<Write> = log.writes.iter().chain(extra_writes).cloned().collect();
    writes.sort_by_key(|w| w.at);
    let mut max_token = i64::MIN;
    for w in writes {
        if w.token < max_token {
            a.stale_writes.push(w);
        } else {
            max_token = w.token;
        }
    }
    a.untold_stale_writes = a
        .stale_writes
        .iter()
        .filter(|w| {
            let told = sections.iter().find(|s| s.who == w.who && s.token == w.token).and_then(|s| s.abandoned);
            told.is_none_or(|(t, _)| w.at < t)
        })
        .cloned()
        .collect();
    for (_, _, state) in &log.transitions {
        *a.transitions.entry(format!("{state:?}")).or_default() += 1;
    }
    a
}

fn summary(name: &str, a: &Analysis) -> String {
    let t = |k: &str| a.transitions.get(k).copied().unwrap_or(0);
    format!(
        "scenario {name}: cycles {} ({:.1}/s), stalls {} (longest gap {} ms), transitions {{Suspended: {}, Reconnected: {}, Lost: {}}}",
        a.cycles,
        a.per_sec,
        a.stalls,
        a.longest_gap_us / 1000,
        t("Suspended"),
        t("Reconnected"),
        t("Lost")
    )
}

/// Checks what every scenario must satisfy, printing the details first.
fn check_common(name: &str, run: &Run, a: &Analysis) {
    let log = run.log();
    println!("{}", summary(name, a));
    println!(
        "  {name}: seed {:#x}, abandoned {}, overlaps incl. abandoned {}, stale writes rejected by fencing {} ({} before the writer was told), new sessions {}, errors {}",
        run.seed,
        a.abandoned,
        a.overlaps_incl_abandoned,
        a.stale_writes.len(),
        a.untold_stale_writes.len(),
        log.new_sessions,
        log.errors.len()
    );
    for (at, len) in &a.stall_list {
        println!("  {name}: stall from {at:.1} ms for {len:.1} ms");
    }
    for (t, who, e) in log.errors.iter().take(10) {
        println!("  {name}: error at {:.1} ms {who}: {e}", run.ms(*t));
    }
    for (t, who, s) in log.transitions.iter().filter(|(_, _, s)| *s != ConnectionState::Connected) {
        println!("  {name}: {:.1} ms {who} {s:?}", run.ms(*t));
    }
    assert!(a.overlaps.is_empty(), "{name}: exclusion broken among holders not told Suspended/Lost: {:#?}", a.overlaps);
    assert!(a.token_inversions.is_empty(), "{name}: fencing tokens not increasing: {:#?}", a.token_inversions);
}

/// Waits until the lock path has no children (or does not exist); panics
/// after `limit`. Returns how long it took.
async fn assert_no_leak(ens: &Ensemble, name: &str, path: &str, limit: Duration) -> Duration {
    let started = std::time::Instant::now();
    let client = zoolock_tokio::connect(&ens.connect, Options::default().session_timeout(SESSION))
        .await
        .unwrap_or_else(|e| panic!("{name}: leak check cannot connect: {e}"));
    let mut last = Vec::new();
    while started.elapsed() < limit {
        match client.get_children(path).await {
            Ok((children, _)) if children.is_empty() => {
                let _ = client.close().await;
                println!(
                    "  {name}: no lock nodes left ({} ms after the clients closed)",
                    started.elapsed().as_millis()
                );
                return started.elapsed();
            }
            Ok((children, _)) => last = children,
            Err(Error::Request(zoolock_tokio::core::RequestError::Server(code)))
                if code == zoolock_tokio::core::wire::ErrorCode::NO_NODE =>
            {
                let _ = client.close().await;
                return started.elapsed();
            }
            Err(e) => println!("  {name}: leak check: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = client.close().await;
    panic!("{name}: lock nodes leaked under {path} after {limit:?}: {last:?}");
}

fn new_run(ens: &Ensemble, name: &str, run_for: Duration) -> Arc<Run> {
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
        log: Mutex::new(Log::default()),
    })
}

fn spawn_workers(run: &Arc<Run>, n: usize, session: Duration) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n).map(|i| tokio::spawn(worker(run.clone(), i, session))).collect()
}

async fn join(workers: Vec<tokio::task::JoinHandle<()>>) {
    for w in workers {
        w.await.expect("worker panicked");
    }
}

/// Sleeps until `run.start + at`.
async fn at(run: &Run, at: Duration) {
    let target = run.start + at.as_micros() as i64;
    let left = target - now_us();
    if left > 0 {
        tokio::time::sleep(Duration::from_micros(left as u64)).await;
    }
}

/// Runs a blocking ensemble command off the async workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("ensemble command panicked")
}

/// Which server each in-process client is on, and the server with the most.
fn placement(ens: &Ensemble, run: &Run) -> (Vec<Option<usize>>, usize, usize) {
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
fn sections_after(run: &Run, t: i64) -> usize {
    run.log().sections.iter().filter(|s| s.enter > t && s.abandoned.is_none()).count()
}

// ---- server faults ------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerFault {
    KillLeader,
    KillFollower,
    PauseBusiest,
}

async fn server_fault(name: &str, fault: ServerFault) {
    let Some(ens) = ensemble(name) else { return };
    let run_for = match fault {
        ServerFault::PauseBusiest => Duration::from_secs(12),
        _ => Duration::from_secs(10),
    };
    let run = new_run(&ens, name, run_for);
    let workers = spawn_workers(&run, CLIENTS, SESSION);
    at(&run, Duration::from_secs(2)).await;
    // Pick the target (four-letter words and the script block: off the workers).
    let (servers, on_busiest, target, mode) = blocking({
        let (ens, run) = (ens.clone(), run.clone());
        move || {
            let (servers, busiest, on_busiest) = placement(&ens, &run);
            let target = match fault {
                ServerFault::KillLeader => ens.leader(),
                ServerFault::KillFollower => {
                    let leader = ens.leader();
                    let on = |n: usize| servers.iter().filter(|s| **s == Some(n)).count();
                    (1..=3).filter(|&n| n != leader).max_by_key(|&n| on(n)).unwrap_or(1)
                }
                ServerFault::PauseBusiest => busiest,
            };
            let mode = ens.mode(target);
            (servers, on_busiest, target, mode)
        }
    })
    .await;
    let clients_on_target = servers.iter().filter(|s| **s == Some(target)).count();
    let fault_at = now_us();
    let recovered_at = match fault {
        ServerFault::KillLeader | ServerFault::KillFollower => {
            blocking({
                let ens = ens.clone();
                move || ens.kill(target)
            })
            .await;
            println!(
                "  {name}: SIGKILL server {target} ({mode}, {clients_on_target} of our clients; placement {servers:?}) at {:.1} ms",
                run.ms(fault_at)
            );
            at(&run, Duration::from_secs(6)).await;
            blocking({
                let ens = ens.clone();
                move || ens.restart(target)
            })
            .await;
            println!("  {name}: server {target} restarted, serving again at {:.1} ms", run.ms(now_us()));
            fault_at
        }
        ServerFault::PauseBusiest => {
            blocking({
                let ens = ens.clone();
                move || ens.freeze(target)
            })
            .await;
            println!(
                "  {name}: SIGSTOP server {target} ({mode}, busiest: {on_busiest} of our clients; placement {servers:?}) at {:.1} ms",
                run.ms(fault_at)
            );
            at(&run, Duration::from_secs(2) + FREEZE).await;
            blocking({
                let ens = ens.clone();
                move || ens.thaw(target)
            })
            .await;
            let thawed = now_us();
            println!("  {name}: SIGCONT server {target} at {:.1} ms", run.ms(thawed));
            thawed
        }
    };
    join(workers).await;
    let a = analyse(&run, &[], &[]);
    check_common(name, &run, &a);
    let after = sections_after(&run, fault_at);
    println!(
        "  {name}: {after} critical sections after the fault; {} after recovery",
        sections_after(&run, recovered_at)
    );
    assert!(after > 0, "{name}: the lock never moved again after the fault");
    assert!(a.stale_writes.is_empty(), "{name}: stale writes: {:?}", a.stale_writes);
    // Sessions on a server that died or froze must move to another server
    // within the session (Reconnected), not be lost.
    let reconnected = a.transitions.get("Reconnected").copied().unwrap_or(0);
    if clients_on_target > 0 {
        assert!(
            reconnected >= clients_on_target,
            "{name}: {clients_on_target} clients were on server {target} but only {reconnected} reconnected"
        );
    }
    assert_no_leak(&ens, name, &run.path, SESSION + Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_leader() {
    let _serial = serial().await;
    server_fault("kill-leader", ServerFault::KillLeader).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_follower() {
    let _serial = serial().await;
    server_fault("kill-follower", ServerFault::KillFollower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_busiest_server() {
    let _serial = serial().await;
    server_fault("pause-busiest", ServerFault::PauseBusiest).await;
}

// ---- the frozen holder (a separate process) -----------------------------------------

/// The CLI's command: records its start, then writes a tick every 50 ms
/// (each a fenced write with its token) for 14 s, then records its end.
const CMD: &str = r#"f=$1
end=$(( $(date +%s) + 14 ))
echo "enter $(date +%s%6N) $ZOOLOCK_FENCING_TOKEN" >>"$f"
while [ "$(date +%s)" -lt "$end" ]; do
    echo "tick $(date +%s%6N) $ZOOLOCK_FENCING_TOKEN" >>"$f"
    sleep 0.05
done
echo "exit $(date +%s%6N) $ZOOLOCK_FENCING_TOKEN" >>"$f""#;

/// Sends `sig` to every process of group `pgid` (the CLI and its command).
fn signal_group(pgid: u32, sig: &str) {
    let status = Command::new("bash").args(["-c", &format!("kill -{sig} -- -{pgid}")]).status().expect("run kill");
    assert!(status.success(), "kill -{sig} -- -{pgid} failed");
}

fn read_records(path: &Path) -> Vec<(String, i64, i64)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.to_owned(), f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect()
}

/// The first `level` log line of the CLI's stderr containing `needle`, as Unix µs.
fn cli_log_time(stderr: &str, needle: &str) -> Option<i64> {
    stderr.lines().find(|l| l.contains(needle)).and_then(|l| harness::parse_rfc3339_us(l.split_whitespace().next()?))
}

/// A kill-on-drop guard for the CLI's process group.
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .args(["-c", &format!("kill -CONT -- -{0} 2>/dev/null; kill -KILL -- -{0} 2>/dev/null", self.0)])
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_holder() {
    let _serial = serial().await;
    let name = "frozen-holder";
    let Some(ens) = ensemble(name) else { return };
    let bin = harness::zoolock_bin().unwrap_or_else(|e| panic!("{name}: {e}"));
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ensemble-{}-{name}-cli", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let records = scratch.join("cmd.log");
    let stderr_path = scratch.join("zoolock.stderr");
    let run = new_run(&ens, name, Duration::from_secs(14));

    let mut cli = Command::new(&bin)
        .arg("--connect")
        .arg(&ens.connect)
        .arg("--session-timeout")
        .arg(format!("{}ms", CLI_SESSION.as_millis()))
        .arg("-v")
        .args(["lock", &run.path, "--", "sh", "-c", CMD, "sh"])
        .arg(&records)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{name}: run {}: {e}", bin.display()));
    let group = Group(cli.id());

    // The CLI holds the lock once its command has recorded its start.
    let waited = std::time::Instant::now();
    while !read_records(&records).iter().any(|r| r.0 == "enter") {
        assert!(waited.elapsed() < Duration::from_secs(15), "{name}: the CLI did not get the lock");
        if let Some(status) = cli.try_wait().unwrap() {
            panic!("{name}: the CLI exited early ({status}): {}", std::fs::read_to_string(&stderr_path).unwrap());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The others queue behind it.
    let workers = spawn_workers(&run, CLIENTS - 1, SESSION);
    tokio::time::sleep(Duration::from_secs(1)).await;

    let frozen_at = now_us();
    signal_group(group.0, "STOP");
    println!("  {name}: SIGSTOP zoolock (pid {}) and its command at {:.1} ms", group.0, run.ms(frozen_at));
    tokio::time::sleep(FREEZE).await;
    let taken_over = run.log().sections.iter().filter(|s| s.enter > frozen_at).map(|s| s.enter).min();
    let resumed_at = now_us();
    signal_group(group.0, "CONT");
    println!("  {name}: SIGCONT at {:.1} ms", run.ms(resumed_at));

    let waited = std::time::Instant::now();
    let status = loop {
        if let Some(status) = cli.try_wait().unwrap() {
            break status;
        }
        assert!(waited.elapsed() < Duration::from_secs(10), "{name}: the CLI did not exit after the resume");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let exited_at = now_us();
    join(workers).await;
    drop(group);

    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let recs = read_records(&records);
    let token = recs.first().map(|r| r.2).unwrap_or_default();
    let enter = recs.iter().find(|r| r.0 == "enter").map(|r| r.1).unwrap_or_default();
    let last = recs.last().map(|r| r.1).unwrap_or(enter);
    let after_resume: Vec<i64> = recs.iter().filter(|r| r.1 >= resumed_at).map(|r| r.1).collect();
    let suspended_seen = cli_log_time(&stderr, "hold suspended");
    let lost_seen = cli_log_time(&stderr, "hold lost");
    let sigterm = cli_log_time(&stderr, "sending SIGTERM to CMD");
    let told = [suspended_seen, lost_seen].into_iter().flatten().filter(|t| *t >= resumed_at).min();
    let told_status = match (suspended_seen, lost_seen) {
        (Some(s), Some(l)) if s <= l => HoldStatus::Suspended,
        (Some(_), None) => HoldStatus::Suspended,
        _ => HoldStatus::Lost,
    };
    let cli_section =
        Section { who: "cli".to_owned(), enter, exit: last, token, abandoned: told.map(|t| (t, told_status)) };
    let cli_writes: Vec<Write> =
        recs.iter().filter(|r| r.0 != "exit").map(|r| Write { at: r.1, who: "cli".to_owned(), token: r.2 }).collect();
    let a = analyse(&run, std::slice::from_ref(&cli_section), &cli_writes);
    let rel = |t: Option<i64>| t.map_or("never".to_owned(), |t| format!("+{:.1} ms", (t - resumed_at) as f64 / 1000.0));
    println!(
        "  {name}: lock taken over {} after the SIGSTOP; CLI told {told_status:?} {} after the resume (suspended {}, lost {}, SIGTERM {}), exit {:?} at {}",
        taken_over.map_or("never".to_owned(), |t| format!("{:.0} ms", (t - frozen_at) as f64 / 1000.0)),
        rel(told),
        rel(suspended_seen),
        rel(lost_seen),
        rel(sigterm),
        status.code(),
        rel(Some(exited_at)),
    );
    println!(
        "  {name}: the frozen command's records after the resume: {} (first {}, last {}); all with token {token}, rejected by fencing: {} ({} made before zoolock was told)",
        after_resume.len(),
        rel(after_resume.first().copied()),
        rel(after_resume.last().copied()),
        a.stale_writes.iter().filter(|w| w.who == "cli").count(),
        a.untold_stale_writes.iter().filter(|w| w.who == "cli").count()
    );
    if status.code() != Some(70) {
        for line in stderr.lines().filter(|l| l.contains("WARN") || l.contains("zoolock:")) {
            println!("  {name}: cli: {line}");
        }
    }
    check_common(name, &run, &a);

    assert!(taken_over.is_some(), "{name}: no other client got the lock while the holder was frozen");
    assert_eq!(status.code(), Some(70), "{name}: the CLI must exit 70 (lock lost); stderr:\n{stderr}");
    assert!(told.is_some(), "{name}: the CLI never logged Suspended/Lost after the resume; stderr:\n{stderr}");
    assert!(!recs.iter().any(|r| r.0 == "exit"), "{name}: the frozen command ran to its end");
    // Every write the frozen holder made after the takeover carries its old
    // token, below the new holder's: a fencing resource rejects them all.
    let stale_cli = a.stale_writes.iter().filter(|w| w.who == "cli").count();
    assert_eq!(stale_cli, after_resume.len(), "{name}: a post-resume write of the frozen holder was not fenced off");
    assert!(
        a.stale_writes.iter().all(|w| w.who == "cli"),
        "{name}: stale writes by live holders: {:?}",
        a.stale_writes
    );
    assert_no_leak(&ens, name, &run.path, SESSION + Duration::from_secs(3)).await;
    let _ = std::fs::remove_dir_all(&scratch);
}

// ---- a paused in-process holder -----------------------------------------------------

/// What the paused holder saw.
#[derive(Debug)]
struct Paused {
    section: Section,
    paused_at: i64,
    resumed_at: i64,
    /// `guard.status()` on the first check after the pause, before yielding.
    first_status: HoldStatus,
    /// When `guard.lost()` completed after the pause, and with what.
    told: Option<(i64, HoldStatus)>,
}

/// How the paused holder decides whether it may still write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// `guard.status()` before the write after the pause.
    Status,
    /// Nothing but `guard.lost()`, raced (first) against a write every
    /// 10 ms: the loss signal alone must stop it, with no event-loop turn.
    LostOnly,
}

/// A holder whose whole process stops for longer than its session timeout:
/// its own thread and runtime, blocked (driver included) as a GC pause or a
/// SIGSTOP would. After the pause it writes if its check says it still holds.
fn paused_holder(run: Arc<Run>, held: std::sync::mpsc::Sender<()>, check: Check) -> Paused {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let options = Options::default().session_timeout(CLI_SESSION).seed(run.seed ^ 0x7a05e);
        let client = zoolock_tokio::connect(&run.connect, options).await.expect("paused holder connects");
        let lock = client.mutex(&run.path).await.expect("mutex");
        let guard = lock.acquire().await.expect("paused holder acquires");
        let token = guard.fencing_token().0;
        let enter = now_us();
        run.write("paused", token);
        held.send(()).unwrap();
        if check == Check::LostOnly {
            return lost_only_holder(run, client, guard, enter).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let paused_at = now_us();
        std::thread::sleep(FREEZE);
        let resumed_at = now_us();
        let first_status = guard.status();
        let mut exit = resumed_at;
        if first_status == HoldStatus::Held {
            run.write("paused", token);
            exit = now_us();
        }
        let told = match guard.status() {
            HoldStatus::Held => {
                tokio::time::timeout(Duration::from_secs(5), guard.lost()).await.ok().map(|s| (now_us(), s))
            }
            s => Some((resumed_at, s)),
        };
        let section = Section { who: "paused".to_owned(), enter, exit, token, abandoned: told };
        let paused = Paused { section, paused_at, resumed_at, first_status, told };
        close_paused(client, guard, paused).await
    })
}

/// Lets the paused holder's hold and session go.
async fn close_paused(client: Client, guard: Guard, paused: Paused) -> Paused {
    drop(guard);
    let _ = tokio::time::timeout(Duration::from_secs(2), client.close()).await;
    paused
}

/// The `LostOnly` holder: writes every 10 ms until `lost()` completes,
/// `lost()` polled first each time; the pause falls between two writes.
async fn lost_only_holder(run: Arc<Run>, client: Client, guard: Guard, enter: i64) -> Paused {
    let token = guard.fencing_token().0;
    let (mut paused_at, mut resumed_at, mut exit) = (0, 0, enter);
    let mut told = None;
    while now_us() < enter + 10_000_000 {
        tokio::select! {
            biased;
            s = guard.lost() => {
                told = Some((now_us(), s));
                break;
            }
            () = tokio::time::sleep(Duration::from_millis(10)) => {
                run.write("paused", token);
                exit = now_us();
                if paused_at == 0 && exit > enter + 1_000_000 {
                    paused_at = now_us();
                    std::thread::sleep(FREEZE);
                    resumed_at = now_us();
                }
            }
        }
    }
    let first_status = told.map_or(HoldStatus::Held, |(_, s)| s);
    let section = Section { who: "paused".to_owned(), enter, exit, token, abandoned: told };
    close_paused(client, guard, Paused { section, paused_at, resumed_at, first_status, told }).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_in_process_holder() {
    paused_scenario("paused-in-process", Check::Status).await;
}

/// The holder checks nothing but `guard.lost()`: after the pause it must
/// stop before its next write, so it makes no write after the takeover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_holder_checks_only_lost() {
    paused_scenario("paused-lost-only", Check::LostOnly).await;
}

async fn paused_scenario(name: &'static str, check: Check) {
    let _serial = serial().await;
    let Some(ens) = ensemble(name) else { return };
    let run = new_run(&ens, name, Duration::from_secs(11));
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let victim = std::thread::spawn({
        let run = run.clone();
        move || paused_holder(run, held_tx, check)
    });
    blocking(move || held_rx.recv_timeout(Duration::from_secs(15)))
        .await
        .unwrap_or_else(|_| panic!("{name}: the paused holder did not get the lock"));
    let workers = spawn_workers(&run, CLIENTS - 1, SESSION);
    join(workers).await;
    let p = blocking(move || victim.join()).await.expect("paused holder panicked");
    let taken_over = run.log().sections.iter().filter(|s| s.enter > p.paused_at).map(|s| s.enter).min();
    let a = analyse(&run, std::slice::from_ref(&p.section), &[]);
    let rel = |t: i64| format!("+{:.1} ms", (t - p.resumed_at) as f64 / 1000.0);
    println!(
        "  {name}: paused {:.0} ms (session timeout {:?}); lock taken over {} after the pause began",
        (p.resumed_at - p.paused_at) as f64 / 1000.0,
        CLI_SESSION,
        taken_over.map_or("never".to_owned(), |t| format!("{:.0} ms", (t - p.paused_at) as f64 / 1000.0)),
    );
    println!(
        "  {name}: first guard.status() after the pause: {:?}; guard.lost() -> {:?}; stale writes rejected by fencing: {}",
        p.first_status,
        p.told.map(|(t, s)| format!("{s:?} {}", rel(t))),
        a.stale_writes.iter().filter(|w| w.who == "paused").count()
    );
    check_common(name, &run, &a);
    assert!(taken_over.is_some(), "{name}: no other client got the lock while the holder was paused");
    assert!(p.told.is_some_and(|(_, s)| s != HoldStatus::Held), "{name}: the paused holder was never told");
    assert!(
        a.stale_writes.iter().all(|w| w.who == "paused"),
        "{name}: stale writes by live holders: {:?}",
        a.stale_writes
    );
    if check == Check::LostOnly {
        let stale = a.stale_writes.iter().filter(|w| w.who == "paused").count();
        assert_eq!(stale, 0, "{name}: the holder wrote after its hold was taken over, though it stops on lost()");
    }
    // `status()` checks how long ago the server last confirmed the session,
    // so the first check after a pause longer than the session timeout must
    // not say Held, even before the event loop has run.
    assert_ne!(
        p.first_status,
        HoldStatus::Held,
        "{name}: guard.status() said Held on the first check after the pause, though the lock was taken over"
    );

    assert_no_leak(&ens, name, &run.path, SESSION + Duration::from_secs(3)).await;
}
