//! What a lock reports, typed: [`LockEvent`] is one lock's event,
//! [`PartEvent`] tags it with the part (and, for a multi-lock passing on a
//! member's event, the member) it belongs to. Every lock kind emits
//! [`PartEvent`]s ([`LockRecipe`](super::LockRecipe)'s event type), and the
//! composites that consume them ([`LockQueue`](super::LockQueue),
//! [`MultiLock`](super::MultiLock)) match on them without unboxing. The
//! user-facing [`RecipeEvent`] is built from them only where a
//! [`Client`](crate::Client) hands events out (`From` impls here).

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::capability::Part;
use crate::error::{ApiMisuse, RequestError};
use crate::recipe::{FencingToken, RecipeEvent, Ticket};

/// One event of one lock (a mutex, a read-write lock's half, a semaphore
/// mutex, a multi-lock). Each maps to the [`RecipeEvent`] of the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
// Exhaustive on purpose: the handles that carry it match every
// variant, so a new one is handled where it is delivered.
pub enum LockEvent {
    /// Held through `node`, whose czxid is `token`.
    Acquired {
        /// Our lock node's path (shared with the recipe's record of it).
        node: alloc::sync::Arc<str>,
        /// The node's czxid.
        token: FencingToken,
    },
    /// Where a waiting acquire stands (see [`RecipeEvent::Queued`]).
    Queued {
        /// Nodes ahead that must go first; 1 is next in line.
        position: usize,
        /// Nodes in the listing, ours included.
        total: usize,
    },
    /// The acquire deadline passed.
    TimedOut,
    /// The hold ended and its node is deleted.
    Released,
    /// The connection dropped.
    Suspended,
    /// The same session is back; the hold continues.
    Reconnected,
    /// The hold is gone for good.
    Lost,
    /// Another process asked the holder to give the lock up.
    RevocationRequested,
    /// The hold reached its maximum (`LockConfig::max_hold`); `Lost`
    /// follows.
    Expired {
        /// The node whose hold ended.
        node: alloc::sync::Arc<str>,
    },
    /// A semaphore mutex's lease node is gone (`Lost` follows).
    LeaseLost {
        /// The lease node.
        node: alloc::sync::Arc<str>,
    },
    /// The lock gave up on an error it cannot recover from.
    Failed(RequestError),
    /// The acquire was refused before anything was sent: the caller's
    /// mistake.
    Refused(ApiMisuse),
    /// Deleting an abandoned node failed for good.
    CleanupFailed {
        /// The node.
        path: alloc::sync::Arc<str>,
        /// Why.
        error: RequestError,
    },
}

impl LockEvent {
    /// The change under a hold this event is, if it is one.
    pub fn hold_change(&self) -> Option<crate::HoldChange> {
        match self {
            LockEvent::Suspended => Some(crate::HoldChange::Suspended),
            LockEvent::Reconnected => Some(crate::HoldChange::Reconnected),
            LockEvent::Lost => Some(crate::HoldChange::Lost),
            _ => None,
        }
    }
}

/// A lock recipe's event: which part it belongs to, and, when a multi-lock
/// passes on one of its members' own events, that member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartEvent {
    /// The part: [`Part::Whole`] for a one-part lock, the half for a
    /// read-write lock.
    pub part: Part,
    /// The member indices a multi-lock passed the event on through,
    /// outermost first (a member may be a multi-lock itself); empty for the
    /// lock's own events. Allocates only for such member events.
    pub member: Vec<usize>,
    /// What happened.
    pub event: LockEvent,
}

impl PartEvent {
    /// The lock's own event of `part`.
    pub fn new(part: Part, event: LockEvent) -> PartEvent {
        PartEvent { part, member: Vec::new(), event }
    }

    /// A one-part lock's own event.
    pub fn whole(event: LockEvent) -> PartEvent {
        PartEvent::new(Part::Whole, event)
    }
}

/// What a [`LockQueue`](super::LockQueue) reports: an event of one
/// acquire's ticket, or one of the lock's events that no ticket owns (a
/// multi-lock member's, one of a hold nobody asked for), passed on as is.
#[derive(Debug, Clone, PartialEq, Eq)]
// Exhaustive on purpose: the handles that carry it match every
// variant, so a new one is handled where it is delivered.
pub enum QueueEvent {
    /// An event of the acquire `ticket`.
    Ticket {
        /// The acquire's ticket.
        ticket: Ticket,
        /// What happened to it.
        event: LockEvent,
    },
    /// An event no ticket owns (its part is not told).
    Untagged {
        /// As [`PartEvent::member`].
        member: Vec<usize>,
        /// What happened.
        event: LockEvent,
    },
}

impl From<LockEvent> for RecipeEvent {
    fn from(event: LockEvent) -> RecipeEvent {
        match event {
            LockEvent::Acquired { node, token } => RecipeEvent::Acquired { node, token },
            LockEvent::Queued { position, total } => RecipeEvent::Queued { position, total },
            LockEvent::TimedOut => RecipeEvent::TimedOut,
            LockEvent::Released => RecipeEvent::Released,
            LockEvent::Suspended => RecipeEvent::Suspended,
            LockEvent::Reconnected => RecipeEvent::Reconnected,
            LockEvent::Lost => RecipeEvent::Lost,
            LockEvent::RevocationRequested => RecipeEvent::RevocationRequested,
            LockEvent::Expired { node } => RecipeEvent::Expired { node },
            LockEvent::LeaseLost { node } => RecipeEvent::LeaseLost { node },
            LockEvent::Failed(error) => RecipeEvent::Failed(error),
            LockEvent::Refused(misuse) => RecipeEvent::Refused(misuse),
            LockEvent::CleanupFailed { path, error } => RecipeEvent::CleanupFailed { path, error },
        }
    }
}

/// `event` of `members` (outermost first): plain for the lock itself.
fn through_members(members: Vec<usize>, event: LockEvent) -> RecipeEvent {
    if members.is_empty() { RecipeEvent::from(event) } else { RecipeEvent::Member { members, event } }
}

/// A half's event is a `Member` under the half's [`Part::index`]; a one-part
/// lock's is plain.
impl From<PartEvent> for RecipeEvent {
    fn from(PartEvent { part, member, event }: PartEvent) -> RecipeEvent {
        match part {
            Part::Whole => through_members(member, event),
            Part::Read | Part::Write => {
                let members = core::iter::once(part.index()).chain(member).collect();
                RecipeEvent::Member { members, event }
            }
        }
    }
}

impl From<QueueEvent> for RecipeEvent {
    fn from(event: QueueEvent) -> RecipeEvent {
        match event {
            QueueEvent::Ticket { .. } => RecipeEvent::Lock(Box::new(event)),
            QueueEvent::Untagged { member, event } if member.is_empty() => {
                RecipeEvent::Lock(Box::new(QueueEvent::Untagged { member, event }))
            }
            // A multi-lock member's event keeps the shape a multi-lock's own
            // events have.
            QueueEvent::Untagged { member, event } => through_members(member, event),
        }
    }
}
