//! `zl-observed-cycle`: what zoolock's metrics and spans cost (issue 39).
//! The uncontended mutex cycle of `zoolock bench --workload
//! mutex-uncontended` (acquire, then the guard dropped and `Lock::settled`
//! awaited: an acknowledged release) through the async API on a
//! current-thread tokio runtime, built with the driver's `metrics` feature,
//! with one of three observers installed for the whole process:
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
//! `p99_us`) plus `observe` and, for the recorder, `request_samples` (the
//! samples of `zoolock_request_seconds` it received, a check that it was
//! used). Any error exits 1 with a message.

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
        Ok(timing) => {
            let samples = snapshotter.map(|s| request_samples(&s));
            let observe = format!("{:?}", args.observe).to_lowercase();
            if args.json {
                let samples = samples.map(|n| format!(",\"request_samples\":{n}")).unwrap_or_default();
                println!(
                    "{{\"workload\":\"mutex-uncontended\",\"api\":\"async\",\"observe\":\"{observe}\",{}{samples}}}",
                    timing.json_members()
                );
            } else {
                let samples = samples.map(|n| format!(", {n} request samples recorded")).unwrap_or_default();
                println!("mutex-uncontended, observed by {observe}: {timing}{samples}");
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

async fn run(args: &Args) -> Result<Timing, Error> {
    let client = zoolock_tokio::connect(&args.connect, Options::default()).await?;
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let base = format!("/zoolock-bench/mutex-observed-{}-{nanos}", std::process::id());
    let lock = client.mutex(&base).await?;
    for _ in 0..args.warmup {
        drop(lock.acquire().await?);
        lock.settled().await?;
    }
    let mut samples = Vec::with_capacity(usize::try_from(args.cycles).unwrap_or(0));
    let start = Instant::now();
    for _ in 0..args.cycles {
        let t = Instant::now();
        drop(lock.acquire().await?);
        lock.settled().await?;
        samples.push(t.elapsed());
    }
    let timing = Timing::new(&mut samples, start.elapsed());
    drop(lock);
    let _ = tokio::time::timeout(Duration::from_secs(5), client.delete(&base, None)).await;
    client.close().await?;
    Ok(timing)
}
