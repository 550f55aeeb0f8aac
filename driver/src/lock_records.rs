//! The driver's record of one lock's tickets ([`LockRecords`]): each
//! ticket's acquire waiting for its grant, then its hold, until the hold
//! has ended and been let go. Core keeps the tickets themselves; this is
//! only where their answers and statuses go.

use std::sync::Arc;

use futures_channel::oneshot;
use zoolock_core::FencingToken;
use zoolock_core::recipes::{LockQueue, Part, Ticket};

use crate::acquire::{self, Waiter};
use crate::error::Error;
use crate::lock::LockCommand;
use crate::metrics::Gauge;
use crate::task::Command;
use crate::{HoldStatus, LossReason};

/// A lock node and its fencing token; the node is shared by the hold's
/// record here and the [`crate::Hold`] (one copy per held lock).
pub(crate) type Grant = (Arc<str>, FencingToken);

/// What a lock's waiter keeps beside its answer.
#[derive(Debug)]
pub(crate) struct Waiting {
    pub(crate) part: Part,
    /// Asked to give the lock up before it was granted: it counts for the hold.
    pub(crate) revoked: bool,
}

/// What the tasks see of one ticket's hold.
#[derive(Debug)]
pub(crate) struct HoldState {
    pub(crate) part: Part,
    pub(crate) status: HoldStatus,
    pub(crate) revoked: bool,
    /// Why it was (or is being) lost: core's `Expired` comes before `Lost`.
    pub(crate) loss: Option<LossReason>,
    /// The lock node, for the log (the [`crate::Hold`]'s own, shared).
    pub(crate) node: Arc<str>,
    /// A release waiting for the server's answer.
    pub(crate) release: Option<oneshot::Sender<Result<(), Error>>>,
    /// Its last hold was let go and its delete is under way: set on the
    /// event loop before the delete is written, so that once the server can
    /// have handed the lock on, [`LockRecords::holder`] no longer reports it.
    pub(crate) releasing: bool,
    /// `zoolock_holds`, raised while the hold lasts.
    pub(crate) _held: Gauge,
}

/// What the driver keeps of one ticket: its acquire waiting for the grant,
/// then its hold, until the hold has ended and been let go. Core keeps the
/// ticket itself (its queue, its hold, giving back what an abandoned ticket
/// got); this is only where its answers go.
#[derive(Debug)]
pub(crate) enum TicketState {
    Waiting(Waiter<Grant, Waiting>),
    Held(HoldState),
}

/// The tickets of one lock recipe, in ticket order (core issues them in
/// increasing order): a small vector, as a lock handle rarely has more than a
/// few tickets at once, searched by bisection so that many stay cheap. A
/// part's holder is its hold that is not lost.
#[derive(Debug, Default)]
pub(crate) struct LockRecords {
    tickets: Vec<(Ticket, TicketState)>,
}

/// Up to this many tickets the vector grows one by one (a lock handle holds
/// as few as it needs), past it by doubling.
const FEW_TICKETS: usize = 4;

impl LockRecords {
    fn find(&self, t: Ticket) -> Result<usize, usize> {
        self.tickets.binary_search_by_key(&t, |(k, _)| *k)
    }

    pub(crate) fn get(&self, t: Ticket) -> Option<&TicketState> {
        self.find(t).ok().and_then(|i| self.tickets.get(i)).map(|(_, s)| s)
    }

    pub(crate) fn get_mut(&mut self, t: Ticket) -> Option<&mut TicketState> {
        self.find(t).ok().and_then(|i| self.tickets.get_mut(i)).map(|(_, s)| s)
    }

    /// Files `state` under `t`, replacing what was there.
    pub(crate) fn insert(&mut self, t: Ticket, state: TicketState) {
        match self.find(t) {
            Ok(i) => {
                if let Some(slot) = self.tickets.get_mut(i) {
                    slot.1 = state;
                }
            }
            Err(i) => {
                if self.tickets.len() == self.tickets.capacity() && self.tickets.len() < FEW_TICKETS {
                    self.tickets.reserve_exact(1);
                }
                self.tickets.insert(i, (t, state));
            }
        }
    }

    /// Takes out what is filed under `t` if `take` says so.
    fn remove_if(&mut self, t: Ticket, take: impl FnOnce(&TicketState) -> bool) -> Option<TicketState> {
        let i = self.find(t).ok()?;
        take(&self.tickets.get(i)?.1).then(|| self.tickets.remove(i).1)
    }

