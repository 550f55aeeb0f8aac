//! [`Semaphore`] and [`Lease`]: async handles over core's [`LeaseQueue`],
//! which queues the acquires of a handle and its clones (each gets its own
//! leases) and re-queues them on a renewed session.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures_channel::oneshot;
use zoolock_core::recipes::{LeaseQueue, Semaphore as CoreSemaphore};
use zoolock_core::{ApiMisuse, Client as CoreClient, FencingToken, Handle, Instant, RecipeEvent, RecipeId};

use crate::client::{Client, RecipeHandle};
use crate::error::Error;
use crate::hold::{self, HoldStatus, QueuePosition, Watched};
use crate::metrics::{Gauge, Labels};
use crate::task::{Command, Sink};

type Grant = Result<Vec<(String, FencingToken)>, Error>;

/// An acquire waiting for its leases.
#[derive(Debug)]
struct Waiter {
    qty: usize,
    got: Vec<(String, FencingToken)>,
    reply: oneshot::Sender<Grant>,
    /// Where it stands on ZooKeeper.
    position: Option<QueuePosition>,
    /// `zoolock_acquires_waiting`, raised while it waits.
    _waiting: Gauge,
}

#[derive(Debug, Default)]
struct State {
    waiters: HashMap<u64, Waiter>,
    /// The connection dropped while leases were held (until `Reconnected`).
    suspended: bool,
    /// Lease nodes known lost (deleted, or gone with the session), until
    /// their lease is released or dropped.
    lost: HashSet<String>,
    /// The limit in force and the leases left free by the last listing.
    size: usize,
    available: Option<usize>,
    /// Lease nodes asked to be given back.
    revoked: HashSet<String>,
}

/// State shared by a semaphore's handles and its event sink.
type SemShared = Watched<State>;

/// Where the waiters are, and how a refused one is answered.
const WAITERS: hold::Waiters<State, Waiter> =
    hold::Waiters { of: |s| &mut s.waiters, refuse: |w, e| drop(w.reply.send(Err(e))) };

impl SemShared {
    /// The reported status of the lease on `node`: its own loss, else the
    /// connection's.
    fn lease_status(&self, node: &str) -> HoldStatus {
        self.peek(|s| match (s.lost.contains(node), s.suspended) {
            (true, _) => HoldStatus::Lost,
            (false, true) => HoldStatus::Suspended,
            (false, false) => HoldStatus::Held,
        })
    }
}

/// A counting semaphore (Curator's `InterProcessSemaphoreV2` layout).
///
/// Clone it freely: acquires through a `Semaphore` and all its clones queue
/// locally, first come first served, each getting its own leases; leases of
/// earlier acquires stay held meanwhile.
#[derive(Clone)]
pub struct Semaphore {
    handle: Arc<RecipeHandle>,
    typed: Handle<LeaseQueue>,
    shared: Arc<SemShared>,
    /// The semaphore path, for the log.
    path: Arc<str>,
    /// Its metrics labels.
    labels: Arc<Labels>,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore").field("path", &self.path).field("recipe", &self.handle.id).finish()
    }
}

/// Returns the lease on `node` (on the driver task, so no loss of it can be
/// reported after its entry in `lost` is forgotten here).
fn return_lease(
    client: &mut CoreClient,
    now: Instant,
    shared: &SemShared,
    typed: Handle<LeaseQueue>,
    node: &str,
) -> Result<(), Error> {
    tracing::debug!(%node, "returning lease");
    if shared.peek(|s| s.lost.contains(node)) {
        shared.with(|s| s.lost.remove(node));
    }
    client.with(now, typed, |s, now| s.return_lease(now, node))??;
    Ok(())
}

