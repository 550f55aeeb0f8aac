//! Sessions: ids, passwords, negotiated timeouts and expiry deadlines
//! (`SessionTrackerImpl`, without its tick buckets: a session expires exactly
//! one negotiated timeout after the last packet it sent, or, on a follower,
//! after the relay that last brought the leader a touch of it).

use std::collections::BTreeMap;
use std::time::Duration;

use zoolock_core::Instant;
use zoolock_wire::PASSWORD_LEN;

use super::ConnId;

/// One live session.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Negotiated timeout in ms.
    pub(crate) timeout_ms: i32,
    /// Expires when `now` reaches this.
    pub(crate) deadline: Instant,
    /// The connection currently bound to it.
    pub(crate) conn: Option<ConnId>,
    /// A follower's: when the oldest touch the leader has not been told of
    /// arrived (`isolation.rs`).
    pub(crate) unrelayed: Option<Instant>,
}

/// Every live session.
#[derive(Debug, Clone)]
pub(crate) struct Sessions {
    live: BTreeMap<i64, Session>,
    next: i64,
    base: i64,
    seed: u64,
}

impl Sessions {
    pub(crate) fn new(base: i64, seed: u64) -> Sessions {
        Sessions { live: BTreeMap::new(), next: 0, base, seed }
    }

    /// Creates a session and returns its id.
    pub(crate) fn create(&mut self, now: Instant, timeout_ms: i32, conn: ConnId) -> i64 {
        self.next += 1;
        let id = self.base.wrapping_add(self.next);
        self.live
            .insert(id, Session { timeout_ms, deadline: deadline(now, timeout_ms), conn: Some(conn), unrelayed: None });
        id
    }

    /// The password of session `id`: `generatePasswd` is a function of a
    /// server secret and the id, so a password stays valid for that id only.
    pub(crate) fn password(&self, id: i64) -> [u8; PASSWORD_LEN] {
        let mut state = self.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut out = [0u8; PASSWORD_LEN];
        for chunk in out.chunks_exact_mut(8) {
            chunk.copy_from_slice(&splitmix64(&mut state).to_be_bytes());
        }
        out
    }

    pub(crate) fn get(&self, id: i64) -> Option<&Session> {
        self.live.get(&id)
    }

    pub(crate) fn get_mut(&mut self, id: i64) -> Option<&mut Session> {
        self.live.get_mut(&id)
    }

    pub(crate) fn remove(&mut self, id: i64) -> Option<Session> {
        self.live.remove(&id)
    }

    /// Any packet from the session pushes its expiry back.
    pub(crate) fn touch(&mut self, id: i64, now: Instant) {
        if let Some(s) = self.live.get_mut(&id) {
            s.deadline = deadline(now, s.timeout_ms);
        }
    }

    /// A follower's touch: recorded until the next relay to the leader.
    pub(crate) fn touch_later(&mut self, id: i64, now: Instant) {
        if let Some(s) = self.live.get_mut(&id) {
            s.unrelayed.get_or_insert(now);
        }
    }

    /// The leader hears at `at` of the touches recorded before it.
    pub(crate) fn relay(&mut self, id: i64, at: Instant) {
        if let Some(s) = self.live.get_mut(&id) {
            s.unrelayed = None;
            s.deadline = s.deadline.max(deadline(at, s.timeout_ms));
        }
    }

    /// Touches of the session the leader has not been told of are lost
    /// (its follower lost the leader).
    pub(crate) fn forget_touches(&mut self, id: i64) {
        if let Some(s) = self.live.get_mut(&id) {
            s.unrelayed = None;
        }
    }

    /// Sessions with touches not relayed yet, and the oldest's arrival.
    pub(crate) fn unrelayed(&self) -> impl Iterator<Item = (i64, Instant)> + '_ {
        self.live.iter().filter_map(|(id, s)| s.unrelayed.map(|at| (*id, at)))
    }

    /// Re-validation on reconnect: the new negotiated timeout applies.
    pub(crate) fn revalidate(&mut self, id: i64, now: Instant, timeout_ms: i32, conn: ConnId) -> bool {
        match self.live.get_mut(&id) {
            Some(s) => {
                s.timeout_ms = timeout_ms;
                s.deadline = deadline(now, timeout_ms);
                s.conn = Some(conn);
                true
            }
            None => false,
        }
    }

    /// Sessions whose deadline has passed.
    pub(crate) fn expired(&self, now: Instant) -> Vec<i64> {
        self.live.iter().filter(|(_, s)| s.deadline <= now).map(|(id, _)| *id).collect()
    }

    /// The earliest expiry.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.live.values().map(|s| s.deadline).min()
    }

    pub(crate) fn ids(&self) -> impl Iterator<Item = i64> + '_ {
        self.live.keys().copied()
    }
}

fn deadline(now: Instant, timeout_ms: i32) -> Instant {
    now + Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0))
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