    pub(crate) fn hold(&self, t: Ticket) -> Option<&HoldState> {
        match self.get(t)? {
            TicketState::Held(h) => Some(h),
            TicketState::Waiting(_) => None,
        }
    }

    pub(crate) fn hold_mut(&mut self, t: Ticket) -> Option<&mut HoldState> {
        match self.get_mut(t)? {
            TicketState::Held(h) => Some(h),
            TicketState::Waiting(_) => None,
        }
    }

    /// The hold of `part` that is neither lost nor being released.
    pub(crate) fn holder(&self, part: Part) -> Option<&HoldState> {
        self.tickets.iter().find_map(|(_, t)| match t {
            TicketState::Held(h) if h.part == part && h.status != HoldStatus::Lost && !h.releasing => Some(h),
            _ => None,
        })
    }

    /// The hold of `t` is over: forget it, and hand back a release that
    /// waits for it.
    pub(crate) fn forget_hold(&mut self, t: Ticket) -> Option<oneshot::Sender<Result<(), Error>>> {
        match self.remove_if(t, |s| matches!(s, TicketState::Held(_)))? {
            TicketState::Held(h) => h.release,
            TicketState::Waiting(_) => None,
        }
    }
}

impl acquire::TicketRecords for LockRecords {
    type Grant = Grant;
    type Waiting = Waiting;
    type Queue = LockQueue;

    fn waiter(&self, t: Ticket) -> Option<&Waiter<Grant, Waiting>> {
        match self.get(t)? {
            TicketState::Waiting(w) => Some(w),
            TicketState::Held(_) => None,
        }
    }

    fn insert_waiter(&mut self, t: Ticket, waiter: Waiter<Grant, Waiting>) {
        self.insert(t, TicketState::Waiting(waiter));
    }

    fn take_waiter(&mut self, t: Ticket) -> Option<Waiter<Grant, Waiting>> {
        match self.remove_if(t, |s| matches!(s, TicketState::Waiting(_)))? {
            TicketState::Waiting(w) => Some(w),
            TicketState::Held(_) => None,
        }
    }

    fn forget(&mut self, t: Ticket) {
        self.remove_if(t, |_| true);
    }

    fn command(recipe: Arc<acquire::RegisteredQueue<Self>>, command: acquire::TicketCommand<Self>) -> Command {
        Command::Lock(recipe, LockCommand::Ticket(command))
    }
}

#[cfg(test)]
mod tests {
    use zoolock_core::recipes::LockSpec;
    use zoolock_core::{Instant, recipes::LockConfig};

    use super::*;
    use crate::metrics::{Labels, Series};

    /// `n` tickets, as core issues them.
    fn issued(n: usize) -> Vec<Ticket> {
        let (lock, part) = LockSpec::Mutex("/t".into()).build(LockConfig::new(1), false).expect("a mutex");
        let mut queue = LockQueue::new(lock, true);
        (0..n).map(|_| queue.acquire(Instant::ZERO, part, None)).collect()
    }

    fn held(node: &str) -> TicketState {
        TicketState::Held(HoldState {
            part: Part::Whole,
            status: HoldStatus::Held,
            revoked: false,
            loss: None,
            node: node.into(),
            releasing: false,
            release: None,
            _held: Gauge::held(&Labels::new("mutex", "/t", false, &Series::default())),
        })
    }

    #[test]
    fn many_tickets_are_found_whatever_order_they_came_in() {
        let tickets = issued(40);
        let mut record = LockRecords::default();
        for (i, &t) in tickets.iter().enumerate().rev() {
            record.insert(t, held(&format!("n{i}")));
        }
        for (i, &t) in tickets.iter().enumerate() {
            assert_eq!(record.hold(t).map(|h| h.node.to_string()), Some(format!("n{i}")));
        }
        assert!(record.forget_hold(tickets[7]).is_none(), "no release was waiting");
        assert!(record.hold(tickets[7]).is_none());
        assert!(record.hold(tickets[8]).is_some());
        assert_eq!(record.tickets.len(), 39);
    }

    #[test]
    fn one_ticket_takes_room_for_one() {
        let tickets = issued(2);
        let mut record = LockRecords::default();
        record.insert(tickets[0], held("a"));
        assert_eq!(record.tickets.capacity(), 1);
        record.insert(tickets[1], held("b"));
        assert_eq!(record.tickets.capacity(), 2);
    }
}
