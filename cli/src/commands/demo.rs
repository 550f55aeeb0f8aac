//! `zoolock demo`: workers contend on a mutex, a read-write lock and a
//! semaphore, with live progress and a summary.
//!
//! It is the first thing a newcomer runs, so it needs nothing installed:
//! without `--connect` it starts the embedded in-memory ZooKeeper (the
//! conformance model) on a loopback port. Every worker has its own client,
//! hence its own session, exactly as separate processes would.
//!
//! Submodules, one concern each: [`board`] (what workers report, checked as
//! it happens), [`workers`] (the acquire-work-release loops), [`display`]
//! (live progress on stderr), [`summary`] (the table, checks and verdict on
//! stdout), [`tree`] (the run's nodes: created, checked for leftovers,
//! removed).

mod board;
mod display;
mod summary;
mod tree;
mod workers;

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use zoolock_model::ModelConfig;
use zoolock_model::TestingServer;
use zoolock_tokio::Client;

use self::board::{Board, Role, WorkerId};
use self::tree::Tree;
use self::workers::Handle;
use super::{close, connect, request_failed};
use crate::args::Global;
use crate::exit::{self, Failure, Outcome};
use crate::signals::{self, Received};

/// What `zoolock demo` takes.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct DemoArgs {
    /// How long the workers contend (e.g. 10s, 1m).
    #[arg(long, value_name = "D", value_parser = humantime::parse_duration, default_value = "10s")]
    duration: Duration,
    /// How long each holder keeps the lock: the simulated work.
    #[arg(long, value_name = "D", value_parser = humantime::parse_duration, default_value = "5ms")]
    hold: Duration,
    /// Workers on the mutex.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=MAX_WORKERS))]
    mutex_workers: u32,
    /// Readers on the read-write lock.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=MAX_WORKERS))]
    readers: u32,
    /// Writers on the read-write lock.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=MAX_WORKERS))]
    writers: u32,
    /// Workers on the semaphore, one lease each.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=MAX_WORKERS))]
    semaphore_workers: u32,
    /// How many leases the semaphore has.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=MAX_WORKERS))]
    leases: u32,
}

/// How to read the outcome, shown after the options.
const AFTER_HELP: &str = "\
Progress goes to stderr; the summary (wait times, checks, verdict) to
stdout. Exits 0 if every check passed, 1 if one failed. Ctrl-C stops the
run early and still prints the summary.";

/// Each worker is a session: keep a typo from opening thousands.
const MAX_WORKERS: i64 = 64;

/// Runs the demo against `--connect`, or against an embedded server it
/// starts and stops. Exits 0 if every check passed, 1 otherwise.
pub(crate) async fn run(global: &Global, args: DemoArgs) -> Outcome {
    let mut signals =
        signals::install().map_err(|e| Failure::new(exit::FAILURE, format!("cannot install signal handlers: {e}")))?;
    let (server, hosts, described) = match &global.connect {
        Some(hosts) => (None, hosts.clone(), format!("the ZooKeeper at {hosts}")),
        None => {
            // Every worker has its own connection: no per-address limit.
            let server = TestingServer::start_with(ModelConfig::default().with_max_client_cnxns(None))
                .await
                .map_err(|e| Failure::new(exit::UNAVAILABLE, format!("cannot start the embedded ZooKeeper: {e}")))?;
            let hosts = server.connect_string().to_owned();
            let described = format!("the embedded in-memory ZooKeeper at {hosts} (no --connect given)");
            (Some(server), hosts, described)
        }
    };
    eprintln!("zoolock demo: using {described}");
    // Everything below connects through `connect`, with the chosen hosts.
    let global = Global {
        connect: Some(hosts),
        session_timeout: global.session_timeout,
        connect_timeout: global.connect_timeout,
        compress: global.compress,
        verbose: global.verbose,
        security: global.security.clone(),
    };
    let outcome = demo(&global, &args, &mut signals, described).await;
    if let Some(server) = server {
        server.stop().await;
    }
    outcome
}

