//! A holder process frozen past its session (issue 36): this test binary,
//! re-run as `partition_frozen_child`, takes the lock on the ensemble (at
//! the fast server timing) and works, racing `lost()` against its work,
//! until it is told; `partition_frozen_holder` SIGSTOPs it for 8 s with a 3 s
//! session, then SIGCONTs it, and counts the writes it makes after resuming.
//! The runs cycle through a current-thread and a multi-thread runtime, and a
//! `select!` per write or one over a long-lived work loop; the SIGSTOP lands
//! at a varying phase of the 10 ms work step. `ZOOLOCK_FROZEN_RUNS` (default
//! 1) repeats it; the settings and the oracle are `partition.rs`'s.
//!
//! ```sh
//! ZOOLOCK_TEST_ENSEMBLE=1 ZOOLOCK_FROZEN_RUNS=20 \
//!     cargo test -p zoolock-conformance --test ensemble partition_frozen_holder -- --nocapture
//! ```

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::harness::{Ensemble, now_us};
use crate::partition::{FAST, Verdict, env_count, holder_options, judge, rel};
use crate::workload::{join, new_run, spawn_workers};
use crate::{CLIENTS, ensemble, serial};

/// The frozen child's session, and how long it stays frozen.
const FROZEN_SESSION: Duration = Duration::from_secs(3);
const FROZEN_FOR: Duration = Duration::from_secs(8);

/// How the frozen child races `lost()` against its work (the runs cycle
/// through the four).
#[derive(Debug, Clone, Copy)]
struct ChildShape {
    /// A multi-thread runtime (2 workers) rather than a current-thread one.
    multi_thread: bool,
    /// One `select!` over a long-lived work loop, rather than a fresh
    /// `select!` (lost, one 10 ms step of work) per write.
    long_work: bool,
}

impl ChildShape {
    fn of_run(i: usize) -> ChildShape {
        ChildShape { long_work: i % 2 == 0, multi_thread: (i / 2) % 2 == 1 }
    }

    fn describe(&self) -> String {
        format!(
            "{} runtime, {}",
            if self.multi_thread { "multi-thread" } else { "current-thread" },
            if self.long_work { "one select over a work loop" } else { "a select per write" }
        )
    }
}

/// The frozen holder's process: this test binary re-run with
/// `ZOOLOCK_FROZEN_CHILD=RECORDS` (a no-op without it). It takes the lock on
/// `ZOOLOCK_FROZEN_CONNECT` / `ZOOLOCK_FROZEN_PATH` and appends to RECORDS
/// `held US TOKEN`, `w US TOKEN` per write (every 10 ms, `lost()` polled
/// first) and `told US STATUS` when `lost()` completes.
/// `ZOOLOCK_FROZEN_SHAPE` is `multi|current` `long|step` ([`ChildShape`]).
#[test]
fn partition_frozen_child() {
    let Some(records) = std::env::var_os("ZOOLOCK_FROZEN_CHILD") else { return };
    let shape = std::env::var("ZOOLOCK_FROZEN_SHAPE").unwrap_or_default();
    let multi = shape.contains("multi");
    let mut builder =
        if multi { tokio::runtime::Builder::new_multi_thread() } else { tokio::runtime::Builder::new_current_thread() };
    if multi {
        builder.worker_threads(2);
    }
    let rt = builder.enable_all().build().expect("runtime");
    rt.block_on(frozen_child(PathBuf::from(records), shape.contains("long")));
}

