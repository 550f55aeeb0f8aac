//! [`Hold`]: the blocking face of the driver's one hold type. [`Guard`] and
//! [`Lease`] are this type over the async guard and lease, so each keeps its
//! own extras while the methods every hold has are written once.
//!
//! [`Guard`]: crate::Guard
//! [`Lease`]: crate::Lease

use std::time::Duration;

use futures_lite::StreamExt;
use zoolock_smol::MultiResult;
use zoolock_smol::Op;
use zoolock_smol::{Error, FencingToken, HoldStatus, LossReason};

use crate::{wait, wait_timeout};

/// A held lock or lease, with blocking methods: the blocking face of
/// `zoolock_smol::Hold` (`H`), `zoolock_smol::Guard` ([`crate::Guard`]) or
/// `zoolock_smol::Lease` ([`crate::Lease`]). [`Hold::into_hold`] keeps the
/// hold and drops a guard's extras, so code that only runs a critical
/// section takes either. Dropping it releases in the background;
/// [`Hold::release`] waits for the release.
#[must_use = "the hold is released as soon as it is dropped"]
#[derive(Debug)]
pub struct Hold<H = zoolock_smol::Hold> {
    pub(crate) inner: H,
}

impl<H: AsRef<zoolock_smol::Hold> + Into<zoolock_smol::Hold>> Hold<H> {
    /// Wraps an async hold (guard, lease).
    pub fn from_async(inner: H) -> Hold<H> {
        Hold { inner }
    }

    /// The async hold underneath.
    pub fn into_async(self) -> H {
        self.inner
    }

    /// The plain hold, without a guard's extras.
    pub fn into_hold(self) -> Hold {
        Hold { inner: self.inner.into() }
    }

    fn hold(&self) -> &zoolock_smol::Hold {
        self.inner.as_ref()
    }

    /// The fencing token of this hold: it increases from one holder to the
    /// next (see [`FencingToken`]).
    pub fn fencing_token(&self) -> FencingToken {
        self.hold().fencing_token()
    }

    /// The hold's node (lock node or lease node).
    pub fn node(&self) -> &str {
        self.hold().node()
    }

    /// `Held`, `Suspended` (stop the critical section until it is `Held`
    /// again) or `Lost` (for good; each lease has its own), judged when
    /// called: a hold past its session's lease reads `Suspended`.
    pub fn status(&self) -> HoldStatus {
        self.hold().status()
    }

    /// Why [`status`](Self::status) reads `Suspended` now, if it does.
    pub fn suspension(&self) -> Option<crate::Suspension> {
        self.hold().suspension()
    }

    /// Why the hold was lost (`LossReason::MaxHold` after a maximum hold),
    /// `None` while it is not lost.
    pub fn loss(&self) -> Option<LossReason> {
        self.hold().loss()
    }

    /// Blocks until [`Hold::status`] would first read `Suspended` or
    /// `Lost`, and returns which.
    pub fn lost(&self) -> HoldStatus {
        wait(self.hold().lost())
    }

    /// As [`Hold::lost`], for at most `timeout`: `None` if the hold was
    /// still good all along. A watchdog thread calls this in a loop.
    pub fn lost_timeout(&self, timeout: Duration) -> Option<HoldStatus> {
        wait_timeout(self.hold().lost(), timeout)
    }

    /// The current status, then every change, ending after `Lost`; each
    /// `next` blocks until the next change.
    pub fn status_changes(&self) -> StatusChanges {
        StatusChanges { inner: self.hold().status_changes() }
    }

    /// Blocks until someone asks the holder to give the hold up (revocable
    /// locks and semaphores).
    pub fn revocation_requested(&self) {
        wait(self.hold().revocation_requested())
    }

    /// As [`Hold::revocation_requested`], for at most `timeout`: whether a
    /// request came.
    pub fn revocation_requested_timeout(&self, timeout: Duration) -> bool {
        wait_timeout(self.hold().revocation_requested(), timeout).is_some()
    }

    /// Runs `ops` in one multi behind a check that this hold's node still
    /// exists: all apply, or none ([`Error::NotHeld`] once the node is gone;
    /// see `zoolock_smol::Hold::fenced` for every failure).
    pub fn fenced(&self, ops: Vec<Op>) -> Result<Vec<MultiResult>, Error> {
        wait(self.hold().fenced(ops))
    }

    /// Releases (a guard with re-entries counts itself off). In the default
    /// (pipelined) plan it returns once the delete is queued, a guaranteed
    /// delete; `settled` on the lock or semaphore waits for the server to
    /// apply it. Releasing a lost or suspended hold is never an error, nor
    /// is releasing after [`Client::close`](crate::Client::close) (the close
    /// ended the hold: `Ok(())`); for a lock in the Curator plan it fails
    /// with the delete's failure.
    pub fn release(self) -> Result<(), Error> {
        wait(self.inner.into().release())
    }
}

/// Status changes of a hold ([`Hold::status_changes`]); each `next` blocks.
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
