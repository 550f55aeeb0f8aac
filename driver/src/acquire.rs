//! The driver's side of core's ticket queues ([`SharedLock`] behind a
//! [`crate::Lock`], [`SharedSemaphore`] behind a [`crate::Semaphore`]): an
//! acquire registers a waiter under its ticket, queues its command on the
//! event loop, follows its queue position and waits for the grant; dropping
//! it abandons the ticket, and core gives back whatever the ticket got. Both
//! handles acquire through [`acquire`]; what differs (the grant, what a
//! waiter keeps, how holds are recorded) is in their [`Tickets`] impl.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use event_listener::Event;
use futures_channel::oneshot;
use zoolock_core::recipes::{SharedLock, SharedSemaphore, Ticket};
use zoolock_core::{ApiMisuse, Client as CoreClient, Handle, Instant, Recipe, RecipeEvent};

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
    /// Tickets of the recipe's acquires.
    pub(crate) next_ticket: std::sync::atomic::AtomicU64,
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
pub(crate) trait TicketQueue: Recipe {
    /// Abandons `ticket` wherever it is (queued, acquiring, granted): core
    /// gives back what it got.
    fn cancel(&mut self, now: Instant, ticket: Ticket);
}

impl TicketQueue for SharedLock {
    fn cancel(&mut self, now: Instant, ticket: Ticket) {
        SharedLock::cancel(self, now, ticket);
    }
}

impl TicketQueue for SharedSemaphore {
    fn cancel(&mut self, now: Instant, ticket: Ticket) {
        SharedSemaphore::cancel(self, now, ticket);
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
    fn waiter(&mut self, t: u64) -> Option<&mut Waiter<Self::Grant, Self::Waiting>>;

    /// Where the acquire waiting under ticket `t` stands.
    fn position(&self, t: u64) -> Option<QueuePosition>;

    /// Registers the acquire of a new ticket `t`.
    fn insert_waiter(&mut self, t: u64, waiter: Waiter<Self::Grant, Self::Waiting>);

    /// Takes out the acquire waiting under `t` (it ended, or was granted).
    fn take_waiter(&mut self, t: u64) -> Option<Waiter<Self::Grant, Self::Waiting>>;

    /// Forgets ticket `t`, whose acquire was dropped: its waiter and any
    /// hold recorded for it.
    fn forget(&mut self, t: u64);

    /// On the event loop: abandons ticket `t`, whose acquire was dropped
    /// (`granted`: a grant sent to it but never received). Core gives back
    /// whatever the ticket got.
    fn abandon(
        shared: &Watched<Self>,
        client: &mut CoreClient,
        now: Instant,
        handle: Handle<Self::Queue>,
        t: u64,
        granted: Option<Self::Grant>,
    ) {
        drop(granted);
        shared.with(|s| s.forget(t));
        let _ = client.with(now, handle, |q, now| q.cancel(now, Ticket(t)));
    }
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
    pub(crate) ticket: u64,
    pub(crate) grant: G,
    pub(crate) waited: std::time::Duration,
}

/// Queues an acquire for a new ticket with `command` (a waiter keeping
/// `of`), calls `progress` with each new queue position, and waits for its
/// grant. Dropping the future abandons the ticket wherever it is.
pub(crate) async fn acquire<S: Tickets>(
    queue: Queue<'_, S>,
    of: S::Waiting,
    command: impl FnOnce(&mut S::Queue, Instant, Ticket) -> Result<(), ApiMisuse> + Send + 'static,
    progress: &mut (dyn FnMut(QueuePosition) + Send),
) -> Result<Granted<S::Grant>, Error> {
    let (tx, rx) = oneshot::channel();
    let waiter = Waiter { reply: tx, position: None, of, _waiting: Gauge::waiting(queue.labels) };
    let inner = &queue.client.inner;
    let (ticket, queued) = enqueue(queue.shared, inner, queue.handle, waiter, command);
    let began = inner.runtime.now();
    let mut pending = Pending {
        shared: queue.shared.clone(),
        inner: inner.clone(),
        handle: queue.handle,
        path: queue.path.clone(),
        ticket,
        rx: Some(rx),
    };
    if let Err(e) = queued {
        pending.rx = None;
        queue.shared.with(|s| s.take_waiter(ticket));
        return Err(e);
    }
    let position = || queue.shared.peek(|s| s.position(ticket));
    let grant = with_progress(&queue.shared.changed, position, progress, &mut pending).await?;
    let waited = inner.runtime.now().saturating_duration_since(began);
    crate::metrics::acquired(queue.labels, waited);
    Ok(Granted { ticket, grant, waited })
}

/// Registers `waiter` under a fresh ticket and queues `command` for it on
/// the event loop, under one lock, so tickets queue in the order their
/// commands reach the loop and grants follow call order. A command the
/// recipe refuses answers the waiter with the refusal. Returns the ticket
/// and whether the command was queued.
fn enqueue<S: Tickets>(
    shared: &Arc<Watched<S>>,
    inner: &Inner,
    handle: Handle<S::Queue>,
    waiter: Waiter<S::Grant, S::Waiting>,
    command: impl FnOnce(&mut S::Queue, Instant, Ticket) -> Result<(), ApiMisuse> + Send + 'static,
) -> (u64, Result<(), Error>) {
    let answer = shared.clone();
    shared.with(|s| {
        let ticket = shared.next_ticket.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        s.insert_waiter(ticket, waiter);
        let queued = inner.send(Command::Run(Box::new(move |client, now| {
            let refused = match client.with(now, handle, |r, now| command(r, now, Ticket(ticket))) {
                Ok(Ok(())) => None,
                Ok(Err(e)) | Err(e) => Some(e),
            };
            if let Some(e) = refused {
                if let Some(w) = answer.with(|s| s.take_waiter(ticket)) {
                    let _ = w.reply.send(Err(e.into()));
                }
            }
        })));
        (ticket, queued)
    })
}

/// An acquire in flight; dropping it abandons its ticket.
struct Pending<S: Tickets> {
    shared: Arc<Watched<S>>,
    inner: Arc<Inner>,
    handle: Handle<S::Queue>,
    path: Arc<str>,
    ticket: u64,
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
        rx.close();
        let granted = match rx.try_recv() {
            Ok(Some(Ok(grant))) => Some(grant),
            _ => None,
        };
        let (shared, handle, t) = (self.shared.clone(), self.handle, self.ticket);
        tracing::trace!(path = %self.path, t, granted = granted.is_some(), "acquire dropped");
        // Commands run in order: this runs after the acquire's own command.
        let _ = self.inner.send(Command::Run(Box::new(move |client, now| {
            S::abandon(&shared, client, now, handle, t, granted);
        })));
    }
}

/// Awaits `grant`, calling `progress` with each new position `position`
/// reads (woken by `changed`). Dropping it drops `grant`.
async fn with_progress<T>(
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
fn acquire_end(event: &RecipeEvent) -> Option<Error> {
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
pub(crate) fn end<S: Tickets>(shared: &Watched<S>, labels: &Labels, t: u64, event: &RecipeEvent) -> Result<(), Error> {
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
pub(crate) fn queued<S: Tickets>(shared: &Watched<S>, t: u64, position: usize, total: usize) {
    shared.with(|s| {
        if let Some(w) = s.waiter(t) {
            w.position = Some(QueuePosition { position, total });
        }
    });
}
