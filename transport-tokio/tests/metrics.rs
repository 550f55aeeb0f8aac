//! The driver's metrics (feature `metrics`) against the embedded in-memory
//! ZooKeeper: grants with their wait, time-outs, lost holds and session
//! renewals are counted with the lock path and kind as labels; the waiting,
//! holding and connection gauges follow the acquires, holds and sessions;
//! each hold that ends is one sample of the hold-duration histogram; an
//! election's `is_leader` gauge goes to 1 and back to 0 across a term, and
//! each change is counted; every answered request is one sample of the
//! request-latency histogram, labelled by its operation (issue 39).

use std::time::Duration;

use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use zoolock_model::TestingServer;
use zoolock_tokio::{Error, HoldStatus, Options};

/// Running totals: a snapshot drains the recorder's counters, so they are
/// added up here (histograms count their samples).
struct Totals {
    snapshotter: Snapshotter,
    seen: Vec<(String, Option<String>, u64)>,
    /// Each gauge's latest value by name and labels (`kind=..,path=..`).
    gauges: std::collections::BTreeMap<(String, String), f64>,
    /// The unit each series was described with.
    units: std::collections::BTreeMap<String, Unit>,
    /// Samples by name and `op` label, for the series that have one.
    ops: std::collections::BTreeMap<(String, String), u64>,
}

impl Totals {
    fn take(&mut self) {
        for (key, unit, _, value) in self.snapshotter.snapshot().into_vec() {
            let name = key.key().name().to_owned();
            if let Some(unit) = unit {
                self.units.insert(name.clone(), unit);
            }
            let n = match value {
                DebugValue::Counter(n) => n,
                DebugValue::Histogram(samples) => samples.len() as u64,
                DebugValue::Gauge(g) => {
                    let labels: Vec<_> = key.key().labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
                    self.gauges.insert((name.clone(), labels.join(",")), g.into_inner());
                    0
                }
            };
            if let Some(op) = key.key().labels().find(|l| l.key() == "op") {
                *self.ops.entry((name.clone(), op.value().to_owned())).or_default() += n;
            }
            let label = key.key().labels().find(|l| l.key() == "path").map(|l| l.value().to_owned());
            self.seen.push((name, label, n));
        }
    }

    fn get(&mut self, name: &str, path: Option<&str>) -> u64 {
        self.take();
        self.seen
            .iter()
            .filter(|(n, label, _)| n == name && path.is_none_or(|p| label.as_deref() == Some(p)))
            .map(|(_, _, v)| v)
            .sum()
    }

    /// Samples of `name` labelled `op`.
    fn by_op(&mut self, name: &str, op: &str) -> u64 {
        self.take();
        self.ops.get(&(name.to_owned(), op.to_owned())).copied().unwrap_or(0)
    }

    /// The gauge `name` with exactly these labels (0 if never set).
    fn gauge(&mut self, name: &str, labels: &str) -> f64 {
        self.take();
        self.gauges.get(&(name.to_owned(), labels.to_owned())).copied().unwrap_or(0.0)
    }

