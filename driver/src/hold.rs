//! What a holder sees of its hold: [`HoldStatus`], and the loss signal and
//! status stream that [`crate::Guard`] and [`crate::Lease`] share.
//!
//! The signals are prompt: a hold not confirmed by the server for two thirds
//! of the session timeout reads `Suspended` (the session is about to be
//! declared dropped), and [`wait_lost`] wakes at that instant on a timer of
//! its own, so a process that was paused learns of it on its first check,
//! without waiting for the event loop.

use std::sync::Arc;

use event_listener::Event;
use futures_lite::Stream;

use zoolock_core::recipes::Ticket;

use crate::client::Inner;

/// The state of a hold, as the holder should act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HoldStatus {
    /// Held, and the session is connected.
    Held,
    /// The connection dropped: the hold is uncertain. Stop the critical
    /// section until it is `Held` again.
    Suspended,
    /// The session expired, or the node was deleted (by anyone else, or found
    /// missing after a reconnect): the lock is gone, for good.
    Lost,
    /// Not held (released, or never acquired).
    NotHeld,
}

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

/// Awaits `grant`, calling `progress` with each new position `position`
/// reads (woken by `changed`). Dropping it drops `grant`.
pub(crate) async fn with_progress<T>(
    changed: &Event,
    position: impl Fn() -> Option<QueuePosition>,
    progress: &mut (dyn FnMut(QueuePosition) + Send),
    grant: impl std::future::Future<Output = T>,
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

/// Where a recipe's shared state keeps its waiters (acquires waiting by
/// ticket), and how one is answered with the refusal of its command.
pub(crate) struct Waiters<S, W> {
    pub(crate) of: fn(&mut S) -> &mut std::collections::HashMap<u64, W>,
    pub(crate) refuse: fn(W, crate::Error),
}

/// The ticket core issued to an acquire, once its command has run on the
/// event loop (empty if the recipe refused it). Commands run in order, so a
/// later command of the same handle (a cancel) finds it set.
pub(crate) type TicketCell = Arc<std::sync::OnceLock<Ticket>>;

/// Queues `command` on the event loop; the ticket core issues for it files
/// `waiter` under that ticket (before any event of the ticket is delivered)
/// and fills the returned cell. A command the recipe refuses answers the
/// waiter with the refusal. Returns the cell and whether the command was
/// queued.
pub(crate) fn enqueue<S, W, R>(
    shared: &Arc<Watched<S>>,
    waiters: Waiters<S, W>,
    inner: &Inner,
    handle: zoolock_core::Handle<R>,
    waiter: W,
    command: impl FnOnce(&mut R, zoolock_core::Instant) -> Result<Ticket, zoolock_core::ApiMisuse> + Send + 'static,
) -> (TicketCell, Result<(), crate::Error>)
where
    S: Send + 'static,
    W: Send + 'static,
    R: zoolock_core::Machine<zoolock_core::CoreMachine> + 'static,
{
    let answer = shared.clone();
    let cell = TicketCell::default();
    let issued = cell.clone();
    let queued = inner.send(crate::task::Command::Run(Box::new(move |client, now| {
        match client.with(now, handle, |r, now| command(r, now)) {
            Ok(Ok(ticket)) => {
                let _ = issued.set(ticket);
                answer.with(|s| (waiters.of)(s).insert(ticket.get(), waiter));
            }
            Ok(Err(e)) | Err(e) => (waiters.refuse)(waiter, e.into()),
        }
    })));
    (cell, queued)
}

/// The error of an acquire that ended without a grant (`TimedOut`,
/// `Failed`, `Refused`), or `None` for any other event.
pub(crate) fn acquire_end(event: &zoolock_core::RecipeEvent) -> Option<crate::Error> {
    use zoolock_core::RecipeEvent;
    match event {
        RecipeEvent::TimedOut => Some(crate::Error::TimedOut),
        RecipeEvent::Failed(e) => Some(crate::Error::Request(e.clone())),
        RecipeEvent::Refused(e) => Some(crate::Error::Misuse(e.clone())),
        _ => None,
    }
}

/// A stream of a hold's statuses ([`crate::Guard::status_changes`],
/// [`crate::Lease::status_changes`]).
pub type StatusChanges = std::pin::Pin<Box<dyn Stream<Item = HoldStatus> + Send>>;

/// Applies the staleness rule to a status the event loop reported.
pub(crate) fn effective(inner: &Inner, reported: HoldStatus) -> HoldStatus {
    if reported == HoldStatus::Held && inner.shared.is_stale(inner.runtime.now()) {
        return HoldStatus::Suspended;
    }
    reported
}

/// Completes once `status()` reads `Suspended` or `Lost` (or `NotHeld`: a
/// hold that ended has nothing left to lose); returns it.
pub(crate) async fn wait_lost(inner: &Inner, changed: &Event, status: impl Fn() -> HoldStatus) -> HoldStatus {
    loop {
        let listener = changed.listen();
        let now = status();
        if now != HoldStatus::Held {
            return now;
        }
        wait_change(inner, listener).await;
    }
}

/// Waits for `listener`, or for the instant the staleness rule turns a
/// `Held` into `Suspended`, whichever comes first.
async fn wait_change(inner: &Inner, listener: event_listener::EventListener) {
    // The client's own state changes (connection, last heard) move the
    // staleness instant too; listen to them as well.
    let client_changed = inner.shared.changed.listen();
    match inner.shared.stale_at() {
        Some(at) => {
            let timer = inner.runtime.sleep_until(at);
            futures_lite::future::or(futures_lite::future::or(listener, client_changed), timer).await;
        }
        None => futures_lite::future::or(listener, client_changed).await,
    }
}

/// The current status, then every change, until the hold has ended (`Lost`
/// or `NotHeld` is the last item).
pub(crate) fn changes<F>(inner: Arc<Inner>, changed: Arc<Event>, status: F) -> StatusChanges
where
    F: Fn() -> HoldStatus + Send + Sync + 'static,
{
    let status = Arc::new(status);
    Box::pin(futures_lite::stream::unfold((None::<HoldStatus>, false), move |(last, done)| {
        let (inner, changed, status) = (inner.clone(), changed.clone(), status.clone());
        async move {
            if done {
                return None;
            }
            loop {
                let listener = changed.listen();
                let now = status();
                if Some(now) != last {
                    let finished = matches!(now, HoldStatus::Lost | HoldStatus::NotHeld);
                    return Some((now, (Some(now), finished)));
                }
                wait_change(&inner, listener).await;
            }
        }
    }))
}
