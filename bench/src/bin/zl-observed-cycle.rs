//! `zl-observed-cycle`: what zoolock's metrics and spans cost (issue 39).
//! The uncontended mutex cycle of `zoolock bench --workload
//! mutex-uncontended` (acquire, then the guard dropped and `Lock::settled`
//! awaited: an acknowledged release) through the async API on a
//! current-thread tokio runtime, built with the driver's `metrics` feature
//! (this crate's `metrics`) or without it, with one of three observers
//! installed for the whole process:
//!
//! - `none`: no metrics recorder and no tracing subscriber (the facades'
//!   no-op defaults);
//! - `recorder`: metrics-util's `DebuggingRecorder` as the global recorder
//!   (every counter, gauge and histogram sample stored, as an exporter
//!   would);
//! - `subscriber`: a `tracing-subscriber` registry with a `fmt` layer at
//!   INFO (the level of the acquire and hold spans) writing to a sink, so
//!   every span is built and every event formatted, and nothing is printed.
//!
//! A recorder or subscriber cannot be removed from a process, so each
//! observer is one run of this binary; `scripts/bench-observability.sh`
//! interleaves them. `--json` prints one line with the keys of `zoolock
//! bench` (`workload`, `cycles`, `seconds`, `cycles_per_sec`, `p50_us`,
//! `p99_us`) plus `observe`, `metrics` (whether the driver was built with
//! the feature), `cpu_us_per_cycle` and, for the recorder,
//! `request_samples` (the samples of `zoolock_request_seconds` it received,
//! a check that it was used). Any error exits 1 with a message.
//!
//! `cpu_us_per_cycle` is the CPU time the process's one thread (the runtime
//! runs the event loop and the cycles on it) spent on the counted cycles,
//! from the kernel's `/proc/thread-self/schedstat`: what an observer adds
//! is CPU work in this process, and on a shared machine that figure moves
//! far less than the wall time, which waits for the server and for the
//! other processes' turns on the cores. Absent where the file is not.

use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, ValueEnum};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use zoolock_bench::Timing;
use zoolock_tokio::{Error, Options};

/// What observes the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Observe {
    /// No recorder, no subscriber.
    None,
    /// A metrics recorder (metrics-util's debugging recorder).
    Recorder,
    /// A tracing subscriber (fmt layer at INFO into a sink).
    Subscriber,
}

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "zl-observed-cycle",
    about = "zoolock's mutex cycle with and without a metrics recorder or a tracing subscriber"
)]
struct Args {
    /// The server, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    connect: String,
    /// What observes the process.
    #[arg(long, value_enum)]
    observe: Observe,
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

fn main() -> ExitCode {
    let args = Args::parse();
    let snapshotter = install(args.observe);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("zl-observed-cycle: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&args)) {
        Ok((timing, cpu)) => {
            #[allow(clippy::cast_precision_loss)]
            let cpu = cpu.map(|c| c.as_secs_f64() * 1e6 / args.cycles as f64);
            let samples = snapshotter.map(|s| request_samples(&s));
            let observe = format!("{:?}", args.observe).to_lowercase();
            if args.json {
                let samples = samples.map(|n| format!(",\"request_samples\":{n}")).unwrap_or_default();
                let cpu = cpu.map(|c| format!(",\"cpu_us_per_cycle\":{c:.2}")).unwrap_or_default();
                println!(
                    "{{\"workload\":\"mutex-uncontended\",\"api\":\"async\",\"observe\":\"{observe}\",\
                     \"metrics\":{},{}{cpu}{samples}}}",
                    cfg!(feature = "metrics"),
                    timing.json_members()
                );
            } else {
                let samples = samples.map(|n| format!(", {n} request samples recorded")).unwrap_or_default();
                let cpu = cpu.map(|c| format!(", {c:.1} µs of CPU per cycle")).unwrap_or_default();
                let built = if cfg!(feature = "metrics") { "with" } else { "without" };
                println!("mutex-uncontended, {built} metrics, observed by {observe}: {timing}{cpu}{samples}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zl-observed-cycle: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Installs the observer; the recorder's snapshotter, for the check.
fn install(observe: Observe) -> Option<Snapshotter> {
    match observe {
        Observe::None => None,
        Observe::Recorder => {
            let recorder = DebuggingRecorder::new();
            let snapshotter = recorder.snapshotter();
            recorder.install().ok()?;
            Some(snapshotter)
        }
        Observe::Subscriber => {
            use tracing_subscriber::filter::LevelFilter;
            use tracing_subscriber::layer::SubscriberExt;
            use tracing_subscriber::util::SubscriberInitExt;
            let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::sink).with_ansi(false);
            tracing_subscriber::registry().with(fmt).with(LevelFilter::INFO).init();
            None
        }
    }
}

/// Samples of `zoolock_request_seconds` the recorder holds.
fn request_samples(snapshotter: &Snapshotter) -> usize {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "zoolock_request_seconds")
        .map(|(.., value)| if let DebugValue::Histogram(samples) = value { samples.len() } else { 0 })
        .sum()
}

/// CPU time this thread has run, from the kernel's scheduler statistics.
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(Duration::from_nanos(stat.split_whitespace().next()?.parse().ok()?))
}

/// The counted cycles' timing and the CPU time they took.
async fn run(args: &Args) -> Result<(Timing, Option<Duration>), Error> {
    let client = zoolock_tokio::connect(&args.connect, Options::default()).await?;
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let base = format!("/zoolock-bench/mutex-observed-{}-{nanos}", std::process::id());
    let lock = client.mutex(&base).await?;
    for _ in 0..args.warmup {
        drop(lock.acquire().await?);
        lock.settled().await?;
    }
    let mut samples = Vec::with_capacity(usize::try_from(args.cycles).unwrap_or(0));
    let cpu_start = thread_cpu();
    let start = Instant::now();
    for _ in 0..args.cycles {
        let t = Instant::now();
        drop(lock.acquire().await?);
        lock.settled().await?;
        samples.push(t.elapsed());
    }
    let elapsed = start.elapsed();
    let cpu = thread_cpu().zip(cpu_start).map(|(end, start)| end.saturating_sub(start));
    let timing = Timing::new(&mut samples, elapsed);
    drop(lock);
    let _ = tokio::time::timeout(Duration::from_secs(5), client.delete(&base, None)).await;
    client.close().await?;
    Ok((timing, cpu))
}
