//! The driver's side of core's ticket queues ([`LockQueue`] behind a
//! [`crate::Lock`], [`LeaseQueue`] behind a [`crate::Semaphore`]): an
//! acquire queues its command on the event loop, registers a waiter under
//! the ticket core issues for it, follows its queue position and waits for
//! the grant; dropping it abandons the ticket, and core gives back whatever
//! the ticket got. Both
//! handles acquire through [`acquire`]; what differs (the grant, what a
//! waiter keeps, how holds are recorded) is in their [`Tickets`] impl.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use event_listener::Event;
use futures_channel::oneshot;
use zoolock_core::recipes::{LeaseQueue, LockQueue, Ticket};
use zoolock_core::{ApiMisuse, CoreMachine, Handle, Instant, Machine, RecipeEvent};

use crate::client::{Client, Inner};
use crate::error::Error;
use crate::hold::QueuePosition;
use crate::metrics::{Gauge, Labels};
use crate::task::Command;

/// State shared by a recipe's handles and its event sink: every change
/// wakes whoever waits on [`Watched::changed`].
#[derive(Debug, Default)]
pub(crate) struct Watched<T> {
    state: std::sync::Mutex<T>,
    pub(crate) changed: Arc<Event>,
}

impl<T> Watched<T> {
    /// Changes the state and wakes everyone waiting on it.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let out = f(&mut guard);
        drop(guard);
        self.changed.notify(usize::MAX);
        out
    }

    /// Reads the state without waking anyone (a notifying read would wake
    /// the reader's own listener and spin).
    pub(crate) fn peek<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// An acquire waiting for its grant `G`, with what its kind keeps beside it
/// (`X`: a lock's part and early revocation, a semaphore's leases so far).
#[derive(Debug)]
pub(crate) struct Waiter<G, X> {
    pub(crate) reply: oneshot::Sender<Result<G, Error>>,
    /// Where it stands on ZooKeeper.
    pub(crate) position: Option<QueuePosition>,
    pub(crate) of: X,
    /// `zoolock_acquires_waiting`, raised while it waits.
    _waiting: Gauge,
}

/// A core ticket queue the driver drives.
pub(crate) trait TicketQueue: Machine<CoreMachine> + 'static {
    /// Abandons `ticket` wherever it is (queued, acquiring, granted): core
    /// gives back what it got.
    fn cancel(&mut self, now: Instant, ticket: Ticket);
}

impl TicketQueue for LockQueue {
    fn cancel(&mut self, now: Instant, ticket: Ticket) {
        LockQueue::cancel(self, now, ticket);
    }
}

impl TicketQueue for LeaseQueue {
    fn cancel(&mut self, now: Instant, ticket: Ticket) {
        LeaseQueue::cancel(self, now, ticket);
    }
}

/// What the driver keeps of one recipe's tickets: their waiters, and
/// whatever the kind records of its holds.
pub(crate) trait Tickets: Default + Send + Sized + 'static {
    /// What a granted acquire receives.
    type Grant: Send + 'static;
    /// What a waiter of this kind keeps beside its reply.
    type Waiting: Send + 'static;
    /// The core queue behind the recipe.
    type Queue: TicketQueue;

    /// The acquire waiting under ticket `t`.
    fn waiter(&mut self, t: Ticket) -> Option<&mut Waiter<Self::Grant, Self::Waiting>>;

    /// Where the acquire waiting under ticket `t` stands.
    fn position(&self, t: Ticket) -> Option<QueuePosition>;

    /// Registers the acquire of a new ticket `t`.
    fn insert_waiter(&mut self, t: Ticket, waiter: Waiter<Self::Grant, Self::Waiting>);

    /// Takes out the acquire waiting under `t` (it ended, or was granted).
    fn take_waiter(&mut self, t: Ticket) -> Option<Waiter<Self::Grant, Self::Waiting>>;

    /// Forgets ticket `t`, whose acquire was dropped: its waiter and any
    /// hold recorded for it.
    fn forget(&mut self, t: Ticket);
}

