//! One session looping acquire + release on one lock: `mutex-uncontended`,
//! `read-lock` and `semaphore`. A cycle's latency runs from the acquire
//! call to the end of the release (acked: the delete applied; pipelined: the
//! guard dropped).

use std::time::{Duration, Instant};

use zoolock_tokio::{Client, Error, Guard, Lease, Lock, Semaphore};

use super::report::Report;
use super::{BenchArgs, Release, base_report, micros};

/// `mutex-uncontended`.
pub(super) async fn mutex(client: &Client, base: &str, args: &BenchArgs, release: Release) -> Result<Report, Error> {
    lock_cycles(&client.mutex(base).await?, args, release).await
}

/// `read-lock`: the read half of a read-write lock, nobody writing.
pub(super) async fn read_lock(
    client: &Client,
    base: &str,
    args: &BenchArgs,
    release: Release,
) -> Result<Report, Error> {
    let read = client.read_write_lock(base).await?.read;
    lock_cycles(&read, args, release).await
}

/// `semaphore`: one lease of an L-lease semaphore per cycle.
pub(super) async fn semaphore(
    client: &Client,
    base: &str,
    args: &BenchArgs,
    release: Release,
) -> Result<Report, Error> {
    let leases = usize::try_from(args.leases).unwrap_or(usize::MAX);
    let sem = client.semaphore(base, leases).await?;
    let (elapsed, samples) = cycles(args, async || {
        for lease in sem.acquire(1).await? {
            return_lease(&sem, lease, release).await?;
        }
        Ok(())
    })
    .await?;
    let mut report = finish(args, elapsed, samples, release);
    report.add_int("leases", args.leases);
    Ok(report)
}

/// Acquire + release of `lock` per cycle (`mutex-uncontended`, `read-lock`).
async fn lock_cycles(lock: &Lock, args: &BenchArgs, release: Release) -> Result<Report, Error> {
    let (elapsed, samples) = cycles(args, async || {
        let guard = lock.acquire().await?;
        give_back(lock, guard, release).await
    })
    .await?;
    Ok(finish(args, elapsed, samples, release))
}

/// Runs `--warmup` uncounted cycles, then `--cycles` timed ones; returns
/// the measured span and each cycle's latency in µs.
async fn cycles(
    args: &BenchArgs,
    mut cycle: impl AsyncFnMut() -> Result<(), Error>,
) -> Result<(Duration, Vec<u64>), Error> {
    for _ in 0..args.warmup {
        cycle().await?;
    }
    let mut samples = Vec::with_capacity(usize::try_from(args.cycles).unwrap_or(0));
    let start = Instant::now();
    for _ in 0..args.cycles {
        let t = Instant::now();
        cycle().await?;
        samples.push(micros(t.elapsed()));
    }
    Ok((start.elapsed(), samples))
}

fn finish(args: &BenchArgs, elapsed: Duration, samples: Vec<u64>, release: Release) -> Report {
    let mut report = base_report(args, args.cycles, elapsed, samples);
    report.add_word("release", release.name());
    report.add_int("clients", 1);
    report
}

/// Releases `lock`'s hold `guard` the way `release` says.
pub(super) async fn give_back(lock: &Lock, guard: Guard, release: Release) -> Result<(), Error> {
    // Dropping queues the delete (guaranteed, retried until applied).
    drop(guard);
    match release {
        Release::Pipelined => Ok(()),
        // Completes on the delete's own reply: no extra request.
        Release::Acked => lock.settled().await,
    }
}

/// Returns `sem`'s `lease` the way `release` says.
async fn return_lease(sem: &Semaphore, lease: Lease, release: Release) -> Result<(), Error> {
    drop(lease);
    match release {
        Release::Pipelined => Ok(()),
        Release::Acked => sem.settled().await,
    }
}
