//! [`SharedCount`]: the blocking face of the driver's shared count.

use std::pin::Pin;

use futures_lite::{Stream, StreamExt};
use zoolock_smol::{Error, VersionedCount};

use crate::wait;

/// A shared integer (Curator's `SharedCount`), kept current by a watch;
/// the blocking face of `zoolock_smol::SharedCount`.
#[derive(Clone, Debug)]
pub struct SharedCount {
    inner: zoolock_smol::SharedCount,
}

impl SharedCount {
    /// Wraps an async shared count.
    pub fn from_async(inner: zoolock_smol::SharedCount) -> SharedCount {
        SharedCount { inner }
    }

    /// The latest value seen; reading it sends no request.
    pub fn get(&self) -> VersionedCount {
        self.inner.get()
    }

    /// Writes `n` whatever the current version (Curator's `setCount`).
    pub fn set(&self, n: i32) -> Result<(), Error> {
        wait(self.inner.set(n))
    }

    /// Writes `n` only if the node is still at `version`; `Ok(false)` if
    /// someone wrote first (Curator's `trySetCount`).
    pub fn try_set(&self, version: i32, n: i32) -> Result<bool, Error> {
        wait(self.inner.try_set(version, n))
    }

    /// The current value, then every newer one; each `next` blocks.
    pub fn changes(&self) -> CountChanges {
        CountChanges { inner: self.inner.changes() }
    }
}

/// Values of a shared count ([`SharedCount::changes`]).
pub struct CountChanges {
    inner: Pin<Box<dyn Stream<Item = VersionedCount> + Send>>,
}

impl std::fmt::Debug for CountChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountChanges").finish_non_exhaustive()
    }
}

impl Iterator for CountChanges {
    type Item = VersionedCount;

    fn next(&mut self) -> Option<VersionedCount> {
        wait(self.inner.next())
    }
}
