//! What the driver counts, through the `metrics` facade (feature `metrics`,
//! off by default; without it every call here compiles to nothing). The
//! series, their units and labels are listed in the crate docs ("Features
//! and metrics"); keep that table in step with this file.

use std::time::Duration;

/// The labels of one lock's series, borrowed from the handle that owns its
/// path (a lock keeps no copy of its path for its labels).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) struct Labels<'a> {
    kind: &'static str,
    /// `None` when the path label is turned off.
    path: Option<&'a str>,
}

impl<'a> Labels<'a> {
    /// The labels of a lock of `kind` on `path`, with the path only if
    /// `with_path`.
    pub(crate) fn new(kind: &'static str, path: &'a str, with_path: bool) -> Labels<'a> {
        describe();
        Labels { kind, path: with_path.then_some(path) }
    }

    #[cfg(feature = "metrics")]
    fn get(&self) -> Vec<metrics::Label> {
        let mut labels = vec![metrics::Label::new("kind", self.kind)];
        if let Some(path) = self.path {
            labels.push(metrics::Label::new("path", path.to_string()));
        }
        labels
    }
}

/// A gauge raised while this value lives: a waiting acquire or a hold. A
/// hold's also records, when it goes, how long the hold lasted.
#[derive(Debug)]
pub(crate) struct Gauge {
    #[cfg(feature = "metrics")]
    gauge: metrics::Gauge,
    /// A hold's duration histogram and its start.
    #[cfg(feature = "metrics")]
    lasted: Option<(metrics::Histogram, std::time::Instant)>,
}

impl Gauge {
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    fn raise(name: &'static str, labels: Option<&Labels<'_>>) -> Gauge {
        #[cfg(feature = "metrics")]
        {
            let gauge = metrics::gauge!(name, labels.map(Labels::get).unwrap_or_default());
            gauge.increment(1.0);
            Gauge { gauge, lasted: None }
        }
        #[cfg(not(feature = "metrics"))]
        Gauge {}
    }

    /// An acquire under way, until dropped.
    pub(crate) fn waiting(labels: &Labels<'_>) -> Gauge {
        Gauge::raise("zoolock_acquires_waiting", Some(labels))
    }

    /// A hold (a guard, a lease, a term of leadership), until dropped;
    /// then its duration is one sample of `zoolock_hold_seconds`.
    pub(crate) fn held(labels: &Labels<'_>) -> Gauge {
        #[cfg_attr(not(feature = "metrics"), allow(unused_mut))]
        let mut gauge = Gauge::raise("zoolock_holds", Some(labels));
        #[cfg(feature = "metrics")]
        {
            let lasted = metrics::histogram!("zoolock_hold_seconds", labels.get());
            gauge.lasted = Some((lasted, std::time::Instant::now()));
        }
        gauge
    }

    /// A client's live connection, until dropped.
    pub(crate) fn connected() -> Gauge {
        describe();
        Gauge::raise("zoolock_connected", None)
    }
}

impl Drop for Gauge {
    fn drop(&mut self) {
        #[cfg(feature = "metrics")]
        {
            self.gauge.decrement(1.0);
            if let Some((lasted, since)) = self.lasted.take() {
                lasted.record(since.elapsed().as_secs_f64());
            }
        }
    }
}

/// Describes every series (unit and meaning) to the installed recorder,
/// once per process: recorders installed later get no description.
fn describe() {
    #[cfg(feature = "metrics")]
    {
        use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            describe_counter!("zoolock_acquires_total", Unit::Count, "Lock and semaphore acquires granted");
            describe_histogram!(
                "zoolock_acquire_wait_seconds",
                Unit::Seconds,
                "Time from an acquire call to its grant"
            );
            describe_counter!("zoolock_acquire_timeouts_total", Unit::Count, "Acquires that ended at their deadline");
            describe_gauge!("zoolock_acquires_waiting", Unit::Count, "Acquires under way");
            describe_gauge!("zoolock_holds", Unit::Count, "Guards and leases held and not yet released");
            describe_counter!("zoolock_holds_suspended_total", Unit::Count, "Holds told Suspended");
            describe_counter!("zoolock_holds_lost_total", Unit::Count, "Holds told Lost");
            describe_counter!(
                "zoolock_cleanup_failures_total",
                Unit::Count,
                "Abandoned nodes that could not be deleted"
            );
            describe_gauge!("zoolock_connected", Unit::Count, "Clients with a live connection");
            describe_histogram!(
                "zoolock_hold_seconds",
                Unit::Seconds,
                "How long holds (guards, leases, terms of leadership) lasted, one sample as each ends"
            );
            describe_gauge!(
                "zoolock_is_leader",
                Unit::Count,
                "1 while this process's participant of the election leads (under its policy), else 0"
            );
            describe_counter!(
                "zoolock_leadership_changes_total",
                Unit::Count,
                "Times this process's participant gained or lost leadership"
            );
            describe_counter!("zoolock_session_renewals_total", Unit::Count, "Sessions started after an expiry");
            describe_histogram!(
                "zoolock_request_seconds",
                Unit::Seconds,
                "Time from a request's send to its reply, by operation (pings included as op=ping)"
            );
        });
    }
}

#[cfg(feature = "metrics")]
fn count(name: &'static str, labels: &Labels<'_>) {
    metrics::counter!(name, labels.get()).increment(1);
}

#[cfg(not(feature = "metrics"))]
fn count(_name: &'static str, _labels: &Labels<'_>) {}

