//! `zk-rawcycle`: the raw-protocol limit of an uncontended lock cycle.
//!
//! One ZooKeeper session, codec frames over a blocking socket, no client logic.
//! Each cycle creates one ephemeral-sequential node under a fresh parent, lists
//! the parent and deletes the node, spread over 3, 2 or 1 round trips
//! (`--plan`). Prints throughput and cycle latency; `--json` prints one
//! single-line JSON object for `scripts/bench-vs-curator.sh`. Any non-OK reply
//! exits 1 with a message.

use std::process::ExitCode;

use clap::Parser;
use zoolock_bench::{Plan, Probe, RawSession};

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(name = "zk-rawcycle", about = "Raw ZooKeeper lock-cycle probe (no client logic)")]
struct Args {
    /// The server, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    connect: String,
    /// 3rtt (create, getChildren, delete one after another, Curator's order),
    /// 2rtt (create+getChildren pipelined, then delete) or 1rtt (all three in one write).
    #[arg(long, value_parser = parse_plan)]
    plan: Plan,
    /// Counted cycles.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    cycles: u64,
    /// Uncounted warm-up cycles before the counted ones.
    #[arg(long, default_value_t = 200)]
    warmup: u64,
    /// Print one single-line JSON object instead of a sentence.
    #[arg(long)]
    json: bool,
}

/// Parses `--plan`.
fn parse_plan(s: &str) -> Result<Plan, String> {
    Plan::parse(s).ok_or_else(|| format!("unknown plan '{s}' (expected 3rtt, 2rtt or 1rtt)"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let run = || -> Result<_, zoolock_bench::ProbeError> {
        let session = RawSession::connect(&args.connect)?;
        let mut probe = Probe::new(session)?;
        let summary = probe.run(args.plan, args.warmup, args.cycles)?;
        probe.finish()?;
        Ok(summary)
    };
    match run() {
        Ok(summary) => {
            if args.json {
                println!("{}", summary.to_json());
            } else {
                println!("{summary}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zk-rawcycle: {} against {}: {e}", args.plan, args.connect);
            ExitCode::FAILURE
        }
    }
}
