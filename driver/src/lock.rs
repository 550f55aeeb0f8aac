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

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_channel::oneshot;
use zoolock_core::recipes::{BoxedLock, LockEvent, LockQueue, LockSpec, Part, QueueEvent, Ticket};
use zoolock_core::{ApiMisuse, Client as CoreClient, FencingToken, Instant, RecipeEvent};

use crate::acquire::{self, LockRequest, RegisteredQueue, TicketCommand};
use crate::client::{Client, Owner};
use crate::error::Error;
use crate::hold::{self, Hold, QueuePosition};
use crate::metrics::Gauge;
use crate::runtime::BoxFuture;
use crate::task::{Command, RecipeSink};
use crate::{HoldStatus, LossReason};

/// A lock node and its fencing token, as an acquire is granted them; the
/// node is shared by the [`Guard`]s of the hold (one copy per held lock).
pub(crate) type Grant = (Arc<str>, FencingToken);

/// The registered lock recipe a [`Lock`] and its clones share (with its
/// event sink).
pub(crate) type RegisteredLock = RegisteredQueue<LockQueue>;

/// What a lock's handles ask of the event loop ([`run`]).
pub(crate) enum LockCommand {
    /// Acquire, or cancel an acquire.
    Ticket(TicketCommand<LockQueue>),
    /// Release one hold of `ticket` (counting a re-entry off), answering
    /// `reply` (if any) once done, or once the server has the delete in the
    /// Curator plan.
    Release { ticket: Ticket, reply: Option<oneshot::Sender<Result<(), Error>>> },
    /// Count one more re-entry of `ticket`'s hold.
    Reenter { ticket: Ticket, reply: oneshot::Sender<Result<(), ApiMisuse>> },
}

/// Runs a lock's command on the event loop.
pub(crate) fn run(client: &mut CoreClient, now: Instant, recipe: &RegisteredLock, command: LockCommand) {
    match command {
        LockCommand::Ticket(command) => acquire::run(client, now, recipe, command),
        LockCommand::Release { ticket, reply } => release(client, now, recipe, ticket, reply),
        LockCommand::Reenter { ticket, reply } => {
            let _ = reply.send(client.with(now, recipe.handle, |q, now| q.reenter(now, ticket)).and_then(|r| r));
        }
    }
}

impl RecipeSink for RegisteredLock {
    fn deliver(&self, event: RecipeEvent) {
        on_event(self, event);
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
/// ends, earliest caller first. Who shares a read is stated once, in
/// [`ReadWriteLock`]'s sharing rule. Curator's
/// downgrade is explicit: [`Guard::downgrade`] on a write guard. An upgrade
/// (acquiring the write half while the same task holds the read half) waits
/// for itself, as with `tokio::sync::RwLock`: release the read guard first,
/// or bound the wait with [`Lock::acquire_timeout`].
#[derive(Clone)]
pub struct Lock {
    owner: Owner<RegisteredLock>,
    part: Part,
}

/// The two halves of one read-write lock, by name (from
/// [`Client::read_write_lock`](crate::Client::read_write_lock)): `read` is
/// shared among readers on separate handles, `write` excludes everyone. A
/// write holder that wants to read downgrades ([`Guard::downgrade`]) rather
/// than acquiring `read`, which would wait for its own write hold.
///
/// # The sharing rule
///
/// This is the one statement of who shares a read; the other docs link here.
///
/// - **Separate handles share.** Each `read_write_lock(path)` call makes a
///   handle that is its own participant (as each Curator
///   `InterProcessReadWriteLock` is): reads through separate handles, of
///   one client or of several, in one process or many, hold at once. A
///   writer waits until all of them are released, and a read that queues
///   after a waiting writer waits for it (ZooKeeper's queue order).
/// - **One handle takes turns.** Reads through one handle (this value, its
///   clones, clones of its `read`) are one participant: they queue locally,
///   first come first served, and hold one at a time, like a
///   `tokio::sync::Mutex`. The second read waits until the first guard is
///   released and then queues on ZooKeeper, so a writer that queued
///   meanwhile goes in between.
///
/// So to read at once from several tasks, give each task its own handle
/// (one `read_write_lock(path)` call each), or share one read guard.
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
            .field("path", &self.owner.recipe.path)
            .field("recipe", &self.owner.recipe.handle.id())
            .field("part", &self.part)
            .finish()
    }
}

