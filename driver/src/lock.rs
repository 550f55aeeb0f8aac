//! [`Lock`] and [`Guard`]: async handles over core's [`LockQueue`], which
//! queues the acquires of a handle and all its clones and owns every lock
//! rule (an acquire after a release waits for it, a grant to a dropped
//! acquire is given back, an acquire re-queues on a renewed session). This
//! file only carries replies and statuses to the tasks; it never looks at
//! which kind of lock it drives.
//!
//! Cancellation safety: every acquire carries a ticket. Dropping its future
//! queues `cancel(ticket)` on the event loop (after the acquire, since
//! commands run in order); core removes the ticket wherever it is, and
//! releases it if it was granted meanwhile.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_channel::oneshot;
use zoolock_core::recipes::{BoxedLock, LockQueue, Part, Ticket};
use zoolock_core::{ApiMisuse, Client as CoreClient, FencingToken, Handle, Instant, RecipeEvent, RecipeId};

use crate::client::{Client, RecipeHandle};
use crate::error::Error;
use crate::hold::{self, HoldStatus, QueuePosition, Watched};
use crate::metrics::{Gauge, Labels};
use crate::task::{Command, Sink};

type Grant = Result<(Ticket, String, FencingToken), Error>;

/// An acquire waiting for its outcome.
#[derive(Debug)]
struct Waiter {
    part: Part,
    reply: oneshot::Sender<Grant>,
    /// Asked to give the lock up before it was granted: it counts for the hold.
    revoked: bool,
    /// Where it stands on ZooKeeper.
    position: Option<QueuePosition>,
    /// `zoolock_acquires_waiting`, raised while it waits.
    _waiting: Gauge,
}

/// What the tasks see of one ticket's hold.
#[derive(Debug)]
struct TicketState {
    part: Part,
    status: HoldStatus,
    revoked: bool,
    /// The lock node, for the log.
    node: String,
    /// `zoolock_holds`, raised while the hold lasts.
    _held: Gauge,
}

#[derive(Debug, Default)]
struct Tickets {
    waiters: HashMap<u64, Waiter>,
    /// Releases waiting for the server.
    releases: HashMap<u64, oneshot::Sender<Result<(), Error>>>,
    /// Holds, from the grant until the hold has ended and been let go. A
    /// part's holder is its hold that is not lost.
    holds: HashMap<u64, TicketState>,
}

/// State shared by the handles of one lock recipe and its event sink.
type LockShared = Watched<Tickets>;

/// Where the waiters are, and how a refused one is answered.
const WAITERS: hold::Waiters<Tickets, Waiter> =
    hold::Waiters { of: |s| &mut s.waiters, refuse: |w, e| drop(w.reply.send(Err(e))) };

impl LockShared {
    fn hold_status(&self, ticket: u64) -> HoldStatus {
        self.peek(|t| t.holds.get(&ticket).map_or(HoldStatus::NotHeld, |s| s.status))
    }
}

/// An async handle on one lock: a mutex, one half of a read-write lock, a
/// semaphore mutex or a multi-lock.
///
/// **Sharing.** Clone it freely: acquires through a `Lock` and all its clones
/// queue locally, first come first served, like `tokio::sync::Mutex`. A task
/// that acquires while another task holds (or waits) waits its turn; it
/// never gets the other's hold and never an error for it. The process then
/// queues for the lock on ZooKeeper as one participant, behind other
/// processes that queued earlier. Reentrancy is explicit:
/// [`Guard::reenter`] gives a nested guard on the same node, counted as
/// Curator counts; the node is deleted when the last one goes.
///
/// The two halves of one read-write lock are one participant, and inside the
/// process they exclude each other like a local read-write lock: a write
/// waits until the process's read hold ends and a read until its write hold
/// ends, earliest caller first; reads through one pair take turns. Curator's
/// downgrade is explicit: [`Guard::downgrade`] on a write guard. An upgrade
/// (acquiring the write half while the same task holds the read half) waits
/// for itself, as with `tokio::sync::RwLock`: release the read guard first,
/// or bound the wait with [`Lock::acquire_timeout`].
#[derive(Clone)]
pub struct Lock {
    recipe: Arc<RecipeHandle>,
    handle: Handle<LockQueue>,
    part: Part,
    shared: Arc<LockShared>,
    /// The lock path (paths, for a multi-lock), for the log.
    path: Arc<str>,
    /// Its metrics labels.
    labels: Arc<Labels>,
}

