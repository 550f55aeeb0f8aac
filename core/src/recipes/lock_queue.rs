//! [`LockQueue`]: the per-process ticket queue of one lock, so many tasks of
//! one process use one lock as threads share one Curator `InterProcessMutex`.
//!
//! Acquires queue locally, FIFO, each named by a [`Ticket`]: the head works on
//! the lock while the others wait, and the next starts only once the previous
//! hold's release has finished. The parts of a read-write lock exclude each
//! other inside the process as a local read-write lock would (a write waits
//! for the process's read hold to end and the other way round, earliest
//! ticket first), except for an explicit [`LockQueue::downgrade`].
//! Reentrancy is explicit ([`LockQueue::reenter`]),
//! counted as Curator counts. A grant to an acquire that was dropped is given
//! back ([`LockQueue::cancel`] of a held ticket releases it). After a session
//! expiry a hold is `Lost` for good (CURATOR-604), and with renewal on, the
//! acquire under way waits for the new session and starts again with a new
//! node, as Curator's do.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use super::capability::{BoxedLock, LockRecipe, Part};
use super::lock_event::{LockEvent, PartEvent, QueueEvent};
use super::queue::{SessionGate, TicketIssuer, TicketQueue, TicketQueued, position_of};
use crate::error::{ApiMisuse, RequestError};
use crate::hold_status::{HoldStatus, LossReason};
use crate::recipe::{FencingToken, Ticket};
use crate::session::ConnectionState;
use crate::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    None,
    /// Held by `ticket`; its re-entries are the recipe's to count
    /// ([`LockRecipe::hold_count`], as Curator counts).
    Held {
        ticket: Ticket,
        /// What the holder is told of it: the connection dropped (until
        /// `Reconnected`), someone asked for it, it reached its max hold
        /// (its `Lost` follows, for that reason).
        flags: HoldFlags,
    },
    /// The recipe is releasing; `Released` goes to `ticket` (none: a lost
    /// hold being dropped).
    Releasing {
        ticket: Option<Ticket>,
    },
}

/// What core knows of a held ticket beyond its count: the status,
/// revocation and loss reason a handle reads ([`LockQueue::hold_status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct HoldFlags {
    suspended: bool,
    revoked: bool,
    expired: bool,
}

#[derive(Debug)]
struct PartState {
    /// Acquires, each marked whether it is a downgrade (which passes the
    /// other part's hold).
    queue: TicketQueue<bool>,
    hold: Hold,
    /// Tickets whose hold was lost, and why: releasing them is a no-op.
    lost: BTreeMap<Ticket, LossReason>,
}

impl Default for PartState {
    fn default() -> PartState {
        PartState { queue: TicketQueue::default(), hold: Hold::None, lost: BTreeMap::new() }
    }
}

/// A lock's parts ([`LockRecipe::parts`]): the first inline, since every
/// lock has one, and a read-write lock's second (its write half) boxed, so
/// that a one-part lock's queue is one allocation, not two.
#[derive(Debug)]
struct Parts {
    first: PartState,
    second: Option<Box<PartState>>,
}

impl Parts {
    /// `count` parts (one at least; two at most, as [`Part::index`] says).
    fn new(count: usize) -> Parts {
        let second = (count > 1).then(|| Box::new(PartState::default()));
        Parts { first: PartState::default(), second }
    }

    fn len(&self) -> usize {
        1 + usize::from(self.second.is_some())
    }

    fn get(&self, slot: usize) -> Option<&PartState> {
        match slot {
            0 => Some(&self.first),
            1 => self.second.as_deref(),
            _ => None,
        }
    }

    fn get_mut(&mut self, slot: usize) -> Option<&mut PartState> {
        match slot {
            0 => Some(&mut self.first),
            1 => self.second.as_deref_mut(),
            _ => None,
        }
    }

