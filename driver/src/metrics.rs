//! What the driver counts, through the `metrics` facade (feature `metrics`,
//! off by default; without it every call here compiles to nothing). The
//! series, their units and labels are listed in the crate docs ("Features
//! and metrics"); keep that table in step with this file.

use std::time::Duration;

#[cfg(feature = "metrics")]
use std::sync::OnceLock;

/// One lock's (or election's) registered series, kept with it: each is
/// registered with the recorder on its first use and reused after, so an
/// event costs an atomic load and the handle's update, with no labels
/// built, no key hashed and nothing allocated; with no recorder installed
/// the handles are the facade's no-ops. Registered when first used, a
/// series goes to the recorder installed then (install it before making
/// locks, as for the descriptions). 16 bytes until the first event, then
/// a box of the kept handles (about 260 bytes; with thousands of locks,
/// the price of the feature); without the feature, nothing.
#[derive(Debug, Default)]
pub(crate) struct Series {
    #[cfg(feature = "metrics")]
    handles: OnceLock<Box<Handles>>,
}

/// The per-lock series, each registered on first use (a mutex never
/// registers `zoolock_is_leader`).
#[cfg(feature = "metrics")]
#[derive(Debug, Default)]
struct Handles {
    acquires: OnceLock<metrics::Counter>,
    wait: OnceLock<metrics::Histogram>,
    timeouts: OnceLock<metrics::Counter>,
    waiting: OnceLock<metrics::Gauge>,
    holds: OnceLock<metrics::Gauge>,
    hold_seconds: OnceLock<metrics::Histogram>,
    suspended: OnceLock<metrics::Counter>,
    lost: OnceLock<metrics::Counter>,
    cleanup_failures: OnceLock<metrics::Counter>,
    is_leader: OnceLock<metrics::Gauge>,
    leadership_changes: OnceLock<metrics::Counter>,
}

/// The labels of one lock's series, borrowed from the handle that owns its
/// path (a lock keeps no copy of its path for its labels), with the lock's
/// [`Series`].
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) struct Labels<'a> {
    kind: &'static str,
    /// `None` when the path label is turned off.
    path: Option<&'a str>,
    series: &'a Series,
}

impl<'a> Labels<'a> {
    /// The labels of a lock of `kind` on `path`, with the path only if
    /// `with_path`, and its registered `series`.
    pub(crate) fn new(kind: &'static str, path: &'a str, with_path: bool, series: &'a Series) -> Labels<'a> {
        describe();
        Labels { kind, path: with_path.then_some(path), series }
    }

    #[cfg(feature = "metrics")]
    fn get(&self) -> Vec<metrics::Label> {
        let mut labels = vec![metrics::Label::new("kind", self.kind)];
        if let Some(path) = self.path {
            labels.push(metrics::Label::new("path", path.to_string()));
        }
        labels
    }

    #[cfg(feature = "metrics")]
    fn handles(&self) -> &'a Handles {
        self.series.handles.get_or_init(Box::default)
    }

    #[cfg(feature = "metrics")]
    fn counter(&self, name: &'static str, slot: fn(&Handles) -> &OnceLock<metrics::Counter>) -> &'a metrics::Counter {
        slot(self.handles()).get_or_init(|| metrics::counter!(name, self.get()))
    }

    #[cfg(feature = "metrics")]
    fn gauge(&self, name: &'static str, slot: fn(&Handles) -> &OnceLock<metrics::Gauge>) -> &'a metrics::Gauge {
        slot(self.handles()).get_or_init(|| metrics::gauge!(name, self.get()))
    }

    #[cfg(feature = "metrics")]
    fn histogram(
        &self,
        name: &'static str,
        slot: fn(&Handles) -> &OnceLock<metrics::Histogram>,
    ) -> &'a metrics::Histogram {
        slot(self.handles()).get_or_init(|| metrics::histogram!(name, self.get()))
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
    #[cfg(feature = "metrics")]
    fn raise(gauge: &metrics::Gauge) -> Gauge {
        gauge.increment(1.0);
        Gauge { gauge: gauge.clone(), lasted: None }
    }

    /// An acquire under way, until dropped.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn waiting(labels: &Labels<'_>) -> Gauge {
        #[cfg(feature = "metrics")]
        return Gauge::raise(labels.gauge("zoolock_acquires_waiting", |h| &h.waiting));
        #[cfg(not(feature = "metrics"))]
        Gauge {}
    }

    /// A hold (a guard, a lease, a term of leadership), until dropped;
    /// then its duration is one sample of `zoolock_hold_seconds`.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn held(labels: &Labels<'_>) -> Gauge {
        #[cfg(feature = "metrics")]
        {
            let mut gauge = Gauge::raise(labels.gauge("zoolock_holds", |h| &h.holds));
            let lasted = labels.histogram("zoolock_hold_seconds", |h| &h.hold_seconds).clone();
            gauge.lasted = Some((lasted, std::time::Instant::now()));
            gauge
        }
        #[cfg(not(feature = "metrics"))]
        Gauge {}
    }

