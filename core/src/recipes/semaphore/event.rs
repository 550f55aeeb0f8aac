//! What a [`Semaphore`](super::Semaphore) reports, and how a client turns it
//! into the user-facing [`RecipeEvent`].

use super::super::shared_count::CountEvent;
use crate::error::{ApiMisuse, RequestError};
use crate::recipe::{FencingToken, RecipeEvent};

/// What a [`Semaphore`](super::Semaphore) reports; a client reports each as the
/// [`RecipeEvent`] of the same name (a count's as the count's).
#[derive(Debug, Clone, PartialEq, Eq)]
// Exhaustive on purpose: the handles that carry it match every
// variant, so a new one is handled where it is delivered.
pub enum SemaphoreEvent {
    /// A lease is held through `node` ([`RecipeEvent::Acquired`]).
    Acquired {
        /// The lease node (shared with the recipe's record of it).
        node: alloc::sync::Arc<str>,
        /// Its czxid.
        token: FencingToken,
    },
    /// Where a waiting acquire stands ([`RecipeEvent::Queued`]).
    Queued {
        /// Nodes ahead.
        position: usize,
        /// Nodes listed, ours included.
        total: usize,
    },
    /// The acquire deadline passed.
    TimedOut,
    /// A returned lease's node is deleted.
    Released,
    /// The connection dropped.
    Suspended,
    /// The same session is back.
    Reconnected,
    /// No lease is left ([`RecipeEvent::Lost`]).
    Lost,
    /// Lease `node` reached its maximum hold ([`RecipeEvent::Expired`]);
    /// `LeaseLost` follows.
    Expired {
        /// The lease node.
        node: alloc::sync::Arc<str>,
    },
    /// Lease `node` is gone ([`RecipeEvent::LeaseLost`]).
    LeaseLost {
        /// The lease node.
        node: alloc::sync::Arc<str>,
    },
    /// Lease `node` was asked back ([`RecipeEvent::LeaseRevocationRequested`]).
    LeaseRevocationRequested {
        /// The lease node.
        node: alloc::sync::Arc<str>,
    },
    /// An error it cannot recover from.
    Failed(RequestError),
    /// The acquire was refused before anything was sent.
    Refused(ApiMisuse),
    /// Deleting an abandoned node failed for good.
    CleanupFailed {
        /// The node.
        path: alloc::sync::Arc<str>,
        /// Why.
        error: RequestError,
    },
    /// An event of the count that sizes it.
    Count(CountEvent),
}

impl SemaphoreEvent {
    /// The change under the held leases this event is, if it is one (`Lost`:
    /// no lease is left).
    pub fn hold_change(&self) -> Option<crate::HoldChange> {
        match self {
            SemaphoreEvent::Suspended => Some(crate::HoldChange::Suspended),
            SemaphoreEvent::Reconnected => Some(crate::HoldChange::Reconnected),
            SemaphoreEvent::Lost => Some(crate::HoldChange::Lost),
            _ => None,
        }
    }
}

impl From<SemaphoreEvent> for RecipeEvent {
    fn from(event: SemaphoreEvent) -> RecipeEvent {
        match event {
            SemaphoreEvent::Acquired { node, token } => RecipeEvent::Acquired { node, token },
            SemaphoreEvent::Queued { position, total } => RecipeEvent::Queued { position, total },
            SemaphoreEvent::TimedOut => RecipeEvent::TimedOut,
            SemaphoreEvent::Released => RecipeEvent::Released,
            SemaphoreEvent::Suspended => RecipeEvent::Suspended,
            SemaphoreEvent::Reconnected => RecipeEvent::Reconnected,
            SemaphoreEvent::Lost => RecipeEvent::Lost,
            SemaphoreEvent::Expired { node } => RecipeEvent::Expired { node },
            SemaphoreEvent::LeaseLost { node } => RecipeEvent::LeaseLost { node },
            SemaphoreEvent::LeaseRevocationRequested { node } => RecipeEvent::LeaseRevocationRequested { node },
            SemaphoreEvent::Failed(error) => RecipeEvent::Failed(error),
            SemaphoreEvent::Refused(misuse) => RecipeEvent::Refused(misuse),
            SemaphoreEvent::CleanupFailed { path, error } => RecipeEvent::CleanupFailed { path, error },
            SemaphoreEvent::Count(event) => event.into(),
        }
    }
}