/// The two halves of one read-write lock, by name (from
/// [`Client::read_write_lock`](crate::Client::read_write_lock)): `read` is
/// shared among readers, `write` excludes everyone. A write holder that
/// wants to read downgrades ([`Guard::downgrade`]) rather than acquiring
/// `read`, which would wait for its own write hold.
#[derive(Debug, Clone)]
pub struct ReadWriteLock {
    /// The read half (Curator's `readLock()`).
    pub read: Lock,
    /// The write half (Curator's `writeLock()`).
    pub write: Lock,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("path", &self.path)
            .field("recipe", &self.recipe.id)
            .field("part", &self.part)
            .finish()
    }
}

/// Carries one lock event to the tasks.
fn on_event(
    shared: &LockShared,
    path: &str,
    labels: &Labels,
    client: &mut CoreClient,
    now: Instant,
    handle: Handle<LockQueue>,
    event: RecipeEvent,
) {
    let RecipeEvent::Ticket { ticket, event } = event else {
        match event {
            RecipeEvent::CleanupFailed { path: node, error } => {
                crate::metrics::cleanup_failed(labels);
                tracing::warn!(%path, %node, %error, "lock node clean-up failed");
            }
            other => tracing::trace!(%path, ?other, "lock event"),
        }
        return;
    };
    let t = ticket.get();
    match *event {
        RecipeEvent::Acquired { node, token } => {
            let waiter = shared.with(|s| {
                let waiter = s.waiters.remove(&t)?;
                let (part, revoked) = (waiter.part, waiter.revoked);
                let held = TicketState {
                    part,
                    status: HoldStatus::Held,
                    revoked,
                    node: node.clone(),
                    _held: Gauge::held(labels),
                };
                s.holds.insert(t, held);
                Some(waiter.reply)
            });
            if waiter.is_none_or(|w| w.send(Ok((ticket, node.clone(), token))).is_err()) {
                // Granted to an acquire that was dropped: give it back.
                tracing::debug!(%path, %node, "lock granted to a dropped acquire: releasing");
                shared.with(|s| forget(s, t));
                let _ = client.with(now, handle, |q, now| q.cancel(now, ticket));
            }
        }
        RecipeEvent::Released => {
            let node = shared.peek(|s| s.holds.get(&t).map(|h| h.node.clone())).unwrap_or_default();
            tracing::debug!(%path, %node, "lock released");
            if let Some(r) = shared.with(|s| forget_released(s, t)) {
                let _ = r.send(Ok(()));
            }
        }
        end @ (RecipeEvent::TimedOut | RecipeEvent::Failed(_) | RecipeEvent::Refused(_)) => {
            let Some(error) = hold::acquire_end(&end) else { return };
            if error == Error::TimedOut {
                crate::metrics::timed_out(labels);
            }
            let (waiter, release) = shared.with(|s| match s.waiters.remove(&t) {
                Some(w) => (Some(w), None),
                // Not an acquire: the release of this ticket failed.
                None => (None, forget_released(s, t)),
            });
            tracing::debug!(%path, t, %error, "lock acquire or release ended");
            if let Some(w) = waiter {
                let _ = w.reply.send(Err(error));
            } else if let Some(r) = release {
                let _ = r.send(Err(error));
            }
        }
        status @ (RecipeEvent::Suspended | RecipeEvent::Reconnected | RecipeEvent::Lost) => {
            let new = match status {
                RecipeEvent::Suspended => HoldStatus::Suspended,
                RecipeEvent::Reconnected => HoldStatus::Held,
                _ => HoldStatus::Lost,
            };
            let node = shared.peek(|s| s.holds.get(&t).map(|h| h.node.clone())).unwrap_or_default();
            match new {
                HoldStatus::Lost => {
                    crate::metrics::lost(labels);
                    tracing::warn!(%path, %node, "hold lost");
                }
                HoldStatus::Suspended => {
                    crate::metrics::suspended(labels);
                    tracing::info!(%path, %node, "hold suspended: the connection dropped");
                }
                _ => tracing::info!(%path, %node, "hold confirmed after the reconnect"),
            }
            shared.with(|s| {
                if let Some(h) = s.holds.get_mut(&t) {
                    h.status = new;
                }
            });
        }
        RecipeEvent::Queued { position, total } => {
            tracing::trace!(%path, t, position, total, "queued");
            shared.with(|s| {
                if let Some(w) = s.waiters.get_mut(&t) {
                    w.position = Some(QueuePosition { position, total });
                }
            });
        }
        RecipeEvent::RevocationRequested => {
            tracing::debug!(%path, t, "revocation requested");
            shared.with(|s| {
                if let Some(h) = s.holds.get_mut(&t) {
                    h.revoked = true;
                } else if let Some(w) = s.waiters.get_mut(&t) {
                    w.revoked = true;
                }
            });
        }
        other => tracing::trace!(%path, t, ?other, "lock ticket event"),
    }
}

