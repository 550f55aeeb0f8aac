//! The driver's side of core's ticket queues ([`LockQueue`] behind a
//! [`crate::Lock`], [`LeaseQueue`] behind a [`crate::Semaphore`]). Each
//! registered queue is one [`RegisteredQueue`], shared by its handles ([`Owner`]s),
//! their acquires and holds, and its event sink. An acquire ([`Acquire`])
//! queues its command on the event loop, learns the ticket core issues for
//! it and waits for the grant, all through one [`Answer`]; dropping it
//! abandons the ticket, and core gives back whatever the ticket got.
//!
//! Core is the only ledger: a ticket's status, loss, revocation and queue
//! position are read from its queue ([`LoopShared::read_recipe`](crate::task::LoopShared::read_recipe)).
//! The driver keeps only what core cannot: the answer cells of acquires
//! and releases waiting for the server ([`Answers`]), and the wakers in
//! them. Both handles acquire this way; what differs (the request, the
//! grant, what a waiter builds) is their [`DrivenQueue`] impl.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use event_listener::Event;
use std::time::Duration;

use futures_channel::oneshot;
use zoolock_core::recipes::{LeaseQueue, LockKind, LockQueue, Part, Ticket};
use zoolock_core::{ApiMisuse, Client as CoreClient, CoreMachine, Handle, Instant, Machine, RecipeId};

use crate::client::{Owned, Owner};
use crate::error::Error;
use crate::hold::QueuePosition;
use crate::metrics::{Gauge, Labels, Series};
use crate::task::Command;

/// State shared by a recipe's handles and its event sink: every change
/// wakes whoever waits on [`Signalled::changed`].
#[derive(Debug, Default)]
pub(crate) struct Signalled<T> {
    state: Mutex<T>,
    pub(crate) changed: Event,
}

impl<T> Signalled<T> {
    /// Changes the state and wakes everyone waiting on it.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let out = f(&mut guard);
        drop(guard);
        self.notify();
        out
    }

    /// Reads the state without waking anyone (a notifying read would wake
    /// the reader's own listener and spin).
    pub(crate) fn peek<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Wakes everyone waiting: what they read (this state, or core's)
    /// changed. Nobody to wake until someone listens (a listener registers
    /// before it reads): then the event needs no state of its own (an
    /// allocation per recipe, which notifying would make).
    pub(crate) fn notify(&self) {
        if self.changed.total_listeners() > 0 {
            self.changed.notify(usize::MAX);
        }
    }
}

/// One registered ticket queue: its typed handle, the state its handles and
/// its sink share, its path and metrics labels, in one allocation. It holds
/// no [`Client`]: the event loop keeps the sink (this) until the recipe is
/// gone, and a client kept there would keep the session open.
pub(crate) struct RegisteredQueue<Q: DrivenQueue> {
    pub(crate) handle: Handle<Q>,
    pub(crate) shared: Signalled<Answers<Q>>,
    /// The lock or semaphore path (paths, for a multi-lock), for the log
    /// and the metrics labels: core's own path, shared, where there is one.
    pub(crate) path: Arc<str>,
    /// Its kind (the metrics label `kind`), and whether the labels carry
    /// the path.
    kind: LockKind,
    path_label: bool,
    /// Its metrics series, registered as they are first used.
    series: Series,
    /// The [`Owner`]s alive.
    owners: AtomicUsize,
}

impl<Q: DrivenQueue> RegisteredQueue<Q> {
    /// The shared part of the recipe registered as `handle`.
    pub(crate) fn new(handle: Handle<Q>, path: Arc<str>, kind: LockKind, path_label: bool) -> RegisteredQueue<Q> {
        let shared = Signalled { state: Mutex::new(Answers::default()), changed: Event::new() };
        RegisteredQueue {
            handle,
            shared,
            path,
            kind,
            path_label,
            series: Series::default(),
            owners: AtomicUsize::new(0),
        }
    }

    /// Its metrics labels.
    pub(crate) fn labels(&self) -> Labels<'_> {
        Labels::new(self.kind.label(), &self.path, self.path_label, &self.series)
    }
}

