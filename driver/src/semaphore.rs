//! [`Semaphore`] and [`Lease`]: async handles over core's [`LeaseQueue`],
//! which queues the acquires of a handle and its clones (each gets its own
//! leases) and re-queues them on a renewed session.

use std::sync::Arc;
use std::time::Duration;

use zoolock_core::recipes::{
    CountEvent, LeaseQueue, LeaseQueueEvent, Semaphore as CoreSemaphore, SemaphoreEvent, Ticket,
};
use zoolock_core::{ApiMisuse, Client as CoreClient, FencingToken, Instant, RecipeEvent};

use futures_channel::oneshot;

use crate::acquire::{self, LeaseRequest, RegisteredQueue, TicketCommand};
use crate::client::{Client, Owner};
use crate::error::Error;
use crate::hold::{self, Hold, QueuePosition};
use crate::metrics::Gauge;
use crate::runtime::BoxFuture;
use crate::task::{Command, RecipeSink};
use crate::{HoldStatus, LossReason};

/// Lease nodes and their fencing tokens; each node is shared by its
/// [`Lease`]'s hold and the hold's source.
pub(crate) type Grant = Vec<(Arc<str>, FencingToken)>;

/// The leases an acquire has got so far, and how many it wants: what its
/// answer is built from.
#[derive(Debug)]
pub(crate) struct Waiting {
    qty: usize,
    got: Grant,
}

/// The registered semaphore a [`Semaphore`] and its clones share (with its
/// event sink).
pub(crate) type RegisteredSemaphore = RegisteredQueue<LeaseQueue>;

impl RecipeSink for RegisteredSemaphore {
    fn deliver(&self, event: RecipeEvent) {
        on_event(self, event);
    }
}

/// What a semaphore's handles ask of the event loop ([`run`]).
pub(crate) enum LeaseCommand {
    /// Acquire leases, or cancel an acquire.
    Ticket(TicketCommand<LeaseQueue>),
    /// Return the lease on `node`, answering `reply` (if any) once the
    /// return is under way.
    Return { node: Arc<str>, reply: Option<oneshot::Sender<Result<(), Error>>> },
}

/// Runs a semaphore's command on the event loop.
pub(crate) fn run(client: &mut CoreClient, now: Instant, recipe: &RegisteredSemaphore, command: LeaseCommand) {
    match command {
        LeaseCommand::Ticket(command) => acquire::run(client, now, recipe, command),
        LeaseCommand::Return { node, reply } => {
            tracing::debug!(%node, "returning lease");
            // Core forgets the lease's loss, expiry and revocation with it.
            let returned = client.with(now, recipe.handle, |s, now| s.return_lease(now, &node));
            if let Some(reply) = reply {
                let _ = reply.send(returned.and_then(|r| r).map_err(Error::from));
            }
        }
    }
}

/// A counting semaphore (Curator's `InterProcessSemaphoreV2` layout).
///
/// Clone it freely: acquires through a `Semaphore` and all its clones queue
/// locally, first come first served, each getting its own leases; leases of
/// earlier acquires stay held meanwhile.
#[derive(Clone)]
pub struct Semaphore {
    owner: Owner<RegisteredSemaphore>,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let recipe = &self.owner.recipe;
        f.debug_struct("Semaphore").field("path", &recipe.path).field("recipe", &recipe.handle.id()).finish()
    }
}

/// Carries one semaphore event to the tasks: the lease queue's own typed
/// event, each [`SemaphoreEvent`] matched by name.
fn on_event(recipe: &RegisteredSemaphore, event: RecipeEvent) {
    let path = &*recipe.path;
    let RecipeEvent::Leases(event) = event else { return tracing::trace!(%path, ?event, "semaphore event") };
    match *event {
        LeaseQueueEvent::Ticket { ticket, event } => on_ticket(recipe, ticket, event),
        LeaseQueueEvent::Semaphore(event) => on_semaphore(recipe, event),
        // Core keeps it (`Semaphore::size`, `available` read it there).
        LeaseQueueEvent::Capacity { limit, available } => tracing::trace!(%path, limit, ?available, "capacity"),
    }
}

