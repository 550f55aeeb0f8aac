//! The one trait every recipe implements, so a [`Client`](crate::Client) can
//! hold them side by side and composite recipes can nest them.

use alloc::string::String;

use zoolock_wire::Response;

use crate::error::RequestError;
use crate::op::Op;
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

/// A recipe-local op id; recipes never see xids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(u64);

impl OpId {
    /// An id a recipe (through its outbox) gives an op.
    pub(crate) fn new(n: u64) -> OpId {
        OpId(n)
    }

    /// The id's number, for logs.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Names one acquire through a per-process queue ([`LockQueue`](crate::recipes::LockQueue),
/// [`LeaseQueue`](crate::recipes::LeaseQueue)). Issued by the queue's acquire, in
/// increasing order, never reused by that queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(u64);

impl Ticket {
    /// The `n`-th ticket of a queue.
    pub(crate) fn new(n: u64) -> Ticket {
        Ticket(n)
    }

    /// The ticket's number, for logs and metrics.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Displays as its number.
impl core::fmt::Display for Ticket {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(&self.0, f)
    }
}

/// An op a recipe wants sent. A read with its watch flag set registers the
/// watch for this recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipeOp {
    /// Echoed in [`Recipe::handle_reply`].
    pub id: OpId,
    /// The request.
    pub op: Op,
}

/// A token that identifies one hold of a lock and orders it among the holds
/// of its lock path: the czxid of the lock node (the zxid of the transaction
/// that created it). A resource that remembers the highest token it has
/// accepted can reject writes from a holder whose lock was taken over.
///
/// What it orders: the holds of a mutex (a semaphore mutex, a multi-lock
/// member) in grant order, since nodes are granted in creation order.
/// Leases of a semaphore with several have no order among themselves.
///
/// For a read-write lock a writer's token is above every earlier writer's
/// and a reader's above every earlier writer's, but a writer's is not always
/// above every earlier reader's: a downgrade's read node is created after its
/// write node and reuses that node's sequence (Curator 5.5+), so it sorts
/// with it and is held before the writers that queued meanwhile, yet its
/// czxid is higher than theirs. A resource shared by both halves should keep
/// the highest *write* token it accepted: take a write whose token is at
/// least that (and raise it), take a read whose token is at least that
/// (without raising it), and have a downgraded reader present the token of
/// the write hold it came from, which the next writer's exceeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken(pub i64);

/// The token as a plain number (the czxid), for logs, headers and
/// environment variables.
impl core::fmt::Display for FencingToken {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(&self.0, f)
    }
}

/// What a recipe reports to its user.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecipeEvent {
    /// The lock (or lease) is held through `node`.
    Acquired {
        /// Our lock node's path (shared with the recipe's record of it).
        node: alloc::sync::Arc<str>,
        /// The node's czxid.
        token: FencingToken,
    },
    /// A listing left the acquire waiting: where it stands in the queue.
    /// Reported from the listings the lock makes anyway (no extra request),
    /// only when the position or the count changed since the last report of
    /// this acquire.
    Queued {
        /// How many nodes must go before ours holds the lock: 1 is next in
        /// line. For a read lock, the nodes up to the last writer ahead of
        /// ours. Between listings it counts down by each watched
        /// predecessor seen to go (the fast handoff does not re-list), so it
        /// is an upper bound until the next listing.
        position: usize,
        /// How many nodes the listing it came from held, ours included.
        total: usize,
    },
    /// The acquire deadline passed; our node has been (or is being) deleted.
    TimedOut,
    /// The hold ended and our node is deleted.
    Released,
    /// The connection dropped: stop the critical section until `Reconnected`.
    Suspended,
    /// The same session is back; the hold continues.
    Reconnected,
    /// The hold is gone for good: the session expired, or its node was
    /// deleted (by someone else, or found missing after a reconnect).
    Lost,
    /// The hold (the lease `node`, for a semaphore) reached its
    /// [`LockConfig::max_hold`](crate::recipes::LockConfig::max_hold): its node is
    /// being deleted, and `Lost` (`LeaseLost` for a lease) follows at once.
    /// Tells why the loss came.
    Expired {
        /// The node that was held.
        node: alloc::sync::Arc<str>,
    },
    /// Another process asked the holder to give the lock up.
    RevocationRequested,
    /// The recipe gave up on an error it cannot recover from.
    Failed(RequestError),
    /// The acquire was refused before anything was sent (for example a
    /// read→write upgrade, or a lock that is not reentrant): the caller's
    /// mistake, not the server's.
    Refused(crate::error::ApiMisuse),
    /// What a per-process lock queue ([`LockQueue`](crate::recipes::LockQueue))
    /// reports, typed: an acquire's ticket and its lock's event (its grant,
    /// time-out, failure, refusal, release, and the status changes of its
    /// hold), or an event no ticket owns. Boxed, as events are rare next
    /// to their size.
    Lock(alloc::boxed::Box<crate::recipes::QueueEvent>),
    /// What a per-process lease queue ([`LeaseQueue`](crate::recipes::LeaseQueue))
    /// reports, typed: an acquire's ticket and its semaphore's event, the
    /// semaphore's own events, and its capacity. Boxed, as `Lock`.
    Leases(alloc::boxed::Box<crate::recipes::LeaseQueueEvent>),
    /// What an [`Election`](crate::recipes::Election) participant reports,
    /// typed: its lock's event about a term (`Acquired` begins one,
    /// `Released` and `Lost` end it, `Suspended` and `Reconnected` change
    /// it) or about the wait for one (`Queued`, `Failed`, `Refused`).
    Election(crate::recipes::LockEvent),
    /// An event of one member of a composite recipe (the read or write half of
    /// a read-write lock, one lock of a multi-lock): flat, the member's own
    /// typed event under its place.
    Member {
        /// The member's index at each level, outermost first (a read-write
        /// lock half's [`Part::index`](crate::recipes::Part::index), a
        /// multi-lock member's place).
        members: alloc::vec::Vec<usize>,
        /// Its event.
        event: crate::recipes::LockEvent,
    },
    /// The lock's participants, in queue order.
    Participants(alloc::vec::Vec<Participant>),
    /// An observed lock path's holder (an election's leader) changed: the
    /// first participant whose node still exists, or `None` when nobody is
    /// queued. Reported first for the holder found by the first listing.
    Holder(Option<Participant>),
    /// A revocation request was written to the holder's node.
    RevokeSent,
    /// A semaphore's lease `node` is gone: deleted by someone else, found
    /// missing after a reconnect, or lost with the session. Only that lease
    /// is lost; the others keep their own status. (`Lost` follows once no
    /// lease is left.)
    LeaseLost {
        /// The lease node.
        node: alloc::sync::Arc<str>,
    },
    /// A revocable semaphore's lease `node` was asked to be given back.
    LeaseRevocationRequested {
        /// The lease node.
        node: alloc::sync::Arc<str>,
    },
    /// A shared count's value, newer than the last one reported.
    Count {
        /// The value.
        value: i32,
        /// The count node's data version it was seen at (for `try_set`).
        version: i32,
    },
    /// The outcome of one write of a shared count, in call order: `true`
    /// written, `false` refused because the version had moved on.
    CountWritten(Result<bool, RequestError>),
    /// The shared count's node holds `len` bytes, not a 4-byte int, plain
    /// or gzip-framed (someone else's data); the last good value stays in
    /// force.
    CountMalformed {
        /// How many bytes it holds.
        len: usize,
    },
    /// Deleting a node we abandoned failed for a reason retrying cannot fix
    /// (NoAuth, ...): the node stays until our session ends.
    CleanupFailed {
        /// The node.
        path: alloc::sync::Arc<str>,
        /// Why.
        error: RequestError,
    },
}