async fn frozen_child(records: PathBuf, long_work: bool) {
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} unset"));
    let session = Duration::from_millis(var("ZOOLOCK_FROZEN_SESSION_MS").parse().expect("ms"));
    let tick = Duration::from_millis(var("ZOOLOCK_FROZEN_TICK_MS").parse().expect("ms"));
    let out =
        std::sync::Mutex::new(std::fs::OpenOptions::new().create(true).append(true).open(records).expect("records"));
    let record = |line: String| {
        out.lock().unwrap().write_all(format!("{line}\n").as_bytes()).expect("record");
    };
    let client = zoolock_tokio::connect(&var("ZOOLOCK_FROZEN_CONNECT"), holder_options(session, Some(tick)))
        .await
        .expect("connect");
    let lock = client.mutex(&var("ZOOLOCK_FROZEN_PATH")).await.expect("mutex");
    let guard = lock.acquire().await.expect("acquire");
    let token = guard.fencing_token().0;
    record(format!("held {} {token}", now_us()));
    let end = now_us() + 30_000_000;
    if long_work {
        let work = async {
            while now_us() < end {
                tokio::time::sleep(Duration::from_millis(10)).await;
                // The status as judged at the write, for a failing run's report.
                record(format!("w {} {token} {:?}", now_us(), guard.status()));
            }
        };
        tokio::select! {
            biased;
            s = guard.lost() => record(format!("told {} {s:?}", now_us())),
            () = work => {}
        }
    } else {
        while now_us() < end {
            tokio::select! {
                biased;
                s = guard.lost() => {
                    record(format!("told {} {s:?}", now_us()));
                    break;
                }
                () = tokio::time::sleep(Duration::from_millis(10)) => {
                    record(format!("w {} {token} {:?}", now_us(), guard.status()))
                }
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), guard.release()).await;
    let _ = tokio::time::timeout(Duration::from_secs(2), client.close()).await;
}

fn read_records(path: &Path) -> Vec<(String, i64, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.to_owned(), f.next()?.parse().ok()?, f.next()?.to_owned()))
        })
        .collect()
}

/// Kills the child on drop (CONT first: it may be stopped).
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(Some(_))) {
            return;
        }
        let pid = self.0.id().to_string();
        let _ = Command::new("kill").args(["-CONT", &pid]).stderr(Stdio::null()).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).status().is_ok_and(|s| s.success());
    assert!(ok, "kill -{sig} {pid} failed");
}

