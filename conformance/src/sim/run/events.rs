//! The clients' events: holds granted, lost, released, refused, each fed
//! to the oracles' bookkeeping.

use zoolock_core::recipes::{LeaseQueueEvent, QueueEvent};

use super::*;

impl Sim {
    pub(super) fn client_event(&mut self, i: usize, event: ClientEvent) -> Result<(), String> {
        match event {
            ClientEvent::State(state) => {
                self.log(|| format!("c{i} state {state:?}"));
                let c = &mut self.clients[i];
                match state {
                    ConnectionState::Suspended => {
                        c.session_suspended = true;
                        if c.client.session().suspension() == zoolock_core::Suspension::QuorumUnconfirmed {
                            self.report.quorum_drops += 1;
                        }
                    }
                    ConnectionState::Connected | ConnectionState::Reconnected => c.session_suspended = false,
                    ConnectionState::Lost => {
                        // Holds get their own `Lost`; acquires under way
                        // re-queue on the session the client renews by itself.
                        c.session_suspended = false;
                        c.doomed = false;
                        if !c.closing {
                            self.report.restarts += 1;
                        }
                    }
                    ConnectionState::Closed => {
                        for t in &mut c.tasks {
                            t.holds.clear();
                            t.pending = None;
                            t.ticket = None;
                            t.must_release = false;
                        }
                        if !c.closing {
                            return Err(format!("c{i}: the session closed by itself"));
                        }
                    }
                    _ => {}
                }
                Ok(())
            }
            ClientEvent::Recipe { event, .. } if matches!(self.clients[i].shared, Shared::Election(_)) => match event {
                // The participant's own typed event, read as a lock's.
                RecipeEvent::Election(event) => self.election_event(i, RecipeEvent::from(event)),
                other => Err(format!("c{i}: an election reported {other:?}, not an event of its own")),
            },
            ClientEvent::Recipe { event, .. } => match ticket_of(event) {
                Sorted::Other(event) => self.handle_event(i, untagged(event)),
                Sorted::Ticket(ticket, event) => match self.clients[i].task_of(ticket) {
                    Some(k) => self.ticket_event(i, k, event),
                    None => {
                        // A cancelled acquire reports nothing; anything else
                        // for a ticket no task owns is a bug.
                        self.log(|| format!("c{i} {ticket:?} (no task) {event:?}"));
                        match event {
                            RecipeEvent::Acquired { node, .. } => {
                                Err(format!("c{i}: {ticket:?} was granted {node} after it was cancelled"))
                            }
                            _ => Ok(()),
                        }
                    }
                },
            },
            _ => Ok(()),
        }
    }

    /// An untagged event: a semaphore's status for every lease it holds.
    pub(super) fn handle_event(&mut self, i: usize, event: RecipeEvent) -> Result<(), String> {
        self.log(|| format!("c{i} {event:?}"));
        if !matches!(self.clients[i].shared, Shared::Semaphore(_)) {
            return Ok(());
        }
        match event {
            RecipeEvent::Suspended => self.clients[i].leases_suspended = true,
            RecipeEvent::Reconnected | RecipeEvent::Lost => self.clients[i].leases_suspended = false,
            _ => {}
        }
        let now = self.now;
        if let RecipeEvent::LeaseLost { node } = &event {
            // That lease alone stops counting; the task gives back the rest.
            let task = self.clients[i].tasks.iter_mut().find(|t| t.holds.iter().any(|h| *h.node == **node));
            let Some(task) = task else {
                return Err(format!("c{i}: LeaseLost for {node}, which no task holds"));
            };
            task.holds.retain(|h| *h.node != **node);
            task.must_release = true;
            task.next_action = now;
            return Ok(());
        }
        if event == RecipeEvent::Lost {
            // Each lease was reported lost on its own first.
            if let Some(t) = self.clients[i].tasks.iter().find(|t| !t.holds.is_empty()) {
                return Err(format!("c{i}: Lost while {:?} was never reported lost", t.holds));
            }
        }
        if let RecipeEvent::LeaseRevocationRequested { node } = &event {
            // The holder gives the lease back at once.
            let task = self.clients[i].tasks.iter_mut().find(|t| t.holds.iter().any(|h| *h.node == **node));
            let Some(task) = task else {
                return Err(format!("c{i}: revocation requested for {node}, which no task holds"));
            };
            task.next_action = now;
            self.report.revocations += 1;
            return Ok(());
        }
        for t in &mut self.clients[i].tasks {
            if t.holds.is_empty() {
                continue;
            }
            match event {
                RecipeEvent::Suspended => t.suspended = true,
                RecipeEvent::Reconnected => t.suspended = false,
                RecipeEvent::Lost => {
                    // The leases no longer count (`suspended`); the task
                    // returns what is left of them.
                    t.suspended = true;
                    t.must_release = true;
                    t.next_action = now;
                }
                _ => {}
            }
        }
        Ok(())
    }

