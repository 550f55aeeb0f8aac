//! `zoolock`: run a command while holding a Curator-compatible ZooKeeper lock.
//!
//! ```text
//! zoolock [--connect HOSTS] [--session-timeout D] lock PATH [--timeout D | -n] [-E N] [--grace D] [--revocable] -- CMD ARGS...
//! zoolock read-lock PATH -- CMD ...      zoolock write-lock PATH -- CMD ...
//! zoolock semaphore PATH (--leases N | --leases-from COUNT_PATH) [--revocable] -- CMD ...
//! zoolock elect PATH [--id ID] [--latch] [--timeout D | -n] -- CMD ...   (every holding command: [--max-hold D])
//! zoolock leader PATH [--latch] [--json]
//! zoolock count get PATH                 zoolock count set PATH N
//! zoolock holders PATH [--kind mutex|rwlock|semaphore|election|latch [--leases N | --leases-from COUNT_PATH]] [--json]
//! zoolock revoke PATH | --node NODE
//! zoolock serve [--port P]
//! zoolock demo [--duration D]            (embedded server unless --connect)
//! zoolock bench --workload W [--cycles N] [--json]
//! zoolock completions SHELL              zoolock man [SUBCOMMAND]
//! ```
//!
//! The connect string comes from `--connect`, else `ZOOLOCK_CONNECT`, else
//! `127.0.0.1:2181`. CMD gets `ZOOLOCK_FENCING_TOKEN` and `ZOOLOCK_NODE`.
//! The exit codes are listed in [`exit`] and in `zoolock --help`.
//!
//! Modules: [`args`] (the command line), [`commands`] (one module per
//! subcommand), [`supervise`] (running CMD under the hold), [`signals`],
//! [`progress`] (the waiting line), [`exit`] (exit codes).

mod args;
mod commands;
mod exit;
mod progress;
mod signals;
mod supervise;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { exit::USAGE } else { 0 });
        }
    };
    init_logging(cli.global.verbose);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("zoolock: cannot start the runtime: {e}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("zoolock: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// Logs to stderr: warnings by default, more with each `-v`, or as the
/// `ZOOLOCK_LOG` filter says (tracing's `target=level,level` directives, as
/// `RUST_LOG`; span and field filters are not supported, which keeps a
/// regex engine out of the binary). A filter that does not parse is
/// reported and `-v` applies.
fn init_logging(verbose: u8) {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let level = match verbose {
        0 => LevelFilter::WARN,
        1 => LevelFilter::INFO,
        2 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    };
    let (filter, bad) = match std::env::var("ZOOLOCK_LOG") {
        Ok(spec) if !spec.trim().is_empty() => match spec.parse::<Targets>() {
            Ok(targets) => (targets, None),
            Err(e) => (Targets::new().with_default(level), Some(format!("ignoring ZOOLOCK_LOG={spec:?}: {e}"))),
        },
        _ => (Targets::new().with_default(level), None),
    };
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(verbose >= 2 || bad.is_none() && std::env::var_os("ZOOLOCK_LOG").is_some());
    tracing_subscriber::registry().with(fmt).with(filter).init();
    if let Some(bad) = bad {
        tracing::warn!("{bad}");
    }
}