impl<Q: DrivenQueue> Owned for RegisteredQueue<Q> {
    fn id(&self) -> RecipeId {
        self.handle.id()
    }

    fn owners(&self) -> &AtomicUsize {
        &self.owners
    }
}

/// Where one acquire's answer goes: the ticket core issued for it, how it
/// ended, and the task to wake when it ends or its queue position (core's
/// to keep) changes. Shared by the acquire, its command and (once the ticket is
/// issued) its [`Waiter`]; the event sink fills it. It is the only way an
/// acquire is woken: no channel, no listener on the recipe's state.
#[derive(Debug)]
pub(crate) struct Answer<G> {
    state: Mutex<AnswerState<G>>,
}

#[derive(Debug)]
struct AnswerState<G> {
    /// Set once the command has run and core issued it.
    ticket: Option<Ticket>,
    /// The acquire was dropped: its command does nothing if it has not run,
    /// and a grant is not taken (the cancel gives it back).
    abandoned: bool,
    /// Boxed: an error is rare, and the answer lives as long as the wait.
    outcome: Option<Result<G, Box<Error>>>,
    /// The event loop dropped the acquire's command or waiter unanswered:
    /// it has ended, and the acquire fails as the client's other calls do.
    loop_gone: bool,
    waker: Option<Waker>,
}

impl<G> Answer<G> {
    fn new() -> Answer<G> {
        let state = AnswerState { ticket: None, abandoned: false, outcome: None, loop_gone: false, waker: None };
        Answer { state: Mutex::new(state) }
    }

    fn lock(&self) -> MutexGuard<'_, AnswerState<G>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The acquire's queue position changed: its task reads it from core.
    fn nudge(&self) {
        wake(self.lock());
    }

    /// The acquire ended with `outcome`. False if it was dropped (a grant
    /// is then not taken: its cancel gives it back).
    fn answer(&self, outcome: Result<G, Error>) -> bool {
        let mut state = self.lock();
        if state.abandoned {
            return false;
        }
        state.outcome = Some(outcome.map_err(Box::new));
        wake(state);
        true
    }
}

/// Wakes the acquire waiting on `state`, once `state` is let go.
fn wake<G>(mut state: MutexGuard<'_, AnswerState<G>>) {
    let waker = state.waker.take();
    drop(state);
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// The event loop's side of an [`Answer`] (in the acquire's command, then
/// its [`Waiter`]): answering consumes it. Dropped unanswered (the event
/// loop went away with the command or the waiter), it ends the acquire with
/// [`Error::ClientClosed`], as a dropped channel would.
#[derive(Debug)]
pub(crate) struct Responder<G>(Option<Arc<Answer<G>>>);

impl<G> Responder<G> {
    /// Sink side: the acquire's queue position changed.
    pub(crate) fn nudge(&self) {
        if let Some(answer) = &self.0 {
            answer.nudge();
        }
    }

    /// Sink side: the acquire ended with `outcome`. False if it was dropped
    /// (a grant is then not taken: its cancel gives it back).
    pub(crate) fn answer(mut self, outcome: Result<G, Error>) -> bool {
        self.0.take().is_some_and(|answer| answer.answer(outcome))
    }
}

impl<G> Drop for Responder<G> {
    fn drop(&mut self) {
        if let Some(answer) = self.0.take() {
            let mut state = answer.lock();
            if !state.abandoned && state.outcome.is_none() {
                state.loop_gone = true;
                wake(state);
            }
        }
    }
}

/// An acquire waiting for its grant (its [`Answer`]), with what its kind
/// builds beside it (`X`: a semaphore's leases so far; nothing for a lock).
#[derive(Debug)]
pub(crate) struct Waiter<G, X> {
    pub(crate) answer: Responder<G>,
    pub(crate) of: X,
    /// `zoolock_acquires_waiting`, raised while it waits.
    _waiting: Gauge,
}

impl<G, X> Waiter<G, X> {
    /// Answers the acquire (false: it was dropped), lowering the waiting
    /// gauge first: the woken task may read the gauge at once.
    pub(crate) fn answer(self, outcome: Result<G, Error>) -> bool {
        let Waiter { answer, of: _, _waiting } = self;
        drop(_waiting);
        answer.answer(outcome)
    }
}

/// A core ticket queue the driver drives, and what its acquires carry.
pub(crate) trait DrivenQueue: Machine<CoreMachine> + Send + 'static {
    /// What an acquire asks of it (data, carried to the event loop).
    type Request: Send + 'static;
    /// What a granted acquire receives.
    type Grant: Send + 'static;
    /// What a waiter builds beside its answer.
    type Waiting: Send + 'static;

    /// Issues a ticket for `request`, or refuses it.
    fn issue(&mut self, now: Instant, request: Self::Request) -> Result<Ticket, ApiMisuse>;

    /// Abandons `ticket` wherever it is (queued, acquiring, granted): core
    /// gives back what it got.
    fn cancel(&mut self, now: Instant, ticket: Ticket);

    /// Where `ticket`'s acquire stands on ZooKeeper (position, total).
    fn position(&self, ticket: Ticket) -> Option<(usize, usize)>;

    /// The loop's command carrying `command` to `recipe`.
    fn command(recipe: Arc<RegisteredQueue<Self>>, command: TicketCommand<Self>) -> Command;
}

