//! The driver's metrics (feature `metrics`) against the embedded in-memory
//! ZooKeeper: grants with their wait, time-outs, lost holds and session
//! renewals are counted with the lock path and kind as labels; the waiting,
//! holding and connection gauges follow the acquires, holds and sessions;
//! each hold that ends is one sample of the hold-duration histogram; an
//! election's `is_leader` gauge goes to 1 and back to 0 across a term, and
//! each change is counted; every answered request is one sample of the
//! request-latency histogram, labelled by its operation (issue 39).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use metrics_util::registry::{AtomicStorage, Registry};
use zoolock_model::TestingServer;
use zoolock_tokio::{Error, HoldStatus, Options};

/// A recorder that keeps every series' absolute value, read without
/// resetting it (the debugging recorder's snapshot zeroes counters and
/// gauges, so two readers of one gauge would see different values).
#[derive(Clone)]
struct Absolute {
    registry: Arc<Registry<Key, AtomicStorage>>,
    units: Arc<Mutex<BTreeMap<String, Unit>>>,
}

impl Absolute {
    fn new() -> Absolute {
        Absolute { registry: Arc::new(Registry::atomic()), units: Arc::default() }
    }

    fn describe(&self, key: KeyName, unit: Option<Unit>) {
        if let (Some(unit), Ok(mut units)) = (unit, self.units.lock()) {
            units.insert(key.as_str().to_owned(), unit);
        }
    }

    /// `key`'s labels as `k=v,k=v`, and its `path` and `op` labels.
    fn labels(key: &Key) -> (String, Option<String>, Option<String>) {
        let all: Vec<_> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        let find = |k: &str| key.labels().find(|l| l.key() == k).map(|l| l.value().to_owned());
        (all.join(","), find("path"), find("op"))
    }

    /// The counters' values and the histograms' sample counts named `name`
    /// whose labels pass `keep`, added up.
    fn total(&self, name: &str, keep: impl Fn(&Key) -> bool) -> u64 {
        let counters: u64 = (self.registry.get_counter_handles().into_iter())
            .filter(|(k, _)| k.name() == name && keep(k))
            .map(|(_, c)| c.load(Ordering::SeqCst))
            .sum();
        let samples: usize = (self.registry.get_histogram_handles().into_iter())
            .filter(|(k, _)| k.name() == name && keep(k))
            .map(|(_, h)| h.data().len())
            .sum();
        counters + samples as u64
    }

    fn get(&self, name: &str, path: Option<&str>) -> u64 {
        self.total(name, |k| path.is_none_or(|p| Absolute::labels(k).1.as_deref() == Some(p)))
    }

    /// Samples of `name` labelled `op`.
    fn by_op(&self, name: &str, op: &str) -> u64 {
        self.total(name, |k| Absolute::labels(k).2.as_deref() == Some(op))
    }

    /// The gauge `name` with exactly these labels (0 if never set).
    fn gauge(&self, name: &str, labels: &str) -> f64 {
        (self.registry.get_gauge_handles().into_iter())
            .find(|(k, _)| k.name() == name && Absolute::labels(k).0 == labels)
            .map_or(0.0, |(_, g)| f64::from_bits(g.load(Ordering::SeqCst)))
    }

    fn unit(&self, name: &str) -> Option<Unit> {
        self.units.lock().ok().and_then(|u| u.get(name).copied())
    }

    /// Waits up to 10 s for the gauge to read `want`.
    async fn gauge_reaches(&self, name: &str, labels: &str, want: f64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let now = self.gauge(name, labels);
            if now == want {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "{name}{{{labels}}} stays {now}, not {want}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Recorder for Absolute {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(key, unit);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(key, unit);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(key, unit);
    }

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        self.registry.get_or_create_counter(key, |c| Counter::from_arc(c.clone()))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        self.registry.get_or_create_gauge(key, |g| Gauge::from_arc(g.clone()))
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        self.registry.get_or_create_histogram(key, |h| Histogram::from_arc(h.clone()))
    }
}

const MUTEX: &str = "kind=mutex,path=/metrics/lock";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquires_waits_timeouts_losses_and_renewals_are_counted() {
    let totals = Absolute::new();
    metrics::set_global_recorder(totals.clone()).unwrap_or_else(|_| panic!("the only recorder of this test binary"));
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
        assert!(tokio::time::Instant::now() < deadline, "requests not timed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(totals.unit("zoolock_request_seconds"), Some(Unit::Seconds));

    let guard = lock.acquire().await.unwrap();
    assert!(matches!(other.acquire_timeout(Duration::from_millis(50)).await, Err(Error::TimedOut)));
    // A timed-out acquire waits no more.
    totals.gauge_reaches("zoolock_acquires_waiting", MUTEX, 0.0).await;
    assert_eq!(totals.get("zoolock_acquires_total", Some("/metrics/lock")), 3);
    assert_eq!(totals.get("zoolock_acquire_wait_seconds", Some("/metrics/lock")), 3);
    assert_eq!(totals.unit("zoolock_acquire_wait_seconds"), Some(Unit::Seconds));
    assert_eq!(totals.unit("zoolock_acquires_waiting"), Some(Unit::Count));
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
    assert_eq!(totals.unit("zoolock_hold_seconds"), Some(Unit::Seconds));

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
