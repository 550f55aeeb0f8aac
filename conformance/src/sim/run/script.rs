//! The user script: what each task acquires, holds and releases, and when.

use super::*;

impl Sim {
    pub(super) fn schedule(&mut self, i: usize, k: usize, lo: Duration, hi: Duration) {
        let d = between(&mut self.rng, lo, hi);
        if let Some(t) = self.clients[i].tasks.get_mut(k) {
            t.next_action = self.now + d;
        }
    }

    pub(super) fn action(&mut self, i: usize, k: usize) -> Result<(), String> {
        if k == 0 && self.phase == Phase::Active && !self.clients[i].closing {
            self.admin(i)?;
        }
        let now = self.now;
        let c = &self.clients[i];
        let Some(task) = c.tasks.get(k) else { return Ok(()) };
        if matches!(c.shared, Shared::Election(_)) && !c.closing {
            return self.election_action(i, k);
        }
        if c.closing {
            self.reopen_if_closed(i)?;
            if self.clients[i].closing {
                self.schedule(i, k, Duration::from_millis(100), Duration::from_secs(1));
            }
        } else if task.must_release || !task.holds.is_empty() {
            self.release(i, k)?;
            let hold = self.config.max_hold;
            self.schedule(i, k, Duration::from_millis(1), hold);
        } else if task.pending.is_some() {
            if self.phase == Phase::Active && chance(&mut self.rng, 150) {
                self.cancel(i, k)?;
            }
            self.schedule(i, k, Duration::from_millis(200), Duration::from_secs(3));
        } else if self.phase == Phase::Active {
            if k == 0 && c.idle() && chance(&mut self.rng, 40) {
                self.log(|| format!("c{i} closes its client"));
                self.clients[i].closing = true;
                self.clients[i].client.close(now);
                self.drain_client(i)?;
                self.schedule(i, k, Duration::from_millis(1), Duration::from_millis(500));
            } else {
                self.acquire(i, k)?;
                let hold = self.config.max_hold;
                self.schedule(i, k, Duration::from_millis(1), hold);
            }
        } else {
            self.schedule(i, k, Duration::from_millis(500), Duration::from_secs(1));
        }
        Ok(())
    }

    /// Now and then, client `i` resizes the semaphore (plain setData on the
    /// count, as `zoolock count set` or Curator's `setCount`), or asks a
    /// holder of a revocable lease for it back (Curator's `Revoker`).
    pub(super) fn admin(&mut self, i: usize) -> Result<(), String> {
        let now = self.now;
        if self.config.resize && chance(&mut self.rng, 100) {
            let n = 1 + below(&mut self.rng, self.config.clients as u64) as i32;
            let op = zoolock_core::Op::set_data(&ZkPath::new(SIZE).expect("a valid path"), count_bytes(n), None);
            self.clients[i].client.submit(now, op).map_err(|e| self.misuse(i, "resize", e))?;
            self.report.resizes += 1;
            self.count_values.insert(n as usize);
            self.log(|| format!("c{i} sets the count to {n}"));
        }
        if self.config.revocable && chance(&mut self.rng, 100) {
            let held: Vec<String> = self
                .clients
                .iter()
                .flat_map(|c| c.tasks.iter().flat_map(|t| t.holds.iter().map(|h| h.node.clone())))
                .collect();
            if !held.is_empty() {
                let node = held[below(&mut self.rng, held.len() as u64) as usize].clone();
                let path = ZkPath::new(&node).map_err(|e| format!("{e:?}"))?;
                let op = zoolock_core::Op::set_data(&path, Bytes::from_static(REVOKE_MESSAGE), None);
                self.clients[i].client.submit(now, op).map_err(|e| self.misuse(i, "revoke", e))?;
                self.log(|| format!("c{i} revokes {node}"));
            }
        }
        self.drain_client(i)
    }

    pub(super) fn reopen_if_closed(&mut self, i: usize) -> Result<(), String> {
        if self.clients[i].closing && self.clients[i].client.session().is_ended() {
            self.close_link(i);
            let incarnation = self.clients[i].incarnation + 1;
            let fresh = self.new_client(i, incarnation);
            self.log(|| format!("c{i} reopened (incarnation {incarnation}, {:?})", fresh.role));
            self.clients[i] = fresh;
            self.drain_client(i)?;
        }
        Ok(())
    }

