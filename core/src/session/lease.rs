//! The session's lease: the instant past which no hold on the session may
//! read `Held`, and the quorum confirmation that bounds it while anything is
//! held. ARCHITECTURE.md §7 derives the rule from ZooKeeper's; in short:
//!
//! - A server answers its own clients' pings, so a follower cut off from the
//!   quorum goes on answering them for up to syncLimit × tickTime. Only the
//!   leader expires sessions, from the touches followers relay in their
//!   replies to its pings (every tickTime/2), and at the earliest a session
//!   timeout after the last touch it processed.
//! - A follower forwards `sync` and every write to the leader, on the same
//!   stream as its ping replies. So once the reply to such a request sent at
//!   `s` arrives, every frame of this client known to have *reached the
//!   server* at or before `s − tickTime/2 − tickTime/8` (its own reply, or
//!   a later frame's, had arrived by then: a connection is in order) has
//!   reached the leader as a touch, and the leader cannot expire the
//!   session before that frame's send time plus the session timeout. (A
//!   frame's send time alone says nothing of when it reached the server: a
//!   link that stalls delivers it late, just before the request, and the
//!   server may lose the leader before its next relay.)
//! - A handshake that succeeds was answered after the leader created or
//!   revalidated (touched) the session.
//!
//! The lease is the earlier of two bounds: the local one (two thirds of the
//! timeout after the newest answer from the connected server, after which
//! the session drops the connection anyway), and, while confirming, the
//! quorum one (the newest instant the leader is known to have a touch from,
//! plus the session timeout, less a twentieth of it for clock-rate error).

use alloc::collections::VecDeque;
use core::time::Duration;

use crate::time::Instant;

/// Why holds on a session read `Suspended`: the connection went, the
/// connected server fell silent, or the quorum stopped confirming the
/// session. Says which rule a [`SessionLease`] lapses by, too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Suspension {
    /// The connection dropped (closed by the server, a read or write error,
    /// a failed dial).
    Disconnected,
    /// Nothing was heard from the connected server for two thirds of the
    /// session timeout (the server, the network or this process stalled).
    ServerSilent,
    /// The quorum did not confirm the session in time: the connected
    /// server may be cut off from the leader, which may expire the session
    /// while that server still answers pings.
    QuorumUnconfirmed,
    /// The connected server left the ensemble's membership (a reconfig, or
    /// [`Session::update_hosts`](super::Session::update_hosts)): the
    /// session moves to a remaining member.
    ServerRemoved,
}

impl Suspension {
    /// A short label, for logs and metrics.
    pub fn label(self) -> &'static str {
        match self {
            Suspension::Disconnected => "disconnected",
            Suspension::ServerSilent => "server silent",
            Suspension::QuorumUnconfirmed => "quorum unconfirmed",
            Suspension::ServerRemoved => "server removed",
        }
    }
}

impl core::fmt::Display for Suspension {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.label())
    }
}

/// The session's lease ([`Session::lease`](super::Session::lease)): no hold
/// on the session may read `Held` at or after `until`. Judge it against the
/// same monotonic clock the session's `now` comes from, at the moment a
/// hold is read: it stays true while the drive loop is not running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLease {
    /// The deadline; `None` when nothing vouches for the session (no answer
    /// yet, or the session ended): no hold reads `Held`.
    pub until: Option<Instant>,
    /// Why holds read `Suspended` once it has passed.
    pub lapse: Suspension,
}

impl SessionLease {
    /// A lease nothing vouches for.
    pub const NONE: SessionLease = SessionLease { until: None, lapse: Suspension::Disconnected };

    /// Whether a hold may read `Held` at `now`.
    pub fn is_valid(&self, now: Instant) -> bool {
        self.until.is_some_and(|until| now < until)
    }
}

/// The pure rules of the quorum lease, from the negotiated timeout `t` and
/// the servers' tick `tick`.
pub(crate) mod rule {
    use super::*;