/// Sets up, runs and checks one demo against `global.connect`.
async fn demo(
    global: &Global,
    args: &DemoArgs,
    signals: &mut mpsc::UnboundedReceiver<Received>,
    server: String,
) -> Outcome {
    let limit = global.session_timeout;
    let tree = Tree::fresh();
    let ids = worker_ids(args);
    let leases = args.leases as usize;
    let monitor = connect(global, Some("zoolock demo monitor")).await?;
    let opened = match tree.create(&monitor).await {
        Ok(()) => open_workers(global, &tree, &ids, leases).await,
        Err(e) => Err(request_failed(&format!("cannot create {}", tree.base), &e)),
    };
    let (clients, handles) = match opened {
        Ok(opened) => opened,
        Err(failure) => {
            let _ = tree.remove(&monitor).await;
            close(&monitor, limit).await;
            return Err(failure);
        }
    };
    eprintln!(
        "zoolock demo: {} on the mutex, {} + {} on the read-write lock, {} on the semaphore ({leases} leases); \
         {} each, holding {:?}; under {}",
        count(args.mutex_workers, "worker"),
        count(args.readers, "reader"),
        count(args.writers, "writer"),
        count(args.semaphore_workers, "worker"),
        humantime::format_duration(args.duration),
        args.hold,
        tree.base,
    );

    let board = Arc::new(Board::new(leases, &ids));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    for (id, handle) in ids.into_iter().zip(handles) {
        tasks.spawn(workers::run(id, handle, board.clone(), stop_rx.clone(), args.hold));
    }
    let started = Instant::now();
    let display = tokio::spawn(display::run(board.clone(), monitor.clone(), tree.clone(), args.duration, stop_rx));
    let interrupted = tokio::select! {
        () = tokio::time::sleep(args.duration) => false,
        Some(_) = signals.recv() => true,
    };
    let elapsed = started.elapsed();

    let finish = async {
        let _ = stop_tx.send(true);
        let _ = display.await;
        if interrupted {
            eprintln!("zoolock demo: stopping early (interrupt again to quit without a summary)");
        }
        let problems = join_workers(&mut tasks, limit).await;
        close_all(&clients, limit).await;
        let leftovers = tree.leftovers(&monitor).await.map_err(|e| e.to_string());
        if let Err(error) = tree.remove(&monitor).await {
            tracing::warn!(%error, base = tree.base, "cannot remove the demo's parent nodes");
        }
        close(&monitor, limit).await;
        (problems, leftovers)
    };
    let (problems, leftovers) = tokio::select! {
        done = finish => done,
        Some(signal) = signals.recv() => {
            return Err(Failure::new(exit::signal_code(signal.signal as i32), "demo: interrupted twice, no summary"));
        }
    };

    let run = summary::Run { server, base: tree.base.clone(), elapsed, interrupted, leftovers, problems };
    let report = summary::report(&board.tallies(), &run);
    let mut out = std::io::stdout().lock();
    for line in &report.lines {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
    Ok(if report.pass { 0 } else { exit::FAILURE })
}

/// `1 writer`, `3 readers`.
fn count(n: u32, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The workers asked for: `m1..`, `r1..`, `w1..`, `s1..`.
fn worker_ids(args: &DemoArgs) -> Vec<WorkerId> {
    [
        (Role::Mutex, args.mutex_workers),
        (Role::Reader, args.readers),
        (Role::Writer, args.writers),
        (Role::Lease, args.semaphore_workers),
    ]
    .into_iter()
    .flat_map(|(role, n)| (1..=n).map(move |i| WorkerId { role, name: format!("{}{i}", role.prefix()) }))
    .collect()
}

/// Connects one client per worker (its name is its lock node data, so
/// `zoolock holders` shows who is who) and opens its recipe. On a failure
/// the clients already open are closed.
async fn open_workers(
    global: &Global,
    tree: &Tree,
    ids: &[WorkerId],
    leases: usize,
) -> Result<(Vec<Client>, Vec<Handle>), Failure> {
    let mut clients = Vec::with_capacity(ids.len());
    let mut handles = Vec::with_capacity(ids.len());
    for id in ids {
        let opened = match connect(global, Some(&id.name)).await {
            Ok(client) => {
                clients.push(client.clone());
                Handle::open(&client, tree, id.role, leases)
                    .await
                    .map_err(|e| request_failed("cannot open a recipe", &e))
            }
            Err(failure) => Err(failure),
        };
        match opened {
            Ok(handle) => handles.push(handle),
            Err(failure) => {
                close_all(&clients, global.session_timeout).await;
                return Err(failure);
            }
        }
    }
    Ok((clients, handles))
}

/// Waits for every worker to stop, at most `limit`; reports stragglers
/// (aborted) and panics.
async fn join_workers(tasks: &mut JoinSet<()>, limit: Duration) -> Vec<String> {
    let mut problems = Vec::new();
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            next = tasks.join_next() => match next {
                None => return problems,
                Some(Err(e)) if e.is_panic() => problems.push(format!("a worker panicked: {e}")),
                Some(_) => {}
            },
            () = &mut deadline => {
                problems.push(format!("{} workers did not stop within {limit:?}", tasks.len()));
                tasks.abort_all();
                return problems;
            }
        }
    }
}

/// Closes the clients concurrently, each waiting at most `limit`: once this
/// returns, the server has deleted their ephemeral nodes.
async fn close_all(clients: &[Client], limit: Duration) {
    let mut closing = JoinSet::new();
    for client in clients {
        let client = client.clone();
        closing.spawn(async move { close(&client, limit).await });
    }
    while closing.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::{Cli, Command};

    fn parse(args: &[&str]) -> Result<DemoArgs, clap::Error> {
        let cli = Cli::try_parse_from(["zoolock", "demo"].iter().chain(args))?;
        let Command::Demo(demo) = cli.command else { panic!("not demo") };
        Ok(demo)
    }

    #[test]
    fn defaults_and_names() {
        let args = parse(&[]).expect("parses");
        assert_eq!(args.duration, Duration::from_secs(10));
        assert_eq!(args.hold, Duration::from_millis(5));
        let names: Vec<String> = worker_ids(&args).into_iter().map(|w| w.name).collect();
        assert_eq!(names, ["m1", "m2", "m3", "m4", "r1", "r2", "r3", "w1", "s1", "s2", "s3", "s4"]);
    }

    #[test]
    fn flags() {
        let args = parse(&["--duration", "2s", "--hold", "1ms", "--readers", "0", "--leases", "3"]).expect("parses");
        assert_eq!(
            (args.duration, args.hold, args.readers, args.leases),
            (Duration::from_secs(2), Duration::from_millis(1), 0, 3)
        );
        assert!(parse(&["--leases", "0"]).is_err());
        assert!(parse(&["--mutex-workers", "1000"]).is_err());
        assert!(parse(&["--duration", "soon"]).is_err());
    }
}