/// What a lock's acquire asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LockRequest {
    /// `part`, waiting at most `timeout` from when the loop takes it.
    Part { part: Part, timeout: Option<Duration> },
    /// A read hold granted at once to the holder of write ticket `writer`.
    Downgrade { writer: Ticket },
}

impl DrivenQueue for LockQueue {
    type Request = LockRequest;
    type Grant = crate::lock::Grant;
    type Waiting = ();

    fn issue(&mut self, now: Instant, request: LockRequest) -> Result<Ticket, ApiMisuse> {
        match request {
            LockRequest::Part { part, timeout } => Ok(self.acquire(now, part, timeout.map(|d| now + d))),
            LockRequest::Downgrade { writer } => self.downgrade(now, writer),
        }
    }

    fn cancel(&mut self, now: Instant, ticket: Ticket) {
        LockQueue::cancel(self, now, ticket);
    }

    fn position(&self, ticket: Ticket) -> Option<(usize, usize)> {
        LockQueue::position(self, ticket)
    }

    fn command(recipe: Arc<RegisteredQueue<Self>>, command: TicketCommand<Self>) -> Command {
        Command::Lock(recipe, crate::lock::LockCommand::Ticket(command))
    }
}

/// What a semaphore's acquire asks for: `qty` leases, waiting at most
/// `timeout` from when the loop takes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaseRequest {
    pub(crate) qty: usize,
    pub(crate) timeout: Option<Duration>,
}

impl DrivenQueue for LeaseQueue {
    type Request = LeaseRequest;
    type Grant = crate::semaphore::Grant;
    type Waiting = crate::semaphore::Waiting;

    fn issue(&mut self, now: Instant, request: LeaseRequest) -> Result<Ticket, ApiMisuse> {
        self.acquire(now, request.qty, request.timeout.map(|d| now + d))
    }

    fn cancel(&mut self, now: Instant, ticket: Ticket) {
        LeaseQueue::cancel(self, now, ticket);
    }

    fn position(&self, ticket: Ticket) -> Option<(usize, usize)> {
        LeaseQueue::position(self, ticket)
    }

    fn command(recipe: Arc<RegisteredQueue<Self>>, command: TicketCommand<Self>) -> Command {
        Command::Lease(recipe, Box::new(crate::semaphore::LeaseCommand::Ticket(command)))
    }
}

/// A ticket command of one queue, as the event loop runs it ([`run`]).
pub(crate) enum TicketCommand<Q: DrivenQueue> {
    /// Issue a ticket for `request` and file a waiter building `of` under
    /// it, answering through `answer`.
    Acquire { request: Q::Request, of: Q::Waiting, answer: Responder<Q::Grant> },
    /// Abandon the ticket wherever it is (its acquire was dropped).
    Cancel(Ticket),
}

