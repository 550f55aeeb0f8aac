//! Elections in the simulator: one [`Election`] participant per client, in
//! the selector or the latch layout, with or without re-queueing and a
//! maximum hold. A participant's term is a hold of the lock path (mode
//! exclusive), so the exclusion oracle is the election's: at most one
//! participant believes it leads at any instant once the previous leader's
//! loss was signalled. Liveness is the locks': once faults stop, every
//! participant still queued leads in turn (each leader closes after its
//! term), and no wait is left. Beside them, Curator's `getLeader` read from
//! the model (the first existing node in the layout's order, its data as the
//! id) names the participant that believes it leads.

use super::*;

impl Sim {
    /// The script of a participant (task `k`, the only one, of client `i`).
    pub(super) fn election_action(&mut self, i: usize, k: usize) -> Result<(), String> {
        let now = self.now;
        let Shared::Election(h) = self.clients[i].shared else { return Ok(()) };
        let task = &self.clients[i].tasks[k];
        let (leading, holds) = (task.must_release || !task.holds.is_empty(), !task.holds.is_empty());
        let queued = self.clients[i].client.with(now, h, |e, _| e.is_queued()).unwrap_or(false);
        let hold = self.config.max_hold;
        if leading {
            let task = &mut self.clients[i].tasks[k];
            task.must_release = false;
            task.holds.clear();
            task.suspended = false;
            let draining = self.phase != Phase::Active;
            let result = self.clients[i].client.with(now, h, |e, now| {
                if draining {
                    e.close(now);
                    return Ok(());
                }
                match e.resign(now) {
                    // Lost meanwhile (the hold's news is what cleared it).
                    Err(ApiMisuse::NotHeld) if !holds => Ok(()),
                    other => other,
                }
            });
            let what = if draining { "closes" } else { "resigns" };
            self.log(|| format!("c{i}.{k} {what}"));
            match result {
                Ok(Ok(())) => {}
                Ok(Err(e)) | Err(e) => return Err(self.misuse(i, "resign", e)),
            }
            self.drain_client(i)?;
            self.election_sync(i);
            self.schedule(i, k, Duration::from_millis(1), hold);
        } else if self.phase == Phase::Active && !queued {
            if chance(&mut self.rng, 40) {
                self.log(|| format!("c{i} closes its client"));
                self.clients[i].closing = true;
                self.clients[i].client.close(now);
                self.drain_client(i)?;
                self.schedule(i, k, Duration::from_millis(1), Duration::from_millis(500));
                return Ok(());
            }
            let result = self.clients[i].client.with(now, h, |e, now| e.start(now));
            match result {
                Ok(Ok(())) => self.log(|| format!("c{i}.{k} starts")),
                Ok(Err(e)) | Err(e) => return Err(self.misuse(i, "start", e)),
            }
            self.clients[i].tasks[k].pending = Some(Pending { mode: Mode::Exclusive, since: now });
            self.drain_client(i)?;
            self.schedule(i, k, Duration::from_millis(1), hold);
        } else {
            self.schedule(i, k, Duration::from_millis(200), Duration::from_secs(1));
        }
        Ok(())
    }

    /// A participant's event: the lock's bookkeeping, then whether it
    /// queued again by itself. A leader told `Suspended` under the standard
    /// policy ends its term at once, as the driver's `run` does.
    pub(super) fn election_event(&mut self, i: usize, event: RecipeEvent) -> Result<(), String> {
        let leading = !self.clients[i].tasks[0].holds.is_empty();
        match (&event, self.config.election_policy) {
            (RecipeEvent::Suspended, LeadershipPolicy::Standard) if leading => {
                self.report.terms_ended_suspended += 1;
                self.clients[i].tasks[0].next_action = self.now;
            }
            (RecipeEvent::Reconnected, LeadershipPolicy::Session) if leading => self.report.terms_kept_suspended += 1,
            _ => {}
        }
        if let RecipeEvent::Acquired { .. } = &event {
            if self.clients[i].tasks[0].pending.is_none() {
                return Err(format!("c{i}: leads without wanting to ({event:?})"));
            }
        }
        if let RecipeEvent::Expired { .. } = &event {
            self.report.expiries += 1;
        }
        if self.config.ignore_loss && event == RecipeEvent::Lost {
            self.log(|| format!("c{i} ignores {event:?}"));
            return Ok(());
        }
        self.ticket_event(i, 0, event)?;
        self.election_sync(i);
        Ok(())
    }

    /// A participant that queued again by itself (after a term's end, or
    /// once a renewed session connected) waits like any acquire.
    fn election_sync(&mut self, i: usize) {
        let Shared::Election(h) = self.clients[i].shared else { return };
        let now = self.now;
        let queued = self.clients[i].client.with(now, h, |e, _| e.is_queued()).unwrap_or(false);
        let Some(task) = self.clients[i].tasks.first_mut() else { return };
        let leading = !task.holds.is_empty();
        match (queued, leading, task.pending.is_some()) {
            (true, false, false) => {
                task.pending = Some(Pending { mode: Mode::Exclusive, since: now });
                self.report.requeues += 1;
            }
            (false, _, true) => task.pending = None,
            _ => {}
        }
    }

    /// Curator's `getLeader` on the model: when exactly one participant
    /// counts as leader (its node existing), the first node in the layout's
    /// order is its node, and that node's data is its id. And each
    /// participant's own view ([`Election::leads`]) is its events' under
    /// the run's policy: a term told `Suspended` leads only under the
    /// session policy.
    pub(super) fn check_leader_view(&mut self) -> Result<(), String> {
        let Some(kind) = self.config.kind.election() else { return Ok(()) };
        let (now, policy) = (self.now, self.config.election_policy);
        for i in 0..self.clients.len() {
            let c = &mut self.clients[i];
            let (Shared::Election(h), false, Some(task)) = (c.shared, c.closing, c.tasks.first()) else { continue };
            let expected = !task.holds.is_empty() && policy.leads(task.suspended);
            let leads = c.client.with(now, h, |e, _| e.leads()).unwrap_or(false);
            if leads != expected && !self.config.ignore_loss {
                return Err(format!(
                    "leader view: c{i} says it leads: {leads}, its events say {expected} under the {} policy",
                    policy.name()
                ));
            }
        }
        let mut leaders = Vec::new();
        for (i, c) in self.clients.iter().enumerate() {
            if !self.reads_held(i) {
                continue;
            }
            for t in c.tasks.iter().filter(|t| !t.suspended) {
                // (A node deleted from outside whose news is on its way is
                // excused by the exclusion oracle; it leads nobody here.)
                for h in t.holds.iter().filter(|h| self.model.node(&self.server_path(&h.node)).is_some()) {
                    leaders.push((i, c.incarnation, h.node.clone()));
                }
            }
        }
        let [(i, incarnation, node)] = leaders.as_slice() else { return Ok(()) };
        let base = LOCK;
        let mut children = self.model.children(base).unwrap_or_default();
        kind.lock_name().sort_key().sort(&mut children);
        let Some(first) = children.first() else {
            return Err(format!("leader view: c{i} leads through {node}, but {base} has no child"));
        };
        let first = format!("{base}/{first}");
        if first != self.server_path(node) {
            return Err(format!("leader view: c{i} leads through {node}, but the first node is {first}"));
        }
        let id = format!("c{i}.{incarnation}");
        let data = self.model.node(&first).and_then(|n| n.data).unwrap_or_default();
        if data.as_ref() != id.as_bytes() {
            return Err(format!("leader view: the leader's node {first} names {data:?}, not {id}"));
        }
        Ok(())
    }
}