    /// The tick assumed when none is configured: the largest tickTime a
    /// server with the default `minSessionTimeout` (2 × tickTime) grants `t`
    /// with.
    pub(crate) fn tick(t: Duration, configured: Option<Duration>) -> Duration {
        configured.unwrap_or(t / 2)
    }

    /// How long before a leader-answered request's send time a frame must
    /// have been sent to be known relayed to the leader: the leader's ping
    /// period (tick/2), plus an eighth of a tick for the period's jitter and
    /// the links' delays.
    pub(crate) fn lookback(tick: Duration) -> Duration {
        tick / 2 + tick / 8
    }

    /// The quorum bound: the leader cannot expire the session before
    /// `touch + t`; a twentieth of `t` is kept for clock-rate error.
    pub(crate) fn deadline(touch: Instant, t: Duration) -> Instant {
        touch + (t - t / 20)
    }

    /// One confirmation per sixth of the timeout while holding.
    pub(crate) fn interval(t: Duration) -> Duration {
        t / 6
    }

    /// A confirmation unanswered this long after it was sent, once the
    /// quorum bound has passed, drops the connection: the server cannot
    /// reach the leader, another server may.
    pub(crate) fn overdue(sent: Instant, t: Duration) -> Instant {
        sent + t / 3
    }

    /// Frames sent closer together than this share one recorded touch.
    pub(crate) fn grain(t: Duration) -> Duration {
        t / 48
    }
}

/// Recorded touches older than the newest this many are dropped: at one
/// per [`rule::grain`] that covers more than two session timeouts.
const MAX_TOUCHES: usize = 128;

/// What the session knows of the leader's view of it, and the confirmation
/// schedule.
#[derive(Debug, Default)]
pub(super) struct QuorumClock {
    /// Send instants of recent frames (each touches the session on the
    /// server that reads it), oldest first, one per grain, each with the
    /// instant a reply showed it had reached the server (`None`: not yet).
    touches: VecDeque<(Instant, Option<Instant>)>,
    /// The newest instant the leader is known to have a touch from.
    quorum: Option<Instant>,
    /// Something is held: confirm.
    confirming: bool,
    /// The confirmation in flight, by its send time.
    in_flight: Option<Instant>,
    /// When the next confirmation is due (while confirming and none is in
    /// flight).
    next_due: Instant,
}

impl QuorumClock {
    /// A frame went out at `now`.
    pub(super) fn touched(&mut self, now: Instant, t: Duration) {
        if self.touches.back().is_some_and(|&(last, _)| now < last + rule::grain(t)) {
            return;
        }
        if self.touches.len() >= MAX_TOUCHES {
            self.touches.pop_front();
        }
        self.touches.push_back((now, None));
    }

    /// A reply to a frame sent at `sent` arrived at `now`: that frame, and
    /// every frame sent before it on this connection, reached the server.
    pub(super) fn arrived(&mut self, sent: Instant, now: Instant) {
        for touch in self.touches.iter_mut().rev().skip_while(|(at, _)| *at > sent) {
            if touch.1.is_some() {
                break;
            }
            touch.1 = Some(now);
        }
    }

    /// The connection went: frames not known to have reached the server
    /// may never have.
    pub(super) fn disconnected(&mut self) {
        self.touches.retain(|(_, arrived)| arrived.is_some());
    }

    /// The leader touched the session itself at or after `at` (a handshake).
    pub(super) fn leader_touched(&mut self, at: Instant) {
        self.quorum = Some(self.quorum.map_or(at, |q| q.max(at)));
    }

    /// The leader answered a request sent at `sent`: every touch known to
    /// have reached the server a lookback before it has reached the leader.
    pub(super) fn leader_answered(&mut self, sent: Instant, tick: Duration) {
        let Some(limit) = sent.checked_sub(rule::lookback(tick)) else { return };
        let relayed = self.touches.iter().rposition(|&(_, arrived)| arrived.is_some_and(|a| a <= limit));
        if let Some((i, &(touch, _))) = relayed.and_then(|i| Some((i, self.touches.get(i)?))) {
            self.leader_touched(touch);
            // Older touches can never beat this one.
            self.touches.drain(..i);
        }
    }