    /// Waits up to 10 s for the gauge to read `want`.
    async fn gauge_reaches(&mut self, name: &str, labels: &str, want: f64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while self.gauge(name, labels) != want {
            let now = self.gauge(name, labels);
            assert!(tokio::time::Instant::now() < deadline, "{name}{{{labels}}} stays {now}, not {want}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

const MUTEX: &str = "kind=mutex,path=/metrics/lock";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquires_waits_timeouts_losses_and_renewals_are_counted() {
    let recorder = DebuggingRecorder::new();
    let mut totals = Totals {
        snapshotter: recorder.snapshotter(),
        seen: Vec::new(),
        gauges: Default::default(),
        units: Default::default(),
        ops: Default::default(),
    };
    recorder.install().expect("the only recorder of this test binary");
    let server = TestingServer::start().await;
    let options = || Options::default().session_timeout(Duration::from_secs(2)).connect_timeout(Duration::from_secs(5));
    let a = zoolock_tokio::connect(server.connect_string(), options()).await.unwrap();
    let b = zoolock_tokio::connect(server.connect_string(), options()).await.unwrap();
    let lock = a.mutex("/metrics/lock").await.unwrap();
    let other = b.mutex("/metrics/lock").await.unwrap();

    totals.gauge_reaches("zoolock_connected", "", 2.0).await;
    let guard = lock.acquire().await.unwrap();
    assert_eq!(totals.gauge("zoolock_holds", MUTEX), 1.0);
    assert_eq!(totals.gauge("zoolock_acquires_waiting", MUTEX), 0.0);

    // The waiting gauge rises while b waits and falls when it is granted.
    let waiter = tokio::spawn(async move {
        let guard = other.acquire().await.unwrap();
        guard.release().await.unwrap();
        other
    });
    totals.gauge_reaches("zoolock_acquires_waiting", MUTEX, 1.0).await;
    guard.release().await.unwrap();
    let other = waiter.await.unwrap();
    totals.gauge_reaches("zoolock_acquires_waiting", MUTEX, 0.0).await;
    totals.gauge_reaches("zoolock_holds", MUTEX, 0.0).await;
    assert_eq!(totals.get("zoolock_acquires_total", Some("/metrics/lock")), 2);
    // Each answered request is timed under its operation: two grants
    // created two lock nodes and two releases deleted them (a release
    // completes once its delete is queued: the replies follow).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while totals.by_op("zoolock_request_seconds", "create2") < 2
        || totals.by_op("zoolock_request_seconds", "delete") < 2
    {
        assert!(tokio::time::Instant::now() < deadline, "requests not timed: {:?}", totals.ops);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(totals.units.get("zoolock_request_seconds"), Some(&Unit::Seconds));

    let guard = lock.acquire().await.unwrap();
    assert!(matches!(other.acquire_timeout(Duration::from_millis(50)).await, Err(Error::TimedOut)));
    // A timed-out acquire waits no more.
    totals.gauge_reaches("zoolock_acquires_waiting", MUTEX, 0.0).await;
    assert_eq!(totals.get("zoolock_acquires_total", Some("/metrics/lock")), 3);
    assert_eq!(totals.get("zoolock_acquire_wait_seconds", Some("/metrics/lock")), 3);
    assert_eq!(totals.units.get("zoolock_acquire_wait_seconds"), Some(&Unit::Seconds));
    assert_eq!(totals.units.get("zoolock_acquires_waiting"), Some(&Unit::Count));
    assert_eq!(totals.get("zoolock_acquire_timeouts_total", Some("/metrics/lock")), 1);

    // The server expires a's session: the hold is lost and the client renews.
    let session = a.session_id();
    server.with_model(move |model, now| model.expire_session(now, session)).await;
    let lost = tokio::time::timeout(Duration::from_secs(10), guard.lost()).await.expect("the loss is reported");
    assert!(matches!(lost, HoldStatus::Suspended | HoldStatus::Lost));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while totals.get("zoolock_holds_lost_total", Some("/metrics/lock")) == 0
        || totals.get("zoolock_session_renewals_total", None) == 0
    {
        assert!(tokio::time::Instant::now() < deadline, "no Lost or renewal counted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    guard.release().await.unwrap();
    let again = tokio::time::timeout(Duration::from_secs(10), lock.acquire()).await.unwrap().unwrap();
    assert_eq!(totals.get("zoolock_acquires_total", Some("/metrics/lock")), 4);
    again.release().await.unwrap();
    // Four holds of the mutex ended (one of them lost): four durations.
    totals.gauge_reaches("zoolock_holds", MUTEX, 0.0).await;
    assert_eq!(totals.get("zoolock_hold_seconds", Some("/metrics/lock")), 4);
    assert_eq!(totals.units.get("zoolock_hold_seconds"), Some(&Unit::Seconds));

    // A term of leadership: is_leader 1, then 0; two changes; one duration
    // (the term's hold, released).
    const ELECTION: &str = "kind=election,path=/metrics/leader";
    let selector = b.leader_selector("/metrics/leader", "b").await.unwrap();
    let term = selector.leadership().await.unwrap();
    totals.gauge_reaches("zoolock_is_leader", ELECTION, 1.0).await;
    term.release().await.unwrap();
    totals.gauge_reaches("zoolock_is_leader", ELECTION, 0.0).await;
    assert_eq!(totals.get("zoolock_leadership_changes_total", Some("/metrics/leader")), 2);
    assert_eq!(totals.get("zoolock_hold_seconds", Some("/metrics/leader")), 1);

    // Per-entity locks: without the path label, every lock of a kind is one series.
    let c = zoolock_tokio::connect(server.connect_string(), options().metrics_path_label(false)).await.unwrap();
    let pool = c.semaphore("/metrics/orders/1234", 2).await.unwrap();
    let leases = pool.acquire(2).await.unwrap();
    totals.gauge_reaches("zoolock_holds", "kind=semaphore", 2.0).await;
    drop(leases);
    totals.gauge_reaches("zoolock_holds", "kind=semaphore", 0.0).await;
    c.close().await.unwrap();
    a.close().await.unwrap();
    b.close().await.unwrap();
    totals.gauge_reaches("zoolock_connected", "", 0.0).await;
    server.stop().await;
}
