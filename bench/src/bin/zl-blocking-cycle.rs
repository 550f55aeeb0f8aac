//! `zl-blocking-cycle`: `zoolock bench --workload mutex-uncontended` through
//! the blocking API (`zoolock-blocking`), so `scripts/bench-vs-peers.sh` can
//! put the synchronous face's cost beside the async one in the same run.
//!
//! One session, one mutex; a cycle is `acquire()` then the release: acked
//! (the guard dropped and `Lock::settled` waited for, as `zoolock bench`
//! does) or, with `--pipelined-release`, the guard dropped and the next
//! acquire sent at once. `--json` prints one line with the keys of
//! `zoolock bench` (`workload`, `cycles`, `seconds`, `cycles_per_sec`,
//! `p50_us`, `p99_us`, `release`, `clients`, `leftover_nodes`) plus
//! `"api":"blocking"`. Any error exits 1 with a message.

use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use zoolock_bench::Timing;
use zoolock_blocking::{Client, Error, Options};

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(name = "zl-blocking-cycle", about = "zoolock's uncontended mutex cycle through the blocking API")]
struct Args {
    /// The server, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    connect: String,
    /// Counted cycles.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    cycles: u64,
    /// Uncounted warm-up cycles before the counted ones.
    #[arg(long, default_value_t = 200)]
    warmup: u64,
    /// Drop the guard and go on without waiting for the delete's reply.
    #[arg(long)]
    pipelined_release: bool,
    /// Print one single-line JSON object instead of a sentence.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zl-blocking-cycle: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<String, Error> {
    let client = zoolock_blocking::connect(&args.connect, Options::default())?;
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let base = format!("/zoolock-bench/mutex-uncontended-blocking-{}-{nanos}", std::process::id());
    let lock = client.mutex(&base)?;
    let cycle = || -> Result<(), Error> {
        drop(lock.acquire()?);
        if args.pipelined_release { Ok(()) } else { lock.settled() }
    };
    for _ in 0..args.warmup {
        cycle()?;
    }
    let mut samples = Vec::with_capacity(usize::try_from(args.cycles).unwrap_or(0));
    let start = Instant::now();
    for _ in 0..args.cycles {
        let t = Instant::now();
        cycle()?;
        samples.push(t.elapsed());
    }
    let timing = Timing::new(&mut samples, start.elapsed());
    lock.settled()?;
    let leftovers = leftover_nodes(&client, &base)?;
    let _ = client.delete(&base, None);
    client.close()?;
    let release = if args.pipelined_release { "pipelined" } else { "acked" };
    Ok(if args.json {
        format!(
            "{{\"workload\":\"mutex-uncontended\",\"api\":\"blocking\",{},\"release\":\"{release}\",\
             \"clients\":1,\"leftover_nodes\":{leftovers}}}",
            timing.json_members()
        )
    } else {
        format!("mutex-uncontended (blocking API, {release} release): {timing}, {leftovers} leftover nodes")
    })
}

/// Lock nodes left under `base` (its children; a mutex has no deeper level).
fn leftover_nodes(client: &Client, base: &str) -> Result<u64, Error> {
    // The delete of the last cycle may still be in flight in the pipelined plan.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let n = client.get_children(base).map(|(c, _)| c.len()).unwrap_or(0);
        if n == 0 || Instant::now() > deadline {
            return Ok(u64::try_from(n).unwrap_or(u64::MAX));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