/// The answer cells of one queue's tickets: acquires waiting for their
/// grant, and (a lock's, in the Curator plan) releases waiting for the
/// server's answer. Core keeps everything else of a ticket. A small vector
/// in ticket order (core issues tickets in increasing order), searched by
/// bisection: a handle rarely has more than a few tickets waiting at once,
/// and none while it only holds (the vector is freed once empty).
pub(crate) struct Answers<Q: DrivenQueue> {
    cells: Vec<(Ticket, Cell<Q>)>,
}

/// One ticket's answer cell.
enum Cell<Q: DrivenQueue> {
    /// Its acquire, waiting for the grant.
    Acquire(QueueWaiter<Q>),
    /// Its release, waiting for the server's answer.
    Release(oneshot::Sender<Result<(), Error>>),
}

/// The waiter of an acquire of queue `Q`.
pub(crate) type QueueWaiter<Q> = Waiter<<Q as DrivenQueue>::Grant, <Q as DrivenQueue>::Waiting>;

impl<Q: DrivenQueue> Default for Answers<Q> {
    fn default() -> Self {
        Answers { cells: Vec::new() }
    }
}

impl<Q: DrivenQueue> std::fmt::Debug for Answers<Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cells = self.cells.iter().map(|(t, c)| (*t, matches!(c, Cell::Acquire(_))));
        f.debug_map().entries(cells.map(|(t, acquire)| (t, if acquire { "acquire" } else { "release" }))).finish()
    }
}

/// Up to this many cells the vector grows one by one (a handle keeps as few
/// as it needs), past it by doubling.
const FEW_TICKETS: usize = 4;

/// Files `value` under `t` in `cells` (in ticket order), replacing what was there.
fn file<V>(cells: &mut Vec<(Ticket, V)>, t: Ticket, value: V) {
    match cells.binary_search_by_key(&t, |(k, _)| *k) {
        Ok(i) => {
            if let Some(slot) = cells.get_mut(i) {
                slot.1 = value;
            }
        }
        Err(i) => {
            if cells.len() == cells.capacity() && cells.len() < FEW_TICKETS {
                cells.reserve_exact(1);
            }
            cells.insert(i, (t, value));
        }
    }
}

/// Takes out what `cells` files under `t` if `take` says so; frees the
/// vector once it is empty.
fn take<V>(cells: &mut Vec<(Ticket, V)>, t: Ticket, take: impl FnOnce(&V) -> bool) -> Option<V> {
    let i = cells.binary_search_by_key(&t, |(k, _)| *k).ok()?;
    let out = take(&cells.get(i)?.1).then(|| cells.remove(i).1);
    if cells.is_empty() {
        *cells = Vec::new();
    }
    out
}

impl<Q: DrivenQueue> Answers<Q> {
    fn cell(&self, t: Ticket) -> Option<&Cell<Q>> {
        let i = self.cells.binary_search_by_key(&t, |(k, _)| *k).ok()?;
        self.cells.get(i).map(|(_, c)| c)
    }

    /// The acquire waiting under ticket `t`.
    pub(crate) fn waiter(&self, t: Ticket) -> Option<&QueueWaiter<Q>> {
        match self.cell(t)? {
            Cell::Acquire(w) => Some(w),
            Cell::Release(_) => None,
        }
    }

    /// The acquire waiting under ticket `t`, to build its grant.
    pub(crate) fn waiter_mut(&mut self, t: Ticket) -> Option<&mut QueueWaiter<Q>> {
        let i = self.cells.binary_search_by_key(&t, |(k, _)| *k).ok()?;
        match self.cells.get_mut(i).map(|(_, c)| c)? {
            Cell::Acquire(w) => Some(w),
            Cell::Release(_) => None,
        }
    }

    /// Files the acquire of a new ticket `t`.
    fn file_waiter(&mut self, t: Ticket, waiter: QueueWaiter<Q>) {
        file(&mut self.cells, t, Cell::Acquire(waiter));
    }

    /// Takes out the acquire waiting under `t` (it ended, or was granted).
    pub(crate) fn take_waiter(&mut self, t: Ticket) -> Option<QueueWaiter<Q>> {
        match take(&mut self.cells, t, |c| matches!(c, Cell::Acquire(_)))? {
            Cell::Acquire(w) => Some(w),
            Cell::Release(_) => None,
        }
    }