    /// The newest instant the leader is known to have a touch from.
    pub(super) fn confirmed(&self) -> Option<Instant> {
        self.quorum
    }

    pub(super) fn confirming(&self) -> bool {
        self.confirming
    }

    /// Turns confirming on or off at `now`. Turned on, the first
    /// confirmation goes out at once if the quorum bound would lapse within
    /// two intervals, else one interval later: a hold released sooner (an
    /// uncontended lock cycle) costs no request.
    pub(super) fn set_confirming(&mut self, now: Instant, on: bool, t: Duration) {
        if on && !self.confirming {
            let soon = now + rule::interval(t) * 2;
            let lapsing = self.deadline(t).is_none_or(|d| d <= soon);
            self.next_due = if lapsing { now } else { now + rule::interval(t) };
        }
        self.confirming = on;
    }

    /// The quorum bound of the lease (`None`: nothing confirmed yet).
    pub(super) fn deadline(&self, t: Duration) -> Option<Instant> {
        self.quorum.map(|q| rule::deadline(q, t))
    }

    /// When the next confirmation is due (none in flight), or when the one
    /// in flight is overdue; `None` while not confirming.
    pub(super) fn next_timer(&self, t: Duration) -> Option<Instant> {
        if !self.confirming {
            return None;
        }
        Some(match self.in_flight {
            None => self.next_due,
            Some(sent) => self.drop_at(sent, t),
        })
    }

    fn drop_at(&self, sent: Instant, t: Duration) -> Instant {
        let overdue = rule::overdue(sent, t);
        self.deadline(t).map_or(overdue, |d| d.max(overdue))
    }

    /// Whether a confirmation should go out at `now`.
    pub(super) fn due(&self, now: Instant) -> bool {
        self.confirming && self.in_flight.is_none() && now >= self.next_due
    }

    /// Whether the confirmation in flight is overdue at `now`.
    pub(super) fn is_overdue(&self, now: Instant, t: Duration) -> bool {
        self.confirming && self.in_flight.is_some_and(|sent| now >= self.drop_at(sent, t))
    }

    pub(super) fn sent(&mut self, now: Instant, t: Duration) {
        self.in_flight = Some(now);
        self.next_due = now + rule::interval(t);
    }

    /// The confirmation in flight was answered, or lost with its connection.
    pub(super) fn settled(&mut self) {
        self.in_flight = None;
    }
}

/// The lease and the confirmations, as the session runs them.
impl super::Session {
    /// The session's lease: no hold on this session may read `Held` at or
    /// after its `until`, judged against the caller's clock when the hold
    /// is read (so a process resumed from a pause reads it lapsed before
    /// its loop has run). It is the earlier of two bounds:
    ///
    /// - two thirds of the timeout after [`Session::confirmed_at`](Self::confirmed_at) (the
    ///   connected server's newest answer), when the session would drop
    ///   the connection anyway;
    /// - while confirming ([`Session::set_confirming`](Self::set_confirming)), the session timeout
    ///   (less a twentieth) after [`Session::quorum_confirmed_at`](Self::quorum_confirmed_at): the
    ///   leader cannot expire the session before then.
    ///
    /// Moves only on inputs; `None` before the first answer and once the
    /// session has ended.
    pub fn lease(&self) -> SessionLease {
        if self.is_ended() {
            return SessionLease::NONE;
        }
        let t = self.timeout();
        let local = self.confirmed.map(|c| c + t * 2 / 3);
        let mut lease = SessionLease { until: local, lapse: Suspension::ServerSilent };
        if self.quorum.confirming() {
            match self.quorum.deadline(t) {
                None => lease = SessionLease { until: None, lapse: Suspension::QuorumUnconfirmed },
                Some(q) if local.is_none_or(|l| q < l) => {
                    lease = SessionLease { until: Some(q), lapse: Suspension::QuorumUnconfirmed }
                }
                Some(_) => {}
            }
        }
        lease
    }

