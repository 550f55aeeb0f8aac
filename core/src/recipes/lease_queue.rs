//! [`LeaseQueue`]: the per-process ticket queue of one [`Semaphore`], used by many tasks of one process.
//! Acquires queue locally, FIFO, each named by a [`Ticket`] and each getting
//! its own leases; one acquire works on the semaphore at a time, while the
//! leases of earlier ones stay held.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::queue::{SessionGate, TicketIssuer, TicketQueue, TicketQueued, position_of};
use super::semaphore::Semaphore;
use super::semaphore::SemaphoreEvent;
use crate::error::{ApiMisuse, RequestError};
use crate::hold_status::{HoldStatus, LossReason};
use crate::recipe::{Recipe, RecipeEvent, Ticket};
use crate::session::ConnectionState;
use crate::time::Instant;

/// A wanted lease count and the lease nodes that have come.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Want {
    qty: usize,
    got: Vec<Arc<str>>,
}

/// The per-process ticket queue of a [`Semaphore`]: its acquires, each getting its own leases.
///
/// Events ([`LeaseQueueEvent`]): `Ticket` with one `Acquired` per lease (the
/// acquire is complete after `qty` of them), or `TimedOut` / `Failed` /
/// `Refused` (the leases of that acquire are returned). The leases of a
/// complete acquire stay its ticket's until each is returned or lost, so
/// [`LeaseQueue::cancel`] of a ticket whose grant never reached its caller
/// gives them all back. The semaphore's other events pass through untagged:
/// `Capacity` when its limit or free leases change, `Released` per returned
/// lease, and
/// `Suspended` / `Reconnected` / `Lost` for the leases held.
#[derive(Debug)]
pub struct LeaseQueue {
    inner: Semaphore,
    queue: TicketQueue<Want>,
    gate: SessionGate,
    tickets: TicketIssuer,
    /// The lease nodes of complete acquires, by ticket, until each is
    /// returned or lost.
    granted: BTreeMap<Ticket, Vec<Arc<str>>>,
    /// The capacity last reported (`Capacity`): limit and free leases.
    capacity: (usize, Option<usize>),
    /// What the holders of leases read of them ([`LeaseQueue::lease_status`]).
    leases: LeaseStates,
    events: VecDeque<LeaseQueueEvent>,
}

/// What core knows of the held leases beyond their nodes: the status,
/// loss reason and revocation a handle reads. A lost, expired or revoked
/// lease is kept until it is returned.
#[derive(Debug, Default)]
struct LeaseStates {
    /// The connection dropped while leases were held (until `Reconnected`).
    suspended: bool,
    /// Leases known lost (deleted, or gone with the session), and why.
    lost: BTreeMap<Arc<str>, LossReason>,
    /// Leases past their max hold, whose loss is on its way.
    expired: BTreeSet<Arc<str>>,
    /// Leases someone asked to be given back.
    revoked: BTreeSet<Arc<str>>,
}

impl LeaseStates {
    /// Notes what `event` says of the held leases.
    fn on_event(&mut self, event: &SemaphoreEvent) {
        match event {
            SemaphoreEvent::Suspended => self.suspended = true,
            SemaphoreEvent::Reconnected | SemaphoreEvent::Lost => self.suspended = false,
            SemaphoreEvent::LeaseLost { node } => {
                let reason = if self.expired.remove(&**node) { LossReason::MaxHold } else { LossReason::SessionOrNode };
                self.lost.insert(node.clone(), reason);
            }
            SemaphoreEvent::Expired { node } => {
                self.expired.insert(node.clone());
            }
            SemaphoreEvent::LeaseRevocationRequested { node } => {
                self.revoked.insert(node.clone());
            }
            _ => {}
        }
    }

    /// `lease` was returned: nothing is kept of it.
    fn forget(&mut self, lease: &str) {
        self.lost.remove(lease);
        self.expired.remove(lease);
        self.revoked.remove(lease);
    }
}

/// What a [`LeaseQueue`] reports, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
// Exhaustive on purpose: the handles that carry it match every
// variant, so a new one is handled where it is delivered.
pub enum LeaseQueueEvent {
    /// An event of the acquire `ticket`: one `Acquired` per lease, then
    /// (or instead) `TimedOut`, `Failed`, `Refused`; `Queued` while it waits.
    Ticket {
        /// The acquire's ticket.
        ticket: Ticket,
        /// What happened to it.
        event: SemaphoreEvent,
    },
    /// The semaphore's own event, no ticket's: a returned lease's
    /// `Released`, the held leases' `Suspended` / `Reconnected` / `Lost`, a
    /// lease's `Expired`, `LeaseLost` or revocation, its count's changes.
    Semaphore(SemaphoreEvent),
    /// The limit in force or the free leases changed.
    Capacity {
        /// The limit.
        limit: usize,
        /// Leases free at the last listing; `None` before the first.
        available: Option<usize>,
    },
}

impl From<LeaseQueueEvent> for RecipeEvent {
    fn from(event: LeaseQueueEvent) -> RecipeEvent {
        RecipeEvent::Leases(alloc::boxed::Box::new(event))
    }
}

