//! [`Lock`] and [`Guard`]: blocking faces of the driver's lock handles.

use std::time::Duration;

use zoolock_smol::{Error, HoldStatus, QueuePosition};

use crate::{Hold, wait};

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

    /// Blocks until the lock is held. Fails with [`Error::ClientClosed`]
    /// when this client was closed (before or during the wait), and with
    /// [`Error::Request`] when the session ended by itself first.
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
/// the blocking face of [`zoolock_smol::ReadWriteLock`], whose sharing rule
/// it keeps: reads through separate handles hold at once, reads through one
/// handle (and its clones, across threads) take turns.
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

/// A held lock; the blocking face of `zoolock_smol::Guard`: a [`Hold`]
/// with what only a lock has ([`Guard::downgrade`], [`Guard::reenter`]).
/// Dropping it releases in the background; [`Hold::release`] waits for the
/// release.
pub type Guard = Hold<zoolock_smol::Guard>;

impl Guard {
    /// A read guard on the same read-write lock, from this write guard
    /// (Curator's downgrade). Fails with [`Error::Misuse`] for a guard that
    /// is not a write guard or a hold that was lost.
    pub fn downgrade(&self) -> Result<Guard, Error> {
        wait(self.inner.downgrade()).map(Guard::from_async)
    }

    /// A second, nested guard on the same hold (explicit reentrancy). Fails
    /// with [`Error::Misuse`] for a lock that is not reentrant or a hold
    /// that was lost.
    pub fn reenter(&self) -> Result<Guard, Error> {
        wait(self.inner.reenter()).map(Guard::from_async)
    }
}
