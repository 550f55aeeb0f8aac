//! What a holder sees of its hold: [`Hold`], the one hold type that
//! [`crate::Guard`] and [`crate::Lease`] are named faces of, with its
//! [`HoldStatus`], loss signal, status stream, fenced writes and release.
//!
//! The signals are judged when read: a `Held` hold reads `Suspended` once
//! its session's lease ([`zoolock_core::Session::lease`]) has lapsed on the
//! runtime's monotonic clock, whether or not the event loop has run since
//! (a process resumed from a freeze reads it on its first check), and
//! [`wait_lost`] wakes at that instant on a timer of its own.

use std::sync::Arc;

use event_listener::Event;
use futures_lite::Stream;

use zoolock_core::{FencingToken, HoldStatus, LossReason, Suspension};

use crate::acquire::KeptSpan;
use crate::client::{Client, Inner};
use crate::error::Error;
use crate::metrics::Gauge;
use crate::runtime::BoxFuture;

/// Where an acquire under way stands in the queue on ZooKeeper
/// ([`crate::Lock::acquire_with_progress`],
/// [`crate::Semaphore::acquire_with_progress`]). It comes from the listings
/// the acquire makes anyway: watching the progress sends no request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueuePosition {
    /// How many holders and waiters must go before this acquire holds: 1 is
    /// next in line. Between listings it counts down by each predecessor the
    /// acquire sees go, so until the next listing it is an upper bound
    /// (nodes further ahead may have left unseen). For a semaphore, one more
    /// than the place in the queue for its internal lock, then 1 while
    /// waiting for a lease to come back.
    pub position: usize,
    /// How many nodes the listing it came from held, this acquire's
    /// included (for a semaphore waiting for a lease: the leases).
    pub total: usize,
}

impl QueuePosition {
    /// A position (for tests and displays; acquires report their own).
    pub fn new(position: usize, total: usize) -> QueuePosition {
        QueuePosition { position, total }
    }
}

/// A stream of a hold's statuses ([`Hold::status_changes`]).
pub type StatusChanges = std::pin::Pin<Box<dyn Stream<Item = HoldStatus> + Send>>;

/// Judges a status the event loop reported against the session's lease, now.
pub(crate) fn effective(inner: &Inner, reported: HoldStatus) -> HoldStatus {
    if reported == HoldStatus::Held && !inner.shared.lease.is_valid(inner.runtime.now()) {
        return HoldStatus::Suspended;
    }
    reported
}

/// Why a status the event loop reported reads `Suspended` now, if it does.
pub(crate) fn suspension(inner: &Inner, reported: HoldStatus) -> Option<Suspension> {
    match effective(inner, reported) {
        HoldStatus::Suspended if reported == HoldStatus::Held => Some(inner.shared.lease.lapse()),
        HoldStatus::Suspended => Some(inner.shared.lease.dropped()),
        _ => None,
    }
}

/// Completes once `status()` reads `Suspended` or `Lost` (or `NotHeld`: a
/// hold that ended has nothing left to lose); returns it.
///
/// `status()` is judged on *every* poll, not only after a wake-up: a task
/// resumed from a freeze may poll this (first, in a biased `select!`) before
/// the runtime has fired the lease's timer, and must find it ready then.
pub(crate) async fn wait_lost(inner: &Inner, changed: &Event, status: impl Fn() -> HoldStatus) -> HoldStatus {
    let mut wait: Option<BoxFuture<()>> = None;
    std::future::poll_fn(|cx| {
        loop {
            // Listen before reading, so no change falls between the two.
            let waiting = wait.get_or_insert_with(|| change(inner, changed));
            let now = status();
            if now != HoldStatus::Held {
                return std::task::Poll::Ready(now);
            }
            match waiting.as_mut().poll(cx) {
                std::task::Poll::Ready(()) => wait = None,
                std::task::Poll::Pending => return std::task::Poll::Pending,
            }
        }
    })
    .await
}