/// One event of acquire `ticket`.
fn on_ticket(recipe: &RegisteredSemaphore, ticket: Ticket, event: SemaphoreEvent) {
    let (shared, path) = (&recipe.shared, &*recipe.path);
    let end = |error| {
        let _ = acquire::end(recipe, ticket, error);
    };
    match event {
        SemaphoreEvent::Acquired { node, token } => {
            let done = shared.with(|s| {
                let w = s.waiter_mut(ticket)?;
                w.of.got.push((node, token));
                if w.of.got.len() >= w.of.qty { s.take_waiter(ticket) } else { None }
            });
            let Some(mut w) = done else { return };
            let got = std::mem::take(&mut w.of.got);
            let nodes: Vec<Arc<str>> = got.iter().map(|l| l.0.clone()).collect();
            if w.answer(Ok(got)) {
                tracing::debug!(%path, ?nodes, "leases granted");
            } else {
                // Its cancel, queued when it was dropped, has core return them.
                tracing::debug!(%path, ?nodes, "leases granted to a dropped acquire");
            }
        }
        SemaphoreEvent::TimedOut => end(Error::TimedOut),
        SemaphoreEvent::Failed(e) => end(Error::from(e)),
        SemaphoreEvent::Refused(e) => end(Error::Misuse(e)),
        SemaphoreEvent::Queued { .. } => acquire::queued(recipe, ticket),
        // What a ticket's acquire reports is the above; anything else is
        // the semaphore's own.
        other => on_semaphore(recipe, other),
    }
}

/// One of the semaphore's own events: the held leases' status, a lease's
/// loss, expiry or revocation, its count's changes.
fn on_semaphore(recipe: &RegisteredSemaphore, event: SemaphoreEvent) {
    let (shared, path, labels) = (&recipe.shared, &*recipe.path, &recipe.labels());
    match event {
        // Every lease shares the connection's status (each one's loss comes
        // as its own `LeaseLost`); `Lost` says no lease is left. Core keeps
        // each lease's status: the holders are woken to read it.
        change @ (SemaphoreEvent::Suspended | SemaphoreEvent::Reconnected | SemaphoreEvent::Lost) => {
            if change.hold_change().map(HoldStatus::after) == Some(HoldStatus::Suspended) {
                crate::metrics::suspended(labels);
                tracing::info!(%path, "hold suspended: the connection dropped (semaphore leases)");
            } else if change == SemaphoreEvent::Reconnected {
                tracing::info!(%path, "hold confirmed after the reconnect (semaphore leases)");
            }
            shared.notify();
        }
        SemaphoreEvent::LeaseLost { node } => {
            crate::metrics::lost(labels);
            tracing::warn!(%path, %node, "lease lost: its node is gone");
            shared.notify();
        }
        SemaphoreEvent::Expired { node } => {
            tracing::warn!(%path, %node, "lease reached its max hold: lost");
            shared.notify();
        }
        SemaphoreEvent::LeaseRevocationRequested { node } => {
            tracing::debug!(%path, %node, "lease revocation requested");
            shared.notify();
        }
        SemaphoreEvent::Count(CountEvent::Value { value, .. }) => tracing::debug!(%path, value, "semaphore resized"),
        SemaphoreEvent::Count(CountEvent::Malformed { len }) => {
            tracing::warn!(%path, len, "the semaphore's count node does not hold a 4-byte int");
        }
        // The count's writes are its own handle's, not the semaphore's.
        SemaphoreEvent::Count(other) => tracing::trace!(%path, ?other, "semaphore count event"),
        SemaphoreEvent::CleanupFailed { path: node, error } => {
            crate::metrics::cleanup_failed(labels);
            tracing::warn!(%path, %node, %error, "lease node clean-up failed");
        }
        SemaphoreEvent::Released => tracing::trace!(%path, "lease returned"),
        // A ticket's events, seen without one (its acquire was cancelled).
        event @ (SemaphoreEvent::Acquired { .. }
        | SemaphoreEvent::Queued { .. }
        | SemaphoreEvent::TimedOut
        | SemaphoreEvent::Failed(_)
        | SemaphoreEvent::Refused(_)) => tracing::trace!(%path, ?event, "semaphore event of no acquire"),
    }
}

