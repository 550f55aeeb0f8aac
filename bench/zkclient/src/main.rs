//! `zkclient-bench`: zookeeper-client's Curator-named lock
//! (`LockPrefix::new_curator(dir, "lock-")`) through the workloads of
//! `zoolock bench`, printing the same JSON keys for `scripts/bench-vs-peers.sh`.
//!
//! ```text
//! zkclient-bench --connect HOST:PORT --workload mutex-uncontended|mutex-contended|held|tasks
//!                [--cycles N] [--warmup W] [--clients K] [--locks N] [--tasks K]
//!                [--release acked|drop] [--runtime current|multi] [--json]
//! ```
//!
//! **Release.** zookeeper-client's `LockClient` has no awaited release: its
//! drop spawns a background delete. `--release drop` measures exactly that.
//! `--release acked` deletes the lock node itself with `Client::delete` and
//! waits for the reply (as Curator's `release()` does), then forgets the
//! `LockClient` so its drop does not send a second delete (a few bytes leak
//! per cycle, no request).
//!
//! `mutex-contended`: K sessions, one task each, loop acquire/release on one
//! lock until N acquisitions in all; the rate is handoffs per second and a
//! latency one acquisition's wait. Each holder yields to the scheduler once
//! inside its critical section, as `zoolock bench` does, and overlapping
//! holds are counted (must be 0).
//!
//! `held` and `tasks` (issue 29, one session): see `many.rs`.

