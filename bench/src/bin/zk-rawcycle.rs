//! `zk-rawcycle`: the raw-protocol limit of a lock cycle, uncontended or in a
//! K-session handoff chain.
//!
//! Codec frames over blocking sockets, no client logic. `--plan 3rtt|2rtt|1rtt`:
//! one session; each cycle creates one ephemeral-sequential node under a fresh
//! parent, lists the parent and deletes the node, spread over 3, 2 or 1 round
//! trips. `--plan chain --clients K`: K sessions hand the lock down a chain
//! (create + list in one write, watch the predecessor, hold on its deletion,
//! delete); the rate is handoffs per second. Prints throughput and latency;
//! `--json` prints one single-line JSON object for `scripts/bench-vs-peers.sh`.
//! Any non-OK reply exits 1 with a message.

use std::process::ExitCode;

use clap::Parser;
use zoolock_bench::{Plan, Probe, RawSession, run_chain};

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(name = "zk-rawcycle", about = "Raw ZooKeeper lock-cycle probe (no client logic)")]
struct Args {
    /// The server, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    connect: String,
    /// 3rtt (create, getChildren, delete one after another, Curator's order),
    /// 2rtt (create+getChildren pipelined, then delete), 1rtt (all three in one
    /// write) or chain (K sessions handing the lock on, see --clients).
    #[arg(long, value_parser = parse_mode)]
    plan: Mode,
    /// Counted cycles (chain: counted handoffs).
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    cycles: u64,
    /// chain: sessions in the chain.
    #[arg(long, value_name = "K", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=1000))]
    clients: u64,
    /// Uncounted warm-up cycles before the counted ones.
    #[arg(long, default_value_t = 200)]
    warmup: u64,
    /// Print one single-line JSON object instead of a sentence.
    #[arg(long)]
    json: bool,
}

/// What `--plan` names.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Cycle(Plan),
    Chain,
}

/// Parses `--plan`.
fn parse_mode(s: &str) -> Result<Mode, String> {
    if s == "chain" {
        return Ok(Mode::Chain);
    }
    Plan::parse(s).map(Mode::Cycle).ok_or_else(|| format!("unknown plan '{s}' (expected 3rtt, 2rtt, 1rtt or chain)"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let run = || -> Result<(String, String), zoolock_bench::ProbeError> {
        match args.plan {
            Mode::Cycle(plan) => {
                let session = RawSession::connect(&args.connect)?;
                let mut probe = Probe::new(session)?;
                let summary = probe.run(plan, args.warmup, args.cycles)?;
                probe.finish()?;
                Ok((summary.to_json(), summary.to_string()))
            }
            Mode::Chain => {
                let summary = run_chain(&args.connect, args.clients, args.warmup, args.cycles)?;
                Ok((summary.to_json(), summary.to_string()))
            }
        }
    };
    match run() {
        Ok((json, text)) => {
            println!("{}", if args.json { json } else { text });
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zk-rawcycle: {:?} against {}: {e}", args.plan, args.connect);
            ExitCode::FAILURE
        }
    }
}