/// A grant after `waited`.
pub(crate) fn acquired(labels: &Labels<'_>, waited: Duration) {
    count("zoolock_acquires_total", labels);
    #[cfg(feature = "metrics")]
    metrics::histogram!("zoolock_acquire_wait_seconds", labels.get()).record(waited.as_secs_f64());
    #[cfg(not(feature = "metrics"))]
    let _ = waited;
}

/// An acquire that ended at its deadline.
pub(crate) fn timed_out(labels: &Labels<'_>) {
    count("zoolock_acquire_timeouts_total", labels);
}

/// A hold told `Suspended`.
pub(crate) fn suspended(labels: &Labels<'_>) {
    count("zoolock_holds_suspended_total", labels);
}

/// A hold told `Lost`.
pub(crate) fn lost(labels: &Labels<'_>) {
    count("zoolock_holds_lost_total", labels);
}

/// An abandoned node that could not be deleted.
pub(crate) fn cleanup_failed(labels: &Labels<'_>) {
    count("zoolock_cleanup_failures_total", labels);
}

/// A participant of an election started or stopped leading (under its
/// policy): `zoolock_is_leader` follows, and the change is counted.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn leading(labels: &Labels<'_>, leads: bool) {
    count("zoolock_leadership_changes_total", labels);
    #[cfg(feature = "metrics")]
    metrics::gauge!("zoolock_is_leader", labels.get()).set(if leads { 1.0 } else { 0.0 });
}

/// A session started after an expiry.
pub(crate) fn renewed() {
    #[cfg(feature = "metrics")]
    metrics::counter!("zoolock_session_renewals_total").increment(1);
}

/// An answered request: one sample of `zoolock_request_seconds`, labelled
/// `op` with ZooKeeper's name of its opcode ([`OpCode::name`]). The opcodes
/// a client sends have static keys, so a sample allocates nothing; any
/// other (a request built with `Op::from_request`) is labelled by name too,
/// through an allocated key.
///
/// [`OpCode::name`]: zoolock_core::wire::OpCode::name
#[cfg(feature = "metrics")]
pub(crate) fn answered(timing: &zoolock_core::RequestTiming) {
    use metrics::histogram;
    use zoolock_core::wire::OpCode;
    const NAME: &str = "zoolock_request_seconds";
    describe();
    let histogram = match timing.op {
        OpCode::CREATE => histogram!(NAME, "op" => "create"),
        OpCode::CREATE2 => histogram!(NAME, "op" => "create2"),
        OpCode::CREATE_CONTAINER => histogram!(NAME, "op" => "createContainer"),
        OpCode::CREATE_TTL => histogram!(NAME, "op" => "createTTL"),
        OpCode::DELETE => histogram!(NAME, "op" => "delete"),
        OpCode::EXISTS => histogram!(NAME, "op" => "exists"),
        OpCode::GET_DATA => histogram!(NAME, "op" => "getData"),
        OpCode::SET_DATA => histogram!(NAME, "op" => "setData"),
        OpCode::GET_ACL => histogram!(NAME, "op" => "getACL"),
        OpCode::SET_ACL => histogram!(NAME, "op" => "setACL"),
        OpCode::GET_CHILDREN => histogram!(NAME, "op" => "getChildren"),
        OpCode::GET_CHILDREN2 => histogram!(NAME, "op" => "getChildren2"),
        OpCode::SYNC => histogram!(NAME, "op" => "sync"),
        OpCode::PING => histogram!(NAME, "op" => "ping"),
        OpCode::MULTI => histogram!(NAME, "op" => "multi"),
        OpCode::MULTI_READ => histogram!(NAME, "op" => "multiRead"),
        OpCode::CHECK_WATCHES => histogram!(NAME, "op" => "checkWatches"),
        OpCode::REMOVE_WATCHES => histogram!(NAME, "op" => "removeWatches"),
        OpCode::SET_WATCHES => histogram!(NAME, "op" => "setWatches"),
        OpCode::SASL => histogram!(NAME, "op" => "sasl"),
        OpCode::CLOSE_SESSION => histogram!(NAME, "op" => "closeSession"),
        op => histogram!(NAME, "op" => op.name().unwrap_or("unknown")),
    };
    histogram.record(timing.latency().as_secs_f64());
}

#[cfg(all(test, feature = "metrics"))]
mod tests {
    use std::sync::{Arc, Mutex};

    use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
    use zoolock_core::wire::OpCode;
    use zoolock_core::{Instant, RequestTiming};

    /// Keeps the keys of the histograms registered through it.
    #[derive(Default)]
    struct Keys(Arc<Mutex<Vec<Key>>>);

    impl Recorder for Keys {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
            Counter::noop()
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
            self.0.lock().unwrap().push(key.clone());
            Histogram::noop()
        }
    }

    /// Every opcode is labelled with wire's name for it, whether its key is
    /// one of the static ones or built.
    #[test]
    fn the_op_label_is_the_opcode_name() {
        let keys = Keys::default();
        let seen = keys.0.clone();
        let ops: Vec<OpCode> = (-20..200).map(OpCode).filter(|op| op.name().is_some()).collect();
        metrics::with_local_recorder(&keys, || {
            for &op in &ops {
                super::answered(&RequestTiming { op, sent: Instant::ZERO, answered: Instant::from_millis(1) });
            }
        });
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), ops.len());
        for (op, key) in ops.iter().zip(seen.iter()) {
            assert_eq!(key.name(), "zoolock_request_seconds");
            let labels: Vec<_> = key.labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
            assert_eq!(labels, [("op".to_owned(), op.name().unwrap().to_owned())], "{op:?}");
        }
    }
}
