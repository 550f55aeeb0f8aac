//! The model as a follower of a quorum ([`ModelConfig::follower`]): the
//! leader's view of sessions, and connections on a server cut off from the
//! leader that keeps answering its clients.
//!
//! The model is one server, so "the follower" is per connection: an isolated
//! connection is one whose server lost the leader. What ZooKeeper 3.8 does
//! there, and the model with it:
//!
//! * Only the leader expires sessions. A follower records its clients'
//!   packets in a touch table and hands it to the leader in its reply to
//!   each of the leader's pings, every `tickTime / 2` (`Learner.ping`,
//!   `LearnerSessionTracker.snapshot`); the leader touches each session it
//!   lists then (`Leader`'s `LearnerHandler`, `touch`). The model relays at
//!   `phase + k × tick / 2` (the phase drawn from the seed) and expires a
//!   session exactly one timeout after the relay that last touched it (the
//!   leader's buckets round that up to a tick; the model does not, so it
//!   expires as early as the leader could). A handshake is answered after
//!   the leader created or revalidated the session: it touches at once.
//! * An isolated follower answers its clients' pings and reads from its own
//!   view, the tree as it was when it lost the leader (the model keeps a
//!   copy). It forwards writes and `sync` to the leader (`FollowerRequestProcessor`),
//!   so those go unanswered, and so does everything the connection sends
//!   after one of them (a session's requests are answered in order). Pings
//!   are answered even then: ZooKeeper's `CommitProcessor` queues a
//!   session's ping behind its pending writes, so the model is harsher than
//!   the server, which is what a check of a client's lease wants.
//! * Its clients' touches never reach the leader, nor do the ones it had
//!   not relayed yet; nothing the leader does reaches it (notifications,
//!   the session's expiry). Healed, it gets the leader's pings queued
//!   while the link was silent and relays its touch table at once (the
//!   session is touched, if the leader has not expired it, at the instant
//!   the requests it held reach the leader), catches up (the held
//!   notifications go out), then closes the connection if the session
//!   expired meanwhile, and otherwise forwards what it held.
//! * After `syncLimit × tickTime` without the leader it gives up, shuts its
//!   clients' connections and looks for a leader (`Follower`'s
//!   `followLeader` ends): the connection closes, what it held is dropped.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use zoolock_core::Instant;
use zoolock_wire::{OpCode, Xid};

use super::tree::DataTree;
use super::{CloseReason, ConnId, ZkModel};

/// A connection whose server lost the leader.
#[derive(Debug)]
pub(crate) struct Isolation {
    since: Instant,
    /// The server's view: the tree and last zxid when it lost the leader.
    view: DataTree,
    zxid: i64,
    /// Frames waiting for the leader, in order.
    held_in: VecDeque<Bytes>,
    /// What the leader's changes would have sent the connection.
    held_out: BytesMut,
    /// A close the leader decided (the session expired or moved).
    held_close: Option<CloseReason>,
}

impl ZkModel {
    /// The leader's ping period.
    fn relay_period(&self) -> Duration {
        (self.config.tick / 2).max(Duration::from_millis(1))
    }

