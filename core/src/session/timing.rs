//! Request timings (Curator's `OperationTrace`): when each answered request
//! went out and when its reply came in, both from the `now` the session was
//! given, kept for the caller to drain through [`Session::poll_timing`].
//!
//! Recorded only with [`SessionConfig::request_timings`]; off, a reply costs
//! one branch more. On, the send time already kept for every request in
//! flight (the lease needs it) is reused: a reply pushes one 24-byte record
//! onto a queue that stops growing once it reaches the largest burst
//! between two drains, so a caller that drains after every input (as the
//! drive-loop contract has it) allocates nothing per request.

use alloc::collections::VecDeque;
use core::time::Duration;

use zoolock_wire::OpCode;

use super::Session;
use crate::time::Instant;

/// How many timings a session keeps undrained; past it, the oldest go (and
/// are counted by [`Session::timings_dropped`]). Above the in-flight window
/// ([`crate::IN_FLIGHT_WINDOW`]) with room for pings and the session's own
/// requests, so a caller that drains after every input loses none.
pub const TIMINGS_KEPT: usize = 2_048;

/// One answered request: its opcode, when it was sent and when its reply
/// was handled, both on the caller's clock (the `now` of the
/// [`Session::submit`] or input that sent it, and of the
/// [`Session::handle_bytes`] that read the reply).
///
/// What is timed: every request the session sends and reads a reply to,
/// whatever its result code: the caller's own, and the session's (the
/// quorum confirmation's `sync`, `setWatches` after a reconnect, the SASL
/// exchange, the chroot's check, `closeSession`). Pings are timed too, as
/// their own operation ([`OpCode::PING`]): a ping is the server's round trip
/// with no work in it, the baseline the others are read against. Not timed:
/// the handshake (a connection's set-up, not a request), `auth` packets,
/// and requests that never got a reply (failed by a lost connection or the
/// session's end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTiming {
    /// The request's opcode (`create2`, `getChildren2`, `multi`, `ping`,
    /// ...; [`OpCode::name`] gives ZooKeeper's name).
    pub op: OpCode,
    /// When it went out.
    pub sent: Instant,
    /// When its reply was handled.
    pub answered: Instant,
}

impl RequestTiming {
    /// From send to reply.
    pub fn latency(&self) -> Duration {
        self.answered.saturating_duration_since(self.sent)
    }
}

/// The session's undrained timings.
#[derive(Debug, Default)]
pub(super) struct Timings {
    on: bool,
    kept: VecDeque<RequestTiming>,
    dropped: u64,
}

impl Timings {
    pub(super) fn new(on: bool) -> Timings {
        Timings { on, ..Timings::default() }
    }

    /// A reply to `op`, sent at `sent`, handled at `answered`.
    pub(super) fn answered(&mut self, op: OpCode, sent: Instant, answered: Instant) {
        if !self.on {
            return;
        }
        if self.kept.len() >= TIMINGS_KEPT {
            self.kept.pop_front();
            self.dropped += 1;
        }
        self.kept.push_back(RequestTiming { op, sent, answered });
    }
}

impl Session {
    /// The next answered request's timing, oldest first; `None` when there
    /// is none, or when timings are off ([`SessionConfig::request_timings`]).
    /// An output like the others, but independent of them: drain it at any
    /// point of the drain order (after the events is natural). Undrained,
    /// the session keeps the newest [`TIMINGS_KEPT`].
    ///
    /// [`SessionConfig::request_timings`]: super::SessionConfig::request_timings
    #[must_use]
    pub fn poll_timing(&mut self) -> Option<RequestTiming> {
        self.timings.kept.pop_front()
    }

    /// Timings dropped, undrained, because more than [`TIMINGS_KEPT`]
    /// waited at once.
    pub fn timings_dropped(&self) -> u64 {
        self.timings.dropped
    }

    /// Takes over `old`'s undrained timings (a session renewed in its
    /// place, within one input).
    pub(crate) fn inherit_timings(&mut self, old: &mut Session) {
        self.timings.dropped += old.timings.dropped;
        while let Some(t) = old.timings.kept.pop_front() {
            self.timings.answered(t.op, t.sent, t.answered);
        }
    }
}