/// Carries one lock event to the tasks: the queue's own typed event, each
/// of a ticket's [`LockEvent`]s matched by name. Core keeps the ticket's
/// state; this answers the acquire or release waiting on it, or wakes those
/// who read it.
fn on_event(recipe: &RegisteredLock, event: RecipeEvent) {
    let (shared, path) = (&recipe.shared, &*recipe.path);
    let RecipeEvent::Lock(queued) = event else { return tracing::trace!(%path, ?event, "lock event") };
    let (t, event) = match *queued {
        QueueEvent::Ticket { ticket, event } => (ticket, event),
        QueueEvent::Untagged { event: LockEvent::CleanupFailed { path: node, error }, .. } => {
            crate::metrics::cleanup_failed(&recipe.labels());
            return tracing::warn!(%path, %node, %error, "lock node clean-up failed");
        }
        other @ QueueEvent::Untagged { .. } => return tracing::trace!(%path, ?other, "lock event"),
    };
    match event {
        LockEvent::Acquired { node, token } => {
            let waiter = shared.with(|s| s.take_waiter(t));
            if waiter.is_none_or(|w| !w.answer(Ok((node.clone(), token)))) {
                // Granted to an acquire that was dropped: its cancel, queued
                // when it was dropped, has core give the hold back.
                tracing::debug!(%path, %node, "lock granted to a dropped acquire");
            }
        }
        LockEvent::Released => {
            tracing::debug!(%path, %t, "lock released");
            if let Some(r) = shared.with(|s| s.take_release(t)) {
                let _ = r.send(Ok(()));
            }
        }
        LockEvent::TimedOut => ended(recipe, t, Error::TimedOut),
        LockEvent::Failed(e) => ended(recipe, t, Error::from(e)),
        LockEvent::Refused(e) => ended(recipe, t, Error::Misuse(e)),
        change @ (LockEvent::Suspended | LockEvent::Reconnected | LockEvent::Lost) => {
            match change.hold_change().map(HoldStatus::after) {
                Some(HoldStatus::Lost) => {
                    crate::metrics::lost(&recipe.labels());
                    tracing::warn!(%path, %t, "hold lost");
                }
                Some(HoldStatus::Suspended) => {
                    crate::metrics::suspended(&recipe.labels());
                    tracing::info!(%path, %t, "hold suspended: the connection dropped");
                }
                _ => tracing::info!(%path, %t, "hold confirmed after the reconnect"),
            }
            shared.notify();
        }
        LockEvent::Queued { position, total } => {
            tracing::trace!(%path, %t, position, total, "queued");
            acquire::queued(recipe, t);
        }
        LockEvent::Expired { node } => {
            tracing::warn!(%path, %node, "hold reached its max hold: lost");
            shared.notify();
        }
        LockEvent::RevocationRequested => {
            tracing::debug!(%path, %t, "revocation requested");
            shared.notify();
        }
        // A semaphore mutex's lease node is gone: `Lost` follows.
        LockEvent::LeaseLost { node } => tracing::debug!(%path, %t, %node, "lease node gone"),
        LockEvent::CleanupFailed { path: node, error } => {
            crate::metrics::cleanup_failed(&recipe.labels());
            tracing::warn!(%path, %node, %error, "lock node clean-up failed");
        }
    }
}

/// Ends ticket `t`'s acquire with `error`; with no acquire waiting under
/// it, the ticket's release failed: its waiting release gets the error.
fn ended(recipe: &RegisteredLock, t: Ticket, error: Error) {
    tracing::debug!(path = %recipe.path, %t, %error, "lock acquire or release ended");
    if let Err(error) = acquire::end(recipe, t, error) {
        if let Some(r) = recipe.shared.with(|s| s.take_release(t)) {
            let _ = r.send(Err(error));
        }
    }
}

