//! `zoolock bench`: lock cycles measured against a server.
//!
//! ```text
//! zoolock --connect H bench --workload W [--cycles N] [--clients K] [--leases L]
//!         [--waiters M] [--paths P] [--locks N] [--tasks K]
//!         [--pipelined-release] [--warmup W] [--json]
//! ```
//!
//! The interface is shared with `scripts/bench-vs-peers.sh`, the Curator
//! Java bench and the raw-protocol probe, so the flags and JSON keys stay put.
//! Each run works under a fresh base path
//! (`/zoolock-bench/<workload>-<pid>-<nanos>`), counts the lock nodes left
//! under it (must be 0) and deletes it afterwards.
//!
//! **Release modes.** In the default (pipelined) op plan, `Guard::release`
//! returns once the delete is queued. An *acked* release (the default here,
//! and what Curator's `release()` does) also waits until the server has
//! applied the delete: the guard is dropped and `Lock::settled` (for leases
//! `Semaphore::settled`) completes on the delete's own reply, with no extra
//! request. With `--pipelined-release` the guard is dropped and the next
//! acquire follows at once, so the delete rides in the same write as it.
//!
//! Modules: `report` (percentiles, JSON and text), `single` (one client
//! looping: mutex, read lock, semaphore), `contended` (K sessions on one
//! mutex), `waiters` (M queued waiters, drain time, FIFO, RSS), `many`
//! (N locks held at once, K tasks on their own locks: one session), `tree`
//! (leftover counting and clean-up).

mod contended;
mod many;
mod report;
mod single;
mod tree;
mod waiters;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, ValueEnum};
use zoolock_tokio::Client;

use crate::args::Global;
use crate::exit::{self, Failure, Outcome};

use report::Report;

/// What `zoolock bench` takes.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Which workload to run.
    #[arg(long, value_enum)]
    workload: Workload,
    /// Measured cycles (acquisitions; waiters: ignored, every waiter is one).
    #[arg(long, value_name = "N", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    cycles: u64,
    /// Uncounted cycles run first (connection set-up, parent creation,
    /// allocator and cache warm-up).
    #[arg(long, value_name = "N", default_value_t = 200)]
    warmup: u64,
    /// mutex-contended: sessions contending on the one mutex.
    #[arg(long, value_name = "K", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    clients: u64,
    /// semaphore: the semaphore's lease count.
    #[arg(long, value_name = "L", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    leases: u64,
    /// waiters: how many waiters queue up.
    #[arg(long, value_name = "M", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    waiters: u64,
    /// waiters: over how many mutex paths they spread.
    #[arg(long, value_name = "P", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    paths: u64,
    /// held: how many distinct locks are held at once.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    locks: u64,
    /// tasks: how many tasks cycle a lock of their own.
    #[arg(long, value_name = "K", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    tasks: u64,
    /// Drop the guard instead of waiting for the release to be applied: the
    /// delete rides in the same write as the next acquire.
    #[arg(long)]
    pipelined_release: bool,
    /// Do not watch held nodes (see `Options::watch_held`): only to measure
    /// what that watch costs beside the default.
    #[arg(long)]
    no_held_watch: bool,
    /// Print exactly one JSON object (one line) on stdout.
    #[arg(long)]
    json: bool,
}

/// The workloads (names shared with the Curator bench).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Workload {
    /// One session, one mutex, acquire + release back to back.
    MutexUncontended,
    /// K sessions loop acquire/release on one mutex; counts handoffs.
    MutexContended,
    /// One session, read-lock acquire + release back to back.
    ReadLock,
    /// One session, one lease of an L-lease semaphore taken and returned.
    Semaphore,
    /// M waiters queued on P mutexes in one process, then drained.
    Waiters,
    /// N distinct locks acquired by N tasks on one session, held at once,
    /// then released: times, RSS and CPU per lock.
    Held,
    /// K tasks on one session, each cycling a lock of its own.
    Tasks,
}

impl Workload {
    /// The name on the command line and in the JSON.
    fn name(self) -> &'static str {
        match self {
            Workload::MutexUncontended => "mutex-uncontended",
            Workload::MutexContended => "mutex-contended",
            Workload::ReadLock => "read-lock",
            Workload::Semaphore => "semaphore",
            Workload::Waiters => "waiters",
            Workload::Held => "held",
            Workload::Tasks => "tasks",
        }
    }
}

/// How a cycle gives the lock back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Release {
    /// Wait until the server has applied the delete.
    Acked,
    /// Drop the guard; the delete goes out with the next request.
    Pipelined,
}

impl Release {
    fn name(self) -> &'static str {
        match self {
            Release::Acked => "acked",
            Release::Pipelined => "pipelined",
        }
    }
}

/// Runs one benchmark workload.
pub(crate) async fn run(global: &Global, args: BenchArgs) -> Outcome {
    let base = base_path(args.workload);
    let release = if args.pipelined_release { Release::Pipelined } else { Release::Acked };
    let options = zoolock_tokio::Options::default().watch_held(!args.no_held_watch);
    let client = super::connect_with(global, None, options.clone()).await?;
    // mutex-contended: one session per contender, the first being `client`.
    let mut clients = vec![client.clone()];
    if args.workload == Workload::MutexContended {
        for _ in 1..args.clients {
            match super::connect_with(global, None, options.clone()).await {
                Ok(c) => clients.push(c),
                Err(failure) => {
                    close_all(&clients).await;
                    return Err(failure);
                }
            }
        }
    }
    let result = match args.workload {
        Workload::MutexUncontended => single::mutex(&client, &base, &args, release).await,
        Workload::ReadLock => single::read_lock(&client, &base, &args, release).await,
        Workload::Semaphore => single::semaphore(&client, &base, &args, release).await,
        Workload::MutexContended => contended::run(&clients, &base, &args, release).await,
        Workload::Waiters => waiters::run(&client, &base, &args, release).await,
        Workload::Held => many::held(&client, &base, &args, release).await,
        Workload::Tasks => many::tasks(&client, &base, &args, release).await,
    };
    let result = match result {
        Ok(mut report) => match tree::leftovers(&client, &base).await {
            Ok(n) => {
                report.add_int("leftover_nodes", n);
                Ok(report)
            }
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    // Best effort, whatever happened: the tree, then the shared parent if
    // no other run uses it.
    tree::remove(&client, &base).await;
    close_all(&clients).await;
    let report = result.map_err(|e| super::request_failed(&format!("bench {}", args.workload.name()), &e))?;
    let failed = report.violations() > 0;
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text());
    }
    if failed {
        return Err(Failure::new(exit::FAILURE, format!("bench {}: violations found", args.workload.name())));
    }
    Ok(0)
}

/// Closes every session, each with a bounded wait.
async fn close_all(clients: &[Client]) {
    for client in clients {
        super::close(client, Duration::from_secs(5)).await;
    }
}

/// The shared parent of every run's base path.
const ROOT: &str = "/zoolock-bench";

/// A base path no other run uses.
fn base_path(workload: Workload) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{ROOT}/{}-{}-{nanos}", workload.name(), std::process::id())
}

/// Microseconds of `d`, for the latency samples.
fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The report fields every workload shares.
fn base_report(args: &BenchArgs, cycles: u64, elapsed: Duration, mut samples: Vec<u64>) -> Report {
    let mut r = Report::new(args.workload.name());
    r.add_int("cycles", cycles);
    r.add_timing(cycles, elapsed, &mut samples);
    r
}
