//! Many locks on one session (issue 29): `held` and `tasks`.
//!
//! `held`: N distinct locks (`<base>/l<i>`), one task each, all acquired
//! at once and held together, then all released. The N handles are
//! registered first (idle), so the run also shows what an idle registered
//! handle costs. Reported: the time to acquire all and to release all (acked:
//! every delete applied), the process's RSS (`VmRSS`) before, with the idle
//! handles and with every lock held, per lock, and the CPU time of each
//! phase (`/proc/self/stat`, every thread). The latencies are each task's
//! acquire call to its grant.
//!
//! `tasks`: K tasks each cycling its own lock (`<base>/t<k>`) on one
//! session until `--cycles` cycles in all; the rate is cycles per second.
//!
//! `scripts/bench-vs-peers.sh` runs zookeeper-client (`bench/zkclient`)
//! through the same steps and reads RSS and CPU the same way.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::{Notify, watch};
use zoolock_tokio::RequestError;
use zoolock_tokio::{Client, Error};
use zoolock_tokio::{CreateMode, ErrorCode};

use super::report::Report;
use super::single::give_back;
use super::{BenchArgs, Release, base_report, micros};

/// `held`: `--locks` locks acquired together, held, then released together.
pub(super) async fn held(client: &Client, base: &str, args: &BenchArgs, release: Release) -> Result<Report, Error> {
    let n = args.locks;
    make_base(client, base).await?;
    let rss_before = rss_kib();
    let cpu_start = cpu_secs();
    let mut locks = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    for i in 0..n {
        locks.push(client.mutex(&format!("{base}/l{i}")).await?);
    }
    let rss_idle = rss_kib();

    let acquired = Arc::new((AtomicU64::new(0), Notify::new()));
    let (let_go, go) = watch::channel(false);
    let start = Instant::now();
    let cpu_acquire = cpu_secs();
    let mut tasks = tokio::task::JoinSet::new();
    for lock in locks {
        let (acquired, mut go) = (acquired.clone(), go.clone());
        tasks.spawn(async move {
            let asked = Instant::now();
            let guard = lock.acquire().await;
            let wait = micros(asked.elapsed());
            if acquired.0.fetch_add(1, Ordering::AcqRel) + 1 == n {
                acquired.1.notify_one();
            }
            let guard = guard?;
            // Held until every lock is: then all go at once.
            let _ = go.wait_for(|v| *v).await;
            give_back(&lock, guard, release).await?;
            Ok::<_, Error>(wait)
        });
    }
    drop(go);
    // A failed acquire counts too, so this returns; its error surfaces below.
    acquired.1.notified().await;
    let acquire = start.elapsed();
    let rss_held = rss_kib();
    let cpu_held = cpu_secs();

    let release_start = Instant::now();
    let _ = let_go.send(true);
    let mut waits = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(wait)) => waits.push(wait),
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let release_time = release_start.elapsed();
    let cpu_end = cpu_secs();

    let mut report = base_report(args, n, acquire, waits);
    report.add_word("release", release.name());
    report.add_int("clients", 1);
    report.add_int("locks", n);
    report.add_float("acquire_s", acquire.as_secs_f64());
    report.add_float("release_s", release_time.as_secs_f64());
    report.add_float("locks_per_sec", n as f64 / acquire.as_secs_f64().max(1e-9));
    report.add_int("rss_before_kib", rss_before);
    report.add_int("rss_idle_kib", rss_idle);
    report.add_int("rss_held_kib", rss_held);
    report.add_float("idle_bytes_per_lock", per_lock(rss_idle, rss_before, n));
    report.add_float("bytes_per_lock", per_lock(rss_held, rss_before, n));
    report.add_float("cpu_register_s", cpu_acquire - cpu_start);
    report.add_float("cpu_acquire_s", cpu_held - cpu_acquire);
    report.add_float("cpu_release_s", cpu_end - cpu_held);
    report.add_float("cpu_s", cpu_end - cpu_start);
    Ok(report)
}

