//! [`SemaphoreMutex`]: Curator's `InterProcessSemaphoreMutex`, a one-lease
//! [`Semaphore`]. Not reentrant.

use super::config::SharedLockConfig;
use super::semaphore::{Semaphore, SemaphoreEvent};
use crate::error::ApiMisuse;
use crate::path::ZkPath;
use zoolock_wire::Response;

use super::capability::OnePartLock;
use super::lock_event::{LockEvent, PartEvent};
use crate::error::RequestError;
use crate::recipe::{FencingToken, OpId, Recipe, RecipeOp};
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

/// A non-reentrant lock on `base`, wire-compatible with Curator's
/// `InterProcessSemaphoreMutex`: a [`Semaphore`] with one lease, so its nodes
/// are `base/locks/_c_<uuid>-lock-<seq>` (briefly, while acquiring) and
/// `base/leases/_c_<uuid>-lease-<seq>` (while held). It does not exclude a
/// [`Mutex`](super::Mutex) on the same path (a different layout, as in
/// Curator).
///
/// Events: `Acquired` (the lease path and its czxid), `TimedOut`, `Failed`,
/// `Released`, and `Suspended` / `Reconnected` / `Lost` while held.
#[derive(Debug)]
pub struct SemaphoreMutex {
    semaphore: Semaphore,
}

impl SemaphoreMutex {
    /// A mutex on `base`.
    pub fn new(base: ZkPath, config: impl Into<SharedLockConfig>) -> SemaphoreMutex {
        SemaphoreMutex { semaphore: Semaphore::new(base, 1, config) }
    }

    /// The lock path.
    pub fn base(&self) -> &ZkPath {
        self.semaphore.base()
    }

    /// Acquires, waiting until `deadline` (`None`: forever). Not reentrant:
    /// while held or acquiring, this is refused. (Curator's holder would
    /// create a second lease and wait for itself.)
    pub fn acquire(&mut self, now: Instant, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        if self.holder().is_some() {
            return Err(ApiMisuse::NotReentrant);
        }
        self.semaphore.acquire(now, 1, deadline)
    }

    /// Releases: the lease node is deleted (guaranteed) and `Released`
    /// reported.
    pub fn release(&mut self, now: Instant) -> Result<(), ApiMisuse> {
        let Some(lease) = self.semaphore.leases().first().map(|l| alloc::string::String::from(*l)) else {
            return Err(ApiMisuse::NotHeld);
        };
        self.semaphore.return_lease(now, &lease)
    }

    /// Abandons an acquire in progress; no node is left behind.
    pub fn cancel(&mut self, now: Instant) {
        self.semaphore.cancel(now);
    }

    /// Our lease node and fencing token while held.
    pub fn holder(&self) -> Option<(&str, FencingToken)> {
        let lease = *self.semaphore.leases().first()?;
        Some((lease, self.semaphore.lease_token(lease)?))
    }

    /// True when neither held nor acquiring.
    pub fn is_idle(&self) -> bool {
        self.holder().is_none() && !self.is_acquiring()
    }

    /// True while an acquire is under way.
    pub fn is_acquiring(&self) -> bool {
        self.semaphore.is_acquiring()
    }

    /// True when nothing is in progress, nothing held and nothing owed to the
    /// server.
    pub fn is_quiescent(&self) -> bool {
        self.semaphore.is_quiescent()
    }
}

/// Every input and output goes to the one-lease semaphore unchanged.
impl Recipe for SemaphoreMutex {
    type Event = PartEvent;

    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        self.semaphore.handle_reply(now, op, result);
    }

    fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        self.semaphore.handle_watch(now, event);
    }

    fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        self.semaphore.handle_session(now, state);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.semaphore.handle_timeout(now);
    }

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.semaphore.poll_op()
    }

    fn poll_event(&mut self) -> Option<PartEvent> {
        core::iter::from_fn(|| self.semaphore.poll_event()).find_map(as_lock_event).map(PartEvent::whole)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.semaphore.poll_timeout()
    }

    fn is_quiescent(&self) -> bool {
        SemaphoreMutex::is_quiescent(self)
    }

    fn holds(&self) -> bool {
        self.holder().is_some()
    }
}

/// Not reentrant, as Curator's.
impl OnePartLock for SemaphoreMutex {
    fn acquire(&mut self, now: Instant, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        SemaphoreMutex::acquire(self, now, deadline)
    }

    fn release(&mut self, now: Instant) -> Result<(), ApiMisuse> {
        SemaphoreMutex::release(self, now)
    }

    fn cancel(&mut self, now: Instant) {
        SemaphoreMutex::cancel(self, now);
    }

    fn holder(&self) -> Option<(&str, FencingToken)> {
        SemaphoreMutex::holder(self)
    }

    fn is_idle(&self) -> bool {
        SemaphoreMutex::is_idle(self)
    }

    fn reentrant(&self) -> bool {
        false
    }

    fn path(&self) -> Option<&ZkPath> {
        Some(self.base())
    }
}

/// The one-lease semaphore's event as the lock's. It is not revocable and
/// its size is fixed, so no lease revocation or count event comes.
fn as_lock_event(event: SemaphoreEvent) -> Option<LockEvent> {
    Some(match event {
        SemaphoreEvent::Acquired { node, token } => LockEvent::Acquired { node, token },
        SemaphoreEvent::Queued { position, total } => LockEvent::Queued { position, total },
        SemaphoreEvent::TimedOut => LockEvent::TimedOut,
        SemaphoreEvent::Released => LockEvent::Released,
        SemaphoreEvent::Suspended => LockEvent::Suspended,
        SemaphoreEvent::Reconnected => LockEvent::Reconnected,
        SemaphoreEvent::Lost => LockEvent::Lost,
        SemaphoreEvent::Expired { node } => LockEvent::Expired { node },
        SemaphoreEvent::LeaseLost { node } => LockEvent::LeaseLost { node },
        SemaphoreEvent::Failed(error) => LockEvent::Failed(error),
        SemaphoreEvent::Refused(misuse) => LockEvent::Refused(misuse),
        SemaphoreEvent::CleanupFailed { path, error } => LockEvent::CleanupFailed { path, error },
        SemaphoreEvent::LeaseRevocationRequested { .. } | SemaphoreEvent::Count(_) => return None,
    })
}