    /// A client's live connection, until dropped.
    pub(crate) fn connected() -> Gauge {
        describe();
        #[cfg(feature = "metrics")]
        return Gauge::raise(&metrics::gauge!("zoolock_connected"));
        #[cfg(not(feature = "metrics"))]
        Gauge {}
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

/// A grant after `waited`.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn acquired(labels: &Labels<'_>, waited: Duration) {
    #[cfg(feature = "metrics")]
    {
        labels.counter("zoolock_acquires_total", |h| &h.acquires).increment(1);
        labels.histogram("zoolock_acquire_wait_seconds", |h| &h.wait).record(waited.as_secs_f64());
    }
}

/// An acquire that ended at its deadline.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn timed_out(labels: &Labels<'_>) {
    #[cfg(feature = "metrics")]
    labels.counter("zoolock_acquire_timeouts_total", |h| &h.timeouts).increment(1);
}

/// A hold told `Suspended`.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn suspended(labels: &Labels<'_>) {
    #[cfg(feature = "metrics")]
    labels.counter("zoolock_holds_suspended_total", |h| &h.suspended).increment(1);
}

/// A hold told `Lost`.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn lost(labels: &Labels<'_>) {
    #[cfg(feature = "metrics")]
    labels.counter("zoolock_holds_lost_total", |h| &h.lost).increment(1);
}

/// An abandoned node that could not be deleted.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn cleanup_failed(labels: &Labels<'_>) {
    #[cfg(feature = "metrics")]
    labels.counter("zoolock_cleanup_failures_total", |h| &h.cleanup_failures).increment(1);
}

/// A participant of an election started or stopped leading (under its
/// policy): `zoolock_is_leader` follows, and the change is counted.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn leading(labels: &Labels<'_>, leads: bool) {
    #[cfg(feature = "metrics")]
    {
        labels.counter("zoolock_leadership_changes_total", |h| &h.leadership_changes).increment(1);
        labels.gauge("zoolock_is_leader", |h| &h.is_leader).set(if leads { 1.0 } else { 0.0 });
    }
}

/// A session started after an expiry.
pub(crate) fn renewed() {
    #[cfg(feature = "metrics")]
    metrics::counter!("zoolock_session_renewals_total").increment(1);
}

/// The opcodes whose `zoolock_request_seconds` series a client keeps.
#[cfg(feature = "metrics")]
const TIMED_OPS: usize = 21;

/// A client's `zoolock_request_seconds` series, one per operation, each
/// registered on its first sample (as a lock's [`Series`]).
#[derive(Debug, Default)]
pub(crate) struct RequestSeries {
    #[cfg(feature = "metrics")]
    by_op: [OnceLock<metrics::Histogram>; TIMED_OPS],
}