    /// The first relay strictly after `t`.
    fn next_relay(&self, t: Instant) -> Instant {
        let period = self.relay_period().as_nanos() as u64;
        let phase = self.config.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) % period;
        let t = t.as_nanos();
        let at = if t < phase { phase } else { phase + ((t - phase) / period + 1) * period };
        Instant::ZERO + Duration::from_nanos(at)
    }

    /// A packet of `session` arrived at `now` on a connection that reaches
    /// the leader.
    pub(crate) fn touch(&mut self, session: i64, now: Instant) {
        if self.config.follower {
            self.sessions.touch_later(session, now);
        } else {
            self.sessions.touch(session, now);
        }
    }

    /// The leader's next ping, when a touch waits for it; a connection
    /// whose follower gives up. For [`ZkModel::poll_timeout`].
    pub(crate) fn quorum_timeout(&self) -> Option<Instant> {
        let relay = self.sessions.unrelayed().map(|(_, at)| self.next_relay(at)).min();
        let limit = self.config.tick * self.config.sync_limit;
        let give_up = self.conns.values().filter_map(|c| c.isolated.as_ref()).map(|i| i.since + limit).min();
        relay.into_iter().chain(give_up).min()
    }

    /// Relays due touches and closes connections whose follower gave up.
    pub(crate) fn quorum_timers(&mut self, now: Instant) {
        let due: Vec<(i64, Instant)> = self
            .sessions
            .unrelayed()
            .map(|(id, at)| (id, self.next_relay(at)))
            .filter(|(_, relay)| *relay <= now)
            .collect();
        for (session, at) in due {
            self.sessions.relay(session, at);
        }
        let limit = self.config.tick * self.config.sync_limit;
        let gave_up: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.isolated.as_ref().is_some_and(|i| i.since + limit <= now))
            .map(|(id, _)| *id)
            .collect();
        for conn in gave_up {
            if let Some(c) = self.conns.get_mut(&conn) {
                c.isolated = None;
            }
            self.close(conn, CloseReason::LeaderLost);
        }
    }

    /// Fault injection (a follower only): the server of `conn` loses the
    /// leader. Returns false if there is no such connection with a session,
    /// or it is isolated already.
    pub fn isolate(&mut self, now: Instant, conn: ConnId) -> bool {
        let Some(session) = self.conns.get(&conn).filter(|c| c.isolated.is_none()).and_then(|c| c.session()) else {
            return false;
        };
        self.sessions.forget_touches(session);
        let isolation = Isolation {
            since: now,
            view: self.tree.clone(),
            zxid: self.zxid,
            held_in: VecDeque::new(),
            held_out: BytesMut::new(),
            held_close: None,
        };
        if let Some(c) = self.conns.get_mut(&conn) {
            c.isolated = Some(Box::new(isolation));
        }
        true
    }

    /// Whether `conn`'s server is cut off from the leader.
    pub fn is_isolated(&self, conn: ConnId) -> bool {
        self.conns.get(&conn).is_some_and(|c| c.isolated.is_some())
    }

    /// The leader's expiry deadline of `session` (`None`: no such session).
    pub fn session_deadline(&self, session: i64) -> Option<Instant> {
        self.sessions.get(session).map(|s| s.deadline)
    }

    /// Fault injection: `conn`'s server reaches the leader again (see the
    /// module docs). Returns false if it was not isolated.
    pub fn heal(&mut self, now: Instant, conn: ConnId) -> bool {
        let Some(c) = self.conns.get_mut(&conn) else { return false };
        let Some(isolation) = c.isolated.take() else { return false };
        let session = c.session();
        let Isolation { held_in, held_out, held_close, .. } = *isolation;
        if !held_out.is_empty() {
            c.out.extend_from_slice(&held_out);
            if !c.queued {
                c.queued = true;
                self.writable.push_back(conn);
            }
        }
        if let Some(reason) = held_close {
            self.close(conn, reason);
            return true;
        }
        if let Some(session) = session {
            // The leader's pings, queued while the link was silent, arrive
            // at once; the reply carries the touch table.
            self.sessions.relay(session, now);
            for frame in held_in {
                if self.conns.get(&conn).is_none_or(|c| c.is_closed()) {
                    break;
                }
                self.touch(session, now);
                self.request(now, conn, session, frame);
            }
        }
        true
    }

    /// A frame of `session` on the isolated `conn`: answered from the
    /// server's view, or held.
    pub(crate) fn isolated_frame(&mut self, now: Instant, conn: ConnId, session: i64, frame: Bytes) {
        let head = |at: usize| frame.get(at..at + 4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let (xid, op) = (head(0).map(Xid), head(4).map(OpCode));
        let Some(isolation) = self.conns.get_mut(&conn).and_then(|c| c.isolated.as_mut()) else { return };
        let ping = xid == Some(Xid::PING) || op == Some(OpCode::PING);
        if !ping && (!isolation.held_in.is_empty() || op.is_some_and(OpCode::is_forwarded_to_leader)) {
            isolation.held_in.push_back(frame);
            return;
        }
        // Answered from the server's view: it stands in for the tree while
        // the request runs.
        let Some(mut isolation) = self.conns.get_mut(&conn).and_then(|c| c.isolated.take()) else { return };
        std::mem::swap(&mut self.tree, &mut isolation.view);
        std::mem::swap(&mut self.zxid, &mut isolation.zxid);
        self.answering = Some(conn);
        self.request(now, conn, session, frame);
        self.answering = None;
        std::mem::swap(&mut self.tree, &mut isolation.view);
        std::mem::swap(&mut self.zxid, &mut isolation.zxid);
        if let Some(c) = self.conns.get_mut(&conn).filter(|c| !c.is_closed()) {
            c.isolated = Some(isolation);
        }
    }

    /// Output for `conn` the leader caused while its server is cut off:
    /// held (true), or not isolated (false).
    pub(crate) fn hold_output(&mut self, conn: ConnId, bytes: &[u8]) -> bool {
        if self.answering == Some(conn) {
            return false;
        }
        let Some(isolation) = self.conns.get_mut(&conn).and_then(|c| c.isolated.as_mut()) else { return false };
        isolation.held_out.extend_from_slice(bytes);
        true
    }

    /// A close of `conn` the leader decided while its server is cut off:
    /// held until it heals (true), or not isolated (false).
    pub(crate) fn hold_close(&mut self, conn: ConnId, reason: &CloseReason) -> bool {
        if self.answering == Some(conn) {
            return false;
        }
        let Some(isolation) = self.conns.get_mut(&conn).and_then(|c| c.isolated.as_mut()) else { return false };
        isolation.held_close.get_or_insert_with(|| reason.clone());
        true
    }
}