/// The hold of `t` is over: forget it.
fn forget(s: &mut Tickets, t: u64) {
    s.holds.remove(&t);
}

/// The release of `t` finished: forget the hold, hand back the waiter.
fn forget_released(s: &mut Tickets, t: u64) -> Option<oneshot::Sender<Result<(), Error>>> {
    forget(s, t);
    s.releases.remove(&t)
}

impl Lock {
    /// Registers `recipe` behind a shared queue and returns one handle per
    /// part (one, or the read and write halves).
    /// `kind` is the metrics label `kind`.
    pub(crate) async fn register(
        client: Client,
        recipe: BoxedLock,
        path: String,
        kind: &'static str,
    ) -> Result<Vec<Lock>, Error> {
        let parts = recipe.parts();
        let renew = client.inner.options.renew_session;
        let shared = Arc::new(LockShared::default());
        let path: Arc<str> = path.into();
        let labels = Arc::new(Labels::new(kind, &path, client.inner.options.metrics_path_label));
        let (sink_shared, sink_path, sink_labels) = (shared.clone(), path.clone(), labels.clone());
        let sink = move |handle: Handle<LockQueue>| -> Sink {
            Box::new(move |c: &mut CoreClient, now, _: RecipeId, event| {
                on_event(&sink_shared, &sink_path, &sink_labels, c, now, handle, event)
            })
        };
        let handle = client.add_recipe(LockQueue::new(recipe, renew), sink).await?;
        let recipe = Arc::new(RecipeHandle { client, id: handle.id() });
        Ok(parts
            .iter()
            .map(|part| Lock {
                recipe: recipe.clone(),
                handle,
                part: *part,
                shared: shared.clone(),
                path: path.clone(),
                labels: labels.clone(),
            })
            .collect())
    }

    fn client(&self) -> &Client {
        &self.recipe.client
    }

    /// Waits until the lock is held.
    ///
    /// # Errors
    ///
    /// The session's end when it comes first: [`Error::Request`] with the
    /// reason (expired with [`Options::renew_session`](crate::Options::renew_session)
    /// off, closed, auth failed) or [`Error::ClientClosed`]. [`Error::Request`]
    /// with the server's code when it refuses the lock's requests (say `NoAuth`
    /// under an ACL), after the recipe's retries.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future at any point withdraws the acquire. Its
    /// node, if already created, is deleted, a grant that raced the drop is
    /// given back, and the tasks queued behind it in this process move up; no
    /// node is left behind.
    pub async fn acquire(&self) -> Result<Guard, Error> {
        self.acquire_inner(None).await
    }

