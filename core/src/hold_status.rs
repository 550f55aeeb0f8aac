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

impl HoldStatus {
    /// The status a held ticket or term takes on `event`, one of the
    /// connection events core reports to what it holds: `Suspended` (the
    /// connection dropped), `Reconnected` (confirmed after it came back),
    /// `Lost`. `None` for every other event.
    pub fn on(event: &RecipeEvent) -> Option<HoldStatus> {
        match event {
            RecipeEvent::Suspended => Some(HoldStatus::Suspended),
            RecipeEvent::Reconnected => Some(HoldStatus::Held),
            RecipeEvent::Lost => Some(HoldStatus::Lost),
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

    #[test]
    fn connection_events_map_to_statuses_and_nothing_else_does() {
        assert_eq!(HoldStatus::on(&RecipeEvent::Suspended), Some(HoldStatus::Suspended));
        assert_eq!(HoldStatus::on(&RecipeEvent::Reconnected), Some(HoldStatus::Held));
        assert_eq!(HoldStatus::on(&RecipeEvent::Lost), Some(HoldStatus::Lost));
        assert_eq!(HoldStatus::on(&RecipeEvent::Released), None);
        assert_eq!(HoldStatus::on(&RecipeEvent::TimedOut), None);
    }
}