    /// Files the release of `t` waiting for the server's answer.
    pub(crate) fn file_release(&mut self, t: Ticket, reply: oneshot::Sender<Result<(), Error>>) {
        file(&mut self.cells, t, Cell::Release(reply));
    }

    /// Takes out the release of `t` waiting for the server's answer.
    pub(crate) fn take_release(&mut self, t: Ticket) -> Option<oneshot::Sender<Result<(), Error>>> {
        match take(&mut self.cells, t, |c| matches!(c, Cell::Release(_)))? {
            Cell::Release(r) => Some(r),
            Cell::Acquire(_) => None,
        }
    }
}

/// An acquire's outcome: its ticket, its grant and how long it waited.
pub(crate) struct Granted<G> {
    pub(crate) ticket: Ticket,
    pub(crate) grant: G,
    pub(crate) waited: std::time::Duration,
}

/// Reports each new queue position to the caller's progress callback.
pub(crate) type Progress<'p> = &'p mut (dyn FnMut(QueuePosition) + Send + 'p);

/// An acquire under way: completes with its grant, calling `progress` (if
/// any) with each new queue position. Dropping it abandons the ticket
/// wherever it is. Its state is small (the caller's task keeps it inline):
/// a borrow of the handle, the [`Answer`], the start time and the last
/// position reported (read from core when its sink nudges it).
pub(crate) struct Acquire<'a, 'p, Q: DrivenQueue> {
    owner: &'a Owner<RegisteredQueue<Q>>,
    /// `None` once answered.
    answer: Option<Arc<Answer<Q::Grant>>>,
    began: std::time::Instant,
    /// The last position reported, packed: a queue never nears `u32::MAX`,
    /// and the caller's task keeps this inline.
    last: Option<(u32, u32)>,
    progress: Option<Progress<'p>>,
    /// The `zoolock.acquire` span (path; node and token once granted),
    /// open while the acquire waits.
    span: KeptSpan,
}

/// Runs a ticket command on the event loop. An acquire gets the ticket
/// core issues for its request, and a waiter building `of` is filed under it
/// (before any event of the ticket is delivered: events are delivered after
/// the command). Core issues tickets in command order, so grants follow
/// call order. A request the recipe refuses answers with the refusal; an
/// acquire dropped before its command ran does nothing. A cancel takes the
/// ticket out wherever it is, and core gives back what it got.
pub(crate) fn run<Q: DrivenQueue>(
    client: &mut CoreClient,
    now: Instant,
    recipe: &RegisteredQueue<Q>,
    command: TicketCommand<Q>,
) {
    match command {
        TicketCommand::Acquire { request, of, answer } => {
            let Some(cell) = answer.0.clone() else { return };
            // Held until the ticket is filed: a drop of the acquire meanwhile
            // waits, then finds the ticket to cancel.
            let mut state = cell.lock();
            if state.abandoned {
                return;
            }
            match client.with(now, recipe.handle, |q, now| q.issue(now, request)) {
                Ok(Ok(ticket)) => {
                    state.ticket = Some(ticket);
                    let waiter = Waiter { answer, of, _waiting: Gauge::waiting(&recipe.labels()) };
                    recipe.shared.with(|s| s.file_waiter(ticket, waiter));
                }
                Ok(Err(e)) | Err(e) => {
                    drop(state);
                    answer.answer(Err(e.into()));
                }
            }
        }
        TicketCommand::Cancel(t) => {
            recipe.shared.with(|s| s.take_waiter(t));
            let _ = client.with(now, recipe.handle, |q, now| q.cancel(now, t));
        }
    }
}

/// Queues an acquire of `owner`'s recipe for `request` (see [`run`]); a
/// waiter keeping `of` is filed under its ticket.
///
/// # Errors
///
/// [`Error::ClientClosed`] when the event loop has ended (nothing was
/// queued).
pub(crate) fn acquire<'a, 'p, Q: DrivenQueue>(
    owner: &'a Owner<RegisteredQueue<Q>>,
    of: Q::Waiting,
    request: Q::Request,
    progress: Option<Progress<'p>>,
) -> Result<Acquire<'a, 'p, Q>, Error> {
    let answer = Arc::new(Answer::new());
    let command = TicketCommand::Acquire { request, of, answer: Responder(Some(answer.clone())) };
    owner.client.inner.send(Q::command(owner.recipe.clone(), command))?;
    let began = owner.client.inner.runtime.now();
    let span = acquire_span(&owner.recipe.path);
    Ok(Acquire { owner, answer: Some(answer), began, last: None, progress, span })
}

/// A span kept only when a subscriber wants it. A `tracing::Span` is 40
/// bytes, which every waiting acquire and every guard would otherwise carry
/// for nothing when nobody listens (the usual case); this is one pointer,
/// null then.
#[derive(Debug)]
pub(crate) struct KeptSpan(Option<Box<tracing::Span>>);

impl KeptSpan {
    pub(crate) fn new(span: tracing::Span) -> KeptSpan {
        KeptSpan((!span.is_disabled()).then(|| Box::new(span)))
    }

    /// Records the node and token an acquire was granted.
    pub(crate) fn record_grant(&self, node: &str, token: zoolock_core::FencingToken) {
        if let Some(span) = &self.0 {
            span.record("node", node);
            span.record("token", token.0);
        }
    }
}

/// The span of one acquire of `path` (a lock, a semaphore, an election's
/// term), its node and token recorded by [`KeptSpan::record_grant`].
pub(crate) fn acquire_span(path: &str) -> KeptSpan {
    KeptSpan::new(tracing::info_span!(
        "zoolock.acquire",
        path,
        node = tracing::field::Empty,
        token = tracing::field::Empty
    ))
}

impl<Q: DrivenQueue> Acquire<'_, '_, Q> {
    /// Its `zoolock.acquire` span.
    pub(crate) fn span(&self) -> &KeptSpan {
        &self.span
    }
}

impl<Q: DrivenQueue> Future for Acquire<'_, '_, Q> {
    type Output = Result<Granted<Q::Grant>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let inner = &this.owner.client.inner;
        let Some(answer) = this.answer.as_ref() else { return Poll::Ready(Err(inner.shared.closed())) };
        let mut state = answer.lock();
        if state.loop_gone {
            drop(state);
            this.answer = None;
            return Poll::Ready(Err(inner.shared.closed()));
        }
        if let Some(outcome) = state.outcome.take() {
            let ticket = state.ticket;
            drop(state);
            this.answer = None;
            let grant = outcome.map_err(|e| inner.named(*e))?;
            // Granted through the waiter filed under the ticket: it is set.
            let ticket = ticket.ok_or_else(|| inner.shared.closed())?;
            let waited = this.owner.client.inner.runtime.now().saturating_duration_since(this.began);
            crate::metrics::acquired(&this.owner.recipe.labels(), waited);
            return Poll::Ready(Ok(Granted { ticket, grant, waited }));
        }
        if !state.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            state.waker = Some(cx.waker().clone());
        }
        let ticket = state.ticket;
        drop(state);
        // Core keeps the position: read it (without the answer's lock held)
        // only for a caller who follows it.
        if let (Some(progress), Some(ticket)) = (this.progress.as_mut(), ticket) {
            let recipe = &this.owner.recipe;
            let position = inner.shared.read_recipe(recipe.handle, |q| q.position(ticket)).flatten();
            if let Some((position, total)) = position {
                let half = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                let packed = Some((half(position), half(total)));
                if packed != this.last {
                    this.last = packed;
                    progress(QueuePosition { position, total });
                }
            }
        }
        Poll::Pending
    }
}

