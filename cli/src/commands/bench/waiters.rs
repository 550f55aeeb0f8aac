//! `waiters`: M waiters queued on P mutexes in this one process, then
//! drained.
//!
//! Everything runs on one session (holders and waiters alike): a mutex
//! queues handles, not sessions, and one session is what a service with
//! many tasks waiting on locks would have; it also puts the whole queue's
//! bookkeeping in one event loop, which is what the RSS figure is about.
//!
//! Steps: one holder takes each path; the waiters (waiter j on path j mod P)
//! each start an acquire; once every path lists its holder plus its waiters
//! (counted on the server), the holders let go and the drain runs: each
//! waiter, once granted, notes its node's sequence number and releases.
//! Reported: the drain time (the holders' release to the last grant), the
//! process's peak RSS, and FIFO violations (a path's grants out of node
//! sequence order). The latencies are each waiter's wait, acquire call to
//! grant, queueing time included.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use zoolock_tokio::{Client, Error};

use super::report::Report;
use super::single::give_back;
use super::{BenchArgs, Release, base_report, micros};

/// Runs the workload on `client` under `base`.
pub(super) async fn run(client: &Client, base: &str, args: &BenchArgs, release: Release) -> Result<Report, Error> {
    let paths: Vec<String> = (0..args.paths).map(|i| format!("{base}/p{i}")).collect();
    let mut holders = Vec::with_capacity(paths.len());
    for path in &paths {
        holders.push(client.mutex(path).await?.acquire().await?);
    }

    // Grant order per path: node sequence numbers, in the order granted.
    let grants: Arc<StdMutex<Vec<Vec<u64>>>> = Arc::new(StdMutex::new(vec![Vec::new(); paths.len()]));
    let enqueue_start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let mut expected = vec![1_u64; paths.len()];
    for j in 0..args.waiters {
        let p = usize::try_from(j % args.paths).unwrap_or(0);
        expected[p] += 1;
        let lock = client.mutex(&paths[p]).await?;
        let grants = grants.clone();
        tasks.spawn(async move {
            let asked = Instant::now();
            let guard = lock.acquire().await?;
            let granted = Instant::now();
            let seq = sequence(guard.node());
            if let Ok(mut g) = grants.lock() {
                g[p].push(seq.unwrap_or(u64::MAX));
            }
            give_back(&lock, guard, release).await?;
            Ok::<_, Error>((micros(granted.duration_since(asked)), granted))
        });
    }
    for (path, want) in paths.iter().zip(&expected) {
        wait_for_children(client, path, *want).await?;
    }
    let enqueue = enqueue_start.elapsed();

    let drain_start = Instant::now();
    drop(holders);
    let mut waits = Vec::with_capacity(usize::try_from(args.waiters).unwrap_or(0));
    let mut last_grant = drain_start;
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok((wait, granted))) => {
                waits.push(wait);
                last_grant = last_grant.max(granted);
            }
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let drain = last_grant.duration_since(drain_start);
    let fifo = grants.lock().map(|g| g.iter().map(|order| out_of_order(order)).sum()).unwrap_or(u64::MAX);

    let mut report = base_report(args, args.waiters, drain, waits);
    report.add_word("release", release.name());
    report.add_int("clients", 1);
    report.add_int("waiters", args.waiters);
    report.add_int("paths", args.paths);
    report.add_float("enqueue_ms", enqueue.as_secs_f64() * 1e3);
    report.add_float("drain_ms", drain.as_secs_f64() * 1e3);
    report.add_float("rss_mib", peak_rss_mib().unwrap_or(0.0));
    report.add_int("fifo_violations", fifo);
    Ok(report)
}

/// Waits until `path` has `want` children.
async fn wait_for_children(client: &Client, path: &str, want: u64) -> Result<(), Error> {
    loop {
        let (children, _) = client.get_children(path).await?;
        if children.len() as u64 >= want {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The sequence number a lock node's name ends with.
fn sequence(node: &str) -> Option<u64> {
    let digits = node.len().checked_sub(10).and_then(|at| node.get(at..))?;
    digits.parse().ok()
}

/// Grants that came after a later-queued node's grant.
fn out_of_order(order: &[u64]) -> u64 {
    order.windows(2).filter(|w| w[1] <= w[0]).count() as u64
}

/// This process's peak resident set (VmHWM), in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_and_order() {
        assert_eq!(sequence("/b/p0/_c_0f-lock-0000000042"), Some(42));
        assert_eq!(sequence("short"), None);
        assert_eq!(out_of_order(&[1, 2, 5, 9]), 0);
        assert_eq!(out_of_order(&[1, 5, 2, 9, 9]), 2);
        assert!(peak_rss_mib().is_some_and(|m| m > 0.0));
    }
}