    /// Why the last connection went (the reason holds read `Suspended`
    /// while disconnected).
    pub fn suspension(&self) -> Suspension {
        self.suspension
    }

    /// The newest instant the leader is known to have a touch of this
    /// session from (a handshake, or a frame sent long enough before a
    /// request the leader answered; see [`Session::lease`](Self::lease)). `None` before.
    pub fn quorum_confirmed_at(&self) -> Option<Instant> {
        self.quorum.confirmed()
    }

    /// Whether the session confirms the quorum now.
    pub fn is_confirming(&self) -> bool {
        self.quorum.confirming()
    }

    /// Turns quorum confirmation on while anything is held (the client
    /// calls it after every input), off when nothing is: a `sync` every
    /// sixth of the timeout, one at a time; the first at once when the
    /// quorum bound would lapse within two of those, else one later.
    /// Without [`SessionConfig::confirm_quorum`](super::SessionConfig::confirm_quorum) it stays off. No request
    /// is sent while it is off.
    pub fn set_confirming(&mut self, now: Instant, on: bool) {
        let on = on && self.config.confirm_quorum;
        if on == self.quorum.confirming() {
            return;
        }
        self.quorum.set_confirming(now, on, self.timeout());
        if on {
            self.confirm_if_due(now);
        }
    }

    pub(super) fn tick(&self) -> Duration {
        rule::tick(self.timeout(), self.config.tick_time)
    }

