//! How a [`Semaphore`] reacts to the events of its cores: the internal
//! mutex and each lease (split from `semaphore.rs` to keep one concern per
//! file: the reactions, not the commands or the plumbing).

use zoolock_wire::ErrorCode;

use super::{Phase, Semaphore};
use crate::error::RequestError;
use crate::recipe::RecipeEvent;
use crate::time::Instant;

impl Semaphore {
    pub(super) fn on_mutex_event(&mut self, now: Instant, event: RecipeEvent) {
        if let RecipeEvent::CleanupFailed { .. } = event {
            return self.out.emit(event);
        }
        let phase = self.phase();
        match event {
            RecipeEvent::Acquired { .. } => match phase {
                Some(Phase::Mutex) => self.start_lease_node(now),
                // Nobody wants it any more.
                _ => {
                    self.release_mutex(now);
                }
            },
            RecipeEvent::TimedOut if phase == Some(Phase::Mutex) => self.fail_acquire(now, RecipeEvent::TimedOut),
            // Queued on the internal lock: its holder (next in line for a
            // lease) and `position - 1` more are ahead.
            RecipeEvent::Queued { position, total } if phase == Some(Phase::Mutex) => {
                self.out.emit(RecipeEvent::Queued { position: position + 1, total });
            }
            RecipeEvent::Released => {
                if let Some(Phase::Unlocking { slot }) = phase {
                    self.commit(now, slot);
                }
            }
            RecipeEvent::Failed(e) => match phase {
                // A failed cleanup delete of an earlier attempt: the acquire goes on.
                Some(Phase::Mutex) if self.mutex.is_acquiring() => {}
                Some(Phase::Mutex) => self.fail_acquire(now, RecipeEvent::Failed(e)),
                // The mutex node's delete failed for good: Curator's acquire
                // throws; return the lease rather than leak it.
                Some(Phase::Unlocking { slot }) if self.mutex.is_idle() => {
                    self.on_core(slot, |c| c.cancel(now));
                    self.fail_acquire(now, RecipeEvent::Failed(e));
                }
                Some(_) => {}
                None => self.out.emit(RecipeEvent::Failed(e)),
            },
            // The mutex only serves liveness; its connection events and a
            // loss found on reconnect change nothing for the lease.
            _ => {}
        }
    }

    pub(super) fn on_lease_event(&mut self, now: Instant, slot: u64, event: RecipeEvent) {
        if let RecipeEvent::CleanupFailed { .. } = event {
            return self.out.emit(event);
        }
        if let Some(n) = self.cores.get(&slot).and_then(|c| c.listed()) {
            self.listed = Some(n);
        }
        if event == RecipeEvent::RevocationRequested {
            if self.held.contains(&slot) {
                self.report_revocation(slot);
            } else {
                self.revoke_pending.insert(slot);
            }
            return;
        }
        let current = matches!(self.phase(), Some(Phase::Lease { slot: s }) if s == slot);
        if current {
            let still_acquiring = self.cores.get(&slot).is_some_and(|c| c.is_acquiring());
            match event {
                RecipeEvent::Acquired { .. } => {
                    // The core has already queued checkWatches on `leases`;
                    // now release the internal mutex.
                    if let Some(acq) = self.acquiring.as_mut() {
                        acq.phase = Phase::Unlocking { slot };
                    }
                    if !self.release_mutex(now) {
                        // The mutex node was lost on a reconnect: nothing to release.
                        self.commit(now, slot);
                    }
                }
                // Holding the internal lock: next in line for a lease;
                // `total` is the leases' listing, ours included.
                RecipeEvent::Queued { total, .. } => self.out.emit(RecipeEvent::Queued { position: 1, total }),
                RecipeEvent::TimedOut => {
                    self.check_lease_watch();
                    self.release_mutex(now);
                    self.fail_acquire(now, RecipeEvent::TimedOut);
                }
                RecipeEvent::Failed(RequestError::Server(ErrorCode::NO_NODE) | RequestError::NodeVanished)
                    if !still_acquiring =>
                {
                    // A listing without our node leaves its delete pending and
                    // its child watch armed; a NoNode create does neither.
                    if self.cores.get(&slot).is_some_and(|c| c.has_cleanup()) {
                        self.check_lease_watch();
                    }
                    self.release_mutex(now);
                    self.retry_lease(now);
                }
                RecipeEvent::Failed(e) if !still_acquiring => {
                    self.release_mutex(now);
                    self.fail_acquire(now, RecipeEvent::Failed(e));
                }
                _ => {}
            }
            return;
        }
        if self.in_got(slot) {
            // A lease of this call vanished on a reconnect: the call fails.
            if event == RecipeEvent::Lost {
                self.abort(now, Some(RecipeEvent::Failed(RequestError::NodeVanished)));
            }
            return;
        }
        if self.held.contains(&slot) {
            match event {
                RecipeEvent::Suspended => self.report_suspended(),
                RecipeEvent::Reconnected => {
                    self.verifying.remove(&slot);
                    self.finish_verify();
                }
                RecipeEvent::Lost => self.lease_lost(slot),
                event @ (RecipeEvent::Failed(_) | RecipeEvent::Expired { .. }) => self.out.emit(event),
                _ => {}
            }
            return;
        }
        match event {
            RecipeEvent::Released if self.returning.remove(&slot) => self.out.emit(RecipeEvent::Released),
            // A failed delete of a returned or abandoned lease.
            RecipeEvent::Failed(e) => {
                if self.returning.remove(&slot) {
                    self.out.emit(RecipeEvent::Released);
                }
                self.out.emit(RecipeEvent::Failed(e));
            }
            _ => {}
        }
    }
}
