//! The driver's metrics (feature `metrics`) against the embedded in-memory
//! ZooKeeper: grants with their wait, time-outs, lost holds and session
//! renewals are counted with the lock path as label.

use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use zoolock_model::TestingServer;
use zoolock_tokio::{Error, HoldStatus, Options};

/// Running totals: a snapshot drains the recorder's counters, so they are
/// added up here (histograms count their samples).
struct Totals {
    snapshotter: Snapshotter,
    seen: Vec<(String, Option<String>, u64)>,
}

impl Totals {
    fn get(&mut self, name: &str, path: Option<&str>) -> u64 {
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let n = match value {
                DebugValue::Counter(n) => n,
                DebugValue::Histogram(samples) => samples.len() as u64,
                DebugValue::Gauge(_) => 0,
            };
            let label = key.key().labels().find(|l| l.key() == "path").map(|l| l.value().to_owned());
            self.seen.push((key.key().name().to_owned(), label, n));
        }
        self.seen
            .iter()
            .filter(|(n, label, _)| n == name && path.is_none_or(|p| label.as_deref() == Some(p)))
            .map(|(_, _, v)| v)
            .sum()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquires_waits_timeouts_losses_and_renewals_are_counted() {
    let recorder = DebuggingRecorder::new();
    let mut totals = Totals { snapshotter: recorder.snapshotter(), seen: Vec::new() };
    recorder.install().expect("the only recorder of this test binary");
    let server = TestingServer::start().await;
    let options = || Options::default().session_timeout(Duration::from_secs(2)).connect_timeout(Duration::from_secs(5));
    let a = zoolock_tokio::connect(server.connect_string(), options()).await.unwrap();
    let b = zoolock_tokio::connect(server.connect_string(), options()).await.unwrap();
    let lock = a.mutex("/metrics/lock").await.unwrap();
    let other = b.mutex("/metrics/lock").await.unwrap();

    let guard = lock.acquire().await.unwrap();
    assert!(matches!(other.acquire_timeout(Duration::from_millis(50)).await, Err(Error::TimedOut)));
    assert_eq!(totals.get("zoolock_acquires_total", Some("/metrics/lock")), 1);
    assert_eq!(totals.get("zoolock_acquire_wait_seconds", Some("/metrics/lock")), 1);
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
    assert_eq!(totals.get("zoolock_acquires_total", Some("/metrics/lock")), 2);
    again.release().await.unwrap();
    a.close().await.unwrap();
    b.close().await.unwrap();
    server.stop().await;
}