impl Lock {
    /// Registers `recipe` behind a shared queue and returns one handle per
    /// part (one, or the read and write halves).
    /// `spec` (what `lock` was built from) gives the metrics label `kind`,
    /// and names a lock with no path of its own (a multi-lock) in the log
    /// and the metrics.
    pub(crate) fn register(client: Client, lock: BoxedLock, spec: &LockSpec) -> Result<Vec<Lock>, Error> {
        let parts = lock.parts();
        let renew = client.inner.options.renew_session;
        let path_label = client.inner.options.metrics_path_label;
        let reserved = client.reserve::<LockQueue>();
        // The recipe's shared state is its own sink: one allocation.
        let path: Arc<str> = lock.path().map_or_else(|| spec.label().into(), |p| p.clone().into());
        let recipe = Arc::new(RegisteredQueue::new(reserved.handle(), path, spec.kind(), path_label));
        client.register(reserved, LockQueue::new(lock, renew), recipe.clone())?;
        Ok(parts.iter().map(|&part| Lock { owner: Owner::new(client.clone(), recipe.clone()), part }).collect())
    }

    fn client(&self) -> &Client {
        &self.owner.client
    }

    /// Sends `command` to this lock on the event loop.
    fn command(&self, command: LockCommand) -> Result<(), Error> {
        self.client().inner.send(Command::Lock(self.owner.recipe.clone(), command))
    }

    fn recipe(&self) -> &Arc<RegisteredLock> {
        &self.owner.recipe
    }

    /// Waits until the lock is held.
    ///
    /// # Errors
    ///
    /// [`Error::ClientClosed`] when this client was closed (before the call
    /// or while it waited); the session's end when it comes first:
    /// [`Error::Request`] with the reason (expired with
    /// [`Options::renew_session`](crate::Options::renew_session) off, auth
    /// failed). [`Error::Request`]
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
        // Named and awaited through a borrow: the future is kept once, not
        // also moved into the await (which would double the caller's task).
        let mut acquiring = self.acquire_for(None, None)?;
        (&mut acquiring).await
    }

    /// Waits at most `timeout`; [`Error::TimedOut`] after it. A free lock is
    /// taken even if the timeout has already passed; waiting behind another
    /// task of this process counts against the timeout.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// use std::time::Duration;
    /// # use zoolock_tokio::Error;
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
    /// [`Error::TimedOut`] once `timeout` has passed.
    /// [`Error::ClientClosed`] when this client was closed (before the call
    /// or while it waited); the session's end when it comes first:
    /// [`Error::Request`] with the reason (expired with
    /// [`Options::renew_session`](crate::Options::renew_session) off, auth
    /// failed). [`Error::Request`]
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
        let mut acquiring = self.acquire_for(Some(timeout), None)?;
        (&mut acquiring).await
    }

    /// Takes the lock only if that needs no waiting (also not behind another
    /// task of this process).
    ///
    /// # Errors
    ///
    /// [`Error::ClientClosed`] when this client was closed (before the call
    /// or while it waited); the session's end when it comes first:
    /// [`Error::Request`] with the reason (expired with
    /// [`Options::renew_session`](crate::Options::renew_session) off, auth
    /// failed). [`Error::Request`]
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
        let mut acquiring = self.acquire_for(Some(Duration::ZERO), None)?;
        match (&mut acquiring).await {
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
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
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
    /// [`Error::TimedOut`] once a `timeout` given has passed.
    /// [`Error::ClientClosed`] when this client was closed (before the call
    /// or while it waited); the session's end when it comes first:
    /// [`Error::Request`] with the reason (expired with
    /// [`Options::renew_session`](crate::Options::renew_session) off, auth
    /// failed). [`Error::Request`]
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
        let mut acquiring = self.acquire_for(timeout, Some(&mut progress))?;
        (&mut acquiring).await
    }

    /// Queues an acquire of this part, waiting at most `timeout`. Not an
    /// `async fn`: the caller awaits the returned future directly, so the
    /// arguments are not kept a second time for the whole wait.
    fn acquire_for<'a, 'p>(
        &'a self,
        timeout: Option<Duration>,
        progress: Option<acquire::Progress<'p>>,
    ) -> Result<Acquiring<'a, 'p>, Error> {
        let part = self.part;
        self.start(part, LockRequest::Part { part, timeout }, progress)
    }

    /// Queues an acquire of `part` for a new ticket for `request`; the
    /// returned future waits for its grant. Dropping it cancels the ticket
    /// wherever it is.
    fn start<'a, 'p>(
        &'a self,
        part: Part,
        request: LockRequest,
        progress: Option<acquire::Progress<'p>>,
    ) -> Result<Acquiring<'a, 'p>, Error> {
        tracing::trace!(path = %self.owner.recipe.path, ?part, "acquire");
        let acquire = acquire::acquire(&self.owner, (), request, progress)?;
        Ok(Acquiring { lock: self, part, acquire })
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
        self.owner.settled().await
    }

    /// The status of the hold this lock's part has now, through any clone
    /// (`NotHeld` if none).
    ///
    /// A hold whose last guard was released or dropped reads `NotHeld` from
    /// the moment the event loop takes the release, before its delete is
    /// written, so this never reads `Held` once another client can have been
    /// granted the lock; [`Lock::settled`] waits for the server's answer.
    ///
    /// Judged when called, as [`Hold::status`](crate::Hold::status) is: a
    /// `Held` past the session's lease reads `Suspended`, even before the
    /// event loop has run.
    pub fn status(&self) -> HoldStatus {
        let recipe = self.recipe();
        let shared = &self.client().inner.shared;
        let reported = shared.read_recipe(recipe.handle, |q| q.part_status(self.part)).unwrap_or(HoldStatus::NotHeld);
        hold::effective(&self.client().inner, reported)
    }
}