fn on_event(
    shared: &SemShared,
    path: &str,
    labels: &Labels,
    client: &mut CoreClient,
    now: Instant,
    typed: Handle<LeaseQueue>,
    event: RecipeEvent,
) {
    if let Ok((size, available)) = client.with(now, typed, |s, _| (s.inner().max_leases(), s.inner().available())) {
        if shared.peek(|s| (s.size, s.available) != (size, available)) {
            shared.with(|s| (s.size, s.available) = (size, available));
        }
    }
    let (ticket, event) = match event {
        RecipeEvent::Ticket { ticket, event } => (ticket.get(), *event),
        RecipeEvent::Suspended => {
            crate::metrics::suspended(labels);
            tracing::info!(%path, "hold suspended: the connection dropped (semaphore leases)");
            return shared.with(|s| s.suspended = true);
        }
        RecipeEvent::Reconnected => {
            tracing::info!(%path, "hold confirmed after the reconnect (semaphore leases)");
            return shared.with(|s| s.suspended = false);
        }
        RecipeEvent::LeaseLost { node } => {
            crate::metrics::lost(labels);
            tracing::warn!(%path, %node, "lease lost: its node is gone");
            return shared.with(|s| {
                s.lost.insert(node);
            });
        }
        // No lease is left: answers a `Suspended` (each was reported lost).
        RecipeEvent::Lost => return shared.with(|s| s.suspended = false),
        RecipeEvent::LeaseRevocationRequested { node } => {
            tracing::debug!(%path, %node, "lease revocation requested");
            return shared.with(|s| {
                s.revoked.insert(node);
            });
        }
        RecipeEvent::Count { value, .. } => return tracing::debug!(%path, value, "semaphore resized"),
        RecipeEvent::CountMalformed { len } => {
            return tracing::warn!(%path, len, "the semaphore's count node does not hold a 4-byte int");
        }
        RecipeEvent::CleanupFailed { path: node, error } => {
            crate::metrics::cleanup_failed(labels);
            return tracing::warn!(%path, %node, %error, "lease node clean-up failed");
        }
        other => return tracing::trace!(%path, ?other, "semaphore event"),
    };
    match event {
        RecipeEvent::Acquired { node, token } => {
            let done = shared.with(|s| {
                let w = s.waiters.get_mut(&ticket)?;
                w.got.push((node.clone(), token));
                if w.got.len() >= w.qty { s.waiters.remove(&ticket) } else { None }
            });
            let Some(w) = done else {
                if !shared.peek(|s| s.waiters.contains_key(&ticket)) {
                    // Nobody waits for it any more: give it back.
                    let _ = return_lease(client, now, shared, typed, &node);
                }
                return;
            };
            let leases = w.got.clone();
            if w.reply.send(Ok(w.got)).is_ok() {
                tracing::debug!(%path, nodes = ?leases.iter().map(|l| &l.0).collect::<Vec<_>>(), "leases granted");
            } else {
                tracing::debug!(%path, "leases granted to a dropped acquire: returning them");
                for (node, _) in &leases {
                    let _ = return_lease(client, now, shared, typed, node);
                }
            }
        }
        end @ (RecipeEvent::TimedOut | RecipeEvent::Failed(_) | RecipeEvent::Refused(_)) => {
            let Some(error) = hold::acquire_end(&end) else { return };
            if error == Error::TimedOut {
                crate::metrics::timed_out(labels);
            }
            if let Some(w) = shared.with(|s| s.waiters.remove(&ticket)) {
                let _ = w.reply.send(Err(error));
            }
        }
        RecipeEvent::Queued { position, total } => shared.with(|s| {
            if let Some(w) = s.waiters.get_mut(&ticket) {
                w.position = Some(QueuePosition { position, total });
            }
        }),
        other => tracing::trace!(%path, ticket, ?other, "semaphore ticket event"),
    }
}

impl Semaphore {
    /// Carries `semaphore`, built by [`crate::Client::semaphore_with`].
    pub(crate) async fn new(client: Client, semaphore: CoreSemaphore) -> Result<Semaphore, Error> {
        let renew = client.inner.options.renew_session;
        let base = semaphore.base().clone();
        let shared = Arc::new(SemShared::default());
        shared.with(|s| s.size = semaphore.max_leases());
        let path: Arc<str> = base.as_str().into();
        let labels = Arc::new(Labels::new(
            zoolock_core::LockKind::Semaphore.label(),
            &path,
            client.inner.options.metrics_path_label,
        ));
        let (sink_shared, sink_path, sink_labels) = (shared.clone(), path.clone(), labels.clone());
        let sink = move |typed: Handle<LeaseQueue>| -> Sink {
            Box::new(move |c: &mut CoreClient, now, _: RecipeId, event| {
                on_event(&sink_shared, &sink_path, &sink_labels, c, now, typed, event)
            })
        };
        let recipe = LeaseQueue::new(semaphore, renew);
        let typed = client.add_recipe(recipe, sink).await?;
        let handle = Arc::new(RecipeHandle { client, id: typed.id() });
        Ok(Semaphore { handle, typed, shared, path, labels })
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
        self.handle.settled().await
    }

