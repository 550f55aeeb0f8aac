//! The session's lease as the handles read it: core's
//! [`Session::lease`](zoolock_core::Session::lease), published by the event
//! loop after every turn and judged against the runtime's clock whenever a
//! hold's status is read, so a process resumed from a freeze reads its holds
//! `Suspended` before its loop has run. One owner (core), one atomic load
//! per read.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant as StdInstant};

use zoolock_core::{Instant, Session, SessionLease, Suspension};

/// The published lease: core's deadline as nanoseconds since the loop's
/// origin, plus one (0: nothing vouches for the session), and the reasons.
#[derive(Debug)]
pub(crate) struct LeaseCell {
    origin: StdInstant,
    until: AtomicU64,
    lapse: AtomicU8,
    /// Why the last connection went.
    dropped: AtomicU8,
    /// The session's `confirmed_at`, encoded as `until`.
    heard: AtomicU64,
}

/// An instant as stored: nanoseconds since the origin plus one, 0 for none.
fn encode(at: Option<Instant>) -> u64 {
    at.map_or(0, |u| u.as_nanos().saturating_add(1))
}

fn code(s: Suspension) -> u8 {
    match s {
        Suspension::ServerSilent => 1,
        Suspension::QuorumUnconfirmed => 2,
        Suspension::ServerRemoved => 3,
        _ => 0,
    }
}

fn suspension(code: u8) -> Suspension {
    match code {
        1 => Suspension::ServerSilent,
        2 => Suspension::QuorumUnconfirmed,
        3 => Suspension::ServerRemoved,
        _ => Suspension::Disconnected,
    }
}

impl LeaseCell {
    pub(crate) fn new(origin: StdInstant) -> LeaseCell {
        LeaseCell {
            origin,
            until: AtomicU64::new(0),
            lapse: AtomicU8::new(0),
            dropped: AtomicU8::new(0),
            heard: AtomicU64::new(0),
        }
    }

    /// Publishes core's lease at core time `now`; true when a reader's
    /// answer may have changed in a way no timer of its own catches (the
    /// deadline moved earlier, or a lapsed lease was renewed), so waiters
    /// must be woken.
    pub(crate) fn publish(&self, now: Instant, session: &Session) -> bool {
        self.publish_lease(now, session.lease(), session.suspension(), session.confirmed_at())
    }

    fn publish_lease(&self, now: Instant, lease: SessionLease, dropped: Suspension, heard: Option<Instant>) -> bool {
        self.lapse.store(code(lease.lapse), Ordering::Relaxed);
        self.dropped.store(code(dropped), Ordering::Relaxed);
        self.heard.store(encode(heard), Ordering::Relaxed);
        let new = encode(lease.until);
        let old = self.until.swap(new, Ordering::AcqRel);
        let lapsed = old == 0 || old <= now.as_nanos().saturating_add(1);
        new != old && (new < old || lapsed)
    }

    /// The last instant the server is known to have held the session alive
    /// (the runtime's clock).
    pub(crate) fn heard(&self) -> Option<StdInstant> {
        self.decode(self.heard.load(Ordering::Relaxed))
    }

    fn decode(&self, at: u64) -> Option<StdInstant> {
        (at != 0).then(|| self.origin + Duration::from_nanos(at - 1))
    }

    /// Whether a hold may read `Held` at `now` (the runtime's clock).
    pub(crate) fn is_valid(&self, now: StdInstant) -> bool {
        let until = self.until.load(Ordering::Acquire);
        let now = u64::try_from(now.saturating_duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX);
        until != 0 && now.saturating_add(1) < until
    }

    /// When the lease lapses (the runtime's clock), if it is running.
    pub(crate) fn lapses_at(&self) -> Option<StdInstant> {
        self.decode(self.until.load(Ordering::Acquire))
    }

    /// Why holds read `Suspended` once the lease has lapsed.
    pub(crate) fn lapse(&self) -> Suspension {
        suspension(self.lapse.load(Ordering::Relaxed))
    }

    /// Why the last connection went.
    pub(crate) fn dropped(&self) -> Suspension {
        suspension(self.dropped.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_valid_before_its_deadline_only() {
        let origin = StdInstant::now();
        let cell = LeaseCell::new(origin);
        assert!(!cell.is_valid(origin), "nothing vouches before the first publish");
        let until = Instant::from_millis(100);
        let lease = SessionLease { until: Some(until), lapse: Suspension::QuorumUnconfirmed };
        assert!(
            cell.publish_lease(Instant::ZERO, lease, Suspension::Disconnected, None),
            "a renewed lease wakes waiters"
        );
        assert!(cell.is_valid(origin + Duration::from_millis(99)));
        assert!(!cell.is_valid(origin + Duration::from_millis(100)));
        assert_eq!(cell.lapses_at(), Some(origin + Duration::from_millis(100)));
        assert_eq!(cell.lapse(), Suspension::QuorumUnconfirmed);
        // Extended while valid: the waiters' timers still hold.
        let later = SessionLease { until: Some(Instant::from_millis(200)), ..lease };
        assert!(!cell.publish_lease(Instant::from_millis(50), later, Suspension::Disconnected, None));
        // Moved earlier: wake them.
        assert!(cell.publish_lease(
            Instant::from_millis(60),
            SessionLease::NONE,
            Suspension::ServerSilent,
            Some(Instant::from_millis(7))
        ));
        assert!(!cell.is_valid(origin));
        assert_eq!(cell.lapses_at(), None);
        assert_eq!(cell.dropped(), Suspension::ServerSilent);
        assert_eq!(cell.heard(), Some(origin + Duration::from_millis(7)));
    }
}
