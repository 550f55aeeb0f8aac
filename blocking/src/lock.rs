//! [`Lock`] and [`Guard`]: blocking faces of the driver's lock handles.

use std::time::Duration;

use futures_lite::StreamExt;
use zoolock_core::Op;
use zoolock_core::wire::MultiResult;
use zoolock_smol::{Error, FencingToken, HoldStatus, QueuePosition};

use crate::{wait, wait_timeout};

/// A lock handle (mutex, read or write half, semaphore mutex, multi-lock);
/// the blocking face of `zoolock_smol::Lock`. Clones share one queue: acquires
/// from any clone, on any thread, are granted in call order.
#[derive(Clone, Debug)]
pub struct Lock {
    inner: zoolock_smol::Lock,
}

impl Lock {
    /// Wraps an async lock handle.
    pub fn from_async(inner: zoolock_smol::Lock) -> Lock {
        Lock { inner }
    }

    /// The async handle underneath.
    pub fn as_async(&self) -> &zoolock_smol::Lock {
        &self.inner
    }

    /// Blocks until the lock is held. Fails with the session's error if it
    /// ends first ([`Error::Request`] with the session's end, or
    /// [`Error::ClientClosed`]).
    pub fn acquire(&self) -> Result<Guard, Error> {
        wait(self.inner.acquire()).map(Guard::from_async)
    }

    /// Blocks at most `timeout`; [`Error::TimedOut`] after it, and the
    /// acquire is then cancelled, leaving no node behind. A free lock is
    /// taken even if `timeout` is zero; waiting behind another thread of this
    /// process counts against the time-out.
    pub fn acquire_timeout(&self, timeout: Duration) -> Result<Guard, Error> {
        wait(self.inner.acquire_timeout(timeout)).map(Guard::from_async)
    }

    /// Takes the lock only if that needs no waiting (also not behind another
    /// thread of this process): `Ok(None)` if it is busy.
    pub fn try_acquire(&self) -> Result<Option<Guard>, Error> {
        Ok(wait(self.inner.try_acquire())?.map(Guard::from_async))
    }

    /// As [`Lock::acquire_timeout`] (`None`: no time-out), calling
    /// `progress` on this thread whenever the acquire's place in the queue on
    /// ZooKeeper changes.
    pub fn acquire_with_progress(
        &self,
        timeout: Option<Duration>,
        progress: impl FnMut(QueuePosition) + Send,
    ) -> Result<Guard, Error> {
        wait(self.inner.acquire_with_progress(timeout, progress)).map(Guard::from_async)
    }

    /// Blocks until this lock owes the server nothing: not held, not being
    /// acquired, and every delete applied (see `zoolock_smol::Lock::settled`).
    pub fn settled(&self) -> Result<(), Error> {
        wait(self.inner.settled())
    }

    /// The status of the hold this lock's part has now, through any clone.
    pub fn status(&self) -> HoldStatus {
        self.inner.status()
    }
}

/// The two halves of a read-write lock ([`crate::Client::read_write_lock`]);
/// the blocking face of `zoolock_smol::ReadWriteLock`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadWriteLock {
    /// The read half (Curator's `readLock()`).
    pub read: Lock,
    /// The write half (Curator's `writeLock()`).
    pub write: Lock,
}

impl ReadWriteLock {
    /// Wraps an async read-write lock.
    pub fn from_async(inner: zoolock_smol::ReadWriteLock) -> ReadWriteLock {
        ReadWriteLock { read: Lock::from_async(inner.read), write: Lock::from_async(inner.write) }
    }
}

/// A held lock; the blocking face of `zoolock_smol::Guard`. Dropping it
/// releases in the background; [`Guard::release`] waits for the release.
#[must_use = "the lock is released as soon as the guard is dropped"]
#[derive(Debug)]
pub struct Guard {
    inner: zoolock_smol::Guard,
}

impl Guard {
    /// Wraps an async guard.
    pub fn from_async(inner: zoolock_smol::Guard) -> Guard {
        Guard { inner }
    }

    /// The async guard underneath.
    pub fn into_async(self) -> zoolock_smol::Guard {
        self.inner
    }

    /// The fencing token of this hold: it increases from one holder to the
    /// next (see [`FencingToken`]).
    pub fn fencing_token(&self) -> FencingToken {
        self.inner.fencing_token()
    }

    /// Our lock node.
    pub fn node(&self) -> &str {
        self.inner.node()
    }

    /// `Held`, `Suspended` (stop the critical section until it is `Held`
    /// again) or `Lost` (for good); a hold the server has not confirmed for
    /// two thirds of the session timeout reads `Suspended`.
    pub fn status(&self) -> HoldStatus {
        self.inner.status()
    }

    /// Blocks until [`Guard::status`] would first read `Suspended` or
    /// `Lost`, and returns which.
    pub fn lost(&self) -> HoldStatus {
        wait(self.inner.lost())
    }

    /// As [`Guard::lost`], for at most `timeout`: `None` if the hold was
    /// still good all along. A watchdog thread calls this in a loop.
    pub fn lost_timeout(&self, timeout: Duration) -> Option<HoldStatus> {
        wait_timeout(self.inner.lost(), timeout)
    }

    /// The current status, then every change, ending after `Lost`; each
    /// `next` blocks until the next change.
    pub fn status_changes(&self) -> StatusChanges {
        StatusChanges { inner: self.inner.status_changes() }
    }

    /// Blocks until someone asks the holder to release (revocable locks).
    pub fn revocation_requested(&self) {
        wait(self.inner.revocation_requested())
    }

    /// As [`Guard::revocation_requested`], for at most `timeout`: whether a
    /// request came.
    pub fn revocation_requested_timeout(&self, timeout: Duration) -> bool {
        wait_timeout(self.inner.revocation_requested(), timeout).is_some()
    }

    /// Runs `ops` in one multi behind a check that this hold's node still
    /// exists: all apply, or none ([`Error::NotHeld`] once the node is gone).
    pub fn fenced(&self, ops: Vec<Op>) -> Result<Vec<MultiResult>, Error> {
        wait(self.inner.fenced(ops))
    }

    /// A read guard on the same read-write lock, from this write guard
    /// (Curator's downgrade).
    pub fn downgrade(&self) -> Result<Guard, Error> {
        wait(self.inner.downgrade()).map(Guard::from_async)
    }

    /// A second, nested guard on the same hold (explicit reentrancy).
    pub fn reenter(&self) -> Result<Guard, Error> {
        wait(self.inner.reenter()).map(Guard::from_async)
    }

    /// Releases. In the default (pipelined) plan it returns once the delete
    /// is queued, a guaranteed delete; [`Lock::settled`] waits for the
    /// server to apply it. Releasing a lost or suspended hold is never an
    /// error.
    pub fn release(self) -> Result<(), Error> {
        wait(self.inner.release())
    }
}

/// Status changes of a hold ([`Guard::status_changes`],
/// [`crate::Lease::status_changes`]); each `next` blocks.
pub struct StatusChanges {
    pub(crate) inner: zoolock_smol::StatusChanges,
}

impl std::fmt::Debug for StatusChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusChanges").finish_non_exhaustive()
    }
}

impl Iterator for StatusChanges {
    type Item = HoldStatus;

    fn next(&mut self) -> Option<HoldStatus> {
        wait(self.inner.next())
    }
}