/// `tasks`: `--tasks` tasks, each cycling its own lock, `--cycles` in all.
pub(super) async fn tasks(client: &Client, base: &str, args: &BenchArgs, release: Release) -> Result<Report, Error> {
    make_base(client, base).await?;
    let mut locks = Vec::with_capacity(usize::try_from(args.tasks).unwrap_or(0));
    for k in 0..args.tasks {
        locks.push(client.mutex(&format!("{base}/t{k}")).await?);
    }
    // Warm-up: every lock once per task, then `--warmup` more in all.
    let claimed = Arc::new(AtomicU64::new(0));
    let warm = run_tasks(&locks, &claimed, args.warmup.max(args.tasks), release).await;
    warm?;
    claimed.store(0, Ordering::Relaxed);
    let cpu_start = cpu_secs();
    let start = Instant::now();
    let samples = run_tasks(&locks, &claimed, args.cycles, release).await?;
    let elapsed = start.elapsed();
    let cpu = cpu_secs() - cpu_start;
    let mut report = base_report(args, args.cycles, elapsed, samples);
    report.add_word("release", release.name());
    report.add_int("clients", 1);
    report.add_int("tasks", args.tasks);
    report.add_float("cpu_s", cpu);
    report.add_float("cpu_us_per_cycle", cpu * 1e6 / args.cycles as f64);
    Ok(report)
}

/// One task per lock, each cycling until `total` cycles are claimed;
/// returns every cycle's latency in µs.
async fn run_tasks(
    locks: &[zoolock_tokio::Lock],
    claimed: &Arc<AtomicU64>,
    total: u64,
    release: Release,
) -> Result<Vec<u64>, Error> {
    let mut set = tokio::task::JoinSet::new();
    for lock in locks {
        let (lock, claimed) = (lock.clone(), claimed.clone());
        set.spawn(async move {
            let mut samples = Vec::new();
            while claimed.fetch_add(1, Ordering::Relaxed) < total {
                let t = Instant::now();
                let guard = lock.acquire().await?;
                give_back(&lock, guard, release).await?;
                samples.push(micros(t.elapsed()));
            }
            Ok::<_, Error>(samples)
        });
    }
    let mut all = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    let mut first_error = None;
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(Ok(samples)) => all.extend(samples),
            Ok(Err(e)) => {
                // Stop the others at their next cycle.
                claimed.store(u64::MAX / 2, Ordering::Relaxed);
                first_error.get_or_insert(e);
            }
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(all),
    }
}

/// Makes `base` (and the shared parent) first, as zookeeper-client's side
/// does: otherwise every lock of the first wave finds it missing at once and
/// makes it too, which measures the race, not the cost per lock.
async fn make_base(client: &Client, base: &str) -> Result<(), Error> {
    for path in [super::ROOT, base] {
        match client.create(path, b"", CreateMode::PERSISTENT).await {
            Ok(_) => {}
            Err(Error::Request(RequestError::Server(code))) if code == ErrorCode::NODE_EXISTS => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Bytes per lock between two RSS readings (KiB).
fn per_lock(after_kib: u64, before_kib: u64, n: u64) -> f64 {
    after_kib.saturating_sub(before_kib) as f64 * 1024.0 / n.max(1) as f64
}

/// This process's resident set now (`VmRSS`), in KiB; 0 when unknown.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU time (user + system, every thread) this process has used, in
/// seconds, from `/proc/self/stat` (clock ticks of 1/100 s, Linux's
/// `USER_HZ`); 0 when unknown.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let mut fields = rest.split_whitespace().skip(11);
    let ticks = |f: Option<&str>| f.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let (utime, stime) = (ticks(fields.next()), ticks(fields.next()));
    (utime + stime) as f64 / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rss_cpu_and_per_lock() {
        assert!(rss_kib() > 0);
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(30) {}
        assert!(cpu_secs() > 0.0);
        assert!((per_lock(2, 1, 1024) - 1.0).abs() < 1e-9);
        assert_eq!(per_lock(1, 2, 10), 0.0);
    }
}
