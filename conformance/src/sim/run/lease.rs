//! The lease oracle (issue 36): a hold that reads `Held` (its events say
//! held and its session's lease is valid now, as a handle judges it when
//! read) belongs to a session the leader has not expired and cannot have
//! expired yet. Checked after every step, right after a frozen client
//! resumes too, before it gets any input.

use super::*;

impl Sim {
    /// Whether client `i`'s holds read `Held` now, as a handle reads them:
    /// by its events ([`SimClient::counts`]; a task's own `Suspended` is
    /// the caller's to check) and, unless [`SimConfig::judge_lease`] is off,
    /// by its session's lease judged at this instant.
    pub(super) fn reads_held(&self, i: usize) -> bool {
        let c = &self.clients[i];
        c.counts() && (!self.config.judge_lease || c.client.session().lease().is_valid(self.now))
    }

    /// Every hold that reads `Held` is on a session whose leader-side
    /// deadline (the model's: one session timeout after the last touch the
    /// leader got, relayed by the follower or from a handshake) is still
    /// ahead. A session expired by an injected fault (`doomed`: the server
    /// deciding against ZooKeeper's rule) is excused, as everywhere. That
    /// each such hold's node exists, owned by its session, and that no two
    /// overlap is [`Sim::check_exclusion`]'s, over the same holds.
    pub(super) fn check_lease(&mut self) -> Result<(), String> {
        let now = self.now;
        for i in 0..self.clients.len() {
            let c = &self.clients[i];
            let held: Vec<&str> =
                c.tasks.iter().filter(|t| !t.suspended).flat_map(|t| t.holds.iter().map(|h| h.node.as_str())).collect();
            if !c.counts() || held.is_empty() {
                continue;
            }
            let session = c.client.session().session_id();
            let deadline = self.model.session_deadline(session);
            let expired = deadline.is_none_or(|d| d <= now);
            if !self.reads_held(i) {
                // Read Suspended by the lease alone: what the lease is for
                // when the leader has expired the session.
                if expired {
                    self.lease_saves.insert(session);
                }
                continue;
            }
            if expired {
                let lease = c.client.session().lease();
                let leader = match deadline {
                    Some(d) => format!("expires it at {d}"),
                    None => "has expired it".into(),
                };
                return Err(format!(
                    "lease: c{i} reads {held:?} Held at {now} (session 0x{session:x}, lease until {:?}, lapse {}, \
                     quorum confirmed at {:?}) but the leader {leader}",
                    lease.until,
                    lease.lapse,
                    c.client.session().quorum_confirmed_at()
                ));
            }
            if c.link.as_ref().is_some_and(|l| self.model.is_isolated(l.conn)) {
                self.report.held_isolated += 1;
            }
        }
        self.report.lease_saves = self.lease_saves.len();
        Ok(())
    }
}