/// The pieces of one recipe's handle that an acquire uses.
pub(crate) struct Queue<'a, S: Tickets> {
    pub(crate) shared: &'a Arc<Watched<S>>,
    pub(crate) client: &'a Client,
    pub(crate) handle: Handle<S::Queue>,
    pub(crate) labels: &'a Labels,
    /// The lock path, for the log.
    pub(crate) path: &'a Arc<str>,
}

/// An acquire's outcome: its ticket, its grant and how long it waited.
pub(crate) struct Granted<G> {
    pub(crate) ticket: Ticket,
    pub(crate) grant: G,
    pub(crate) waited: std::time::Duration,
}

/// Queues an acquire with `command` (which returns the ticket core issued
/// for it; a waiter keeping `of` is filed under it), calls `progress` with
/// each new queue position, and waits for its grant. Dropping the future
/// abandons the ticket wherever it is.
pub(crate) async fn acquire<S: Tickets>(
    queue: Queue<'_, S>,
    of: S::Waiting,
    command: impl FnOnce(&mut S::Queue, Instant) -> Result<Ticket, ApiMisuse> + Send + 'static,
    progress: &mut (dyn FnMut(QueuePosition) + Send),
) -> Result<Granted<S::Grant>, Error> {
    let (tx, rx) = oneshot::channel();
    let waiter = Waiter { reply: tx, position: None, of, _waiting: Gauge::waiting(queue.labels) };
    let inner = &queue.client.inner;
    let (cell, queued) = enqueue(queue.shared, inner, queue.handle, waiter, command);
    let began = inner.runtime.now();
    let mut pending = Pending {
        shared: queue.shared.clone(),
        inner: inner.clone(),
        handle: queue.handle,
        path: queue.path.clone(),
        ticket: cell.clone(),
        rx: Some(rx),
    };
    if let Err(e) = queued {
        // The command never reached the loop: no ticket, nothing to cancel.
        pending.rx = None;
        return Err(e);
    }
    let position = || queue.shared.peek(|s| s.position(*cell.get()?));
    let grant = with_progress(&queue.shared.changed, position, progress, &mut pending).await?;
    // Granted through the waiter filed under the ticket: it is set.
    let ticket = *cell.get().ok_or(Error::ClientClosed)?;
    let waited = inner.runtime.now().saturating_duration_since(began);
    crate::metrics::acquired(queue.labels, waited);
    Ok(Granted { ticket, grant, waited })
}

/// The ticket core issued to an acquire, once its command has run on the
/// event loop (empty if the recipe refused it). Commands run in order, so a
/// later command of the same handle (a cancel) finds it set.
type TicketCell = Arc<std::sync::OnceLock<Ticket>>;

/// Queues `command` on the event loop; the ticket core issues for it files
/// `waiter` under that ticket (before any event of the ticket is delivered:
/// events are delivered after the command) and fills the returned cell.
/// Core issues tickets in command order, so grants follow call order. A
/// command the recipe refuses answers the waiter with the refusal. Returns
/// the cell and whether the command was queued.
fn enqueue<S: Tickets>(
    shared: &Arc<Watched<S>>,
    inner: &Inner,
    handle: Handle<S::Queue>,
    waiter: Waiter<S::Grant, S::Waiting>,
    command: impl FnOnce(&mut S::Queue, Instant) -> Result<Ticket, ApiMisuse> + Send + 'static,
) -> (TicketCell, Result<(), Error>) {
    let (answer, cell) = (shared.clone(), TicketCell::default());
    let issued = cell.clone();
    let queued = inner.send(Command::Run(Box::new(move |client, now| match client.with(now, handle, command) {
        Ok(Ok(ticket)) => {
            let _ = issued.set(ticket);
            answer.with(|s| s.insert_waiter(ticket, waiter));
        }
        Ok(Err(e)) | Err(e) => {
            let _ = waiter.reply.send(Err(e.into()));
        }
    })));
    (cell, queued)
}