/// Writes after the resume, and the verdict, of one frozen-holder run.
async fn frozen_run(
    name: &str,
    ens: &Arc<Ensemble>,
    scratch: &Path,
    run_no: (usize, usize),
) -> (usize, usize, Verdict) {
    let shape = ChildShape::of_run(run_no.0);
    let run =
        new_run(ens, &format!("{name}-{}", run_no.0), Duration::from_secs(1) + FROZEN_FOR + Duration::from_secs(6));
    let records: PathBuf = scratch.join(format!("run-{}.log", run_no.0));
    let _ = std::fs::remove_file(&records);
    let exe = std::env::current_exe().expect("test binary");
    let child = Command::new(exe)
        .args(["frozen::partition_frozen_child", "--exact", "--nocapture", "--test-threads=1"])
        .env("ZOOLOCK_FROZEN_CHILD", &records)
        .env("ZOOLOCK_FROZEN_CONNECT", &ens.connect)
        .env("ZOOLOCK_FROZEN_PATH", &run.path)
        .env("ZOOLOCK_FROZEN_SESSION_MS", FROZEN_SESSION.as_millis().to_string())
        .env("ZOOLOCK_FROZEN_TICK_MS", FAST.tick.as_millis().to_string())
        .env(
            "ZOOLOCK_FROZEN_SHAPE",
            format!(
                "{} {}",
                if shape.multi_thread { "multi" } else { "current" },
                if shape.long_work { "long" } else { "step" }
            ),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the frozen child");
    let mut child = Child(child);
    let pid = child.0.id();
    let waited = std::time::Instant::now();
    while !read_records(&records).iter().any(|r| r.0 == "held") {
        assert!(waited.elapsed() < Duration::from_secs(20), "{name}: the child did not get the lock");
        if let Some(status) = child.0.try_wait().expect("wait") {
            panic!("{name}: the child exited early ({status})");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let workers = spawn_workers(&run, CLIENTS - 1, crate::SESSION);
    // The SIGSTOP lands at a different phase of the 10 ms work step each run.
    tokio::time::sleep(Duration::from_secs(1) + Duration::from_micros(run.seed % 10_000)).await;
    let frozen_at = now_us();
    signal(pid, "STOP");
    tokio::time::sleep(FROZEN_FOR).await;
    let resumed_at = now_us();
    signal(pid, "CONT");
    let waited = std::time::Instant::now();
    loop {
        if child.0.try_wait().expect("wait").is_some() {
            break;
        }
        assert!(waited.elapsed() < Duration::from_secs(15), "{name}: the child did not end after the resume");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(child);
    join(workers).await;
    let recs = read_records(&records);
    let token: i64 = recs.iter().find(|r| r.0 == "held").and_then(|r| r.2.parse().ok()).unwrap_or_default();
    let writes: Vec<i64> = recs.iter().filter(|r| r.0 == "w").map(|r| r.1).collect();
    let after = writes.iter().filter(|t| **t >= resumed_at).count();
    // A write after the resume whose own status read (taken at the write)
    // is not `Held` was decided before the freeze: the process was stopped
    // between its `lost()` poll (which read `Held`, truly, then) and the
    // write, a check-then-act gap in the holder's code that no client can
    // close; fencing at the resource must reject it. A write after the
    // resume that still read `Held` would be the library's fault.
    let raw_records = std::fs::read_to_string(&records).unwrap_or_default();
    let gap = raw_records
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&"w")).then(|| (f.get(1).and_then(|t| t.parse::<i64>().ok()), f.get(3).copied()))
        })
        .filter(|(t, status)| t.is_some_and(|t| t >= resumed_at) && *status != Some("Held"))
        .count();
    if after > 0 {
        // What the child recorded around the freeze, for the report.
        let raw = std::fs::read_to_string(&records).unwrap_or_default();
        for line in raw.lines().filter(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|t| t.parse::<i64>().ok())
                .is_some_and(|t| (frozen_at - 30_000..=frozen_at + 30_000).contains(&t) || t >= resumed_at - 30_000)
        }) {
            eprintln!("  {name} run {}: {line} (stopped at {frozen_at}, resumed at {resumed_at})", run_no.0);
        }
    }
    let told = recs.iter().find(|r| r.0 == "told").map(|r| (r.1, r.2.clone()));
    let log = run.log();
    let until = writes.last().copied().unwrap_or(frozen_at);
    let v = judge(&log.sections, &log.writes, token, &writes, until, frozen_at);
    println!(
        "partition {name} run {}/{} ({}; session {} ms, frozen {} ms, {}): writes after resuming {after}; rejected fenced writes {} of {}; \
         overlap {} holds; lock taken over {} after the SIGSTOP; told {}; {}",
        run_no.0,
        run_no.1,
        shape.describe(),
        FROZEN_SESSION.as_millis(),
        FROZEN_FOR.as_millis(),
        FAST.describe(),
        v.rejected,
        v.writes,
        v.overlapping,
        rel(v.takeover, frozen_at),
        told.map_or("never".to_owned(), |(t, s)| format!("{s} {} after the SIGCONT", rel(Some(t), resumed_at))),
        if after == gap && v.rejected <= gap {
            if gap == 0 { "ok".to_owned() } else { format!("ok: {gap} write(s) decided before the freeze, fenced off") }
        } else {
            "FAIL".to_owned()
        }
    );
    (after, gap, v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_frozen_holder() {
    let _serial = serial().await;
    let name = "partition-frozen-holder";
    let Some(ens) = ensemble(name) else { return };
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ensemble-{}-{name}-child", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch");
    let runs = env_count("ZOOLOCK_FROZEN_RUNS");
    let mut failed = Vec::new();
    let mut gaps = 0;
    for i in 1..=runs {
        let (after, gap, v) = frozen_run(name, &ens, &scratch, (i, runs)).await;
        assert!(v.takeover.is_some(), "{name}: no other client got the lock while the holder was frozen");
        if after > gap || v.rejected > gap {
            failed.push(format!(
                "run {i}: {after} writes after resuming ({gap} decided before it), {} rejected",
                v.rejected
            ));
        } else if gap > 0 {
            gaps += 1;
        }
    }
    println!(
        "partition {name}: {} of {runs} runs with no write after resuming; {} with a write decided before the freeze \
         (stopped between its lost() poll and its write), fenced off; {} failed",
        runs - failed.len() - gaps,
        gaps,
        failed.len()
    );
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(
        failed.is_empty(),
        "{name}: the holder wrote on a Held read after resuming, though it races lost() first: {failed:#?}"
    );
}