    fn iter(&self) -> impl Iterator<Item = &PartState> {
        core::iter::once(&self.first).chain(self.second.as_deref())
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut PartState> {
        core::iter::once(&mut self.first).chain(self.second.as_deref_mut())
    }
}

/// The per-process ticket queue of a lock recipe (any [`LockRecipe`](super::LockRecipe)).
///
/// Events are [`QueueEvent::Ticket`]: `Queued` tells the acquire under way
/// where it stands on ZooKeeper (acquires still waiting in this process
/// behind it are not on ZooKeeper yet and get no position until their turn
/// comes); `Acquired`, `TimedOut`, `Failed`, `Refused` end an acquire; `Released` ends a release that had to wait for
/// the server; `Suspended`, `Reconnected`, `Lost` and `RevocationRequested`
/// concern the ticket holding. Other events of the lock (clean-up failures,
/// member events of a multi-lock) pass through untagged.
///
/// Drain order: [`Recipe::poll_op`](crate::Recipe::poll_op), [`Recipe::poll_event`](crate::Recipe::poll_event),
/// [`Recipe::poll_timeout`](crate::Recipe::poll_timeout).
pub struct LockQueue {
    inner: BoxedLock,
    parts: Parts,
    gate: SessionGate,
    tickets: TicketIssuer,
    events: VecDeque<QueueEvent>,
}

impl core::fmt::Debug for LockQueue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LockQueue").field("parts", &self.parts).field("session_up", &self.gate.up).finish()
    }
}

fn ticket_event(ticket: Ticket, event: LockEvent) -> QueueEvent {
    QueueEvent::Ticket { ticket, event }
}

impl LockQueue {
    /// Shares `inner`. With `renew`, an acquire whose session expired waits
    /// for the next session (the client must renew sessions too); without,
    /// it fails with the session's error.
    pub fn new(inner: BoxedLock, renew: bool) -> LockQueue {
        let parts = Parts::new(inner.parts().len());
        LockQueue {
            inner,
            parts,
            gate: SessionGate::new(renew),
            tickets: TicketIssuer::default(),
            events: VecDeque::new(),
        }
    }

    /// The queued lock recipe, for inspection.
    pub fn inner(&self) -> &dyn super::LockRecipe {
        &*self.inner
    }

    /// The queued lock recipe, for its own commands (`make_revocable`...).
    /// Acquire and release only through the ticket commands.
    pub fn inner_mut(&mut self) -> &mut dyn super::LockRecipe {
        &mut *self.inner
    }

    /// The place among the lock's parts of the part `asked` names.
    fn slot(&self, asked: Part) -> usize {
        slot_of(&*self.inner, asked)
    }

    // ---- commands ------------------------------------------------------------------

    /// Queues an acquire of `part`, waiting until `deadline` (`None`:
    /// forever; as in Curator, a free lock is taken even after it), and
    /// returns the ticket that names it in events and later commands. After
    /// the session ended for good the ticket fails at once (`Failed`).
    pub fn acquire(&mut self, now: Instant, part: Part, deadline: Option<Instant>) -> Ticket {
        let ticket = self.tickets.issue();
        if let Some(error) = self.gate.ended() {
            self.events.push_back(ticket_event(ticket, LockEvent::Failed(error)));
            return ticket;
        }
        let slot = self.slot(part);
        if let Some(state) = self.parts.get_mut(slot) {
            state.queue.push(ticket, deadline, false);
        }
        self.advance(now);
        ticket
    }

    /// Takes the read part for a new ticket while `writer` holds the write
    /// part of this read-write lock (Curator's downgrade: acquire read while
    /// holding write, then release write). It goes ahead of every queued
    /// acquire and is granted without waiting. Fails with
    /// [`ApiMisuse::NotHeld`] unless `writer` holds the write part, and with
    /// [`ApiMisuse::NoReadHalf`] on a lock without halves.
    pub fn downgrade(&mut self, now: Instant, writer: Ticket) -> Result<Ticket, ApiMisuse> {
        if self.inner.parts() != [Part::Read, Part::Write] {
            return Err(ApiMisuse::NoReadHalf);
        }
        let (read, write) = (self.slot(Part::Read), self.slot(Part::Write));
        if !matches!(self.parts.get(write).map(|s| s.hold), Some(Hold::Held { ticket: t, .. }) if t == writer) {
            return Err(ApiMisuse::NotHeld);
        }
        let ticket = self.tickets.issue();
        if let Some(state) = self.parts.get_mut(read) {
            state.queue.push_front(ticket, None, true);
        }
        self.advance(now);
        Ok(ticket)
    }