mod many;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, ValueEnum};
use zookeeper_client::{Acls, Client, CreateMode, LockClient, LockPrefix};
use zoolock_bench::Timing;

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(name = "zkclient-bench", about = "zookeeper-client's lock through the zoolock bench workloads")]
struct Args {
    /// The server, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    connect: String,
    /// Which workload to run.
    #[arg(long, value_enum)]
    workload: Workload,
    /// Counted cycles (contended: acquisitions over all sessions).
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    cycles: u64,
    /// Uncounted cycles first.
    #[arg(long, default_value_t = 200)]
    warmup: u64,
    /// mutex-contended: sessions contending on the one lock.
    #[arg(long, value_name = "K", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=1000))]
    clients: u64,
    /// held: how many distinct locks are held at once.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    locks: u64,
    /// tasks: how many tasks cycle a lock of their own.
    #[arg(long, value_name = "K", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    tasks: u64,
    /// How a cycle gives the lock back.
    #[arg(long, value_enum, default_value_t = Release::Acked)]
    release: Release,
    /// The tokio runtime flavour.
    #[arg(long, value_enum, default_value_t = Runtime::Current)]
    runtime: Runtime,
    /// Print one single-line JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Workload {
    MutexUncontended,
    MutexContended,
    /// N distinct locks held at once by N tasks on one session.
    Held,
    /// K tasks on one session, each cycling a lock of its own.
    Tasks,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::MutexUncontended => "mutex-uncontended",
            Workload::MutexContended => "mutex-contended",
            Workload::Held => "held",
            Workload::Tasks => "tasks",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Release {
    /// Delete the node and wait for the reply.
    Acked,
    /// Drop the `LockClient` (background delete).
    Drop,
}

impl Release {
    fn name(self) -> &'static str {
        match self {
            Release::Acked => "acked",
            Release::Drop => "drop",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Runtime {
    /// One thread, as `zoolock bench`.
    Current,
    /// tokio's multi-thread scheduler.
    Multi,
}

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The lock node's data, as Curator writes it by default.
pub(crate) const NODE_DATA: &[u8] = b"127.0.0.1";

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match args.runtime {
        Runtime::Current => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        Runtime::Multi => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
    };
    let result = match runtime {
        Ok(rt) => rt.block_on(run(&args)),
        Err(e) => Err(e.into()),
    };
    match result {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zkclient-bench: {} against {}: {e}", args.workload.name(), args.connect);
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<String, BoxError> {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let base = format!("/zoolock-bench/zkclient-{}-{}-{nanos}", args.workload.name(), std::process::id());
    if matches!(args.workload, Workload::Held | Workload::Tasks) {
        return many::run(args, &base).await;
    }
    let sessions = if args.workload == Workload::MutexContended { args.clients } else { 1 };
    let mut clients = Vec::new();
    for _ in 0..sessions {
        clients.push(Client::connector().with_session_timeout(Duration::from_secs(10)).connect(&args.connect).await?);
    }
    let owner = clients.first().cloned().ok_or("no session")?;
    owner.mkdir(&base, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await?;
    let shared = Arc::new(Shared::default());
    let outcome = async {
        phase(&clients, &base, args, &shared, args.warmup).await?;
        let start = Instant::now();
        let mut waits = phase(&clients, &base, args, &shared, args.cycles).await?;
        let timing = Timing::new(&mut waits, start.elapsed());
        let leftovers = leftovers(&owner, &base).await?;
        Ok::<_, BoxError>((timing, leftovers))
    }
    .await;
    // Best effort, whatever happened.
    let _ = owner.delete(&base, None).await;
    let _ = owner.delete("/zoolock-bench", None).await;
    let (timing, leftovers) = outcome?;
    let overlaps = shared.overlaps.load(Ordering::Relaxed);
    if overlaps > 0 || leftovers > 0 {
        return Err(format!("{overlaps} overlapping holds, {leftovers} leftover nodes").into());
    }
    Ok(if args.json {
        format!(
            "{{\"impl\":\"zookeeper-client\",\"workload\":\"{}\",\"release\":\"{}\",\"runtime\":\"{}\",\
             \"clients\":{sessions},{},\"overlap_violations\":{overlaps},\"leftover_nodes\":{leftovers}}}",
            args.workload.name(),
            args.release.name(),
            if args.runtime == Runtime::Current { "current" } else { "multi" },
            timing.json_members()
        )
    } else {
        format!(
            "zookeeper-client {}, release {}, {sessions} session(s): {timing}",
            args.workload.name(),
            args.release.name()
        )
    })
}

/// What the contending tasks share.
#[derive(Debug, Default)]
struct Shared {
    claimed: AtomicU64,
    holding: AtomicUsize,
    overlaps: AtomicU64,
}

/// `total` acquisitions spread over every session; returns each wait (the
/// whole cycle's latency when uncontended).
async fn phase(
    clients: &[Client],
    base: &str,
    args: &Args,
    shared: &Arc<Shared>,
    total: u64,
) -> Result<Vec<Duration>, BoxError> {
    shared.claimed.store(0, Ordering::Relaxed);
    if args.workload == Workload::MutexUncontended {
        let client = clients.first().ok_or("no session")?;
        let mut lat = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
        for _ in 0..total {
            let t = Instant::now();
            let lock = acquire(client, base).await?;
            give_back(client, lock, args.release).await?;
            lat.push(t.elapsed());
        }
        return Ok(lat);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for client in clients {
        let (client, shared, base, release) = (client.clone(), shared.clone(), base.to_owned(), args.release);
        tasks.spawn(async move { contend(client, base, shared, total, release).await });
    }
    let mut waits = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(w)) => waits.extend(w),
            Ok(Err(e)) => {
                shared.claimed.store(u64::MAX / 2, Ordering::Relaxed);
                first_error.get_or_insert(e);
            }
            Err(join) => return Err(join.into()),
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(waits),
    }
}

/// One session's loop.
async fn contend(
    client: Client,
    base: String,
    shared: Arc<Shared>,
    total: u64,
    release: Release,
) -> Result<Vec<Duration>, BoxError> {
    let mut waits = Vec::new();
    while shared.claimed.fetch_add(1, Ordering::Relaxed) < total {
        let asked = Instant::now();
        let lock = acquire(&client, &base).await?;
        waits.push(asked.elapsed());
        if shared.holding.fetch_add(1, Ordering::SeqCst) != 0 {
            shared.overlaps.fetch_add(1, Ordering::Relaxed);
        }
        // The critical section: let every other task run once.
        tokio::task::yield_now().await;
        shared.holding.fetch_sub(1, Ordering::SeqCst);
        give_back(&client, lock, release).await?;
    }
    Ok(waits)
}

pub(crate) async fn acquire<'a>(client: &'a Client, base: &str) -> Result<LockClient<'a>, BoxError> {
    let prefix = LockPrefix::new_curator(base, "lock-")?;
    Ok(client.lock(prefix, NODE_DATA, Acls::anyone_all()).await?)
}

pub(crate) async fn give_back(client: &Client, lock: LockClient<'_>, release: Release) -> Result<(), BoxError> {
    match release {
        Release::Drop => drop(lock),
        Release::Acked => {
            client.delete(lock.lock_path(), None).await?;
            // Deleted and acknowledged: skip the drop's background delete.
            std::mem::forget(lock);
        }
    }
    Ok(())
}

/// Lock nodes left under `base` once the background deletes had up to 5 s.
pub(crate) async fn leftovers(client: &Client, base: &str) -> Result<u64, BoxError> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let n = client.list_children(base).await?.len();
        if n == 0 || Instant::now() >= deadline {
            return Ok(u64::try_from(n).unwrap_or(u64::MAX));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