    pub(super) fn ticket_event(&mut self, i: usize, k: usize, event: RecipeEvent) -> Result<(), String> {
        self.log(|| format!("c{i}.{k} {event:?}"));
        let now = self.now;
        let c = &mut self.clients[i];
        let no_node = c.no_node_replies;
        let task = &mut c.tasks[k];
        match event {
            RecipeEvent::Acquired { node, token } => {
                let Some(pending) = task.pending else {
                    return Err(format!("c{i}.{k}: Acquired {node} without an acquire under way"));
                };
                task.pending = None;
                c.no_node_replies = 0;
                let holds = match (c.role, c.shared) {
                    (LockKind::MultiLock, Shared::Lock(h)) => {
                        let members = c
                            .client
                            .with(now, h, |q, _| {
                                q.inner()
                                    .member_holds(Part::Whole)
                                    .into_iter()
                                    .map(|h| h.map(|(n, t)| (n.to_string(), t.0)))
                                    .collect::<Vec<_>>()
                            })
                            .map_err(|e| format!("{e:?}"))?;
                        if members.len() != 2 {
                            return Err(format!("c{i}: the multi-lock role runs a two-member MultiLock: {members:?}"));
                        }
                        let mut holds = Vec::new();
                        for (member, (path, mode)) in
                            members.into_iter().zip([(MULTI_A, Mode::Write), (MULTI_B, Mode::Exclusive)])
                        {
                            let Some((node, token)) = member else {
                                return Err(format!("c{i}: multi-lock Acquired but {path} is not held"));
                            };
                            holds.push(Hold { path: path.into(), node, token, mode, limit: 1 });
                        }
                        holds
                    }
                    _ => {
                        let multi = self.config.kind == LockKind::MultiLock;
                        let path = match (multi, pending.mode) {
                            (true, Mode::Read | Mode::Write) => MULTI_A,
                            (true, _) => MULTI_B,
                            (false, _) => LOCK,
                        };
                        let limit = match c.shared {
                            Shared::Semaphore(h) => c
                                .client
                                .with(now, h, |q, _| q.inner().lease_limit(&node))
                                .map_err(|e| format!("{e:?}"))?
                                .ok_or_else(|| format!("c{i}: Acquired {node} but the semaphore does not hold it"))?,
                            Shared::Lock(_) | Shared::Election(_) => 1,
                        };
                        vec![Hold {
                            path: path.into(),
                            node: String::from(&*node),
                            token: token.0,
                            mode: pending.mode,
                            limit,
                        }]
                    }
                };
                self.report.holds += holds.len();
                let since = pending.since;
                for h in holds {
                    if h.mode == Mode::Lease && self.config.resize && !self.count_values.contains(&h.limit) {
                        return Err(format!(
                            "c{i}.{k}: {} granted under {} leases, a size the count never had",
                            h.node, h.limit
                        ));
                    }
                    self.fence(i, k, &h)?;
                    self.log(|| {
                        format!(
                            "c{i}.{k} HOLDS {:?} {} token {} limit {} (waited since {since})",
                            h.mode, h.node, h.token, h.limit
                        )
                    });
                    self.clients[i].tasks[k].holds.push(h);
                }
                Ok(())
            }
            RecipeEvent::Failed(RequestError::RetriesExhausted(_))
                if task.pending.is_some() && no_node >= NO_NODE_BUDGET =>
            {
                // A slow client can lose the probe/create race with the
                // container reaper on every retry; giving up once the retry
                // budget is spent is Curator's behaviour (attemptLock).
                task.pending = None;
                task.ticket = None;
                c.no_node_replies = 0;
                self.report.unsuccessful += 1;
                self.log(|| format!("c{i}.{k}: NoNode retry budget spent ({no_node} NoNode replies)"));
                Ok(())
            }
            RecipeEvent::Failed(
                e @ (RequestError::Server(_)
                | RequestError::RetriesExhausted(_)
                | RequestError::NodeVanished
                | RequestError::UnexpectedResponse { .. }
                | RequestError::Refused(_)),
            ) if task.pending.is_some() => {
                // The server refused something the recipe should have handled
                // (NoNode from the container reaper, NodeExists, ...), or
                // the recipe gave up early.
                Err(format!("c{i}.{k}: the acquire failed with {e:?} after {no_node} NoNode replies"))
            }
            RecipeEvent::Refused(e) if c.role != LockKind::ReadWriteLock => Err(self.misuse(i, "a queued acquire", e)),
            RecipeEvent::TimedOut | RecipeEvent::Failed(_) | RecipeEvent::Refused(_) => {
                // (A read-write lock refuses a write while another task of
                // the client holds the read half: the upgrade rule.)
                if task.pending.take().is_some() {
                    task.ticket = None;
                    c.no_node_replies = 0;
                    self.report.unsuccessful += 1;
                }
                Ok(())
            }
            RecipeEvent::Suspended => {
                task.suspended = true;
                Ok(())
            }
            RecipeEvent::Reconnected => {
                task.suspended = false;
                Ok(())
            }
            RecipeEvent::Lost => {
                task.suspended = false;
                if !task.holds.is_empty() {
                    task.must_release = true;
                    task.next_action = now;
                }
                task.holds.clear();
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// An event as the oracles read it: a queue's ticket event (the ticket,
/// and its event as a plain [`RecipeEvent`]), or any other event as it came.
enum Sorted {
    Ticket(Ticket, RecipeEvent),
    Other(RecipeEvent),
}

fn ticket_of(event: RecipeEvent) -> Sorted {
    match event {
        RecipeEvent::Lock(queued) => match *queued {
            QueueEvent::Ticket { ticket, event } => Sorted::Ticket(ticket, event.into()),
            other => Sorted::Other(RecipeEvent::Lock(Box::new(other))),
        },
        RecipeEvent::Leases(leases) => match *leases {
            LeaseQueueEvent::Ticket { ticket, event } => Sorted::Ticket(ticket, event.into()),
            other => Sorted::Other(RecipeEvent::Leases(Box::new(other))),
        },
        other => Sorted::Other(other),
    }
}

/// A queue's event no ticket owns, as the oracles read it: a plain
/// [`RecipeEvent`].
fn untagged(event: RecipeEvent) -> RecipeEvent {
    match event {
        RecipeEvent::Lock(queued) => match *queued {
            QueueEvent::Untagged { member, event } if member.is_empty() => event.into(),
            other => RecipeEvent::Lock(Box::new(other)),
        },
        RecipeEvent::Leases(leases) => match *leases {
            LeaseQueueEvent::Semaphore(event) => event.into(),
            other => RecipeEvent::Leases(Box::new(other)),
        },
        other => other,
    }
}
