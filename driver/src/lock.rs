//! [`Lock`] and [`Guard`]: async handles over the lock recipes.
//!
//! Cancellation safety: dropping an acquire future at any point leaves no
//! node behind. Every acquire carries a ticket. The drop closes the future's
//! reply channel and queues a cancel for that ticket on the driver task
//! (after the start, since commands run in order); the cancel only touches
//! the recipe while the acquire it started is still waiting, so it never
//! disturbs a later acquire on the same handle. If the lock was granted
//! meanwhile, either the grant is still in the closed channel (the cancel
//! releases it) or the driver finds nobody to hand it to and releases it at
//! once.
//!
//! An acquire refused by the recipe (an upgrade, a second concurrent acquire
//! on one handle) fails with [`Error::Misuse`] and cancels nothing. An acquire
//! that meets the previous hold of the same handle still being released (the
//! Curator plan deletes before it reports `Released`) waits for that release
//! instead of failing.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll};
use std::time::Duration;

use event_listener::Event;
use futures_channel::oneshot;
use zoolock_core::recipes::{MultiLock, ReadWriteLock, SemaphoreMutex};
use zoolock_core::{ApiMisuse, Client as CoreClient, FencingToken, Instant, Mutex, RecipeEvent, RecipeId};

use crate::client::{Client, RecipeHandle};
use crate::error::Error;
use crate::task::Command;

/// Which recipe a [`Lock`] drives (internal).
pub(crate) enum LockKind {
    Mutex(zoolock_core::ZkPath),
    RevocableMutex(zoolock_core::ZkPath),
    SemaphoreMutex(zoolock_core::ZkPath),
    Multi(Vec<zoolock_core::ZkPath>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Mutex,
    SemaphoreMutex,
    Multi,
    Read,
    Write,
}

/// The state of a hold, as the holder should act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HoldStatus {
    /// Held, and the session is connected.
    Held,
    /// The connection dropped: the hold is uncertain. Stop the critical
    /// section until it is `Held` again.
    Suspended,
    /// The session expired or the node vanished: the lock is gone.
    Lost,
    /// Not held (released, or never acquired).
    NotHeld,
}

type Grant = Result<(String, FencingToken), Error>;

/// The acquire the recipe is working for.
#[derive(Debug)]
struct Waiter {
    ticket: u64,
    reply: oneshot::Sender<Grant>,
    /// Not started yet: waiting for the previous hold's release to finish;
    /// the deadline to start with.
    deferred: Option<Option<Instant>>,
}

#[derive(Debug)]
struct HalfState {
    waiter: Option<Waiter>,
    release_waiter: Option<oneshot::Sender<Result<(), Error>>>,
    /// A release was started and its `Released` has not come yet.
    releasing: bool,
    status: HoldStatus,
    revocations: u64,
    /// `revocations` when the current attempt started: later ones are for it.
    revocations_seen: u64,
}

impl Default for HalfState {
    fn default() -> Self {
        HalfState {
            waiter: None,
            release_waiter: None,
            releasing: false,
            status: HoldStatus::NotHeld,
            revocations: 0,
            revocations_seen: 0,
        }
    }
}

#[derive(Debug, Default)]
struct Watched {
    state: StdMutex<HalfState>,
    changed: Event,
    next_ticket: AtomicU64,
}

impl Watched {
    /// Changes the state and wakes everyone waiting on it.
    fn with<T>(&self, f: impl FnOnce(&mut HalfState) -> T) -> T {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let out = f(&mut guard);
        drop(guard);
        self.changed.notify(usize::MAX);
        out
    }