/// Completes on the next change of the hold (`changed`) or of its client
/// (the connection; a lease renewed after it lapsed, or moved earlier), or
/// at the instant the session's lease lapses and turns a `Held` into
/// `Suspended`, whichever comes first. Everything is registered when this
/// is called, so a status read after it misses nothing.
fn change(inner: &Inner, changed: &Event) -> BoxFuture<()> {
    let hold = changed.listen();
    let client = inner.shared.changed.listen();
    // A lapsed lease has no timer left to wait for: only a change renews it.
    let timer =
        inner.shared.lease.lapses_at().filter(|&at| at > inner.runtime.now()).map(|at| inner.runtime.sleep_until(at));
    Box::pin(async move {
        let changed = futures_lite::future::or(hold, client);
        match timer {
            Some(timer) => futures_lite::future::or(changed, timer).await,
            None => changed.await,
        }
    })
}

/// The current status of `source`'s hold, then every change, until the
/// hold has ended (`Lost` or `NotHeld` is the last item).
fn changes(source: Arc<dyn Source>) -> StatusChanges {
    Box::pin(futures_lite::stream::unfold((None::<HoldStatus>, false), move |(last, done)| {
        let source = source.clone();
        async move {
            if done {
                return None;
            }
            let inner = &source.client().inner;
            loop {
                let next = change(inner, source.changed());
                let now = effective(inner, source.reported());
                if Some(now) != last {
                    let finished = matches!(now, HoldStatus::Lost | HoldStatus::NotHeld);
                    return Some((now, (Some(now), finished)));
                }
                next.await;
            }
        }
    }))
}

/// What a [`Hold`] asks of the handle that granted it: a lock's ticket
/// ([`crate::Guard`]) or a semaphore's lease node ([`crate::Lease`]). Every
/// hold rule (status, loss, release) lives in the handle's state and core;
/// this is only how a hold reaches them.
pub(crate) trait Source: Send + Sync + std::fmt::Debug {
    /// The client the hold belongs to.
    fn client(&self) -> &Client;
    /// The lock, semaphore or election path (for the hold's span).
    fn path(&self) -> &str;
    /// Notified on every change of the handle's state.
    fn changed(&self) -> &Event;
    /// The status the event loop reported for this hold, before the
    /// staleness rule. A hold whose record is gone (lost and let go) is
    /// `Lost`: the hold asking has not been released.
    fn reported(&self) -> HoldStatus;
    /// Someone asked the holder to give the hold up.
    fn revoked(&self) -> bool;
    /// Why the hold was lost, once it reads `Lost` (`None` before, or when
    /// its record is gone).
    fn loss(&self) -> Option<LossReason>;
    /// The nodes a fenced write checks: `None` once the hold is known lost.
    fn fence_nodes(&self) -> BoxFuture<Result<Option<Vec<String>>, Error>>;
    /// Releases the hold (see [`Hold::release`] for when it completes).
    fn release(&self) -> BoxFuture<Result<(), Error>>;
    /// Releases the hold in the background (it was dropped).
    fn release_in_background(&self);
}

/// One hold: a held lock ([`crate::Guard`], a `Hold` with the lock's own
/// extras) or one semaphore lease ([`crate::Lease`]). Both turn into a
/// `Hold` (`Hold::from(guard)`), so code that only runs a critical section
/// (supervise a command, check fencing, release) takes either.
///
/// Dropping it releases in the background, as the guard or lease it came
/// from would; [`Hold::release`] releases and reports the outcome.
#[must_use = "the hold is released as soon as it is dropped"]
pub struct Hold {
    /// Shared with the handle's record of the hold: one copy per hold.
    node: Arc<str>,
    token: FencingToken,
    source: Arc<dyn Source>,
    released: bool,
    /// `zoolock_holds` for a hold that counts by itself (a lease; a lock's
    /// hold counts once for all its re-entries, in the guards' shared source).
    _held: Option<Gauge>,
    /// The `zoolock.hold` span (path, node, token), open while the hold
    /// lives (kept only when a subscriber wants it).
    _span: KeptSpan,
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hold").field("node", &self.node).field("token", &self.token).field("of", &self.source).finish()
    }
}