    /// Takes the hold of `ticket` once more (explicit reentrancy, counted
    /// by the recipe); each re-entry needs its own [`LockQueue::release`].
    pub fn reenter(&mut self, now: Instant, ticket: Ticket) -> Result<(), ApiMisuse> {
        let part = self.parts.iter().position(|s| matches!(s.hold, Hold::Held { ticket: t, .. } if t == ticket));
        let Some(part) = part else { return Err(ApiMisuse::NotHeld) };
        if !self.inner.reentrant() {
            return Err(ApiMisuse::NotReentrant);
        }
        let result = self.inner.reenter_part(now, part_at(&*self.inner, part));
        // Its `Acquired` again is the re-entry's report: taken here.
        self.collect(now);
        result
    }

    /// Releases one hold of `ticket`. `Ok(true)`: done (a re-entry counted
    /// off, or a lost hold, which has nothing left to release); `Ok(false)`:
    /// the last hold is being released and `Released` follows for the ticket.
    pub fn release(&mut self, now: Instant, ticket: Ticket) -> Result<bool, ApiMisuse> {
        let Some(part) = self.owner(ticket) else { return Err(ApiMisuse::NotHeld) };
        let Some(state) = self.parts.get_mut(part) else { return Err(ApiMisuse::NotHeld) };
        if state.lost.remove(&ticket).is_some() {
            return Ok(true);
        }
        let at = part_at(&*self.inner, part);
        match &mut state.hold {
            Hold::Held { ticket: t, .. } if *t != ticket => Err(ApiMisuse::NotHeld),
            // A re-entry counted off: the recipe keeps the node.
            Hold::Held { .. } if self.inner.hold_count(at) > 1 => self.inner.release_part(now, at).map(|()| true),
            Hold::Held { .. } => {
                state.hold = Hold::Releasing { ticket: Some(ticket) };
                let done = match self.inner.release_part(now, part_at(&*self.inner, part)) {
                    Ok(()) => false,
                    // The recipe no longer holds it (its own loss comes as
                    // an event): nothing is left to release.
                    Err(_) => {
                        if let Some(state) = self.parts.get_mut(part) {
                            state.hold = Hold::None;
                        }
                        true
                    }
                };
                self.collect(now);
                self.advance(now);
                Ok(done)
            }
            // Still acquiring or queued: not held.
            _ => Err(ApiMisuse::NotHeld),
        }
    }

    /// Abandons `ticket`'s acquire wherever it is: queued, under way, or
    /// already granted (then its hold is released, every re-entry with it).
    /// Nothing is reported for a cancelled acquire. Unknown tickets are
    /// ignored, so a cancel may race with the acquire's end.
    pub fn cancel(&mut self, now: Instant, ticket: Ticket) {
        for part in 0..self.parts.len() {
            let Some(state) = self.parts.get_mut(part) else { continue };
            if state.queue.remove_waiting(ticket) {
                return;
            }
            if state.queue.head_is(ticket) {
                let started = state.queue.head.take().is_some_and(|h| h.started);
                if started {
                    self.inner.cancel_part(now, part_at(&*self.inner, part));
                }
                self.collect(now);
                self.advance(now);
                return;
            }
            if state.lost.remove(&ticket).is_some() {
                return;
            }
            if matches!(state.hold, Hold::Held { ticket: t, .. } if t == ticket) {
                // Its grant never reached the caller (the acquire was
                // dropped): released with every re-entry, and nothing is
                // reported to the ticket.
                self.release_abandoned(now, part);
                return;
            }
        }
    }

    /// Releases the hold in slot `part` for no ticket (its ticket was
    /// abandoned after the grant).
    fn release_abandoned(&mut self, now: Instant, part: usize) {
        let Some(state) = self.parts.get_mut(part) else { return };
        state.hold = Hold::Releasing { ticket: None };
        if self.inner.release_part(now, part_at(&*self.inner, part)).is_err() {
            // The recipe no longer holds it (its own loss comes as an event).
            if let Some(state) = self.parts.get_mut(part) {
                state.hold = Hold::None;
            }
        }
        self.collect(now);
        self.advance(now);
    }

    // ---- queries -------------------------------------------------------------------

    /// The ticket holding `part`, with its node and fencing token.
    pub fn holder(&self, part: Part) -> Option<(Ticket, &str, FencingToken)> {
        let state = self.parts.get(self.slot(part))?;
        let Hold::Held { ticket, .. } = state.hold else { return None };
        let (node, token) = self.inner.hold(part)?;
        Some((ticket, node, token))
    }