fn ticket_event(ticket: Ticket, event: SemaphoreEvent) -> LeaseQueueEvent {
    LeaseQueueEvent::Ticket { ticket, event }
}

impl LeaseQueue {
    /// Shares `inner`; `renew` as for [`LockQueue::new`](super::LockQueue::new).
    pub fn new(inner: Semaphore, renew: bool) -> LeaseQueue {
        let capacity = (inner.max_leases(), inner.available());
        LeaseQueue {
            inner,
            queue: TicketQueue::default(),
            gate: SessionGate::new(renew),
            tickets: TicketIssuer::default(),
            granted: BTreeMap::new(),
            capacity,
            leases: LeaseStates::default(),
            events: VecDeque::new(),
        }
    }

    /// The semaphore, for inspection.
    pub fn inner(&self) -> &Semaphore {
        &self.inner
    }

    /// Queues an acquire of `qty` leases, waiting until `deadline` (`None`:
    /// forever), and returns the ticket that names it in events and later
    /// commands. Fails with [`ApiMisuse::ZeroQuantity`] for `qty == 0`
    /// (nothing is queued). After the session ended for good the ticket
    /// fails at once (`Failed`).
    pub fn acquire(&mut self, now: Instant, qty: usize, deadline: Option<Instant>) -> Result<Ticket, ApiMisuse> {
        if qty == 0 {
            return Err(ApiMisuse::ZeroQuantity);
        }
        let ticket = self.tickets.issue();
        if let Some(error) = self.gate.ended() {
            self.events.push_back(ticket_event(ticket, SemaphoreEvent::Failed(error)));
            return Ok(ticket);
        }
        self.queue.push(ticket, deadline, Want { qty, got: Vec::new() });
        self.advance(now);
        Ok(ticket)
    }

    /// Abandons `ticket`'s acquire wherever it is: queued, under way (the
    /// leases it has obtained so far are returned), or complete (every lease
    /// it was granted and still holds is returned: its grant never reached
    /// the caller, whose acquire was dropped). Nothing is reported for it.
    /// Unknown tickets are ignored, so a cancel may race with the acquire's
    /// end.
    pub fn cancel(&mut self, now: Instant, ticket: Ticket) {
        if self.queue.remove_waiting(ticket) {
            return;
        }
        if self.queue.head_is(ticket) {
            let started = self.queue.head.take().is_some_and(|h| h.started);
            if started {
                self.inner.cancel(now);
            }
        } else if let Some(leases) = self.granted.remove(&ticket) {
            for lease in leases {
                // Each is still held (a returned or lost one left the list).
                self.leases.forget(&lease);
                let _ = self.inner.return_lease(now, &lease);
            }
        } else {
            return;
        }
        self.collect(now);
        self.advance(now);
    }

    /// Returns one held lease (see [`Semaphore::return_lease`]): from then
    /// on it is no longer its ticket's.
    pub fn return_lease(&mut self, now: Instant, lease: &str) -> Result<(), ApiMisuse> {
        self.forget_lease(lease);
        self.leases.forget(lease);
        let result = self.inner.return_lease(now, lease);
        self.collect(now);
        result
    }

    /// `lease` no longer belongs to the ticket it was granted to.
    fn forget_lease(&mut self, lease: &str) {
        let owner = self.granted.iter_mut().find(|(_, leases)| leases.iter().any(|l| **l == *lease));
        if let Some((&ticket, leases)) = owner {
            leases.retain(|l| **l != *lease);
            if leases.is_empty() {
                self.granted.remove(&ticket);
            }
        }
    }

    /// The status of the lease on `node`, until it is returned: its own
    /// loss, else the connection's as the semaphore last heard it.
    pub fn lease_status(&self, node: &str) -> HoldStatus {
        match (self.leases.lost.contains_key(node), self.leases.suspended) {
            (true, _) => HoldStatus::Lost,
            (false, true) => HoldStatus::Suspended,
            (false, false) => HoldStatus::Held,
        }
    }

    /// Why the lease on `node` was lost, once it is (until its return).
    pub fn loss(&self, node: &str) -> Option<LossReason> {
        self.leases.lost.get(node).copied()
    }

    /// Whether someone asked for the lease on `node` back.
    pub fn revoked(&self, node: &str) -> bool {
        self.leases.revoked.contains(node)
    }

    /// The limit in force and the leases left free by the last listing
    /// (`None` before the first), as `Capacity` last reported them.
    pub fn capacity(&self) -> (usize, Option<usize>) {
        self.capacity
    }

    /// Where `ticket`'s acquire last stood (position, total): only the
    /// acquire under way has one.
    pub fn position(&self, ticket: Ticket) -> Option<(usize, usize)> {
        self.queue.head.as_ref().filter(|h| h.ticket == ticket).and_then(position_of)
    }

    /// How many acquires wait behind the one under way.
    pub fn waiting(&self) -> usize {
        self.queue.waiting()
    }

    /// True when nothing is queued, held or owed to the server.
    pub fn is_quiescent(&self) -> bool {
        self.queue.is_empty() && self.inner.is_quiescent()
    }