    /// Waits at most `timeout`; [`Error::TimedOut`] after it. A free lock is
    /// taken even if the timeout has already passed; waiting behind another
    /// task of this process counts against the timeout.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// use std::time::Duration;
    /// use zoolock_driver::Error;
    /// let lock = client.mutex("/app/lock").await?;
    /// match lock.acquire_timeout(Duration::from_secs(5)).await {
    ///     Ok(guard) => guard.release().await?,
    ///     Err(Error::TimedOut) => eprintln!("busy"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::TimedOut`] once `timeout` has passed. The session's end when it comes first: [`Error::Request`] with the
    /// reason (expired with [`Options::renew_session`](crate::Options::renew_session)
    /// off, closed, auth failed) or [`Error::ClientClosed`]. [`Error::Request`]
    /// with the server's code when it refuses the lock's requests (say `NoAuth`
    /// under an ACL), after the recipe's retries.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future at any point withdraws the acquire. Its
    /// node, if already created, is deleted, a grant that raced the drop is
    /// given back, and the tasks queued behind it in this process move up; no
    /// node is left behind.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Guard, Error> {
        self.acquire_inner(Some(timeout)).await
    }

    /// Takes the lock only if that needs no waiting (also not behind another
    /// task of this process).
    ///
    /// # Errors
    ///
    /// The session's end when it comes first: [`Error::Request`] with the
    /// reason (expired with [`Options::renew_session`](crate::Options::renew_session)
    /// off, closed, auth failed) or [`Error::ClientClosed`]. [`Error::Request`]
    /// with the server's code when it refuses the lock's requests (say `NoAuth`
    /// under an ACL), after the recipe's retries. A taken lock is `Ok(None)`, not an error.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future at any point withdraws the acquire. Its
    /// node, if already created, is deleted, a grant that raced the drop is
    /// given back, and the tasks queued behind it in this process move up; no
    /// node is left behind.
    pub async fn try_acquire(&self) -> Result<Option<Guard>, Error> {
        match self.acquire_inner(Some(Duration::ZERO)).await {
            Ok(g) => Ok(Some(g)),
            Err(Error::TimedOut) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Waits until the lock is held (at most `timeout`, as
    /// [`Lock::acquire_timeout`]; `None`: as long as needed), calling
    /// `progress` on this task whenever the acquire's place in the queue on
    /// ZooKeeper changes. The position comes from the listings the acquire
    /// makes anyway, so following it sends no request. An acquire waiting
    /// behind another task of this process is not on ZooKeeper yet: it gets
    /// its first position once its turn comes. Dropping the future cancels
    /// the acquire, as for [`Lock::acquire`].
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let lock = client.mutex("/app/lock").await?;
    /// let guard = lock
    ///     .acquire_with_progress(None, |q| eprintln!("position {} of {}", q.position, q.total))
    ///     .await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::TimedOut`] once a `timeout` given has passed. The session's end when it comes first: [`Error::Request`] with the
    /// reason (expired with [`Options::renew_session`](crate::Options::renew_session)
    /// off, closed, auth failed) or [`Error::ClientClosed`]. [`Error::Request`]
    /// with the server's code when it refuses the lock's requests (say `NoAuth`
    /// under an ACL), after the recipe's retries.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future at any point withdraws the acquire. Its
    /// node, if already created, is deleted, a grant that raced the drop is
    /// given back, and the tasks queued behind it in this process move up; no
    /// node is left behind.
    pub async fn acquire_with_progress(
        &self,
        timeout: Option<Duration>,
        mut progress: impl FnMut(QueuePosition) + Send,
    ) -> Result<Guard, Error> {
        let part = self.part;
        self.start(move |q, now| Ok(q.acquire(now, part, timeout.map(|d| now + d))), &mut progress).await
    }

    async fn acquire_inner(&self, timeout: Option<Duration>) -> Result<Guard, Error> {
        self.acquire_with_progress(timeout, |_| {}).await
    }

    /// Queues an acquire for a new ticket with `command` and waits for its
    /// grant. Dropping the future cancels the ticket wherever it is.
    async fn start(
        &self,
        command: impl FnOnce(&mut LockQueue, Instant) -> Result<Ticket, ApiMisuse> + Send + 'static,
        progress: &mut (dyn FnMut(QueuePosition) + Send),
    ) -> Result<Guard, Error> {
        let (tx, rx) = oneshot::channel();
        let waiter = Waiter {
            part: self.part,
            reply: tx,
            revoked: false,
            position: None,
            _waiting: Gauge::waiting(&self.labels),
        };
        let (cell, queued) = hold::enqueue(&self.shared, WAITERS, &self.client().inner, self.handle, waiter, command);
        tracing::trace!(path = %self.path, part = ?self.part, "acquire");
        let began = self.client().inner.runtime.now();
        let mut pending = PendingAcquire { lock: self.clone(), ticket: cell.clone(), rx: Some(rx) };
        if let Err(e) = queued {
            pending.rx = None;
            return Err(e);
        }
        let position = || {
            let ticket = cell.get()?;
            self.shared.peek(|s| s.waiters.get(&ticket.get()).and_then(|w| w.position))
        };
        let (t, node, token) = hold::with_progress(&self.shared.changed, position, progress, &mut pending).await?;
        let waited = self.client().inner.runtime.now().saturating_duration_since(began);
        crate::metrics::acquired(&self.labels, waited);
        tracing::debug!(path = %self.path, %node, token = token.0, ?waited, "lock granted");
        Ok(Guard { lock: self.clone(), ticket: t, node, token, released: false })
    }

    /// Completes once this lock owes the server nothing: it is neither held
    /// nor being acquired (through any clone of this handle; for a read-write
    /// lock, through either half), and the server has applied every delete
    /// of its releases and clean-ups.
    ///
    /// In the pipelined plan [`Guard::release`] returns as soon as the delete
    /// is queued, so the next request rides in the same write. Dropping the
    /// guard and then awaiting this is a release acknowledged by the server
    /// (what Curator's `release()` waits for) that costs no extra request:
    /// it completes on the delete's own reply. Fails with the session's error
    /// if the session ends first (its ephemeral nodes go with it).
    ///
    /// # Errors
    ///
    /// The session's error when the session ends first.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only waits; dropping it changes nothing.
    pub async fn settled(&self) -> Result<(), Error> {
        self.recipe.settled().await
    }

    /// The status of the hold this lock's part has now, through any clone
    /// (`NotHeld` if none).
    ///
    /// A `Held` that has not been confirmed by the server for two thirds of
    /// the session timeout reads as `Suspended`, even before the event loop
    /// has run: after a process pause the first check must not say `Held`.
    pub fn status(&self) -> HoldStatus {
        let reported = self.shared.peek(|s| {
            let holder = s.holds.values().find(|h| h.part == self.part && h.status != HoldStatus::Lost);
            holder.map_or(HoldStatus::NotHeld, |h| h.status)
        });
        hold::effective(&self.client().inner, reported)
    }
}

/// An acquire in flight; dropping it cancels cleanly.
struct PendingAcquire {
    lock: Lock,
    /// Set once core has issued the acquire's ticket.
    ticket: hold::TicketCell,
    rx: Option<oneshot::Receiver<Grant>>,
}

impl Future for &mut PendingAcquire {
    type Output = Grant;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Grant> {
        let Some(rx) = self.rx.as_mut() else { return Poll::Ready(Err(Error::ClientClosed)) };
        match Pin::new(rx).poll(cx) {
            Poll::Ready(result) => {
                self.rx = None;
                Poll::Ready(result.unwrap_or(Err(Error::ClientClosed)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for PendingAcquire {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else { return };
        rx.close();
        let (shared, handle, cell) = (self.lock.shared.clone(), self.lock.handle, self.ticket.clone());
        tracing::trace!(path = %self.lock.path, "acquire dropped");
        let _ = self.lock.client().inner.send(Command::Run(Box::new(move |client, now| {
            // The acquire's command ran first: a refused one has no ticket
            // and nothing to take back.
            let Some(&ticket) = cell.get() else { return };
            // Wherever the ticket is (queued, acquiring, granted), core
            // takes it out and gives back a hold it got.
            shared.with(|s| {
                s.waiters.remove(&ticket.get());
                forget(s, ticket.get());
            });
            let _ = client.with(now, handle, |q, now| q.cancel(now, ticket));
        })));
    }
}

/// A held lock. Dropping it releases in the background; [`Guard::release`]
/// waits for the release.
#[must_use = "the lock is released as soon as the guard is dropped"]
#[derive(Debug)]
pub struct Guard {
    lock: Lock,
    ticket: Ticket,
    node: String,
    token: FencingToken,
    released: bool,
}

impl Guard {
    /// The fencing token of this hold: it increases from one holder to the
    /// next. For a read-write lock it orders writers, and readers after
    /// writers, but a read hold taken by [`Guard::downgrade`] carries a
    /// higher token than the writers queued behind it: see [`FencingToken`]
    /// for what a resource should compare.
    pub fn fencing_token(&self) -> FencingToken {
        self.token
    }

    /// Our lock node.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Whether the hold is still good: `Held`, `Suspended` (uncertain: stop
    /// the critical section until it is `Held` again), or `Lost` (for good).
    /// Applies the staleness rule (see [`Lock::status`]).
    pub fn status(&self) -> HoldStatus {
        let reported = match self.lock.shared.hold_status(self.ticket.get()) {
            // The hold's record is gone only once it was let go.
            HoldStatus::NotHeld if !self.released => HoldStatus::Lost,
            other => other,
        };
        hold::effective(&self.lock.client().inner, reported)
    }

    /// Completes as soon as [`Guard::status`] would first read `Suspended`
    /// or `Lost`, returning which: by an event of the loop, or by the
    /// staleness rule on a timer of its own (no event-loop turn needed, so a
    /// process resumed after a pause learns it at once). `select!` on it
    /// beside the critical section. After a `Suspended`, [`Guard::status`]
    /// tells whether the hold came back; call this again to wait for the
    /// next change, or follow [`Guard::status_changes`].
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let guard = client.mutex("/app/lock").await?.acquire().await?;
    /// let work = async { /* the critical section, passing guard.fencing_token() along */ };
    /// futures_lite::future::or(async { let _ = guard.lost().await; }, work).await;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only waits; dropping it changes nothing, and a later call
    /// sees the same status.
    pub async fn lost(&self) -> HoldStatus {
        hold::wait_lost(&self.lock.client().inner, &self.lock.shared.changed, || self.status()).await
    }

    /// The current status, then every change (`Suspended`, `Held` again
    /// after a reconnect, `Lost`), ending after `Lost`.
    pub fn status_changes(&self) -> hold::StatusChanges {
        let (shared, inner, t) = (self.lock.shared.clone(), self.lock.client().inner.clone(), self.ticket);
        let status_inner = inner.clone();
        hold::changes(inner, shared.changed.clone(), move || {
            let reported = match shared.hold_status(t.get()) {
                HoldStatus::NotHeld => HoldStatus::Lost,
                other => other,
            };
            hold::effective(&status_inner, reported)
        })
    }

    /// Completes once someone has asked the holder to release (revocable
    /// locks; see [`crate::Client::revoke`]), including a request that came
    /// during this hold's acquire.
    pub async fn revocation_requested(&self) {
        loop {
            let listener = self.lock.shared.changed.listen();
            if self.lock.shared.peek(|s| s.holds.get(&self.ticket.get()).is_some_and(|h| h.revoked)) {
                return;
            }
            listener.await;
        }
    }

    /// Runs `ops` (create, setData, delete, check) in one multi behind a
    /// check that this hold's node still exists (every member's node, for a
    /// multi-lock), as zookeeper-client's
    /// `LockClient` does: either the hold is good and every op applies, or
    /// nothing is written. This is how to make ZooKeeper writes safe against
    /// a holder paused past its session (a GC pause, a stopped VM): once the
    /// server has deleted the node, its writes fail with
    /// [`Error::NotHeld`] instead of landing behind the next holder's back.
    /// A hold already known lost fails the same way without a request.
    /// Returns the ops' results, in order. A failed op is
    /// [`Error::FencedOpFailed`] (nothing written either). On a connection
    /// loss the outcome is unknown, as for any ZooKeeper write.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// use zoolock_driver::zoolock_core::{Op, ZkPath};
    /// use zoolock_driver::zoolock_core::wire::Bytes;
    /// let guard = client.mutex("/app/lock").await?.acquire().await?;
    /// let config = ZkPath::new("/app/config")?;
    /// guard.fenced(vec![Op::set_data(&config, Bytes::from_static(b"v2"), None)]).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::NotHeld`] when the hold's node is gone (or the hold is known
    /// lost: no request is sent); [`Error::FencedOpFailed`] with the failing op's
    /// index and code; the session's error when it ends first.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future after it was first polled does not withdraw the multi:
    /// it has been queued and may still apply (all ops or none). Dropped before,
    /// nothing is sent.
    pub async fn fenced(&self, ops: Vec<zoolock_core::Op>) -> Result<Vec<zoolock_core::wire::MultiResult>, Error> {
        let (handle, t) = (self.lock.handle, self.ticket);
        // Core knows the hold: its nodes, or none once it was lost.
        let nodes =
            self.lock.client().inner.run(move |client, now| client.with(now, handle, |q, _| q.hold_nodes(t))).await??;
        match nodes {
            Some(nodes) => self.lock.client().fenced(&nodes, ops).await,
            None => Err(Error::NotHeld { node: self.node.clone() }),
        }
    }

    /// Downgrades a write hold (Curator's downgrade): a read guard on the
    /// same read-write lock, granted at once ahead of every queued acquire;
    /// then release this write guard and keep reading. Only for the write
    /// half of a read-write lock.
    ///
    /// Fencing: the read node is created now, after writers that queued
    /// behind this write hold, so the read guard's token is higher than
    /// theirs although they hold after it. Keep presenting this write
    /// guard's token for work done under the read guard (a resource that
    /// keeps the highest write token then rejects it once the next writer
    /// has written; see [`FencingToken`]).
    ///
    /// # Errors
    ///
    /// [`Error::Misuse`] for a guard that is not a write guard or a hold that was
    /// lost; the session's error when it ends first.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe as [`Lock::acquire`]: a read node made for a dropped downgrade
    /// is deleted; the write guard is untouched.
    pub async fn downgrade(&self) -> Result<Guard, Error> {
        let read = Lock { part: Part::Read, ..self.lock.clone() };
        let writer = self.ticket;
        read.start(move |q, now| q.downgrade(now, writer), &mut |_| {}).await
    }

    /// A second, nested guard on the same hold (explicit reentrancy, counted
    /// as Curator counts): the node is deleted when the last guard goes.
    /// Refused for a lock that is not reentrant (the semaphore mutex) and for
    /// a hold that was lost.
    ///
    /// # Errors
    ///
    /// [`Error::Misuse`] for a lock that is not reentrant or a hold that was
    /// lost; [`Error::ClientClosed`] once the client is closed.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future after it was first polled may leave the count raised
    /// with no guard to lower it: the node then stays until this guard's hold
    /// ends (its release, or the session's end). Await it to completion.
    pub async fn reenter(&self) -> Result<Guard, Error> {
        let (handle, t) = (self.lock.handle, self.ticket);
        self.lock.client().inner.run(move |client, now| client.with(now, handle, |q, _| q.reenter(t))).await???;
        Ok(Guard { lock: self.lock.clone(), ticket: t, node: self.node.clone(), token: self.token, released: false })
    }

    /// Releases (with re-entries, counts this guard off). In the Curator
    /// plan it waits for the delete's reply; in the Pipelined plan (the
    /// default) it completes once the delete is queued, a guaranteed delete
    /// that rides with the next request, and [`Lock::settled`] waits for the
    /// server to apply it. Releasing a hold that was lost or is suspended is
    /// never an error: a lost hold has nothing left to release, and a
    /// suspended one's delete is guaranteed.
    ///
    /// # Errors
    ///
    /// [`Error::ClientClosed`] when the client's event loop has ended (the
    /// session's end deletes the node then); in the Curator plan, the delete's
    /// failure. A lost or suspended hold is not an error.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the release happens whether or not the future is awaited. The
    /// guard moved into it, so dropping the future before its first poll drops the
    /// guard, which releases in the background; dropping it later leaves the
    /// queued delete in place. Only the answer is lost.
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        let (tx, rx) = oneshot::channel();
        let (shared, handle, t) = (self.lock.shared.clone(), self.lock.handle, self.ticket);
        let immediate = self
            .lock
            .client()
            .inner
            .run(move |client, now| release_job(client, now, &shared, handle, t, Some(tx)))
            .await?;
        match immediate {
            Some(result) => result,
            None => rx.await.unwrap_or(Err(Error::ClientClosed)),
        }
    }
}

/// Releases one hold of ticket `t` on the event loop. `Some(result)` when it
/// is done; `None` when `reply` was parked for the server's answer.
fn release_job(
    client: &mut CoreClient,
    now: Instant,
    shared: &LockShared,
    handle: Handle<LockQueue>,
    t: Ticket,
    reply: Option<oneshot::Sender<Result<(), Error>>>,
) -> Option<Result<(), Error>> {
    match client.with(now, handle, |q, now| {
        let result = q.release(now, t);
        let still_held = q.inner().parts().iter().any(|p| q.holder(*p).is_some_and(|(h, _, _)| h == t));
        (result, still_held)
    }) {
        Ok((Ok(true), still_held)) => {
            if !still_held {
                shared.with(|s| forget(s, t.get()));
            }
            Some(Ok(()))
        }
        Ok((Ok(false), _)) => {
            if let Some(reply) = reply {
                shared.with(|s| s.releases.insert(t.get(), reply));
            }
            None
        }
        // Nothing held under this ticket any more: the hold was lost and
        // let go, or released by a racing cancel.
        Ok((Err(ApiMisuse::NotHeld), _)) => {
            shared.with(|s| forget(s, t.get()));
            Some(Ok(()))
        }
        Ok((Err(e), _)) | Err(e) => Some(Err(e.into())),
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let (shared, handle, t) = (self.lock.shared.clone(), self.lock.handle, self.ticket);
        let _ = self.lock.client().inner.send(Command::Run(Box::new(move |client, now| {
            let _ = release_job(client, now, &shared, handle, t, None);
        })));
    }
}