    /// The nodes proving `ticket`'s hold ([`LockRecipe::hold_nodes`]), or
    /// `None` if it holds nothing (never granted, released, or lost).
    ///
    /// [`LockRecipe::hold_nodes`]: super::LockRecipe::hold_nodes
    pub fn hold_nodes(&self, ticket: Ticket) -> Option<Vec<alloc::string::String>> {
        let part = self.parts.iter().position(|s| matches!(s.hold, Hold::Held { ticket: t, .. } if t == ticket))?;
        let nodes = self.inner.hold_nodes(part_at(&*self.inner, part));
        (!nodes.is_empty()).then_some(nodes)
    }

    /// The status of `ticket`'s hold: `Held` or `Suspended` while it holds
    /// (the connection's state as this lock last heard it), `Lost` once lost
    /// (until its release), `NotHeld` otherwise: never granted, or released
    /// (from the moment the release is taken, before its delete is
    /// written, so it never reads held once another can be granted).
    pub fn hold_status(&self, ticket: Ticket) -> HoldStatus {
        for state in self.parts.iter() {
            match state.hold {
                Hold::Held { ticket: t, flags, .. } if t == ticket => {
                    return if flags.suspended { HoldStatus::Suspended } else { HoldStatus::Held };
                }
                _ if state.lost.contains_key(&ticket) => return HoldStatus::Lost,
                _ => {}
            }
        }
        HoldStatus::NotHeld
    }

    /// The status of the hold of `part` that is neither lost nor being
    /// released (`NotHeld` if none).
    pub fn part_status(&self, part: Part) -> HoldStatus {
        match self.parts.get(self.slot(part)).map(|s| s.hold) {
            Some(Hold::Held { ticket, .. }) => self.hold_status(ticket),
            _ => HoldStatus::NotHeld,
        }
    }

    /// Why `ticket`'s hold was lost, once it is (until its release).
    pub fn loss(&self, ticket: Ticket) -> Option<LossReason> {
        self.parts.iter().find_map(|s| s.lost.get(&ticket).copied())
    }

    /// Whether someone asked the holder of `ticket` to give it up (asked
    /// before the grant counts for the hold). False once lost.
    pub fn revoked(&self, ticket: Ticket) -> bool {
        self.parts.iter().any(|s| match (s.hold, s.queue.head.as_ref()) {
            (Hold::Held { ticket: t, flags, .. }, _) if t == ticket => flags.revoked,
            (_, Some(h)) if h.ticket == ticket => h.revoked,
            _ => false,
        })
    }

    /// Where `ticket`'s acquire last stood on ZooKeeper (position, total):
    /// only the acquire under way has one.
    pub fn position(&self, ticket: Ticket) -> Option<(usize, usize)> {
        self.parts.iter().find_map(|s| s.queue.head.as_ref().filter(|h| h.ticket == ticket)).and_then(position_of)
    }

    /// How many acquires of `part` wait behind the one under way.
    pub fn waiting(&self, part: Part) -> usize {
        self.parts.get(self.slot(part)).map_or(0, |s| s.queue.waiting())
    }

    /// The part `ticket` is queued on, acquiring, holding or lost on.
    fn owner(&self, ticket: Ticket) -> Option<usize> {
        self.parts.iter().position(|s| {
            s.queue.contains(ticket)
                || s.lost.contains_key(&ticket)
                || matches!(s.hold, Hold::Held { ticket: t, .. } if t == ticket)
                || matches!(s.hold, Hold::Releasing { ticket: Some(t) } if t == ticket)
        })
    }

    /// True when nothing is queued, held or owed to the server.
    pub fn is_quiescent(&self) -> bool {
        self.parts.iter().all(|s| s.queue.is_empty() && s.hold == Hold::None) && self.inner.is_quiescent()
    }

    // ---- mechanism -----------------------------------------------------------------

    /// Whether `part` is held, being acquired or being released.
    fn active(&self, part: usize) -> bool {
        self.parts.get(part).is_some_and(|s| s.hold != Hold::None || s.queue.head.as_ref().is_some_and(|h| h.started))
    }