impl Semaphore {
    /// Carries `semaphore`, built by [`crate::Client::semaphore_with`].
    pub(crate) fn new(client: Client, semaphore: CoreSemaphore) -> Result<Semaphore, Error> {
        let renew = client.inner.options.renew_session;
        let path_label = client.inner.options.metrics_path_label;
        let path: Arc<str> = semaphore.base().clone().into();
        let kind = zoolock_core::recipes::LockKind::Semaphore;
        // The semaphore's shared state is its own sink: one allocation.
        let reserved = client.reserve::<LeaseQueue>();
        let recipe = Arc::new(RegisteredQueue::new(reserved.handle(), path, kind, path_label));
        client.register(reserved, LeaseQueue::new(semaphore, renew), recipe.clone())?;
        Ok(Semaphore { owner: Owner::new(client, recipe) })
    }

    /// Completes once this semaphore owes the server nothing: no acquire
    /// under way, no lease held through it, and every returned lease's
    /// delete applied by the server. Dropping a [`Lease`] and then awaiting
    /// this is a return acknowledged by the server, on the delete's own
    /// reply. Fails with the session's error if the session ends first.
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

    /// The limit in force: the fixed lease count, or the shared count's
    /// latest value for a semaphore sized by one (0 until it is read).
    pub fn size(&self) -> usize {
        self.capacity().0
    }

    /// Leases left free by the last listing of the semaphore's leases this
    /// handle made (the limit in force minus the lease nodes then present);
    /// `None` before its first acquire lists them. Reading it sends no
    /// request.
    pub fn available(&self) -> Option<usize> {
        self.capacity().1
    }

    /// The limit and free leases, as core last heard them.
    fn capacity(&self) -> (usize, Option<usize>) {
        let shared = &self.owner.client.inner.shared;
        shared.read_recipe(self.owner.recipe.handle, LeaseQueue::capacity).unwrap_or_default()
    }

    /// Takes `qty` leases, waiting as long as needed.
    ///
    /// # Errors
    ///
    /// [`Error::ClientClosed`] when this client was closed (before the call
    /// or while it waited); the session's end when it comes first:
    /// [`Error::Request`] with the reason (expired with
    /// [`Options::renew_session`](crate::Options::renew_session) off, auth
    /// failed). [`Error::Request`]
    /// with the server's code when it refuses the lock's requests (say `NoAuth`
    /// under an ACL), after the recipe's retries. [`Error::Misuse`] when `qty` is 0.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future at any point withdraws the acquire. Its
    /// nodes, if already created, are deleted and leases granted to it that it
    /// never handed out are returned; no node is left behind.
    pub async fn acquire(&self, qty: usize) -> Result<Vec<Lease>, Error> {
        self.acquire_inner(qty, None, None).await
    }

    /// Takes one lease, waiting as long as needed: [`Semaphore::acquire`]
    /// for a single lease. Fails as `acquire` does; dropping the future
    /// cancels the acquire, as for `acquire`.
    pub async fn acquire_one(&self) -> Result<Lease, Error> {
        self.one(self.acquire(1).await?)
    }

    /// Takes one lease, as [`Semaphore::acquire_with_progress`] takes
    /// `qty`: waiting at most `timeout` (`None`: as long as needed), with
    /// each new queue position given to `progress`. Fails and cancels as
    /// that does.
    pub async fn acquire_one_with_progress(
        &self,
        timeout: Option<Duration>,
        mut progress: impl FnMut(QueuePosition) + Send,
    ) -> Result<Lease, Error> {
        self.one(self.acquire_inner(1, timeout, Some(&mut progress)).await?)
    }

