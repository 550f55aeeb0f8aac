//! The oracles checked after every step: exclusion, fencing, liveness and
//! hygiene (the shared definitions are in `sim/oracle.rs`).

use super::*;

impl Sim {
    pub(super) fn fence(&mut self, i: usize, k: usize, h: &Hold) -> Result<(), String> {
        if !self.reads_held(i) || self.clients[i].tasks[k].suspended {
            return Ok(());
        }
        // A resized semaphore's leases are not ordered either (its limit is
        // above 1 at times).
        let leases = if self.config.resize { usize::MAX } else { self.config.leases };
        self.fencing.check(&format!("c{i}"), &h.path, &h.node, h.mode, h.token, leases)
    }

    /// Exclusion among every hold that reads `Held` ([`Sim::reads_held`]:
    /// its holder was not told it is in doubt, and its session's lease is
    /// valid) ([`check_exclusion`]); each such hold's node exists in the
    /// model, owned by the holder's current session.
    pub(super) fn check_exclusion(&self) -> Result<(), String> {
        let mut holds = Vec::new();
        let mut leases = Vec::new();
        for (i, c) in self.clients.iter().enumerate() {
            if !self.reads_held(i) {
                continue;
            }
            let session = c.client.session().session_id();
            for (k, t) in c.tasks.iter().enumerate() {
                if t.suspended {
                    continue;
                }
                for h in &t.holds {
                    match self.model.node(&self.server_path(&h.node)) {
                        Some(n) if n.stat.ephemeral_owner == session => {}
                        Some(n) => {
                            return Err(format!(
                                "c{i}.{k} holds {} but the model says its owner is 0x{:x}, not 0x{session:x}",
                                h.node, n.stat.ephemeral_owner
                            ));
                        }
                        // Deleted from outside: it does not count while the
                        // news is on its way; once it has arrived, no holder
                        // may still read it as held.
                        None if self.outside_news_pending(i, &h.node) => continue,
                        None if self.outside_deleted.contains_key(&h.node) => {
                            return Err(format!(
                                "c{i}.{k} still holds {} after the news of its deletion from outside arrived",
                                h.node
                            ));
                        }
                        None => return Err(format!("c{i}.{k} holds {} but the model has no such node", h.node)),
                    }
                    match h.mode {
                        Mode::Lease => leases.push(((i, k), h.path.as_str(), h.token, h.limit)),
                        mode => holds.push(((i, k), h.path.as_str(), mode)),
                    }
                }
            }
        }
        check_exclusion(holds, self.config.leases)?;
        check_lease_limits(leases)
    }

    /// A container chain that never had a lock node: an acquire cancelled
    /// while it created the parents leaves one (as Curator's would), and
    /// ZooKeeper 3.8 reaps only containers that once had a child
    /// (`maxNeverUsedIntervalMs` is 0). Tolerated by the leak oracle.
    pub(super) fn never_used(&self, path: &str) -> bool {
        let Some(node) = self.model.node(path) else { return true };
        if node.stat.ephemeral_owner != 0 {
            return false;
        }
        let children = self.model.children(path).unwrap_or_default();
        if children.is_empty() {
            return node.stat.cversion == 0;
        }
        children.iter().all(|c| self.never_used(&format!("{path}/{c}")))
    }

    pub(super) fn milestone(&mut self) -> Result<(), String> {
        let t = self.config.session_timeout;
        match self.phase {
            Phase::Active => {
                self.phase = Phase::Draining;
                // Every waiter is served in turn: each holder keeps the lock
                // at most `max_hold` (plus a scheduling slack), and a lost
                // session needs up to T to be noticed.
                let n = (self.clients.len() * self.config.tasks.max(1)) as u32;
                let bound = t * 3 + (self.config.max_hold + Duration::from_secs(3)) * (n + 1);
                self.log(|| format!("DRAIN: no new acquires; liveness bound {bound:?}"));
                self.milestone = self.now + bound;
            }
            Phase::Draining => {
                for (i, c) in self.clients.iter().enumerate() {
                    for (k, t) in c.tasks.iter().enumerate() {
                        if let Some(p) = t.pending {
                            return Err(format!(
                                "liveness: c{i}.{k}'s {:?} acquire since {} never resolved",
                                p.mode, p.since
                            ));
                        }
                        if !t.holds.is_empty() || t.must_release {
                            return Err(format!("liveness: c{i}.{k} still holds {:?}", t.holds));
                        }
                    }
                }
                self.phase = Phase::Settling;
                self.log(|| "SETTLE".into());
                self.milestone = self.now + t * 2;
            }
            Phase::Settling => {
                for i in 0..self.clients.len() {
                    if !self.clients[i].closing && !self.quiescent(i) {
                        return Err(format!("hygiene: c{i}'s recipe is not quiescent after settling"));
                    }
                    if !self.clients[i].closing && self.clients[i].leases_suspended {
                        return Err(format!(
                            "hygiene: c{i}'s semaphore said Suspended and never answered it (Reconnected or Lost)"
                        ));
                    }
                }
                for path in self.model.paths() {
                    let owner = self.model.node(&path).map_or(0, |n| n.stat.ephemeral_owner);
                    if owner != 0 {
                        return Err(format!("hygiene: {path} (owner 0x{owner:x}) is left after every hold ended"));
                    }
                }
                for i in 0..self.clients.len() {
                    if !self.clients[i].closing {
                        self.clients[i].closing = true;
                        let now = self.now;
                        self.clients[i].client.close(now);
                        self.drain_client(i)?;
                    }
                }
                self.phase = Phase::Closing;
                self.log(|| "CLOSE ALL".into());
                self.milestone = self.now + t * 2;
            }
            Phase::Closing => {
                let left: Vec<String> = self
                    .model
                    .paths()
                    .into_iter()
                    .filter(|p| p == ROOT || p.starts_with("/sim/"))
                    .filter(|p| !self.never_used(p))
                    .collect();
                if !left.is_empty() {
                    let stats: Vec<String> = left
                        .iter()
                        .map(|p| {
                            let st = self.model.node(p).map(|n| n.stat);
                            format!("{p} {st:?}")
                        })
                        .collect();
                    return Err(format!("hygiene: nodes left at the end: {stats:?}"));
                }
                let sessions = self.model.sessions();
                if !sessions.is_empty() {
                    return Err(format!("hygiene: sessions left at the end: {sessions:x?}"));
                }
                self.phase = Phase::Done;
            }
            Phase::Done => {}
        }
        Ok(())
    }
}