impl Hold {
    pub(crate) fn new(node: Arc<str>, token: FencingToken, source: Arc<dyn Source>, held: Option<Gauge>) -> Hold {
        let span = tracing::info_span!("zoolock.hold", path = source.path(), node = &*node, token = token.0);
        Hold { node, token, source, released: false, _held: held, _span: KeptSpan::new(span) }
    }

    /// The hold's node (for a multi-lock, one member's).
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The node, shared (for another hold on it).
    pub(crate) fn shared_node(&self) -> Arc<str> {
        self.node.clone()
    }

    /// The fencing token of this hold (the node's czxid): it increases from
    /// one holder to the next. For a read-write lock it orders writers, and
    /// readers after writers, but a read hold taken by
    /// [`crate::Guard::downgrade`] carries a higher token than the writers
    /// queued behind it: see [`FencingToken`] for what a resource should
    /// compare.
    pub fn fencing_token(&self) -> FencingToken {
        self.token
    }

    /// Whether the hold is still good: `Held`, `Suspended` (uncertain: stop
    /// the critical section until it is `Held` again), or `Lost` (for good:
    /// the session expired or the node is gone; each lease has its own, so
    /// the loss of one leaves the others `Held`).
    ///
    /// Judged when called: a hold reads `Held` only before its session's
    /// lease lapses on the monotonic clock (see [`Hold::suspension`]), even
    /// if the event loop has not run since; after a process pause the first
    /// check never says `Held`.
    pub fn status(&self) -> HoldStatus {
        effective(&self.source.client().inner, self.source.reported())
    }

    /// Why [`Hold::status`] reads `Suspended` now (`None` when it does not):
    /// [`Suspension::Disconnected`] (the connection went),
    /// [`Suspension::ServerSilent`] (nothing heard from the server for two
    /// thirds of the session timeout, or this process was paused that
    /// long), or [`Suspension::QuorumUnconfirmed`] (while holding, the
    /// session's server did not get the quorum's confirmation in time: it
    /// may be cut off from the leader, which may expire the session while
    /// that server still answers pings).
    pub fn suspension(&self) -> Option<Suspension> {
        suspension(&self.source.client().inner, self.source.reported())
    }

    /// Completes as soon as [`Hold::status`] would first read `Suspended`
    /// or `Lost`, returning which: by an event of the loop, or by the
    /// staleness rule on a timer of its own (no event-loop turn needed, so a
    /// process resumed after a pause learns it at once). `select!` on it
    /// beside the critical section. After a `Suspended`, [`Hold::status`]
    /// tells whether the hold came back; call this again to wait for the
    /// next change, or follow [`Hold::status_changes`].
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// let guard = client.mutex("/app/lock").await?.acquire().await?;
    /// // Await this beside the critical section, polled first (`tokio::select!`
    /// // with `biased;`, or any race of two futures); stop working when it completes.
    /// let status = guard.lost().await;
    /// println!("the hold reads {status:?}: stop");
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only waits; dropping it changes nothing, and a later call
    /// sees the same status.
    pub async fn lost(&self) -> HoldStatus {
        wait_lost(&self.source.client().inner, self.source.changed(), || self.status()).await
    }

    /// Why the hold was lost: `Some` once the event loop reported it `Lost`
    /// ([`LossReason::MaxHold`] after [`crate::LockOptions::max_hold`]),
    /// `None` while it is not (a `Suspended` has no reason: it may come
    /// back).
    pub fn loss(&self) -> Option<LossReason> {
        self.source.loss()
    }

