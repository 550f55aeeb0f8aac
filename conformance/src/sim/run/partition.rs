//! Two faults of issue 36: a server cut off from the quorum that keeps
//! answering its clients (an isolated connection of the model as a
//! follower, `zoolock_model`'s `isolation.rs`), and a client frozen past its
//! session (a stopped process: no input, no timer, until it resumes).

use super::*;

/// Tries before an isolation or a freeze that found no holder gives up
/// (every 200 ms, as outside deletes).
const MAX_TRIES: u32 = 50;

impl Sim {
    /// Clients with a hold that reads `Held` now, on a live connection,
    /// not frozen: the ones the two faults are aimed at. Not one whose held
    /// node was deleted from outside while it holds it: the news accounting
    /// of outside deletes (`faults.rs`) assumes a server that reaches the
    /// leader and a client that reacts in time.
    fn holders(&self) -> Vec<usize> {
        (0..self.clients.len())
            .filter(|&i| {
                let c = &self.clients[i];
                let bound = c
                    .link
                    .as_ref()
                    .is_some_and(|l| self.model.session_of(l.conn) == Some(c.client.session().session_id()));
                let deleted = c.tasks.iter().flat_map(|t| &t.holds).any(|h| self.outside_deleted.contains_key(&h.node));
                bound
                    && !deleted
                    && !self.is_frozen(i)
                    && self.reads_held(i)
                    && c.tasks.iter().any(|t| !t.holds.is_empty())
            })
            .collect()
    }

    /// Puts `fault` off for 200 ms (no holder to aim it at), at most
    /// [`MAX_TRIES`] times.
    fn retry(&mut self, tries: u32, fault: Fault) {
        if tries < MAX_TRIES {
            let at = self.now + Duration::from_millis(200);
            let pos = self.faults.iter().position(|(t, _)| *t > at).unwrap_or(self.faults.len());
            self.faults.insert(pos, (at, fault));
        }
    }

    /// The server of a holder's connection loses the leader for `d`: it
    /// heals then, unless its follower gave up first (`syncLimit ×
    /// tickTime`) and closed the connection.
    pub(super) fn isolate(&mut self, d: Duration, tries: u32) {
        let holders = self.holders();
        if holders.is_empty() {
            self.retry(tries, Fault::Isolate(d, tries + 1));
            return;
        }
        let i = holders[below(&mut self.rng, holders.len() as u64) as usize];
        let Some(conn) = self.clients[i].link.as_ref().map(|l| l.conn) else { return };
        if !self.model.isolate(self.now, conn) {
            return;
        }
        self.report.isolations += 1;
        self.log(|| format!("c{i}'s server ({conn:?}) is cut off from the leader for {d:?}"));
        // Its holders keep working through it (a hold longer than the
        // session is where the fault bites): none lets go before it ends,
        // unless told its hold is lost.
        let until = self.now + d;
        for t in self.clients[i].tasks.iter_mut().filter(|t| !t.holds.is_empty()) {
            t.next_action = t.next_action.max(until);
        }
        let at = self.now + d;
        let pos = self.faults.iter().position(|(t, _)| *t > at).unwrap_or(self.faults.len());
        self.faults.insert(pos, (at, Fault::Heal(i, conn)));
    }

    pub(super) fn heal(&mut self, i: usize, conn: ConnId) {
        if self.model.heal(self.now, conn) {
            self.log(|| format!("c{i}'s server ({conn:?}) reaches the leader again"));
            self.drain_model();
        }
    }

    /// A holder's process stops for `d` (longer than its session): no
    /// input reaches it and no timer fires until it resumes; what it sent
    /// is on its way, what the server sends waits.
    pub(super) fn freeze(&mut self, d: Duration, tries: u32) {
        let holders = self.holders();
        if holders.is_empty() {
            self.retry(tries, Fault::Freeze(d, tries + 1));
            return;
        }
        let i = holders[below(&mut self.rng, holders.len() as u64) as usize];
        self.clients[i].frozen_until = self.now + d;
        self.clients[i].resume_pending = true;
        self.report.freezes += 1;
        self.log(|| format!("c{i} is frozen for {d:?}"));
    }

    /// Whether client `i` is stopped now.
    pub(super) fn is_frozen(&self, i: usize) -> bool {
        self.now < self.clients[i].frozen_until
    }

    /// The instant a stopped client takes up something due at `t`.
    pub(super) fn after_freeze(&self, i: usize, t: Instant) -> Instant {
        t.max(self.clients[i].frozen_until)
    }

    /// Client `i` resumes: before it gets any input, its holds are judged
    /// (the oracles run after this step) by the lease at this instant.
    pub(super) fn resume(&mut self, i: usize) {
        self.clients[i].resume_pending = false;
        let holding =
            self.clients[i].counts() && self.clients[i].tasks.iter().any(|t| !t.suspended && !t.holds.is_empty());
        let lease = self.clients[i].client.session().lease();
        if holding {
            self.report.resumed_holding += 1;
        }
        self.log(|| format!("c{i} resumes (holding by its events: {holding}; lease {lease:?})"));
    }

    /// A reset of a frozen client's connection: the server learns at once,
    /// the bytes in flight are gone, and the client learns when it resumes.
    pub(super) fn reset_frozen(&mut self, i: usize) {
        let Some(link) = self.clients[i].link.as_mut() else { return };
        let conn = link.conn;
        link.up.clear();
        link.to_model.clear();
        link.down.clear();
        let now = self.now;
        link.down.push_back((now, Down::Close));
        link.pushed += 1;
        self.model.disconnect(now, conn);
        self.drain_model();
    }
}