    /// The one lease of a grant of one (a grant is of the quantity asked).
    fn one(&self, mut leases: Vec<Lease>) -> Result<Lease, Error> {
        leases.pop().ok_or_else(|| self.owner.client.inner.shared.closed())
    }

    /// Takes `qty` leases only if that needs no waiting (also not behind
    /// another task of this process): `Ok(None)` when they are not all free
    /// now, with any lease it took on the way returned. Fails as
    /// [`Semaphore::acquire`] does; dropping the future cancels the attempt
    /// and returns any lease it got.
    pub async fn try_acquire(&self, qty: usize) -> Result<Option<Vec<Lease>>, Error> {
        match self.acquire_inner(qty, Some(Duration::ZERO), None).await {
            Ok(leases) => Ok(Some(leases)),
            Err(Error::TimedOut) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Takes `qty` leases, waiting at most `timeout` for all of them
    /// (waiting behind other tasks of this process included).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// use std::time::Duration;
    /// let pool = client.semaphore("/app/pool", 5).await?;
    /// let leases = pool.acquire_timeout(2, Duration::from_secs(1)).await?;
    /// drop(leases); // returned in the background, like `release` without waiting
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
    /// under an ACL), after the recipe's retries. [`Error::Misuse`] when `qty` is 0.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future at any point withdraws the acquire. Its
    /// nodes, if already created, are deleted and leases granted to it that it
    /// never handed out are returned; no node is left behind.
    pub async fn acquire_timeout(&self, qty: usize, timeout: Duration) -> Result<Vec<Lease>, Error> {
        self.acquire_inner(qty, Some(timeout), None).await
    }

    /// Takes `qty` leases (waiting at most `timeout`; `None`: as long as
    /// needed), calling `progress` on this task whenever the acquire's place
    /// in the queue changes (see [`QueuePosition`]; following it sends no
    /// request). An acquire waiting behind another task of this process gets
    /// its first position once its turn comes. Dropping the future cancels
    /// the acquire, as for [`Semaphore::acquire`].
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
    /// under an ACL), after the recipe's retries. [`Error::Misuse`] when `qty` is 0.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future at any point withdraws the acquire. Its
    /// nodes, if already created, are deleted and leases granted to it that it
    /// never handed out are returned; no node is left behind.
    pub async fn acquire_with_progress(
        &self,
        qty: usize,
        timeout: Option<Duration>,
        mut progress: impl FnMut(QueuePosition) + Send,
    ) -> Result<Vec<Lease>, Error> {
        self.acquire_inner(qty, timeout, Some(&mut progress)).await
    }

    async fn acquire_inner(
        &self,
        qty: usize,
        timeout: Option<Duration>,
        progress: Option<acquire::Progress<'_>>,
    ) -> Result<Vec<Lease>, Error> {
        let of = Waiting { qty, got: Vec::new() };
        // Named and awaited through a borrow: kept once in this future.
        let mut acquiring = acquire::acquire(&self.owner, of, LeaseRequest { qty, timeout }, progress)?;
        let acquire::Granted { grant, waited, .. } = (&mut acquiring).await?;
        let recipe = &self.owner.recipe;
        tracing::debug!(path = %recipe.path, leases = grant.len(), ?waited, "semaphore leases granted");
        Ok(grant
            .into_iter()
            .map(|(node, token)| {
                let of = Arc::new(NodeHold { sem: self.clone(), node: node.clone() });
                Lease { hold: Hold::new(node, token, of, Some(Gauge::held(&recipe.labels()))) }
            })
            .collect())
    }
}

/// What a [`Lease`]'s [`Hold`] asks of its semaphore: the lease on one node.
#[derive(Debug)]
struct NodeHold {
    sem: Semaphore,
    /// The [`Hold`]'s node, shared.
    node: Arc<str>,
}

impl NodeHold {
    /// Reads the lease's state in core (`None` once the semaphore is gone).
    fn read<T>(&self, f: impl FnOnce(&LeaseQueue, &str) -> T) -> Option<T> {
        let shared = &self.sem.owner.client.inner.shared;
        shared.read_recipe(self.sem.owner.recipe.handle, |q| f(q, &self.node))
    }

    /// Sends `command` to the semaphore on the event loop.
    fn send(&self, command: LeaseCommand) -> Result<(), Error> {
        self.sem.owner.client.inner.send(Command::Lease(self.sem.owner.recipe.clone(), Box::new(command)))
    }
}

impl hold::Source for NodeHold {
    fn client(&self) -> &Client {
        &self.sem.owner.client
    }

    fn path(&self) -> &str {
        &self.sem.owner.recipe.path
    }

    fn changed(&self) -> &event_listener::Event {
        &self.sem.owner.recipe.shared.changed
    }

    fn reported(&self) -> HoldStatus {
        // A semaphore gone from core (its client closed) holds nothing.
        self.read(|q, node| q.lease_status(node)).unwrap_or(HoldStatus::Lost)
    }

    fn revoked(&self) -> bool {
        self.read(|q, node| q.revoked(node)).unwrap_or(false)
    }

    fn loss(&self) -> Option<LossReason> {
        self.read(|q, node| q.loss(node)).flatten()
    }

    fn fence_nodes(&self) -> BoxFuture<Result<Option<Vec<String>>, Error>> {
        let known_lost = self.reported() == HoldStatus::Lost;
        let nodes = (!known_lost).then(|| vec![self.node.to_string()]);
        Box::pin(async move { Ok(nodes) })
    }

    /// Completes once the return is under way (unlike a lock in the Curator
    /// plan, it does not wait for the delete's reply).
    fn release(&self) -> BoxFuture<Result<(), Error>> {
        let (reply, rx) = oneshot::channel();
        let sent = self.send(LeaseCommand::Return { node: self.node.clone(), reply: Some(reply) });
        let inner = self.sem.owner.client.inner.clone();
        Box::pin(async move {
            sent?;
            match rx.await.map_err(|_| inner.shared.closed())? {
                Err(Error::Misuse(ApiMisuse::NotHeld)) => Ok(()),
                other => other.map_err(|e| inner.named(e)),
            }
        })
    }

    fn release_in_background(&self) {
        let _ = self.send(LeaseCommand::Return { node: self.node.clone(), reply: None });
    }
}

/// One held lease: a [`Hold`] (node, fencing token, its own status and loss
/// signal, fenced writes, release; reached through `Deref`) on one lease
/// node. Each lease has its own status: the loss of one leaves the others
/// `Held`. `Hold::from(lease)` gives the plain hold.
///
/// Dropping it returns it in the background.
#[must_use = "the lease is returned as soon as it is dropped"]
#[derive(Debug)]
pub struct Lease {
    hold: Hold,
}

impl std::ops::Deref for Lease {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        &self.hold
    }
}

impl AsRef<Hold> for Lease {
    fn as_ref(&self) -> &Hold {
        &self.hold
    }
}

impl From<Lease> for Hold {
    fn from(lease: Lease) -> Hold {
        lease.hold
    }
}

impl Lease {
    /// Returns the lease ([`Hold::release`]): its node is deleted, a
    /// guaranteed delete that is retried across reconnects. Completes once
    /// the return is under way (unlike [`crate::Guard::release`] in the
    /// Curator plan, it does not wait for the delete's reply;
    /// [`Semaphore::settled`] does). Returning a lease that was lost is never
    /// an error: there is nothing left to return.
    ///
    /// # Errors
    ///
    /// None: a lost lease is not an error, nor is a lease whose client was
    /// closed ([`Client::close`](crate::Client::close) ended it, and the
    /// session's end deleted its node).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the lease is returned whether or not the future is awaited
    /// (dropping the future drops the lease, which is returned in the background).
    pub async fn release(self) -> Result<(), Error> {
        self.hold.release().await
    }
}