    /// The current status, then every change (`Suspended`, `Held` again
    /// after a reconnect, `Lost`), ending after `Lost`.
    pub fn status_changes(&self) -> StatusChanges {
        changes(self.source.clone())
    }

    /// Completes once someone has asked the holder to give the hold up
    /// (revocable locks and semaphores; see [`crate::Client::revoke`]),
    /// including a request that came while its acquire was completing.
    /// Revocation is cooperative: release (or drop) the hold to comply.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only waits; dropping it changes nothing.
    pub async fn revocation_requested(&self) {
        loop {
            let listener = self.source.changed().listen();
            if self.source.revoked() {
                return;
            }
            listener.await;
        }
    }

    /// Runs `ops` (create, setData, delete, check) in one multi behind a
    /// check that this hold's node still exists (every member's node, for a
    /// multi-lock), as zookeeper-client's `LockClient` does: either the hold
    /// is good and every op applies, or nothing is written. This is how to
    /// make ZooKeeper writes safe against a holder paused past its session
    /// (a GC pause, a stopped VM): once the server has deleted the node, its
    /// writes fail with [`Error::NotHeld`] instead of landing behind the next
    /// holder's back. A hold already known lost fails the same way without a
    /// request. Returns the ops' results, in order. On a connection loss the
    /// outcome is unknown, as for any ZooKeeper write.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// # use zoolock_tokio::{Bytes, Op, ZkPath};
    /// let guard = client.mutex("/app/lock").await?.acquire().await?;
    /// let config = ZkPath::new("/app/config")?;
    /// guard.fenced(vec![Op::set_data(&config, Bytes::from_static(b"v2"), None)]).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::NotHeld`] when the hold's node is gone (or the hold is known
    /// lost: no request is sent); [`Error::Suspended`] when [`Hold::status`]
    /// reads `Suspended` at the call (judged then; no request is sent);
    /// [`Error::FencedOpFailed`] with the failing
    /// op's index and code (nothing written either); the session's error
    /// when it ends first.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future after it was first polled does not withdraw the multi:
    /// it may have been queued and may still apply (all ops or none). Dropped
    /// before, nothing is sent.
    pub async fn fenced(&self, ops: Vec<crate::Op>) -> Result<Vec<crate::MultiResult>, Error> {
        if let Some(reason) = self.suspension() {
            return Err(Error::Suspended { node: self.node.to_string(), reason });
        }
        match self.source.fence_nodes().await? {
            Some(nodes) => self.source.client().fenced(&nodes, ops).await,
            None => Err(Error::NotHeld { node: self.node.to_string() }),
        }
    }

    /// Releases the hold: its node is deleted, a guaranteed delete that is
    /// retried across reconnects (a lock's re-entered hold is counted off
    /// instead, and the node goes with the last guard). In the Pipelined plan
    /// (the default) it completes once the delete is queued, so it rides with
    /// the next request, and [`crate::Lock::settled`] /
    /// [`crate::Semaphore::settled`] wait for the server to apply it; a lock
    /// in the Curator plan waits for the delete's reply. Releasing a hold
    /// that was lost or is suspended is never an error: a lost hold has
    /// nothing left to release, and a suspended one's delete is guaranteed.
    ///
    /// # Errors
    ///
    /// For a lock in the Curator plan, the delete's failure. A lost or
    /// suspended hold is not an error, and neither is a hold whose client
    /// was closed: [`Client::close`](crate::Client::close) ended it (it
    /// reads `Lost`) and the session's end deleted its node, so releasing
    /// it afterwards returns `Ok(())`, never [`Error::ClientClosed`].
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the release happens whether or not the future is awaited.
    /// The hold moved into it, so dropping the future before its first poll
    /// drops the hold, which releases in the background; dropping it later
    /// leaves the queued delete in place. Only the answer is lost.
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        self.source.release().await
    }
}

impl AsRef<Hold> for Hold {
    fn as_ref(&self) -> &Hold {
        self
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if !self.released {
            self.source.release_in_background();
        }
    }
}