    pub(super) fn misuse(&self, i: usize, what: &str, e: ApiMisuse) -> String {
        format!("c{i}: {what} was refused: {e:?}")
    }

    pub(super) fn acquire(&mut self, i: usize, k: usize) -> Result<(), String> {
        let now = self.now;
        let deadline = if chance(&mut self.rng, 500) {
            Some(now + self.rng.duration_up_to(self.config.session_timeout * 2))
        } else {
            None
        };
        let read = self.rng.next_u64() % 2 == 0;
        let c = &mut self.clients[i];
        let (mode, part) = match c.role {
            LockKind::Semaphore => (Mode::Lease, Part::Whole),
            LockKind::ReadWriteLock if read => (Mode::Read, Part::Read),
            LockKind::ReadWriteLock => (Mode::Write, Part::Write),
            // A mutex, a semaphore mutex, a multi-lock.
            _ => (Mode::Exclusive, Part::Whole),
        };
        let task = &mut c.tasks[k];
        task.pending = Some(Pending { mode, since: now });
        task.suspended = false;
        // The queue issues the ticket; its events wait in the client until
        // the drain below, by when the task knows it.
        let result = match c.shared {
            Shared::Lock(h) => c.client.with(now, h, |q, now| Ok(q.acquire(now, part, deadline))),
            Shared::Semaphore(h) => c.client.with(now, h, |q, now| q.acquire(now, 1, deadline)),
            Shared::Election(_) => return Err(format!("c{i}: a participant acquires by starting")),
        };
        match result {
            Ok(Ok(ticket)) => {
                c.tasks[k].ticket = Some(ticket);
                self.log(|| format!("c{i}.{k} acquire {mode:?} {ticket:?} deadline {deadline:?}"));
            }
            Ok(Err(e)) | Err(e) => return Err(self.misuse(i, "acquire", e)),
        }
        self.drain_client(i)
    }

    pub(super) fn quiescent(&self, i: usize) -> bool {
        let c = &self.clients[i];
        let id = match c.shared {
            Shared::Lock(h) => h.id(),
            Shared::Semaphore(h) => h.id(),
            Shared::Election(h) => h.id(),
        };
        c.client.recipe(id).is_some_and(|r| r.is_quiescent())
    }

    pub(super) fn release(&mut self, i: usize, k: usize) -> Result<(), String> {
        let now = self.now;
        let c = &mut self.clients[i];
        let task = &mut c.tasks[k];
        let lost = std::mem::take(&mut task.must_release);
        let holds = std::mem::take(&mut task.holds);
        let ticket = task.ticket.take();
        task.suspended = false;
        let result = match (c.shared, ticket) {
            (Shared::Lock(h), Some(ticket)) => c.client.with(now, h, |q, now| q.release(now, ticket).map(|_| ())),
            (Shared::Semaphore(h), _) => c.client.with(now, h, |q, now| {
                holds.iter().map(|hold| q.return_lease(now, &hold.node)).find(Result::is_err).unwrap_or(Ok(()))
            }),
            (Shared::Lock(_), None) => Ok(Err(ApiMisuse::NotHeld)),
            (Shared::Election(_), _) => return Err(format!("c{i}: a participant releases by resigning")),
        };
        self.log(|| format!("c{i}.{k} release{}", if lost { " (after Lost)" } else { "" }));
        match result {
            Ok(Ok(())) => {}
            // After Lost the hold may already be gone.
            Ok(Err(ApiMisuse::NotHeld)) if lost => {}
            Ok(Err(e)) | Err(e) => return Err(self.misuse(i, "release", e)),
        }
        self.drain_client(i)
    }

    pub(super) fn cancel(&mut self, i: usize, k: usize) -> Result<(), String> {
        let now = self.now;
        let c = &mut self.clients[i];
        let task = &mut c.tasks[k];
        task.pending = None;
        let Some(ticket) = task.ticket.take() else { return Ok(()) };
        let result = match c.shared {
            Shared::Lock(h) => c.client.with(now, h, |q, now| q.cancel(now, ticket)),
            Shared::Semaphore(h) => c.client.with(now, h, |q, now| q.cancel(now, ticket)),
            Shared::Election(_) => return Err(format!("c{i}: a participant has no acquire to cancel")),
        };
        self.log(|| format!("c{i}.{k} cancel {ticket:?}"));
        if let Err(e) = result {
            return Err(self.misuse(i, "cancel", e));
        }
        self.drain_client(i)
    }
}
