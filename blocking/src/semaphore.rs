//! [`Semaphore`] and [`Lease`]: blocking faces of the driver's semaphore.

use std::time::Duration;

use zoolock_smol::{Error, QueuePosition};

use crate::{Hold, wait};

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

/// One held lease; the blocking face of `zoolock_smol::Lease`: a [`Hold`]
/// on one lease node, with a status of its own. Dropping it returns it in
/// the background.
pub type Lease = Hold<zoolock_smol::Lease>;
