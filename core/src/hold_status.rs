//! What a hold's status is, as its holder should act on it, and the one
//! mapping from a recipe's connection events to it that every handle (a
//! lock's, a semaphore's, an election's) shares.

use crate::recipe::RecipeEvent;

/// The state of a hold, as the holder should act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HoldStatus {
    /// Held, and the session is connected.
    Held,
    /// The connection dropped: the hold is uncertain. Stop the critical
    /// section until it is `Held` again.
    Suspended,
    /// The session expired, or the node was deleted (by anyone else, or found
    /// missing after a reconnect): the lock is gone, for good.
    Lost,
    /// Not held (released, or never acquired).
    NotHeld,
}

/// A change under a hold that every recipe reports alike (a lock's
/// [`LockEvent`](crate::recipes::LockEvent), a semaphore's
/// [`SemaphoreEvent`](crate::recipes::SemaphoreEvent), an election's
/// [`RecipeEvent`]); each event type says which it is with `hold_change`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldChange {
    /// The connection dropped.
    Suspended,
    /// The same session is back; the hold continues.
    Reconnected,
    /// The hold is gone for good.
    Lost,
}

impl HoldStatus {
    /// The status a held ticket, lease or term takes after `change`: the
    /// one mapping every handle shares.
    pub fn after(change: HoldChange) -> HoldStatus {
        match change {
            HoldChange::Suspended => HoldStatus::Suspended,
            HoldChange::Reconnected => HoldStatus::Held,
            HoldChange::Lost => HoldStatus::Lost,
        }
    }
}

impl RecipeEvent {
    /// The change under a hold this event is, if it is one.
    pub fn hold_change(&self) -> Option<HoldChange> {
        match self {
            RecipeEvent::Suspended => Some(HoldChange::Suspended),
            RecipeEvent::Reconnected => Some(HoldChange::Reconnected),
            RecipeEvent::Lost => Some(HoldChange::Lost),
            _ => None,
        }
    }
}

/// Why a hold was lost: only the causes core's events tell apart, so a
/// program can say "held past its maximum" without guessing from the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossReason {
    /// The hold reached its maximum (the lock's or semaphore's `max_hold`):
    /// its own client deleted the node.
    MaxHold,
    /// The session expired, or the node was deleted (by someone else, or
    /// found missing after a reconnect): core reports these alike.
    SessionOrNode,
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::recipes::{LockEvent, SemaphoreEvent};

    #[test]
    fn every_recipes_connection_events_map_to_the_same_statuses() {
        let status = |c: Option<HoldChange>| c.map(HoldStatus::after);
        for (recipe, lock, semaphore, expected) in [
            (RecipeEvent::Suspended, LockEvent::Suspended, SemaphoreEvent::Suspended, Some(HoldStatus::Suspended)),
            (RecipeEvent::Reconnected, LockEvent::Reconnected, SemaphoreEvent::Reconnected, Some(HoldStatus::Held)),
            (RecipeEvent::Lost, LockEvent::Lost, SemaphoreEvent::Lost, Some(HoldStatus::Lost)),
            (RecipeEvent::Released, LockEvent::Released, SemaphoreEvent::Released, None),
            (RecipeEvent::TimedOut, LockEvent::TimedOut, SemaphoreEvent::TimedOut, None),
        ] {
            assert_eq!(status(recipe.hold_change()), expected, "{recipe:?}");
            assert_eq!(status(lock.hold_change()), expected, "{lock:?}");
            assert_eq!(status(semaphore.hold_change()), expected, "{semaphore:?}");
        }
    }
}