    /// The part whose next acquire may start now: its lock is free and
    /// ready, a session can serve it, and (read-write lock) the other part
    /// is idle in this process or it is a downgrade. The earliest ticket
    /// goes first.
    fn next_startable(&self) -> Option<usize> {
        if !self.gate.up {
            return None;
        }
        (0..self.parts.len())
            .filter_map(|part| {
                let state = self.parts.get(part)?;
                let (ticket, downgrade) = state.queue.next()?;
                let others_idle = (0..self.parts.len()).all(|p| p == part || !self.active(p));
                let free =
                    state.hold == Hold::None && !self.active(part) && self.inner.ready(part_at(&*self.inner, part));
                (free && (others_idle || *downgrade)).then_some((ticket, part))
            })
            .min()
            .map(|(_, part)| part)
    }

    /// Starts acquires while any can start.
    fn advance(&mut self, now: Instant) {
        while let Some(part) = self.next_startable() {
            let Some(state) = self.parts.get_mut(part) else { return };
            let Some(head) = state.queue.promote() else { return };
            head.started = true;
            let (ticket, deadline) = (head.ticket, head.deadline);
            if let Err(e) = self.inner.acquire_part(now, part_at(&*self.inner, part), deadline) {
                if let Some(state) = self.parts.get_mut(part) {
                    state.queue.head = None;
                }
                self.events.push_back(ticket_event(ticket, LockEvent::Refused(e)));
            }
            self.collect(now);
        }
    }

    /// Takes the lock's events and assigns them to tickets; a multi-lock
    /// member's own events pass on untagged.
    fn collect(&mut self, now: Instant) {
        let one_part = self.inner.parts().len() <= 1;
        while let Some(PartEvent { part, member, event }) = self.inner.poll_event() {
            if !member.is_empty() {
                self.events.push_back(QueueEvent::Untagged { member, event });
                continue;
            }
            let slot = if one_part { 0 } else { part.index() };
            self.on_part_event(now, slot, event);
        }
    }

    fn on_part_event(&mut self, now: Instant, part: usize, event: LockEvent) {
        let gate = &self.gate;
        let parks = |e: &RequestError| gate.parks(e);
        let Some(state) = self.parts.get_mut(part) else { return };
        let acquiring = state.queue.head.as_ref().filter(|h| h.started).map(|h| h.ticket);
        match (event, state.hold, acquiring) {
            (LockEvent::Acquired { node, token }, Hold::None, Some(ticket)) => {
                let revoked = state.queue.head.take().is_some_and(|h| h.revoked);
                let flags = HoldFlags { revoked, ..HoldFlags::default() };
                state.hold = Hold::Held { ticket, flags };
                self.events.push_back(ticket_event(ticket, LockEvent::Acquired { node, token }));
            }
            // A re-entry's report: the recipe counted it.
            (LockEvent::Acquired { .. }, Hold::Held { .. }, _) => {}
            (LockEvent::Acquired { .. }, _, _) => {
                // Nobody asked (cannot happen through the ticket commands):
                // give it back rather than hold it for no one.
                state.hold = Hold::Releasing { ticket: None };
                let _ = self.inner.release_part(now, part_at(&*self.inner, part));
                self.collect(now);
            }
            (LockEvent::Failed(e), _, Some(_)) if parks(&e) => {
                // It starts again, with a new node, on the next session;
                // unless its deadline has passed meanwhile.
                if let Some(ticket) = state.queue.park_head(now) {
                    self.events.push_back(ticket_event(ticket, LockEvent::TimedOut));
                }
            }
            (event @ (LockEvent::TimedOut | LockEvent::Failed(_) | LockEvent::Refused(_)), _, Some(ticket)) => {
                state.queue.head = None;
                self.events.push_back(ticket_event(ticket, event));
            }
            (event @ (LockEvent::Released | LockEvent::Failed(_)), Hold::Releasing { ticket }, _) => {
                state.hold = Hold::None;
                if let Some(ticket) = ticket {
                    self.events.push_back(ticket_event(ticket, event));
                }
            }
            (LockEvent::Lost, Hold::Held { ticket, flags, .. }, _) => {
                // Lost for good; the lock moves on to the next acquire. A
                // multi-lock still holds its other members: drop them.
                let reason = if flags.expired { LossReason::MaxHold } else { LossReason::SessionOrNode };
                state.lost.insert(ticket, reason);
                state.hold = Hold::Releasing { ticket: None };
                self.events.push_back(ticket_event(ticket, LockEvent::Lost));
                if self.inner.release_part(now, part_at(&*self.inner, part)).is_err() {
                    // A single lock dropped the hold with the loss.
                    if let Some(state) = self.parts.get_mut(part) {
                        state.hold = Hold::None;
                    }
                }
                self.collect(now);
            }
            (
                event @ (LockEvent::Suspended
                | LockEvent::Reconnected
                | LockEvent::RevocationRequested
                | LockEvent::Expired { .. }),
                Hold::Held { ticket, .. },
                _,
            ) => {
                if let Hold::Held { flags, .. } = &mut state.hold {
                    match &event {
                        LockEvent::Suspended => flags.suspended = true,
                        LockEvent::Reconnected => flags.suspended = false,
                        LockEvent::RevocationRequested => flags.revoked = true,
                        _ => flags.expired = true,
                    }
                }
                self.events.push_back(ticket_event(ticket, event));
            }
            (event @ (LockEvent::Queued { .. } | LockEvent::RevocationRequested), _, Some(ticket)) => {
                if let Some(head) = state.queue.head.as_mut() {
                    match event {
                        LockEvent::Queued { position, total } => head.queued(position, total),
                        _ => head.revoked = true,
                    }
                }
                self.events.push_back(ticket_event(ticket, event));
            }
            (other, _, _) => self.events.push_back(QueueEvent::Untagged { member: Vec::new(), event: other }),
        }
    }

