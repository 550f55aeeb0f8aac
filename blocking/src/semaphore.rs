//! [`Semaphore`] and [`Lease`]: blocking faces of the driver's semaphore.

use std::time::Duration;

use zoolock_core::Op;
use zoolock_core::wire::MultiResult;
use zoolock_smol::{Error, FencingToken, HoldStatus, QueuePosition};

use crate::{StatusChanges, wait, wait_timeout};

/// A counting semaphore (Curator's `InterProcessSemaphoreV2`); the blocking
/// face of `zoolock_smol::Semaphore`. Clones share one queue.
#[derive(Clone, Debug)]
pub struct Semaphore {
    inner: zoolock_smol::Semaphore,
}

impl Semaphore {
    /// Wraps an async semaphore handle.
    pub fn from_async(inner: zoolock_smol::Semaphore) -> Semaphore {
        Semaphore { inner }
    }

    /// The async handle underneath.
    pub fn as_async(&self) -> &zoolock_smol::Semaphore {
        &self.inner
    }

    /// Blocks until `qty` leases are held. Fails with the session's error
    /// if it ends first, or at once for a `qty` above the limit.
    pub fn acquire(&self, qty: usize) -> Result<Vec<Lease>, Error> {
        Ok(wait(self.inner.acquire(qty))?.into_iter().map(Lease::from_async).collect())
    }

    /// Blocks until one lease is held ([`Semaphore::acquire`] of 1).
    pub fn acquire_one(&self) -> Result<Lease, Error> {
        wait(self.inner.acquire_one()).map(Lease::from_async)
    }

    /// Takes `qty` leases only if that needs no waiting: `Ok(None)` if they
    /// are not free now (what it took meanwhile is returned in the background).
    pub fn try_acquire(&self, qty: usize) -> Result<Option<Vec<Lease>>, Error> {
        Ok(wait(self.inner.try_acquire(qty))?.map(|leases| leases.into_iter().map(Lease::from_async).collect()))
    }

    /// Blocks at most `timeout` for all `qty` leases; [`Error::TimedOut`]
    /// after it, with the acquire cancelled and no lease node left behind.
    pub fn acquire_timeout(&self, qty: usize, timeout: Duration) -> Result<Vec<Lease>, Error> {
        Ok(wait(self.inner.acquire_timeout(qty, timeout))?.into_iter().map(Lease::from_async).collect())
    }

    /// As [`Semaphore::acquire_timeout`] (`None`: no time-out), calling
    /// `progress` on this thread whenever the place in the queue changes.
    pub fn acquire_with_progress(
        &self,
        qty: usize,
        timeout: Option<Duration>,
        progress: impl FnMut(QueuePosition) + Send,
    ) -> Result<Vec<Lease>, Error> {
        let leases = wait(self.inner.acquire_with_progress(qty, timeout, progress))?;
        Ok(leases.into_iter().map(Lease::from_async).collect())
    }

    /// Blocks until this semaphore owes the server nothing (see
    /// `zoolock_smol::Semaphore::settled`).
    pub fn settled(&self) -> Result<(), Error> {
        wait(self.inner.settled())
    }

    /// The limit in force.
    pub fn size(&self) -> usize {
        self.inner.size()
    }

    /// Leases left free at this handle's last listing; `None` before it.
    pub fn available(&self) -> Option<usize> {
        self.inner.available()
    }
}

/// One held lease; the blocking face of `zoolock_smol::Lease`. Dropping it
/// returns it in the background.
#[must_use = "the lease is returned as soon as it is dropped"]
#[derive(Debug)]
pub struct Lease {
    inner: zoolock_smol::Lease,
}

impl Lease {
    /// Wraps an async lease.
    pub fn from_async(inner: zoolock_smol::Lease) -> Lease {
        Lease { inner }
    }

    /// The lease node.
    pub fn node(&self) -> &str {
        self.inner.node()
    }

    /// The lease node's czxid.
    pub fn fencing_token(&self) -> FencingToken {
        self.inner.fencing_token()
    }

    /// `Held`, `Suspended` or `Lost`, as [`crate::Guard::status`].
    pub fn status(&self) -> HoldStatus {
        self.inner.status()
    }

    /// Blocks until [`Lease::status`] would first read `Suspended` or `Lost`.
    pub fn lost(&self) -> HoldStatus {
        wait(self.inner.lost())
    }

    /// As [`Lease::lost`], for at most `timeout`: `None` if still good.
    pub fn lost_timeout(&self, timeout: Duration) -> Option<HoldStatus> {
        wait_timeout(self.inner.lost(), timeout)
    }

    /// The current status, then every change, ending after `Lost`.
    pub fn status_changes(&self) -> StatusChanges {
        StatusChanges { inner: self.inner.status_changes() }
    }

    /// Blocks until someone asks for this lease back (revocable semaphores).
    pub fn revocation_requested(&self) {
        wait(self.inner.revocation_requested())
    }

    /// As [`Lease::revocation_requested`], for at most `timeout`: whether a
    /// request came.
    pub fn revocation_requested_timeout(&self, timeout: Duration) -> bool {
        wait_timeout(self.inner.revocation_requested(), timeout).is_some()
    }

    /// Runs `ops` in one multi behind a check that this lease's node still
    /// exists.
    pub fn fenced(&self, ops: Vec<Op>) -> Result<Vec<MultiResult>, Error> {
        wait(self.inner.fenced(ops))
    }

    /// Returns the lease (a guaranteed delete); returning a lost lease is
    /// never an error.
    pub fn release(self) -> Result<(), Error> {
        wait(self.inner.release())
    }
}