/// An acquire of one part of a [`Lock`] under way: its grant becomes a
/// [`Guard`]. Dropping it cancels the acquire (see [`acquire::Acquire`]).
struct Acquiring<'a, 'p> {
    lock: &'a Lock,
    part: Part,
    acquire: acquire::Acquire<'a, 'p, LockQueue>,
}

impl Future for Acquiring<'_, '_> {
    type Output = Result<Guard, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Poll::Ready(granted) = Pin::new(&mut this.acquire).poll(cx) else { return Poll::Pending };
        let acquire::Granted { ticket, grant: (node, token), waited } = granted?;
        this.acquire.span().record_grant(&node, token);
        let path = &this.lock.owner.recipe.path;
        tracing::debug!(%path, %node, token = token.0, ?waited, "lock granted");
        let lock = Lock { owner: this.lock.owner.clone(), part: this.part };
        // Only with metrics is there a gauge to share (no allocation without).
        let held = cfg!(feature = "metrics").then(|| Arc::new(Gauge::held(&lock.recipe().labels())));
        Poll::Ready(Ok(Guard::new(lock, ticket, node, token, held)))
    }
}

/// What a [`Guard`]'s [`Hold`] asks of its lock: the hold of one ticket,
/// which core keeps.
#[derive(Debug)]
struct TicketHold {
    lock: Lock,
    ticket: Ticket,
    /// `zoolock_holds`, raised while a guard of the hold lives: its
    /// re-entries share it, so the hold counts once (with metrics).
    held: Option<Arc<Gauge>>,
}

impl TicketHold {
    /// Reads the ticket's state in core (`None` once the lock is gone).
    fn read<T>(&self, f: impl FnOnce(&LockQueue, Ticket) -> T) -> Option<T> {
        let shared = &self.lock.client().inner.shared;
        shared.read_recipe(self.lock.recipe().handle, |q| f(q, self.ticket))
    }
}

impl hold::Source for TicketHold {
    fn client(&self) -> &Client {
        self.lock.client()
    }

    fn path(&self) -> &str {
        &self.lock.owner.recipe.path
    }

    fn changed(&self) -> &event_listener::Event {
        &self.lock.recipe().shared.changed
    }

    fn reported(&self) -> HoldStatus {
        match self.read(|q, t| q.hold_status(t)).unwrap_or(HoldStatus::NotHeld) {
            // Core forgets a hold only once it was let go (a guard asking
            // has not been released): it was lost.
            HoldStatus::NotHeld => HoldStatus::Lost,
            other => other,
        }
    }

    fn revoked(&self) -> bool {
        self.read(|q, t| q.revoked(t)).unwrap_or(false)
    }

    fn loss(&self) -> Option<LossReason> {
        self.read(|q, t| q.loss(t)).flatten()
    }

    fn fence_nodes(&self) -> BoxFuture<Result<Option<Vec<String>>, Error>> {
        // Core knows the hold: its nodes, or none once it was lost.
        let nodes = self.read(|q, t| q.hold_nodes(t));
        let inner = self.lock.client().inner.clone();
        Box::pin(async move { nodes.ok_or_else(|| inner.shared.closed()) })
    }