/// An acquire in flight; dropping it abandons its ticket.
struct Pending<S: Tickets> {
    shared: Arc<Watched<S>>,
    inner: Arc<Inner>,
    handle: Handle<S::Queue>,
    path: Arc<str>,
    /// Set once core has issued the acquire's ticket.
    ticket: TicketCell,
    rx: Option<oneshot::Receiver<Result<S::Grant, Error>>>,
}

impl<S: Tickets> Future for &mut Pending<S> {
    type Output = Result<S::Grant, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
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

impl<S: Tickets> Drop for Pending<S> {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else { return };
        // A grant sent but not received is given back by core on the cancel.
        rx.close();
        let (shared, handle, cell) = (self.shared.clone(), self.handle, self.ticket.clone());
        tracing::trace!(path = %self.path, "acquire dropped");
        // Commands run in order: this runs after the acquire's own command.
        let _ = self.inner.send(Command::Run(Box::new(move |client, now| {
            // A refused acquire has no ticket and nothing to take back.
            let Some(&t) = cell.get() else { return };
            // Wherever the ticket is (queued, acquiring, granted), core takes
            // it out and gives back what it got.
            shared.with(|s| s.forget(t));
            let _ = client.with(now, handle, |q, now| q.cancel(now, t));
        })));
    }
}

/// Awaits `grant`, calling `progress` with each new position `position`
/// reads (woken by `changed`). Dropping it drops `grant`.
pub(crate) async fn with_progress<T>(
    changed: &Event,
    position: impl Fn() -> Option<QueuePosition>,
    progress: &mut (dyn FnMut(QueuePosition) + Send),
    grant: impl Future<Output = T>,
) -> T {
    let mut grant = std::pin::pin!(grant);
    let mut last = None;
    loop {
        let listener = changed.listen();
        let now = position();
        if now.is_some() && now != last {
            last = now;
            if let Some(p) = now {
                progress(p);
            }
        }
        let step = futures_lite::future::or(async { Some(grant.as_mut().await) }, async {
            listener.await;
            None
        });
        if let Some(out) = step.await {
            return out;
        }
    }
}

/// The error of an acquire that ended without a grant (`TimedOut`,
/// `Failed`, `Refused`), or `None` for any other event.
pub(crate) fn acquire_end(event: &RecipeEvent) -> Option<Error> {
    match event {
        RecipeEvent::TimedOut => Some(Error::TimedOut),
        RecipeEvent::Failed(e) => Some(Error::Request(e.clone())),
        RecipeEvent::Refused(e) => Some(Error::Misuse(e.clone())),
        _ => None,
    }
}

/// Sink side: ends ticket `t`'s acquire with the error `event` carries (a
/// time-out counts in the metrics). `Err(error)` when no acquire waits under
/// `t` (for a lock: the ticket's release failed); `Ok(())` otherwise, and
/// for an event that ends no acquire.
pub(crate) fn end<S: Tickets>(
    shared: &Watched<S>,
    labels: &Labels,
    t: Ticket,
    event: &RecipeEvent,
) -> Result<(), Error> {
    let Some(error) = acquire_end(event) else { return Ok(()) };
    if error == Error::TimedOut {
        crate::metrics::timed_out(labels);
    }
    match shared.with(|s| s.take_waiter(t)) {
        Some(w) => {
            let _ = w.reply.send(Err(error));
            Ok(())
        }
        None => Err(error),
    }
}

/// Sink side: ticket `t`'s acquire now stands at `position` of `total`.
pub(crate) fn queued<S: Tickets>(shared: &Watched<S>, t: Ticket, position: usize, total: usize) {
    shared.with(|s| {
        if let Some(w) = s.waiter(t) {
            w.position = Some(QueuePosition { position, total });
        }
    });
}
