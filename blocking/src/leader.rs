//! [`LeaderSelector`], [`Leadership`] and [`LeaderLatch`]: blocking faces of
//! the driver's leader election (Curator's `LeaderSelector` and
//! `LeaderLatch` layouts).

use std::time::Duration;

use futures_lite::StreamExt;
use zoolock_smol::{CloseMode, ElectionParticipant, Error, QueuePosition};

use crate::{Hold, wait, wait_timeout};

/// A participant of an election ([`crate::Client::leader_selector`]); the
/// blocking face of `zoolock_smol::LeaderSelector`.
#[derive(Clone, Debug)]
pub struct LeaderSelector {
    inner: zoolock_smol::LeaderSelector,
}

impl LeaderSelector {
    /// Wraps an async selector.
    pub fn from_async(inner: zoolock_smol::LeaderSelector) -> LeaderSelector {
        LeaderSelector { inner }
    }

    /// The async selector underneath.
    pub fn as_async(&self) -> &zoolock_smol::LeaderSelector {
        &self.inner
    }

    /// Its participant id (its node data).
    pub fn id(&self) -> &str {
        self.inner.id()
    }

    /// Queues and blocks until this participant leads. Fails as
    /// `zoolock_smol::LeaderSelector::leadership` does (the session's end).
    pub fn leadership(&self) -> Result<Leadership, Error> {
        wait(self.inner.leadership()).map(Leadership::from_async)
    }

    /// Blocks at most `timeout`; [`Error::TimedOut`] after it, and the
    /// participant then leaves the queue, leaving no node behind.
    pub fn leadership_timeout(&self, timeout: Duration) -> Result<Leadership, Error> {
        wait(self.inner.leadership_timeout(timeout)).map(Leadership::from_async)
    }

    /// As [`LeaderSelector::leadership_timeout`] (`None`: no time-out),
    /// calling `progress` on this thread whenever the place in the queue
    /// changes.
    pub fn leadership_with_progress(
        &self,
        timeout: Option<Duration>,
        progress: impl FnMut(QueuePosition) + Send,
    ) -> Result<Leadership, Error> {
        wait(self.inner.leadership_with_progress(timeout, progress)).map(Leadership::from_async)
    }

    /// The current leader's id (Curator's `getLeader()`), `None` when nobody
    /// is queued. Fails with the listing's error.
    pub fn leader(&self) -> Result<Option<String>, Error> {
        wait(self.inner.leader())
    }

    /// The participants in queue order, the leader first (Curator's
    /// `getParticipants()`). Fails with the listing's error.
    pub fn participants(&self) -> Result<Vec<ElectionParticipant>, Error> {
        wait(self.inner.participants())
    }
}

/// A term of leadership: the blocking face of `zoolock_smol::Leadership`,
/// a [`Hold`] with the loss signals of a [`crate::Guard`]. Dropping it gives
/// leadership up in the background; `release` does it at once.
pub type Leadership = Hold<zoolock_smol::Leadership>;

/// A started `LeaderLatch` participant ([`crate::Client::leader_latch`]);
/// the blocking face of `zoolock_smol::LeaderLatch`. Dropping it closes it
/// silently.
#[derive(Debug)]
pub struct LeaderLatch {
    inner: zoolock_smol::LeaderLatch,
}

impl LeaderLatch {
    /// Wraps an async latch.
    pub fn from_async(inner: zoolock_smol::LeaderLatch) -> LeaderLatch {
        LeaderLatch { inner }
    }

    /// Its participant id (its node data).
    pub fn id(&self) -> &str {
        self.inner.id()
    }

    /// Whether it leads now, certainly (Curator's `hasLeadership()`).
    pub fn has_leadership(&self) -> bool {
        self.inner.has_leadership()
    }

    /// Blocks until it leads (Curator's `await()`). Fails once the latch or
    /// the client is closed.
    pub fn leadership(&self) -> Result<(), Error> {
        wait(self.inner.leadership())
    }

    /// As [`LeaderLatch::leadership`], for at most `timeout` (Curator's
    /// `await(timeout)`): `Ok(false)` if it did not lead in time.
    pub fn leadership_timeout(&self, timeout: Duration) -> Result<bool, Error> {
        wait_timeout(self.inner.leadership(), timeout).transpose().map(|led| led.is_some())
    }

    /// Whether it leads, now and at every change; each `next` blocks.
    pub fn leadership_changes(&self) -> LeadershipChanges {
        LeadershipChanges { inner: self.inner.leadership_changes() }
    }

    /// The current leader's id, `None` when nobody is queued.
    pub fn leader(&self) -> Result<Option<String>, Error> {
        wait(self.inner.leader())
    }

    /// The participants in queue order, the leader first.
    pub fn participants(&self) -> Result<Vec<ElectionParticipant>, Error> {
        wait(self.inner.participants())
    }

    /// Leaves the election (Curator's `close(mode)`); fails with the
    /// release's error.
    pub fn close(self, mode: CloseMode) -> Result<(), Error> {
        wait(self.inner.close(mode))
    }
}

/// A latch's leadership changes ([`LeaderLatch::leadership_changes`]); each
/// `next` blocks.
pub struct LeadershipChanges {
    inner: zoolock_smol::LeadershipChanges,
}

impl std::fmt::Debug for LeadershipChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeadershipChanges").finish_non_exhaustive()
    }
}

impl Iterator for LeadershipChanges {
    type Item = bool;

    fn next(&mut self) -> Option<bool> {
        wait(self.inner.next())
    }
}

/// The holder of an observed lock at each change
/// ([`crate::Client::observe`]); each `next` blocks until the next change.
pub struct HolderChanges {
    inner: zoolock_smol::HolderChanges,
}

impl std::fmt::Debug for HolderChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HolderChanges").finish_non_exhaustive()
    }
}

impl Iterator for HolderChanges {
    type Item = Result<Option<zoolock_smol::Participant>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        wait(self.inner.next())
    }
}

/// An election's leader id at each change
/// ([`crate::Client::observe_leader`]); each `next` blocks.
pub struct LeaderChanges {
    inner: zoolock_smol::LeaderChanges,
}

impl std::fmt::Debug for LeaderChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderChanges").finish_non_exhaustive()
    }
}

impl Iterator for LeaderChanges {
    type Item = Result<Option<String>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        wait(self.inner.next())
    }
}

impl HolderChanges {
    pub(crate) fn from_async(inner: zoolock_smol::HolderChanges) -> HolderChanges {
        HolderChanges { inner }
    }
}

impl LeaderChanges {
    pub(crate) fn from_async(inner: zoolock_smol::LeaderChanges) -> LeaderChanges {
        LeaderChanges { inner }
    }
}