/// One node queued on a lock path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    /// The node's full path.
    pub path: String,
    /// Its data (Curator writes the holder's address), decompressed if it
    /// was gzip-framed; `None` if it vanished before it could be read.
    pub data: Option<bytes::Bytes>,
    /// Its node's stat, read with its data (`None` when the data was not
    /// read): the czxid is the holder's fencing token, the ctime when it
    /// queued, so a watcher can show both without another request.
    pub stat: Option<zoolock_wire::Stat>,
}

/// A poll-driven recipe. Inputs are `handle_*`, outputs are `poll_*`; drain
/// `poll_op`, then `poll_event`, then read `poll_timeout`.
///
/// Each recipe reports its own typed [`Recipe::Event`] (a lock's
/// [`PartEvent`](crate::recipes::PartEvent), a lock queue's
/// [`QueueEvent`](crate::recipes::QueueEvent), ...); composites consume
/// their members' events as those types. The user-facing [`RecipeEvent`]
/// is made from them (`Into`) only where a [`Client`](crate::Client) hands
/// events out.
pub trait Recipe: Send {
    /// What this recipe reports.
    type Event;
    /// The reply to an op this recipe emitted.
    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>);
    /// A watch this recipe registered fired.
    fn handle_watch(&mut self, now: Instant, event: &WatchEvent);
    /// The session's connection state changed.
    fn handle_session(&mut self, now: Instant, state: ConnectionState);
    /// A deadline from [`Recipe::poll_timeout`] passed.
    fn handle_timeout(&mut self, now: Instant);
    /// The next op to send.
    fn poll_op(&mut self) -> Option<RecipeOp>;
    /// The next event.
    fn poll_event(&mut self) -> Option<Self::Event>;
    /// When [`Recipe::handle_timeout`] must next run; `None` is never.
    fn poll_timeout(&self) -> Option<Instant>;
    /// True when nothing is in progress and nothing is owed to the server
    /// (no deletes pending), so the recipe can be dropped without leaking.
    fn is_quiescent(&self) -> bool;
    /// True while the recipe holds something (a lock, a lease, a
    /// leadership): while any recipe of a client does, its session confirms
    /// the quorum ([`Session::set_confirming`](crate::Session::set_confirming)).
    fn holds(&self) -> bool;
}

#[cfg(test)]
mod tests {
    use super::FencingToken;
    use alloc::format;

    #[test]
    fn fencing_token_displays_as_its_number() {
        assert_eq!(format!("{}", FencingToken(4_294_967_298)), "4294967298");
        assert_eq!(format!("{:>4}", FencingToken(-1)), "  -1");
    }
}