    /// Fails every queued acquire with `error` (the session ended for good).
    fn fail_all(&mut self, now: Instant, error: &RequestError) {
        for part in 0..self.parts.len() {
            let Some(state) = self.parts.get_mut(part) else { continue };
            let started = state.queue.head.as_ref().is_some_and(|h| h.started);
            let tickets = state.queue.take_all();
            if started {
                self.inner.cancel_part(now, part_at(&*self.inner, part));
            }
            for ticket in tickets {
                self.events.push_back(ticket_event(ticket, LockEvent::Failed(error.clone())));
            }
        }
        self.collect(now);
    }
}

impl LockQueue {
    /// Tickets whose deadline passed leave the queues with `TimedOut`.
    fn expire(&mut self, now: Instant) {
        for state in self.parts.iter_mut() {
            for ticket in state.queue.take_expired(now) {
                self.events.push_back(ticket_event(ticket, LockEvent::TimedOut));
            }
        }
    }

    /// The earliest ticket deadline.
    fn queue_deadline(&self) -> Option<Instant> {
        self.parts.iter().filter_map(|s| s.queue.next_deadline()).min()
    }
}

/// The queue's part of every input; see [`TicketQueued`].
impl TicketQueued for LockQueue {
    type Inner = dyn LockRecipe;
    type Event = QueueEvent;

    fn inner_recipe(&self) -> &(dyn LockRecipe + 'static) {
        &*self.inner
    }

    fn inner_recipe_mut(&mut self) -> &mut (dyn LockRecipe + 'static) {
        &mut *self.inner
    }

    fn gate_state(&mut self, state: ConnectionState) -> Option<RequestError> {
        self.gate.on_state(state)
    }

    fn collect(&mut self, now: Instant) {
        LockQueue::collect(self, now);
    }

    fn advance(&mut self, now: Instant) {
        LockQueue::advance(self, now);
    }

    fn fail_all(&mut self, now: Instant, error: &RequestError) {
        LockQueue::fail_all(self, now, error);
    }

    fn expire(&mut self, now: Instant) {
        LockQueue::expire(self, now);
    }

    fn queue_deadline(&self) -> Option<Instant> {
        LockQueue::queue_deadline(self)
    }

    fn next_event(&mut self) -> Option<QueueEvent> {
        crate::slack::pop_front_freeing(&mut self.events)
    }

    fn quiescent(&self) -> bool {
        LockQueue::is_quiescent(self)
    }
}

/// The place among `lock`'s parts of the part `asked` names.
fn slot_of(lock: &dyn LockRecipe, asked: Part) -> usize {
    let part = lock.part(asked);
    lock.parts().iter().position(|p| *p == part).unwrap_or(0)
}

/// The part at place `slot` among `lock`'s parts.
fn part_at(lock: &dyn LockRecipe, slot: usize) -> Part {
    lock.parts().get(slot).copied().unwrap_or(Part::Whole)
}