    fn advance(&mut self, now: Instant) {
        while self.gate.up {
            let Some(head) = self.queue.promote() else { return };
            if head.started {
                return;
            }
            head.started = true;
            let (ticket, qty, deadline) = (head.ticket, head.what.qty, head.deadline);
            head.what.got.clear();
            if let Err(e) = self.inner.acquire(now, qty, deadline) {
                self.queue.head = None;
                self.events.push_back(ticket_event(ticket, SemaphoreEvent::Refused(e)));
            }
            self.collect(now);
        }
    }

    fn collect(&mut self, now: Instant) {
        // Before the events of the input that changed it: whoever is handed
        // a grant reads the capacity its listing left.
        self.report_capacity();
        while let Some(event) = self.inner.poll_event() {
            if let SemaphoreEvent::LeaseLost { node } = &event {
                self.forget_lease(node);
            }
            self.leases.on_event(&event);
            let head = self.queue.head.as_mut().filter(|h| h.started);
            let Some(head) = head else {
                self.events.push_back(LeaseQueueEvent::Semaphore(event));
                continue;
            };
            let ticket = head.ticket;
            match event {
                SemaphoreEvent::Acquired { node, token } => {
                    head.what.got.push(node.clone());
                    if head.what.got.len() >= head.what.qty {
                        // Complete: its leases are the ticket's until each
                        // is returned or lost.
                        let got = core::mem::take(&mut head.what.got);
                        self.queue.head = None;
                        self.granted.insert(ticket, got);
                    }
                    self.events.push_back(ticket_event(ticket, SemaphoreEvent::Acquired { node, token }));
                }
                SemaphoreEvent::Failed(e) if self.gate.parks(&e) => {
                    // It starts again on the next session, unless its
                    // deadline has passed meanwhile.
                    if let Some(ticket) = self.queue.park_head(now) {
                        self.events.push_back(ticket_event(ticket, SemaphoreEvent::TimedOut));
                    }
                }
                event @ (SemaphoreEvent::TimedOut | SemaphoreEvent::Failed(_) | SemaphoreEvent::Refused(_)) => {
                    self.queue.head = None;
                    self.events.push_back(ticket_event(ticket, event));
                }
                SemaphoreEvent::Queued { position, total } => {
                    head.queued(position, total);
                    self.events.push_back(ticket_event(ticket, SemaphoreEvent::Queued { position, total }));
                }
                other => self.events.push_back(LeaseQueueEvent::Semaphore(other)),
            }
        }
        self.report_capacity();
    }

    /// Reports the semaphore's capacity (`Capacity`) if it changed since
    /// last reported.
    fn report_capacity(&mut self) {
        let capacity = (self.inner.max_leases(), self.inner.available());
        if capacity != self.capacity {
            self.capacity = capacity;
            self.events.push_back(LeaseQueueEvent::Capacity { limit: capacity.0, available: capacity.1 });
        }
    }
}

impl LeaseQueue {
    /// The session ended: every ticket fails with `error`, a started acquire
    /// is cancelled.
    fn fail_all(&mut self, now: Instant, error: &RequestError) {
        let started = self.queue.head.as_ref().is_some_and(|h| h.started);
        if started {
            self.inner.cancel(now);
        }
        for ticket in self.queue.take_all() {
            self.events.push_back(ticket_event(ticket, SemaphoreEvent::Failed(error.clone())));
        }
        self.collect(now);
    }

    /// Tickets whose deadline passed leave the queue with `TimedOut`.
    fn expire(&mut self, now: Instant) {
        for ticket in self.queue.take_expired(now) {
            self.events.push_back(ticket_event(ticket, SemaphoreEvent::TimedOut));
        }
    }

    /// The earliest ticket deadline.
    fn queue_deadline(&self) -> Option<Instant> {
        self.queue.next_deadline()
    }
}

/// The queue's part of every input; see [`TicketQueued`].
impl TicketQueued for LeaseQueue {
    type Inner = Semaphore;
    type Event = LeaseQueueEvent;

    fn inner_recipe(&self) -> &Semaphore {
        &self.inner
    }

    fn inner_recipe_mut(&mut self) -> &mut Semaphore {
        &mut self.inner
    }

    fn gate_state(&mut self, state: ConnectionState) -> Option<RequestError> {
        self.gate.on_state(state)
    }

    fn collect(&mut self, now: Instant) {
        LeaseQueue::collect(self, now);
    }

    fn advance(&mut self, now: Instant) {
        LeaseQueue::advance(self, now);
    }

    fn fail_all(&mut self, now: Instant, error: &RequestError) {
        LeaseQueue::fail_all(self, now, error);
    }

    fn expire(&mut self, now: Instant) {
        LeaseQueue::expire(self, now);
    }

    fn queue_deadline(&self) -> Option<Instant> {
        LeaseQueue::queue_deadline(self)
    }

    fn next_event(&mut self) -> Option<LeaseQueueEvent> {
        self.events.pop_front()
    }

    fn quiescent(&self) -> bool {
        LeaseQueue::is_quiescent(self)
    }
}