    /// The limit in force: the fixed lease count, or the shared count's
    /// latest value for a semaphore sized by one (0 until it is read).
    pub fn size(&self) -> usize {
        self.shared.peek(|s| s.size)
    }

    /// Leases left free by the last listing of the semaphore's leases this
    /// handle made (the limit in force minus the lease nodes then present);
    /// `None` before its first acquire lists them. Reading it sends no
    /// request.
    pub fn available(&self) -> Option<usize> {
        self.shared.peek(|s| s.available)
    }

    /// Takes `qty` leases, waiting as long as needed.
    ///
    /// # Errors
    ///
    /// The session's end when it comes first: [`Error::Request`] with the
    /// reason (expired with [`Options::renew_session`](crate::Options::renew_session)
    /// off, closed, auth failed) or [`Error::ClientClosed`]. [`Error::Request`]
    /// with the server's code when it refuses the lock's requests (say `NoAuth`
    /// under an ACL), after the recipe's retries. [`Error::Misuse`] when `qty` is 0.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future at any point withdraws the acquire. Its
    /// nodes, if already created, are deleted and leases granted to it that it
    /// never handed out are returned; no node is left behind.
    pub async fn acquire(&self, qty: usize) -> Result<Vec<Lease>, Error> {
        self.acquire_inner(qty, None, &mut |_| {}).await
    }

    /// Takes one lease, waiting as long as needed: [`Semaphore::acquire`]
    /// for a single lease. Fails as `acquire` does; dropping the future
    /// cancels the acquire, as for `acquire`.
    pub async fn acquire_one(&self) -> Result<Lease, Error> {
        let mut leases = self.acquire(1).await?;
        leases.pop().ok_or(Error::ClientClosed)
    }