    /// Sends a confirmation when one is due.
    pub(super) fn confirm_if_due(&mut self, now: Instant) {
        if self.serving() && self.quorum.due(now) {
            let sync =
                zoolock_wire::Request::Sync(zoolock_wire::PathRequest { path: alloc::string::String::from("/") });
            self.send(now, sync, super::Purpose::Confirm);
            self.quorum.sent(now, self.timeout());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zoolock_wire::OpCode;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    const T: Duration = Duration::from_secs(4);
    const TICK: Duration = Duration::from_secs(2);

    #[test]
    fn an_answer_vouches_only_for_touches_a_lookback_before_it() {
        let mut q = QuorumClock::default();
        for ms in [0, 500, 1000, 1400, 1600, 2000] {
            q.touched(at(ms), T);
            q.arrived(at(ms), at(ms));
        }
        // Lookback 1.25 s: a request sent at 2.0 s vouches for 0.5 s.
        q.leader_answered(at(2000), TICK);
        assert_eq!(q.confirmed(), Some(at(500)));
        assert_eq!(q.deadline(T), Some(at(500 + 3800)));
        // Too early to vouch for anything more.
        q.leader_answered(at(1500), TICK);
        assert_eq!(q.confirmed(), Some(at(500)));
        q.leader_answered(at(2700), TICK);
        assert_eq!(q.confirmed(), Some(at(1400)));
    }

    #[test]
    fn an_answer_vouches_only_for_touches_known_to_have_reached_the_server_a_lookback_before_it() {
        let mut q = QuorumClock::default();
        q.touched(at(0), T);
        q.arrived(at(0), at(20));
        // A ping sent at 1.0 s on a link that stalls: it reaches the server
        // (its reply arrives) only at 3.0 s, just before the sync sent then.
        q.touched(at(1000), T);
        q.touched(at(3000), T);
        q.arrived(at(1000), at(3020));
        q.leader_answered(at(3000), TICK);
        // Sent 2 s before the sync, but not known to have arrived 1.25 s
        // before it: the server may not have relayed it yet.
        assert_eq!(q.confirmed(), Some(at(0)));
        q.arrived(at(3000), at(3030));
        q.leader_answered(at(4275), TICK);
        assert_eq!(q.confirmed(), Some(at(1000)));
    }

    #[test]
    fn touches_not_known_to_have_arrived_are_forgotten_with_their_connection() {
        let mut q = QuorumClock::default();
        q.touched(at(0), T);
        q.arrived(at(0), at(10));
        q.touched(at(500), T);
        q.disconnected();
        q.touched(at(3000), T);
        q.arrived(at(3000), at(3010));
        // The frame of 0.5 s went with the old connection: the reply of one
        // sent on the new connection says nothing of it.
        assert_eq!(q.touches.iter().map(|(t, _)| *t).collect::<alloc::vec::Vec<_>>(), [at(0), at(3000)]);
    }

    #[test]
    fn an_answer_before_any_old_enough_touch_vouches_for_nothing() {
        let mut q = QuorumClock::default();
        q.touched(at(1000), T);
        q.leader_answered(at(1100), TICK);
        assert_eq!(q.confirmed(), None);
        q.leader_touched(at(900));
        assert_eq!(q.confirmed(), Some(at(900)));
    }

    #[test]
    fn touches_within_a_grain_share_one_entry_and_are_bounded() {
        let mut q = QuorumClock::default();
        for ms in 0..10_000 {
            q.touched(at(ms), T);
        }
        assert!(q.touches.len() <= MAX_TOUCHES);
        assert!(q.touches.iter().zip(q.touches.iter().skip(1)).all(|(a, b)| b.0 >= a.0 + rule::grain(T)));
    }

    #[test]
    fn confirms_every_sixth_of_the_timeout_one_at_a_time_and_only_while_confirming() {
        let mut q = QuorumClock::default();
        assert!(!q.due(at(0)));
        assert_eq!(q.next_timer(T), None);
        q.set_confirming(at(0), true, T);
        assert!(q.due(at(0)), "nothing confirmed yet: at once");
        q.sent(at(0), T);
        assert!(!q.due(at(5000)), "one in flight at a time");
        q.settled();
        assert!(!q.due(at(666)));
        assert!(q.due(at(667)));
        assert_eq!(q.next_timer(T), Some(at(0) + T / 6));
    }

    #[test]
    fn a_hold_that_starts_with_a_fresh_bound_confirms_an_interval_later() {
        let mut q = QuorumClock::default();
        q.leader_touched(at(1000));
        // Bound 4.8 s: more than two intervals (1.33 s) after 2 s.
        q.set_confirming(at(2000), true, T);
        assert!(!q.due(at(2666)));
        assert!(q.due(at(2667)));
        // Off before then: nothing is ever sent; on again near the bound: at once.
        q.set_confirming(at(2100), false, T);
        assert!(!q.due(at(9000)));
        q.set_confirming(at(3500), true, T);
        assert!(q.due(at(3500)));
    }

    #[test]
    fn an_unanswered_confirmation_is_overdue_at_the_later_of_the_bound_and_a_third_of_the_timeout() {
        let mut q = QuorumClock::default();
        q.set_confirming(at(0), true, T);
        q.leader_touched(at(0));
        q.sent(at(100), T);
        // Bound 3.8 s, a third of the timeout after sending 1.433 s.
        assert!(!q.is_overdue(at(3799), T));
        assert!(q.is_overdue(at(3800), T));
        let mut fresh = QuorumClock::default();
        fresh.set_confirming(at(0), true, T);
        fresh.sent(at(100), T);
        assert!(!fresh.is_overdue(at(1433), T));
        assert!(fresh.is_overdue(at(1434), T));
    }

    #[test]
    fn writes_and_sync_are_answered_by_the_leader_reads_are_not() {
        for op in [OpCode::CREATE2, OpCode::DELETE, OpCode::SET_DATA, OpCode::MULTI, OpCode::SYNC] {
            assert!(op.is_forwarded_to_leader(), "{op:?}");
        }
        for op in [OpCode::GET_DATA, OpCode::GET_CHILDREN2, OpCode::EXISTS, OpCode::PING, OpCode::MULTI_READ] {
            assert!(!op.is_forwarded_to_leader(), "{op:?}");
        }
    }

    #[test]
    fn the_lease_is_valid_only_before_its_deadline() {
        assert!(!SessionLease::NONE.is_valid(at(0)));
        let lease = SessionLease { until: Some(at(10)), lapse: Suspension::QuorumUnconfirmed };
        assert!(lease.is_valid(at(9)));
        assert!(!lease.is_valid(at(10)));
    }
}
