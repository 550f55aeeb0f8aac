//! The local FIFO of acquires through one shared handle: [`Ticket`]s with
//! deadlines, one at the head working on the recipe at a time. Used by
//! [`LockQueue`](super::LockQueue) (one queue per part) and
//! [`LeaseQueue`](super::LeaseQueue).

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;

use zoolock_wire::Response;

use crate::error::RequestError;
use crate::recipe::{OpId, Recipe, RecipeOp, Ticket};
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

/// Whether a shared queue may start acquires, from the session's states.
#[derive(Debug)]
pub(crate) struct SessionGate {
    /// Acquires of an expired session wait for the renewed one.
    renew: bool,
    /// False from a session's end until a new session connects.
    pub(crate) up: bool,
    /// The session ended for good (closed, refused, or expired without
    /// renewal): new acquires fail with this at once. Boxed: every lock
    /// handle has a gate, and almost none ever sees its session end.
    ended: Option<Box<RequestError>>,
}

impl SessionGate {
    pub(crate) fn new(renew: bool) -> SessionGate {
        SessionGate { renew, up: true, ended: None }
    }

    /// The error new acquires fail with at once, once the session ended for
    /// good.
    pub(crate) fn ended(&self) -> Option<RequestError> {
        self.ended.as_deref().cloned()
    }

    /// Whether an acquire failing with `error` waits for the next session.
    pub(crate) fn parks(&self, error: &RequestError) -> bool {
        self.renew && *error == RequestError::SessionExpired
    }

    /// Notes `state`; returns the error to fail every queued acquire with
    /// when the session ended for good.
    pub(crate) fn on_state(&mut self, state: ConnectionState) -> Option<RequestError> {
        match state {
            _ if state.is_end() => self.up = false,
            ConnectionState::Connected | ConnectionState::ConnectedReadOnly | ConnectionState::Reconnected => {
                self.up = true;
                self.ended = None;
            }
            _ => {}
        }
        let error = state.end_error()?;
        if state == ConnectionState::Lost && self.renew {
            return None;
        }
        self.ended = Some(Box::new(error.clone()));
        Some(error)
    }
}

/// A per-process ticket queue over one inner recipe ([`LockQueue`](super::LockQueue),
/// [`LeaseQueue`](super::LeaseQueue)): the blanket [`Recipe`] impl hands
/// every input to the inner recipe, then the queue collects its outputs
/// (`collect`), fails every ticket when the session ends (`fail_all`), drops
/// expired tickets (`expire`) and moves the next ticket on (`advance`).
/// (`pub` only so that the queues' [`Recipe::Event`] may name its `Event`;
/// the module is private and the trait not exported.)
pub trait TicketQueued: Send + 'static {
    /// The queued recipe.
    type Inner: Recipe + ?Sized;
    /// What the queue reports.
    type Event;
    /// The queued recipe.
    fn inner_recipe(&self) -> &Self::Inner;
    /// The queued recipe, for its inputs.
    fn inner_recipe_mut(&mut self) -> &mut Self::Inner;
    /// Notes a session state; the error to fail every ticket with when the
    /// session ended for good.
    fn gate_state(&mut self, state: ConnectionState) -> Option<RequestError>;
    /// Takes the inner recipe's events and assigns them to tickets.
    fn collect(&mut self, now: Instant);
    /// Starts acquires while any can start.
    fn advance(&mut self, now: Instant);
    /// Fails every queued acquire with `error` (the session ended for good).
    fn fail_all(&mut self, now: Instant, error: &RequestError);
    /// Tickets whose deadline passed leave the queue with `TimedOut`.
    fn expire(&mut self, now: Instant);
    /// The earliest ticket deadline.
    fn queue_deadline(&self) -> Option<Instant>;
    /// The next event for the user.
    fn next_event(&mut self) -> Option<Self::Event>;
    /// Nothing queued, held or owed to the server.
    fn quiescent(&self) -> bool;
}

impl<Q: TicketQueued> Recipe for Q {
    type Event = Q::Event;

    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        self.inner_recipe_mut().handle_reply(now, op, result);
        self.collect(now);
        self.advance(now);
    }

    fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        self.inner_recipe_mut().handle_watch(now, event);
        self.collect(now);
        self.advance(now);
    }

    fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        let ended = self.gate_state(state);
        self.inner_recipe_mut().handle_session(now, state);
        self.collect(now);
        if let Some(error) = ended {
            self.fail_all(now, &error);
        }
        self.advance(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.inner_recipe().poll_timeout().is_some_and(|t| t <= now) {
            self.inner_recipe_mut().handle_timeout(now);
            self.collect(now);
        }
        self.expire(now);
        self.advance(now);
    }

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.inner_recipe_mut().poll_op()
    }

    fn poll_event(&mut self) -> Option<Q::Event> {
        self.next_event()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.queue_deadline().into_iter().chain(self.inner_recipe().poll_timeout()).min()
    }

    fn is_quiescent(&self) -> bool {
        self.quiescent()
    }

    fn holds(&self) -> bool {
        self.inner_recipe().holds()
    }
}

/// Issues a queue's tickets, in increasing order.
#[derive(Debug, Default)]
pub(crate) struct TicketIssuer {
    next: u64,
}

impl TicketIssuer {
    /// A ticket no earlier call returned.
    pub(crate) fn issue(&mut self) -> Ticket {
        let ticket = Ticket::new(self.next);
        self.next += 1;
        ticket
    }
}

/// One queued acquire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry<T> {
    pub(crate) ticket: Ticket,
    pub(crate) deadline: Option<Instant>,
    pub(crate) what: T,
}