impl RequestSeries {
    /// An answered request: one sample of `zoolock_request_seconds`,
    /// labelled `op` with ZooKeeper's name of its opcode ([`OpCode::name`]).
    /// The opcodes a client sends have static keys, registered once; any
    /// other (a request built with `Op::from_request`) is registered by
    /// name at each sample.
    ///
    /// [`OpCode::name`]: crate::sans_io::wire::OpCode::name
    #[cfg(feature = "metrics")]
    pub(crate) fn answered(&self, timing: &zoolock_core::RequestTiming) {
        use metrics::{Histogram, histogram};
        use zoolock_core::wire::OpCode;
        const NAME: &str = "zoolock_request_seconds";
        let latency = timing.latency().as_secs_f64();
        let (slot, register): (usize, fn() -> Histogram) = match timing.op {
            OpCode::CREATE => (0, || histogram!(NAME, "op" => "create")),
            OpCode::CREATE2 => (1, || histogram!(NAME, "op" => "create2")),
            OpCode::CREATE_CONTAINER => (2, || histogram!(NAME, "op" => "createContainer")),
            OpCode::CREATE_TTL => (3, || histogram!(NAME, "op" => "createTTL")),
            OpCode::DELETE => (4, || histogram!(NAME, "op" => "delete")),
            OpCode::EXISTS => (5, || histogram!(NAME, "op" => "exists")),
            OpCode::GET_DATA => (6, || histogram!(NAME, "op" => "getData")),
            OpCode::SET_DATA => (7, || histogram!(NAME, "op" => "setData")),
            OpCode::GET_ACL => (8, || histogram!(NAME, "op" => "getACL")),
            OpCode::SET_ACL => (9, || histogram!(NAME, "op" => "setACL")),
            OpCode::GET_CHILDREN => (10, || histogram!(NAME, "op" => "getChildren")),
            OpCode::GET_CHILDREN2 => (11, || histogram!(NAME, "op" => "getChildren2")),
            OpCode::SYNC => (12, || histogram!(NAME, "op" => "sync")),
            OpCode::PING => (13, || histogram!(NAME, "op" => "ping")),
            OpCode::MULTI => (14, || histogram!(NAME, "op" => "multi")),
            OpCode::MULTI_READ => (15, || histogram!(NAME, "op" => "multiRead")),
            OpCode::CHECK_WATCHES => (16, || histogram!(NAME, "op" => "checkWatches")),
            OpCode::REMOVE_WATCHES => (17, || histogram!(NAME, "op" => "removeWatches")),
            OpCode::SET_WATCHES => (18, || histogram!(NAME, "op" => "setWatches")),
            OpCode::SASL => (19, || histogram!(NAME, "op" => "sasl")),
            OpCode::CLOSE_SESSION => (20, || histogram!(NAME, "op" => "closeSession")),
            op => return histogram!(NAME, "op" => op.name().unwrap_or("unknown")).record(latency),
        };
        match self.by_op.get(slot) {
            Some(series) => series.get_or_init(register).record(latency),
            None => register().record(latency),
        }
    }
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

    /// The opcodes whose series a client keeps.
    const KEPT: [OpCode; super::TIMED_OPS] = [
        OpCode::CREATE,
        OpCode::CREATE2,
        OpCode::CREATE_CONTAINER,
        OpCode::CREATE_TTL,
        OpCode::DELETE,
        OpCode::EXISTS,
        OpCode::GET_DATA,
        OpCode::SET_DATA,
        OpCode::GET_ACL,
        OpCode::SET_ACL,
        OpCode::GET_CHILDREN,
        OpCode::GET_CHILDREN2,
        OpCode::SYNC,
        OpCode::PING,
        OpCode::MULTI,
        OpCode::MULTI_READ,
        OpCode::CHECK_WATCHES,
        OpCode::REMOVE_WATCHES,
        OpCode::SET_WATCHES,
        OpCode::SASL,
        OpCode::CLOSE_SESSION,
    ];

    /// Every opcode is labelled with wire's name for it, whether its key is
    /// one of the static ones or built; a kept series is registered once.
    #[test]
    fn the_op_label_is_the_opcode_name() {
        let keys = Keys::default();
        let seen = keys.0.clone();
        let ops: Vec<OpCode> = (-20..200).map(OpCode).filter(|op| op.name().is_some()).collect();
        let series = super::RequestSeries::default();
        metrics::with_local_recorder(&keys, || {
            for &op in &ops {
                // Twice: the second sample reuses the first's series.
                for _ in 0..2 {
                    series.answered(&RequestTiming { op, sent: Instant::ZERO, answered: Instant::from_millis(1) });
                }
            }
        });
        let seen = seen.lock().unwrap();
        let mut seen = seen.iter();
        for op in &ops {
            let key = seen.next().expect("a registration per op");
            assert_eq!(key.name(), "zoolock_request_seconds");
            let labels: Vec<_> = key.labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
            assert_eq!(labels, [("op".to_owned(), op.name().unwrap().to_owned())], "{op:?}");
            if !KEPT.contains(op) {
                // Registered again for the second sample.
                assert_eq!(seen.next(), Some(key), "{op:?}");
            }
        }
        assert_eq!(seen.next(), None);
    }
}
