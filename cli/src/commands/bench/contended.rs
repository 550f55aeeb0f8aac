//! `mutex-contended`: K sessions loop acquire/release on one mutex until N
//! acquisitions in all. The rate is handoffs per second; a latency is one
//! acquisition's wait (acquire call to guard).
//!
//! Checked on the way: no two holders at once (each holder yields to the
//! scheduler inside its critical section, so an overlapping grant would be
//! seen), and fencing tokens strictly increasing in grant order.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use zoolock_tokio::{Client, Error, Lock};

use super::report::Report;
use super::single::give_back;
use super::{BenchArgs, Release, base_report, micros};

/// What the contending tasks share.
#[derive(Debug, Default)]
struct Shared {
    /// Acquisitions claimed so far; a task stops once the phase's are taken.
    claimed: AtomicU64,
    /// Holders right now (must never exceed 1).
    holding: AtomicUsize,
    overlaps: AtomicU64,
    fencing: AtomicU64,
    /// The last granted fencing token, and every wait (µs) of the phase.
    log: StdMutex<Log>,
}

#[derive(Debug, Default)]
struct Log {
    last_token: i64,
    waits: Vec<u64>,
}

/// Runs the workload on `clients` (one session each, all on `base`).
pub(super) async fn run(clients: &[Client], base: &str, args: &BenchArgs, release: Release) -> Result<Report, Error> {
    let mut locks = Vec::with_capacity(clients.len());
    for client in clients {
        locks.push(client.mutex(base).await?);
    }
    let shared = Arc::new(Shared::default());
    if args.warmup > 0 {
        phase(&locks, &shared, args.warmup, release).await?;
    }
    let (elapsed, waits) = phase(&locks, &shared, args.cycles, release).await?;
    // Every session's queued deletes are applied before the leftover count.
    for client in clients {
        client.exists(base).await?;
    }
    let mut report = base_report(args, args.cycles, elapsed, waits);
    report.add_word("release", release.name());
    report.add_int("clients", u64::try_from(clients.len()).unwrap_or(u64::MAX));
    report.add_int("fencing_violations", shared.fencing.load(Ordering::Relaxed));
    report.add_int("overlap_violations", shared.overlaps.load(Ordering::Relaxed));
    Ok(report)
}

/// `total` acquisitions spread over every lock; returns the span and waits.
async fn phase(
    locks: &[Lock],
    shared: &Arc<Shared>,
    total: u64,
    release: Release,
) -> Result<(Duration, Vec<u64>), Error> {
    shared.claimed.store(0, Ordering::Relaxed);
    if let Ok(mut log) = shared.log.lock() {
        log.waits = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    }
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for lock in locks {
        let (lock, shared) = (lock.clone(), shared.clone());
        tasks.spawn(contend(lock, shared, total, release));
    }
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                // Stop the others: nothing more gets claimed.
                shared.claimed.store(u64::MAX / 2, Ordering::Relaxed);
                first_error.get_or_insert(e);
            }
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        }
    }
    let elapsed = start.elapsed();
    if let Some(e) = first_error {
        return Err(e);
    }
    let waits = shared.log.lock().map(|mut log| std::mem::take(&mut log.waits)).unwrap_or_default();
    Ok((elapsed, waits))
}

/// One session's loop.
async fn contend(lock: Lock, shared: Arc<Shared>, total: u64, release: Release) -> Result<(), Error> {
    while shared.claimed.fetch_add(1, Ordering::Relaxed) < total {
        let asked = Instant::now();
        let guard = lock.acquire().await?;
        let wait = micros(asked.elapsed());
        if shared.holding.fetch_add(1, Ordering::SeqCst) != 0 {
            shared.overlaps.fetch_add(1, Ordering::Relaxed);
        }
        let token = guard.fencing_token().0;
        if let Ok(mut log) = shared.log.lock() {
            if token <= log.last_token {
                shared.fencing.fetch_add(1, Ordering::Relaxed);
            }
            log.last_token = token;
            log.waits.push(wait);
        }
        // The critical section: let every other task run once.
        tokio::task::yield_now().await;
        shared.holding.fetch_sub(1, Ordering::SeqCst);
        give_back(&lock, guard, release).await?;
    }
    Ok(())
}
