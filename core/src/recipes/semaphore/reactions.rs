//! How a [`Semaphore`] reacts to the events of its cores: the internal
//! mutex and each lease (the reactions, apart from the commands in `mod.rs`
//! and the plumbing in `drive.rs`).

use zoolock_wire::ErrorCode;

use super::super::lock_event::LockEvent;
use super::{Phase, Semaphore, SemaphoreEvent};
use crate::error::RequestError;
use crate::time::Instant;

impl Semaphore {
    pub(super) fn on_mutex_event(&mut self, now: Instant, event: LockEvent) {
        if let LockEvent::CleanupFailed { path, error } = event {
            return self.out.emit(SemaphoreEvent::CleanupFailed { path, error });
        }
        let phase = self.phase();
        match event {
            LockEvent::Acquired { .. } => match phase {
                Some(Phase::Mutex) => self.start_lease_node(now),
                // Nobody wants it any more.
                _ => {
                    self.release_mutex();
                }
            },
            LockEvent::TimedOut if phase == Some(Phase::Mutex) => self.fail_acquire(now, SemaphoreEvent::TimedOut),
            // Queued on the internal lock: its holder (next in line for a
            // lease) and `position - 1` more are ahead.
            LockEvent::Queued { position, total } if phase == Some(Phase::Mutex) => {
                self.out.emit(SemaphoreEvent::Queued { position: position + 1, total });
            }
            LockEvent::Released => {
                if let Some(Phase::Unlocking { slot }) = phase {
                    self.commit(now, slot);
                }
            }
            LockEvent::Failed(e) => match phase {
                // A failed cleanup delete of an earlier attempt: the acquire goes on.
                Some(Phase::Mutex) if self.mutex.is_acquiring() => {}
                Some(Phase::Mutex) => self.fail_acquire(now, SemaphoreEvent::Failed(e)),
                // The mutex node's delete failed for good: Curator's acquire
                // throws; return the lease rather than leak it.
                Some(Phase::Unlocking { slot }) if self.mutex.is_idle() => {
                    self.on_core(slot, |c| c.cancel(now));
                    self.fail_acquire(now, SemaphoreEvent::Failed(e));
                }
                Some(_) => {}
                None => self.out.emit(SemaphoreEvent::Failed(e)),
            },
            // The mutex only serves liveness; its connection events and a
            // loss found on reconnect change nothing for the lease.
            _ => {}
        }
    }

    pub(super) fn on_lease_event(&mut self, now: Instant, slot: u64, event: LockEvent) {
        if let LockEvent::CleanupFailed { path, error } = event {
            return self.out.emit(SemaphoreEvent::CleanupFailed { path, error });
        }
        if let Some(n) = self.cores.get(&slot).and_then(|c| c.listed()) {
            self.listed = Some(n);
        }
        if event == LockEvent::RevocationRequested {
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
                LockEvent::Acquired { .. } => {
                    // The core has already queued checkWatches on `leases`;
                    // now release the internal mutex.
                    if let Some(acq) = self.acquiring.as_mut() {
                        acq.phase = Phase::Unlocking { slot };
                    }
                    if !self.release_mutex() {
                        // The mutex node was lost on a reconnect: nothing to release.
                        self.commit(now, slot);
                    }
                }
                // Holding the internal lock: next in line for a lease;
                // `total` is the leases' listing, ours included.
                LockEvent::Queued { total, .. } => self.out.emit(SemaphoreEvent::Queued { position: 1, total }),
                LockEvent::TimedOut => {
                    self.check_lease_watch();
                    self.release_mutex();
                    self.fail_acquire(now, SemaphoreEvent::TimedOut);
                }
                LockEvent::Failed(RequestError::Server(ErrorCode::NO_NODE) | RequestError::NodeVanished)
                    if !still_acquiring =>
                {
                    // A listing without our node leaves its delete pending and
                    // its child watch armed; a NoNode create does neither.
                    if self.cores.get(&slot).is_some_and(|c| c.has_cleanup()) {
                        self.check_lease_watch();
                    }
                    self.release_mutex();
                    self.retry_lease(now);
                }
                LockEvent::Failed(e) if !still_acquiring => {
                    self.release_mutex();
                    self.fail_acquire(now, SemaphoreEvent::Failed(e));
                }
                _ => {}
            }
            return;
        }
        if self.in_got(slot) {
            // A lease of this call vanished on a reconnect: the call fails.
            if event == LockEvent::Lost {
                self.abort(now, Some(SemaphoreEvent::Failed(RequestError::NodeVanished)));
            }
            return;
        }
        if self.held.contains(&slot) {
            match event {
                LockEvent::Suspended => self.report_suspended(),
                LockEvent::Reconnected => {
                    self.verifying.remove(&slot);
                    self.finish_verify();
                }
                LockEvent::Lost => self.lease_lost(slot),
                LockEvent::Failed(e) => self.out.emit(SemaphoreEvent::Failed(e)),
                LockEvent::Expired { node } => self.out.emit(SemaphoreEvent::Expired { node }),
                _ => {}
            }
            return;
        }
        match event {
            LockEvent::Released if self.returning.remove(&slot) => self.out.emit(SemaphoreEvent::Released),
            // A failed delete of a returned or abandoned lease.
            LockEvent::Failed(e) => {
                if self.returning.remove(&slot) {
                    self.out.emit(SemaphoreEvent::Released);
                }
                self.out.emit(SemaphoreEvent::Failed(e));
            }
            _ => {}
        }
    }
}