    /// Takes `qty` leases only if that needs no waiting (also not behind
    /// another task of this process): `Ok(None)` when they are not all free
    /// now, with any lease it took on the way returned. Fails as
    /// [`Semaphore::acquire`] does; dropping the future cancels the attempt
    /// and returns any lease it got.
    pub async fn try_acquire(&self, qty: usize) -> Result<Option<Vec<Lease>>, Error> {
        match self.acquire_inner(qty, Some(Duration::ZERO), &mut |_| {}).await {
            Ok(leases) => Ok(Some(leases)),
            Err(Error::TimedOut) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Takes `qty` leases, waiting at most `timeout` for all of them
    /// (waiting behind other tasks of this process included).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// use std::time::Duration;
    /// let pool = client.semaphore("/app/pool", 5).await?;
    /// let leases = pool.acquire_timeout(2, Duration::from_secs(1)).await?;
    /// drop(leases); // returned in the background, like `release` without waiting
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::TimedOut`] once `timeout` has passed. The session's end when it comes first: [`Error::Request`] with the
    /// reason (expired with [`Options::renew_session`](crate::Options::renew_session)
    /// off, closed, auth failed) or [`Error::ClientClosed`]. [`Error::Request`]
    /// with the server's code when it refuses the lock's requests (say `NoAuth`
    /// under an ACL), after the recipe's retries. [`Error::Misuse`] when `qty` is 0.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future at any point withdraws the acquire. Its
    /// nodes, if already created, are deleted and leases granted to it that it
    /// never handed out are returned; no node is left behind.
    pub async fn acquire_timeout(&self, qty: usize, timeout: Duration) -> Result<Vec<Lease>, Error> {
        self.acquire_inner(qty, Some(timeout), &mut |_| {}).await
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
    /// [`Error::TimedOut`] once a `timeout` given has passed. The session's end when it comes first: [`Error::Request`] with the
    /// reason (expired with [`Options::renew_session`](crate::Options::renew_session)
    /// off, closed, auth failed) or [`Error::ClientClosed`]. [`Error::Request`]
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
        self.acquire_inner(qty, timeout, &mut progress).await
    }

    async fn acquire_inner(
        &self,
        qty: usize,
        timeout: Option<Duration>,
        progress: &mut (dyn FnMut(QueuePosition) + Send),
    ) -> Result<Vec<Lease>, Error> {
        let (tx, rx) = oneshot::channel();
        let waiter = Waiter { qty, got: Vec::new(), reply: tx, position: None, _waiting: Gauge::waiting(&self.labels) };
        let acquire = move |s: &mut LeaseQueue, now: Instant| s.acquire(now, qty, timeout.map(|d| now + d));
        let (cell, queued) =
            hold::enqueue(&self.shared, WAITERS, &self.handle.client.inner, self.typed, waiter, acquire);
        let began = self.handle.client.inner.runtime.now();
        let mut pending = PendingLeases { sem: self.clone(), ticket: cell.clone(), rx: Some(rx) };
        if let Err(e) = queued {
            pending.rx = None;
            return Err(e);
        }
        let position = || {
            let ticket = cell.get()?;
            self.shared.peek(|s| s.waiters.get(&ticket.get()).and_then(|w| w.position))
        };
        let grant = match pending.rx.as_mut() {
            Some(rx) => hold::with_progress(&self.shared.changed, position, progress, rx)
                .await
                .unwrap_or(Err(Error::ClientClosed)),
            None => Err(Error::ClientClosed),
        };
        pending.rx = None;
        let grant = grant?;
        let waited = self.handle.client.inner.runtime.now().saturating_duration_since(began);
        crate::metrics::acquired(&self.labels, waited);
        tracing::debug!(path = %self.path, leases = grant.len(), ?waited, "semaphore leases granted");
        Ok(grant
            .into_iter()
            .map(|(node, token)| Lease {
                sem: self.clone(),
                node,
                token,
                returned: false,
                _held: Gauge::held(&self.labels),
            })
            .collect())
    }
}

/// An acquire in flight. Dropping it cancels the acquire wherever it is, and
/// returns leases granted to it that it never handed out.
struct PendingLeases {
    sem: Semaphore,
    /// Set once core has issued the acquire's ticket.
    ticket: hold::TicketCell,
    rx: Option<oneshot::Receiver<Grant>>,
}

impl Drop for PendingLeases {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else { return };
        rx.close();
        let granted = match rx.try_recv() {
            Ok(Some(Ok(leases))) => leases,
            _ => Vec::new(),
        };
        let (shared, typed, cell) = (self.sem.shared.clone(), self.sem.typed, self.ticket.clone());
        tracing::trace!(path = %self.sem.path, granted = granted.len(), "semaphore acquire dropped");
        let _ = self.sem.handle.client.inner.send(Command::Run(Box::new(move |c, now| {
            for (node, _) in &granted {
                let _ = return_lease(c, now, &shared, typed, node);
            }
            // The acquire's command ran first: a refused one has no ticket.
            let Some(&ticket) = cell.get() else { return };
            shared.with(|s| s.waiters.remove(&ticket.get()));
            let _ = c.with(now, typed, |s, now| s.cancel(now, ticket));
        })));
    }
}

/// One held lease. Dropping it returns it in the background.
#[must_use = "the lease is returned as soon as it is dropped"]
#[derive(Debug)]
pub struct Lease {
    sem: Semaphore,
    node: String,
    token: FencingToken,
    returned: bool,
    /// `zoolock_holds`, raised while the lease is held.
    _held: Gauge,
}

impl Lease {
    /// The lease node.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The lease node's czxid.
    pub fn fencing_token(&self) -> FencingToken {
        self.token
    }

    /// Whether the lease is still good, as [`crate::Guard::status`]:
    /// `Held`, `Suspended` while the connection is down (or the server has
    /// not been heard for two thirds of the session timeout), `Lost` for good
    /// once this lease's node is gone (deleted by anyone else, or with the
    /// session). Each lease has its own: the loss of one leaves the others
    /// `Held`.
    pub fn status(&self) -> HoldStatus {
        hold::effective(&self.sem.handle.client.inner, self.sem.shared.lease_status(&self.node))
    }

    /// Completes as soon as [`Lease::status`] would first read `Suspended`
    /// or `Lost`, with no event-loop turn needed (see [`crate::Guard::lost`]).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only waits; dropping it changes nothing.
    pub async fn lost(&self) -> HoldStatus {
        hold::wait_lost(&self.sem.handle.client.inner, &self.sem.shared.changed, || self.status()).await
    }

    /// The current status, then every change, ending after `Lost`.
    pub fn status_changes(&self) -> hold::StatusChanges {
        let (shared, inner, node) = (self.sem.shared.clone(), self.sem.handle.client.inner.clone(), self.node.clone());
        let status_inner = inner.clone();
        hold::changes(inner, shared.changed.clone(), move || hold::effective(&status_inner, shared.lease_status(&node)))
    }

    /// Completes once someone has asked for this lease back (revocable
    /// semaphores, [`crate::SemaphoreOptions::revocable`]; see
    /// [`crate::Client::revoke`]), including a request that came while its
    /// acquire was completing. Revocation is cooperative: drop or release
    /// the lease to give it back.
    pub async fn revocation_requested(&self) {
        loop {
            let listener = self.sem.shared.changed.listen();
            if self.sem.shared.peek(|s| s.revoked.contains(&self.node)) {
                return;
            }
            listener.await;
        }
    }

    /// Runs `ops` in one multi behind a check that this lease's node still
    /// exists: all of them apply while the lease is good, none once its node
    /// is gone ([`Error::NotHeld`]); see [`crate::Guard::fenced`].
    ///
    /// # Errors
    ///
    /// As [`crate::Guard::fenced`]: [`Error::NotHeld`] when the lease's node is
    /// gone, [`Error::FencedOpFailed`] for a failing op.
    ///
    /// # Cancel safety
    ///
    /// As [`crate::Guard::fenced`]: once polled, the multi may still apply.
    pub async fn fenced(&self, ops: Vec<zoolock_core::Op>) -> Result<Vec<zoolock_core::wire::MultiResult>, Error> {
        if self.sem.shared.lease_status(&self.node) == HoldStatus::Lost {
            return Err(Error::NotHeld { node: self.node.clone() });
        }
        self.sem.handle.client.fenced(std::slice::from_ref(&self.node), ops).await
    }

    /// Returns the lease: its node is deleted, a guaranteed delete that is
    /// retried across reconnects. Completes once the return is under way
    /// (unlike [`crate::Guard::release`], it does not wait for the delete's
    /// reply in the Curator plan). Returning a lease that was lost is never
    /// an error: there is nothing left to return.
    ///
    /// # Errors
    ///
    /// [`Error::ClientClosed`] when the client's event loop has ended (the
    /// session's end deletes the node then). A lost lease is not an error.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the lease is returned whether or not the future is awaited
    /// (dropping the future drops the lease, which is returned in the background).
    pub async fn release(mut self) -> Result<(), Error> {
        self.returned = true;
        self.sem.shared.with(|s| s.revoked.remove(&self.node));
        let (shared, typed, node) = (self.sem.shared.clone(), self.sem.typed, self.node.clone());
        match self.sem.handle.client.inner.run(move |c, now| return_lease(c, now, &shared, typed, &node)).await? {
            Err(Error::Misuse(ApiMisuse::NotHeld)) => Ok(()),
            other => other,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.returned {
            return;
        }
        self.sem.shared.with(|s| s.revoked.remove(&self.node));
        let (shared, typed, node) = (self.sem.shared.clone(), self.sem.typed, self.node.clone());
        let _ = self.sem.handle.client.inner.send(Command::Run(Box::new(move |c, now| {
            let _ = return_lease(c, now, &shared, typed, &node);
        })));
    }
}