/// The acquire at the head of the queue: its [`Entry`]'s fields, laid out
/// flat so that the flags and the position fill the entry's padding (every
/// lock handle keeps one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head<T> {
    pub(crate) ticket: Ticket,
    pub(crate) deadline: Option<Instant>,
    pub(crate) what: T,
    /// Started on the recipe; `false` while parked until a session can serve it.
    pub(crate) started: bool,
    /// Asked to give the hold up before it was granted: it counts for the
    /// hold (a lock's).
    pub(crate) revoked: bool,
    /// Where it last stood on ZooKeeper, from its `Queued` events; `None`
    /// before its first.
    pub(crate) position: Option<Packed>,
}

impl<T> Head<T> {
    /// Notes the position a `Queued` event reports.
    pub(crate) fn queued(&mut self, position: usize, total: usize) {
        self.position = Some(Packed::new(position, total));
    }
}

/// A head's position as (position, total), as [`Head::queued`] kept it.
pub(crate) fn position_of<T>(head: &Head<T>) -> Option<(usize, usize)> {
    head.position.map(Packed::get)
}

/// A queue position (position, total) in half the room, as a queue head or
/// an election keeps it: a queue never nears `u32::MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packed(u32, u32);

impl Packed {
    pub(crate) fn new(position: usize, total: usize) -> Packed {
        let half = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Packed(half(position), half(total))
    }

    /// (position, total).
    pub(crate) fn get(self) -> (usize, usize) {
        let full = |n: u32| usize::try_from(n).unwrap_or(usize::MAX);
        (full(self.0), full(self.1))
    }
}

/// FIFO of acquires; the head is the one the recipe works for.
#[derive(Debug)]
pub(crate) struct TicketQueue<T> {
    waiting: VecDeque<Entry<T>>,
    pub(crate) head: Option<Head<T>>,
}

impl<T> Default for TicketQueue<T> {
    fn default() -> Self {
        TicketQueue { waiting: VecDeque::new(), head: None }
    }
}

impl<T> TicketQueue<T> {
    /// True when `ticket` is waiting or at the head.
    pub(crate) fn contains(&self, ticket: Ticket) -> bool {
        self.head.as_ref().is_some_and(|h| h.ticket == ticket) || self.waiting.iter().any(|e| e.ticket == ticket)
    }

    /// Queues an acquire (a fresh ticket) behind every other.
    pub(crate) fn push(&mut self, ticket: Ticket, deadline: Option<Instant>, what: T) {
        self.waiting.push_back(Entry { ticket, deadline, what });
    }

    /// Queues an acquire (a fresh ticket) ahead of every waiting one
    /// (behind a head).
    pub(crate) fn push_front(&mut self, ticket: Ticket, deadline: Option<Instant>, what: T) {
        self.waiting.push_front(Entry { ticket, deadline, what });
    }

    /// The acquire that starts next (its ticket and what it asks): a parked
    /// head, else the first waiting.
    pub(crate) fn next(&self) -> Option<(Ticket, &T)> {
        match &self.head {
            Some(h) if !h.started => Some((h.ticket, &h.what)),
            Some(_) => None,
            None => self.waiting.front().map(|e| (e.ticket, &e.what)),
        }
    }

    /// Removes a waiting (not head) acquire; true if it was there.
    pub(crate) fn remove_waiting(&mut self, ticket: Ticket) -> bool {
        let before = self.waiting.len();
        self.waiting.retain(|e| e.ticket != ticket);
        self.waiting.len() != before
    }

    /// The head's ticket if it is `ticket`.
    pub(crate) fn head_is(&self, ticket: Ticket) -> bool {
        self.head.as_ref().is_some_and(|h| h.ticket == ticket)
    }

    /// Moves the next waiting acquire to the (empty) head, parked.
    pub(crate) fn promote(&mut self) -> Option<&mut Head<T>> {
        if self.head.is_none() {
            let Entry { ticket, deadline, what } = crate::slack::pop_front_freeing(&mut self.waiting)?;
            self.head = Some(Head { ticket, deadline, what, started: false, revoked: false, position: None });
        }
        self.head.as_mut()
    }

    /// The head's acquire lost its session: parks it until the next session,
    /// or takes it out if its deadline has passed (returned: it timed out).
    pub(crate) fn park_head(&mut self, now: Instant) -> Option<Ticket> {
        let head = self.head.as_mut()?;
        if head.deadline.is_some_and(|d| d <= now) {
            return self.head.take().map(|h| h.ticket);
        }
        head.started = false;
        None
    }

    /// The earliest deadline among waiting acquires and a parked head (a
    /// started head's deadline is the recipe's to keep).
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let head = self.head.as_ref().filter(|h| !h.started).and_then(|h| h.deadline);
        self.waiting.iter().filter_map(|e| e.deadline).chain(head).min()
    }

    /// Takes the waiting acquires (and a parked head) whose deadline passed.
    pub(crate) fn take_expired(&mut self, now: Instant) -> Vec<Ticket> {
        let mut expired = Vec::new();
        if self.head.as_ref().is_some_and(|h| !h.started && h.deadline.is_some_and(|d| d <= now)) {
            if let Some(h) = self.head.take() {
                expired.push(h.ticket);
            }
        }
        self.waiting.retain(|e| {
            let due = e.deadline.is_some_and(|d| d <= now);
            if due {
                expired.push(e.ticket);
            }
            !due
        });
        expired
    }

    /// Takes every acquire, head first.
    pub(crate) fn take_all(&mut self) -> Vec<Ticket> {
        let head = self.head.take().map(|h| h.ticket);
        head.into_iter().chain(self.waiting.drain(..).map(|e| e.ticket)).collect()
    }

    /// Nothing queued and nothing at the head.
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none() && self.waiting.is_empty()
    }

    /// How many acquires wait behind the head.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }
}