    fn release(&self) -> BoxFuture<Result<(), Error>> {
        let (reply, rx) = oneshot::channel();
        let sent = self.lock.command(LockCommand::Release { ticket: self.ticket, reply: Some(reply) });
        let inner = self.lock.client().inner.clone();
        Box::pin(async move {
            sent?;
            rx.await.unwrap_or_else(|_| Err(inner.shared.closed())).map_err(|e| inner.named(e))
        })
    }

    fn release_in_background(&self) {
        let _ = self.lock.command(LockCommand::Release { ticket: self.ticket, reply: None });
    }
}

/// A held lock: a [`Hold`] (node, fencing token, status, loss signal,
/// fenced writes, release; reached through `Deref`) with what only a lock
/// has: [`Guard::reenter`] and [`Guard::downgrade`]. `Hold::from(guard)`
/// keeps the hold and drops these extras.
///
/// Dropping it releases in the background; [`Guard::release`] waits for
/// the release.
#[must_use = "the lock is released as soon as the guard is dropped"]
#[derive(Debug)]
pub struct Guard {
    hold: Hold,
    of: Arc<TicketHold>,
}

impl std::ops::Deref for Guard {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        &self.hold
    }
}

impl AsRef<Hold> for Guard {
    fn as_ref(&self) -> &Hold {
        &self.hold
    }
}

impl From<Guard> for Hold {
    fn from(guard: Guard) -> Hold {
        guard.hold
    }
}

impl Guard {
    fn new(lock: Lock, ticket: Ticket, node: Arc<str>, token: FencingToken, held: Option<Arc<Gauge>>) -> Guard {
        let of = Arc::new(TicketHold { lock, ticket, held });
        Guard { hold: Hold::new(node, token, of.clone(), None), of }
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
        let writer = self.of.ticket;
        let mut acquiring = self.of.lock.start(Part::Read, LockRequest::Downgrade { writer }, None)?;
        (&mut acquiring).await
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
        let (lock, t) = (&self.of.lock, self.of.ticket);
        let (reply, rx) = oneshot::channel();
        lock.command(LockCommand::Reenter { ticket: t, reply })?;
        rx.await.map_err(|_| lock.client().inner.shared.closed())??;
        Ok(Guard::new(lock.clone(), t, self.hold.shared_node(), self.fencing_token(), self.of.held.clone()))
    }

    /// Releases (with re-entries, counts this guard off): [`Hold::release`].
    /// In the Curator plan it waits for the delete's reply; in the
    /// Pipelined plan (the default) it completes once the delete is queued,
    /// and [`Lock::settled`] waits for the server to apply it.
    ///
    /// # Errors
    ///
    /// As [`Hold::release`]: in the Curator plan, the delete's failure. A
    /// lost or suspended hold is not an error, nor is a hold whose client
    /// was closed ([`Client::close`](crate::Client::close) ended it).
    ///
    /// # Cancel safety
    ///
    /// As [`Hold::release`]: the release happens whether or not the future
    /// is awaited; only the answer is lost.
    pub async fn release(self) -> Result<(), Error> {
        self.hold.release().await
    }
}

/// Releases one hold of ticket `t` on the event loop, answering `reply`
/// now, or (the last hold, in the Curator plan) filing it for the server's
/// answer: `Released`, or the release's failure. From the moment core takes
/// the release, before its delete is written, the lock's status no longer
/// reads this hold, so it never says `Held` once another client can have
/// been granted the lock.
fn release(
    client: &mut CoreClient,
    now: Instant,
    recipe: &RegisteredLock,
    t: Ticket,
    reply: Option<oneshot::Sender<Result<(), Error>>>,
) {
    let answer = match client.with(now, recipe.handle, |q, now| q.release(now, t)) {
        Ok(Ok(true)) => Ok(()),
        Ok(Ok(false)) => {
            if let Some(reply) = reply {
                recipe.shared.with(|s| s.file_release(t, reply));
            }
            return;
        }
        // Nothing held under this ticket any more: the hold was lost and
        // let go, or released by a racing cancel.
        Ok(Err(ApiMisuse::NotHeld)) => Ok(()),
        Ok(Err(e)) | Err(e) => Err(e.into()),
    };
    if let Some(reply) = reply {
        let _ = reply.send(answer);
    }
}