    /// Reads the state without waking anyone (a notifying read would wake
    /// the reader's own listener and spin).
    fn peek<T>(&self, f: impl FnOnce(&HalfState) -> T) -> T {
        f(&self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// An async handle on one lock (a mutex, one half of a read-write lock, a
/// semaphore mutex or a multi-lock). Clones share the same hold: reentrancy
/// belongs to the handle, and one handle runs one acquire at a time (a
/// second concurrent one fails with [`Error::Misuse`]; use one handle per
/// task to queue tasks against each other).
#[derive(Clone)]
pub struct Lock {
    recipe: Arc<RecipeHandle>,
    tag: Tag,
    watched: Arc<Watched>,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock").field("recipe", &self.recipe.id).field("kind", &self.tag).finish()
    }
}

fn on_event(watched: &Watched, client: &mut CoreClient, now: Instant, id: RecipeId, tag: Tag, event: RecipeEvent) {
    match event {
        RecipeEvent::Acquired { node, token } => {
            let waiter = watched.with(|s| {
                s.status = HoldStatus::Held;
                s.waiter.take()
            });
            let delivered = waiter.is_some_and(|w| w.reply.send(Ok((node.clone(), token))).is_ok());
            if delivered {
                tracing::debug!(?id, %node, token = token.0, "lock granted");
            } else {
                // Granted to an acquire that was dropped: give it back.
                tracing::debug!(?id, %node, "lock granted to a dropped acquire: releasing");
                let _ = release_one(watched, client, now, id, tag);
            }
        }
        RecipeEvent::TimedOut => {
            tracing::debug!(?id, "acquire timed out");
            if let Some(w) = watched.with(|s| s.waiter.take()) {
                let _ = w.reply.send(Err(Error::TimedOut));
            }
        }
        RecipeEvent::Failed(e) => {
            // An acquire under way owns the failure; otherwise, while a
            // release is under way, it is the release's outcome. (Only the
            // semaphore mutex runs an acquire beside a release; the others
            // defer the acquire until `Released`.)
            let release_failed =
                watched.peek(|s| s.releasing && s.waiter.as_ref().is_none_or(|w| w.deferred.is_some()));
            if release_failed {
                tracing::warn!(?id, error = %e, "release failed");
                let release = watched.with(|s| {
                    s.releasing = false;
                    s.status = HoldStatus::NotHeld;
                    s.release_waiter.take()
                });
                if let Some(r) = release {
                    let _ = r.send(Err(e.into()));
                }
                start_deferred(watched, client, now, id, tag);
            } else {
                tracing::debug!(?id, error = %e, "acquire failed");
                if let Some(w) = watched.with(|s| s.waiter.take()) {
                    let _ = w.reply.send(Err(e.into()));
                }
            }
        }
        RecipeEvent::Released => {
            tracing::debug!(?id, "lock released");
            let release = watched.with(|s| {
                s.status = HoldStatus::NotHeld;
                s.releasing = false;
                s.release_waiter.take()
            });
            if let Some(r) = release {
                let _ = r.send(Ok(()));
            }
            start_deferred(watched, client, now, id, tag);
        }
        RecipeEvent::Suspended => {
            tracing::info!(?id, "hold suspended: the connection dropped");
            watched.with(|s| s.status = HoldStatus::Suspended);
        }
        RecipeEvent::Reconnected => {
            tracing::info!(?id, "hold confirmed after the reconnect");
            watched.with(|s| s.status = HoldStatus::Held);
        }
        RecipeEvent::Lost => {
            tracing::warn!(?id, "hold lost");
            watched.with(|s| s.status = HoldStatus::Lost);
        }
        RecipeEvent::RevocationRequested => {
            tracing::debug!(?id, "revocation requested");
            watched.with(|s| s.revocations += 1);
        }
        RecipeEvent::CleanupFailed { path, error } => tracing::warn!(%path, %error, "lock node clean-up failed"),
        other => tracing::trace!(?other, "lock event"),
    }
}

/// Starts an acquire that waited for the previous release.
fn start_deferred(watched: &Watched, client: &mut CoreClient, now: Instant, id: RecipeId, tag: Tag) {
    let Some(deadline) = watched.with(|s| s.waiter.as_mut().and_then(|w| w.deferred.take())) else { return };
    if let Err(e) = begin(watched, client, now, id, tag, deadline) {
        if let Some(w) = watched.with(|s| s.waiter.take()) {
            let _ = w.reply.send(Err(e.into()));
        }
    }
}

/// Starts an attempt on the recipe (or counts up a reentrant hold).
fn begin(
    watched: &Watched,
    client: &mut CoreClient,
    now: Instant,
    id: RecipeId,
    tag: Tag,
    deadline: Option<Instant>,
) -> Result<(), ApiMisuse> {
    let fresh = watched.peek(|s| !matches!(s.status, HoldStatus::Held | HoldStatus::Suspended));
    start(client, now, id, tag, deadline)?;
    if fresh {
        // Revocations from here on are for this attempt.
        watched.with(|s| s.revocations_seen = s.revocations);
    }
    Ok(())
}

fn start(
    client: &mut CoreClient,
    now: Instant,
    id: RecipeId,
    tag: Tag,
    deadline: Option<Instant>,
) -> Result<(), ApiMisuse> {
    match tag {
        Tag::Mutex => client.command(now, id, |m: &mut Mutex, now| m.acquire(now, deadline))?,
        Tag::SemaphoreMutex => client.command(now, id, |m: &mut SemaphoreMutex, now| m.acquire(now, deadline))?,
        Tag::Multi => client.command(now, id, |m: &mut MultiLock, now| m.acquire(now, deadline))?,
        Tag::Read => client.command(now, id, |m: &mut ReadWriteLock, now| m.acquire_read(now, deadline))?,
        Tag::Write => client.command(now, id, |m: &mut ReadWriteLock, now| m.acquire_write(now, deadline))?,
    }
}

/// Releases one hold, noting a release under way if it was the last.
fn release_one(
    watched: &Watched,
    client: &mut CoreClient,
    now: Instant,
    id: RecipeId,
    tag: Tag,
) -> Result<u32, ApiMisuse> {
    let left = unlock(client, now, id, tag)?;
    if left == 0 {
        watched.with(|s| s.releasing = true);
    }
    Ok(left)
}

/// Releases one hold; returns how many remain.
fn unlock(client: &mut CoreClient, now: Instant, id: RecipeId, tag: Tag) -> Result<u32, ApiMisuse> {
    match tag {
        Tag::Mutex => client.command(now, id, |m: &mut Mutex, now| m.release(now).map(|()| m.hold_count()))?,
        Tag::SemaphoreMutex => client.command(now, id, |m: &mut SemaphoreMutex, now| m.release(now).map(|()| 0))?,
        Tag::Multi => client.command(now, id, |m: &mut MultiLock, now| m.release(now).map(|()| m.hold_count()))?,
        Tag::Read => {
            client.command(now, id, |m: &mut ReadWriteLock, now| m.release_read(now).map(|()| m.read_hold_count()))?
        }
        Tag::Write => {
            client.command(now, id, |m: &mut ReadWriteLock, now| m.release_write(now).map(|()| m.write_hold_count()))?
        }
    }
}

fn cancel(client: &mut CoreClient, now: Instant, id: RecipeId, tag: Tag) {
    let _ = match tag {
        Tag::Mutex => client.command(now, id, |m: &mut Mutex, now| m.cancel(now)),
        Tag::SemaphoreMutex => client.command(now, id, |m: &mut SemaphoreMutex, now| m.cancel(now)),
        Tag::Multi => client.command(now, id, |m: &mut MultiLock, now| m.cancel(now)),
        Tag::Read => client.command(now, id, |m: &mut ReadWriteLock, now| m.cancel_read(now)),
        Tag::Write => client.command(now, id, |m: &mut ReadWriteLock, now| m.cancel_write(now)),
    };
}

impl Lock {
    pub(crate) async fn new(client: Client, kind: LockKind) -> Result<Lock, Error> {
        let config = client.inner.lock_config();
        let (recipe, tag): (Box<dyn zoolock_core::Recipe>, Tag) = match kind {
            LockKind::Mutex(base) => (Box::new(Mutex::new(base, config)), Tag::Mutex),
            LockKind::RevocableMutex(base) => {
                let mut m = Mutex::new(base, config);
                m.make_revocable()?;
                (Box::new(m), Tag::Mutex)
            }
            LockKind::SemaphoreMutex(base) => (Box::new(SemaphoreMutex::new(base, config)), Tag::SemaphoreMutex),
            LockKind::Multi(bases) => (Box::new(MultiLock::new(bases, config)?), Tag::Multi),
        };
        let watched = Arc::new(Watched::default());
        let sink_watched = watched.clone();
        let sink = Box::new(move |c: &mut CoreClient, now, id, event| on_event(&sink_watched, c, now, id, tag, event));
        let id = client.add_recipe(recipe, sink).await?;
        Ok(Lock { recipe: Arc::new(RecipeHandle { client, id }), tag, watched })
    }

    pub(crate) async fn read_write(client: Client, base: zoolock_core::ZkPath) -> Result<(Lock, Lock), Error> {
        let config = client.inner.lock_config();
        let read = Arc::new(Watched::default());
        let write = Arc::new(Watched::default());
        let (r, w) = (read.clone(), write.clone());
        let sink = Box::new(move |c: &mut CoreClient, now, id, event| match event {
            RecipeEvent::Member { index, event } if index == ReadWriteLock::READ => {
                on_event(&r, c, now, id, Tag::Read, *event)
            }
            RecipeEvent::Member { event, .. } => on_event(&w, c, now, id, Tag::Write, *event),
            other => tracing::trace!(?other, "read-write lock event"),
        });
        let id = client.add_recipe(Box::new(ReadWriteLock::new(base, config)), sink).await?;
        let recipe = Arc::new(RecipeHandle { client, id });
        Ok((
            Lock { recipe: recipe.clone(), tag: Tag::Read, watched: read },
            Lock { recipe, tag: Tag::Write, watched: write },
        ))
    }

    fn client(&self) -> &Client {
        &self.recipe.client
    }

    /// Waits until the lock is held.
    pub async fn acquire(&self) -> Result<Guard, Error> {
        self.acquire_inner(None).await
    }

    /// Waits at most `timeout`; [`Error::TimedOut`] after it. A free lock is
    /// taken even if the timeout has already passed.
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
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Guard, Error> {
        self.acquire_inner(Some(timeout)).await
    }

    /// Takes the lock only if that needs no waiting.
    pub async fn try_acquire(&self) -> Result<Option<Guard>, Error> {
        match self.acquire_inner(Some(Duration::ZERO)).await {
            Ok(g) => Ok(Some(g)),
            Err(Error::TimedOut) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn acquire_inner(&self, timeout: Option<Duration>) -> Result<Guard, Error> {
        let (tx, rx) = oneshot::channel();
        let ticket = self.watched.next_ticket.fetch_add(1, Ordering::Relaxed);
        let mut pending = PendingAcquire { lock: self.clone(), ticket, rx: Some(rx) };
        let (watched, id, tag) = (self.watched.clone(), self.recipe.id, self.tag);
        tracing::trace!(?id, ticket, ?timeout, "acquire");
        let started = self
            .client()
            .inner
            .run(move |client, now| {
                let deadline = timeout.map(|d| now + d);
                let waiting = watched.peek(|s| s.waiter.is_some());
                match begin(&watched, client, now, id, tag, deadline) {
                    Ok(()) => {
                        watched.with(|s| s.waiter = Some(Waiter { ticket, reply: tx, deferred: None }));
                        Ok(())
                    }
                    // The previous hold is still being deleted: start once it is.
                    Err(_) if !waiting && watched.peek(|s| s.releasing) => {
                        watched.with(|s| s.waiter = Some(Waiter { ticket, reply: tx, deferred: Some(deadline) }));
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            })
            .await;
        match started {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                // Refused: nothing was started, so nothing to cancel.
                pending.rx = None;
                return Err(e.into());
            }
            Err(e) => {
                pending.rx = None;
                return Err(e);
            }
        }
        let (node, token) = (&mut pending).await?;
        Ok(Guard { lock: self.clone(), node, token, released: false })
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
    pub async fn settled(&self) -> Result<(), Error> {
        crate::task::settled(&self.recipe.client, self.recipe.id).await
    }

    /// Whether this handle holds the lock, as far as it knows.
    ///
    /// A `Held` that has not been confirmed by the server for two thirds of
    /// the session timeout reads as `Suspended`, even before the event loop
    /// has run: after a process pause the first check must not say `Held`.
    pub fn status(&self) -> HoldStatus {
        let status = self.watched.peek(|s| s.status);
        let inner = &self.recipe.client.inner;
        if status == HoldStatus::Held && inner.shared.is_stale(inner.runtime.now()) {
            return HoldStatus::Suspended;
        }
        status
    }
}

/// An acquire in flight; dropping it cancels cleanly.
struct PendingAcquire {
    lock: Lock,
    ticket: u64,
    rx: Option<oneshot::Receiver<Grant>>,
}

impl Future for &mut PendingAcquire {
    type Output = Grant;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Grant> {
        let Some(rx) = self.rx.as_mut() else { return Poll::Ready(Err(Error::ClientClosed)) };
        match Pin::new(rx).poll(cx) {
            Poll::Ready(Ok(grant)) => {
                self.rx = None;
                Poll::Ready(grant)
            }
            Poll::Ready(Err(_)) => {
                self.rx = None;
                Poll::Ready(Err(Error::ClientClosed))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for PendingAcquire {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else { return };
        // After close, the driver can no longer deliver: what is in the
        // channel now is all there will ever be.
        rx.close();
        let (id, tag, ticket) = (self.lock.recipe.id, self.lock.tag, self.ticket);
        let granted = matches!(rx.try_recv(), Ok(Some(Ok(_))));
        let watched = self.lock.watched.clone();
        tracing::trace!(?id, ticket, granted, "acquire dropped");
        let _ = self.lock.client().inner.send(Command::Run(Box::new(move |client, now| {
            if granted {
                let _ = release_one(&watched, client, now, id, tag);
                return;
            }
            // Still waiting for this acquire? Then stop it; otherwise it has
            // ended (timed out, failed, or granted to nobody and released).
            let waiting = watched.with(|s| match s.waiter.take() {
                Some(w) if w.ticket == ticket => Some(w.deferred.is_some()),
                other => {
                    s.waiter = other;
                    None
                }
            });
            if waiting == Some(false) {
                cancel(client, now, id, tag);
            }
        })));
    }
}

/// A held lock. Dropping it releases in the background; [`Guard::release`]
/// waits for the release.
#[derive(Debug)]
pub struct Guard {
    lock: Lock,
    node: String,
    token: FencingToken,
    released: bool,
}

impl Guard {
    /// The fencing token of this hold: it increases from one holder to the next.
    pub fn fencing_token(&self) -> FencingToken {
        self.token
    }

    /// Our lock node.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Whether the hold is still good.
    pub fn status(&self) -> HoldStatus {
        self.lock.status()
    }

    /// Completes when the hold becomes uncertain (`Suspended`) or is gone
    /// (`Lost`), returning which; `select!` on it beside the critical section.
    /// After a `Suspended`, [`Guard::status`] tells whether the hold came back
    /// (`Held`) or was lost; call this again to wait for the next change.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let guard = client.mutex("/app/lock").await?.acquire().await?;
    /// let work = async { /* the critical section, passing guard.fencing_token() along */ };
    /// futures_lite::future::or(async { let _ = guard.lost().await; }, work).await;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lost(&self) -> HoldStatus {
        loop {
            let listener = self.lock.watched.changed.listen();
            let status = self.lock.status();
            if matches!(status, HoldStatus::Suspended | HoldStatus::Lost) {
                return status;
            }
            listener.await;
        }
    }

    /// Completes once someone has asked the holder to release (revocable
    /// locks; see [`crate::Client::revoke`]), including a request that came
    /// before this call but during this hold's acquire or hold.
    pub async fn revocation_requested(&self) {
        loop {
            let listener = self.lock.watched.changed.listen();
            if self.lock.watched.peek(|s| s.revocations > s.revocations_seen) {
                return;
            }
            listener.await;
        }
    }

    /// Releases (with reentrant holds, counts this hold off). In the Curator
    /// plan it waits for the delete's reply; in the Pipelined plan (the
    /// default) it completes once the delete is queued, a guaranteed delete
    /// that rides with the next request, and [`Lock::settled`] waits for the
    /// server to apply it. Releasing a lost lock is not an error: there is
    /// nothing left to release.
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        let (tx, rx) = oneshot::channel();
        let (watched, id, tag) = (self.lock.watched.clone(), self.lock.recipe.id, self.lock.tag);
        let lost = self.lock.status() == HoldStatus::Lost;
        let immediate = self
            .lock
            .client()
            .inner
            .run(move |client, now| match release_one(&watched, client, now, id, tag) {
                Ok(0) => {
                    watched.with(|s| s.release_waiter = Some(tx));
                    None
                }
                Ok(_) => Some(Ok(())),
                Err(_) if lost => Some(Ok(())),
                Err(e) => Some(Err(Error::from(e))),
            })
            .await?;
        match immediate {
            Some(result) => result,
            None => rx.await.map_err(|_| Error::ClientClosed)?,
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let (watched, id, tag) = (self.lock.watched.clone(), self.lock.recipe.id, self.lock.tag);
        let _ = self.lock.client().inner.send(Command::Run(Box::new(move |client, now| {
            let _ = release_one(&watched, client, now, id, tag);
        })));
    }
}