impl<Q: DrivenQueue> Drop for Acquire<'_, '_, Q> {
    fn drop(&mut self) {
        let Some(answer) = self.answer.take() else { return };
        let ticket = {
            let mut state = answer.lock();
            state.abandoned = true;
            // A grant sent but not taken is given back by core on the cancel.
            state.outcome = None;
            state.ticket
        };
        tracing::trace!(path = %self.owner.recipe.path, "acquire dropped");
        // Not issued yet: its command finds the acquire abandoned and does
        // nothing (commands run in order, and it holds the answer while it
        // runs, so it cannot issue the ticket behind this back).
        let Some(t) = ticket else { return };
        // Commands run in order: this runs after the acquire's own command.
        let _ = self.owner.client.inner.send(Q::command(self.owner.recipe.clone(), TicketCommand::Cancel(t)));
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

/// Sink side: ends ticket `t`'s acquire with `error` (a time-out counts
/// in the metrics). `Err(error)` when no acquire waits under `t` (for a
/// lock: the ticket's release failed).
pub(crate) fn end<Q: DrivenQueue>(recipe: &RegisteredQueue<Q>, t: Ticket, error: Error) -> Result<(), Error> {
    if error == Error::TimedOut {
        crate::metrics::timed_out(&recipe.labels());
    }
    match recipe.shared.with(|s| s.take_waiter(t)) {
        Some(w) => {
            w.answer(Err(error));
            Ok(())
        }
        None => Err(error),
    }
}

/// Sink side: ticket `t`'s acquire has a new queue position (core keeps
/// it): its task reads it.
pub(crate) fn queued<Q: DrivenQueue>(recipe: &RegisteredQueue<Q>, t: Ticket) {
    recipe.shared.peek(|s| {
        if let Some(w) = s.waiter(t) {
            w.answer.nudge();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_its_event_loop_dropped_says_client_closed() {
        let answer = Arc::new(Answer::<u8>::new());
        drop(Responder(Some(answer.clone())));
        assert!(answer.lock().loop_gone, "the acquire fails as the client's calls do once the loop is gone");
    }

    #[test]
    fn an_answer_is_given_once() {
        let answer = Arc::new(Answer::<u8>::new());
        assert!(Responder(Some(answer.clone())).answer(Ok(7)));
        assert!(matches!(answer.lock().outcome.take(), Some(Ok(7))));
        assert!(!answer.lock().loop_gone, "answering consumed the responder: no ClientClosed after it");
    }

    #[test]
    fn a_dropped_acquire_takes_no_grant() {
        let answer = Arc::new(Answer::<u8>::new());
        answer.lock().abandoned = true;
        assert!(!Responder(Some(answer.clone())).answer(Ok(7)));
        assert!(answer.lock().outcome.is_none());
    }

    /// `n` tickets, as core issues them.
    fn issued(n: usize) -> Vec<Ticket> {
        use zoolock_core::recipes::{LockConfig, LockSpec};
        let (lock, part) = LockSpec::Mutex("/t".into()).build(LockConfig::new(1), false).expect("a mutex");
        let mut queue = LockQueue::new(lock, true);
        (0..n).map(|_| queue.acquire(Instant::ZERO, part, None)).collect()
    }

    #[test]
    fn many_cells_are_found_whatever_order_they_came_in() {
        let mut cells = Vec::new();
        let tickets = issued(40);
        for (i, &t) in tickets.iter().enumerate().rev() {
            file(&mut cells, t, i);
        }
        for (i, &t) in tickets.iter().enumerate() {
            assert_eq!(cells.get(i).map(|c| (c.0, c.1)), Some((t, i)));
        }
        assert_eq!(take(&mut cells, tickets[7], |_| true), Some(7));
        assert_eq!(take(&mut cells, tickets[7], |_| true), None);
        assert_eq!(take(&mut cells, tickets[8], |_| false), None, "left where it is");
        assert_eq!(cells.len(), 39);
    }

    #[test]
    fn one_cell_takes_room_for_one() {
        let (mut cells, tickets) = (Vec::new(), issued(2));
        file(&mut cells, tickets[0], ());
        assert_eq!(cells.capacity(), 1);
        file(&mut cells, tickets[1], ());
        assert_eq!(cells.capacity(), 2);
        take(&mut cells, tickets[0], |_| true);
        take(&mut cells, tickets[1], |_| true);
        assert_eq!(cells.capacity(), 0, "an empty vector is freed: a handle that only holds keeps none");
    }
}
