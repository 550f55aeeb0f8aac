//! The one event loop: a future that drives the sans-IO [`CoreClient`] over a
//! connection, and follows the client's drain order on every wake-up.
//!
//! The core client sits in [`LoopShared`] behind a mutex, as quinn's
//! connection state does: the loop takes it for each turn, and handles take
//! it briefly to read what core alone keeps (a ticket's status, a lease's,
//! a queue position). Changes still go through [`Command`]s, in order.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex as StdMutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use event_listener::Event;
use futures_channel::{mpsc, oneshot};
use futures_lite::Stream;
use zoolock_core::wire::Response;
use zoolock_core::{
    ApiMisuse, Client as CoreClient, ClientEvent, ConnectString, ConnectionState, CoreMachine, Handle, Instant,
    IoCommand, Machine, NewRecipe, Op, RecipeEvent, RecipeId, RequestError, RequestId,
};

use crate::count::CountCommand;
use crate::leader::ElectionCommand;
use crate::lock::{LockCommand, RegisteredLock};
use crate::runtime::{BoxFuture, Conn, Runtime};
use crate::semaphore::{LeaseCommand, RegisteredSemaphore};
use crate::session_lease::LeaseCell;

/// Receives a recipe's events on the driver task and carries them to the
/// handles. It only delivers: whatever a recipe owes the server (a grant
/// nobody took, say) is core's to settle, so a sink never calls back into
/// the client while its events are drained.
pub(crate) type Sink = Arc<dyn RecipeSink>;

/// Where a recipe's events go (see [`Sink`]): the state a recipe's handles
/// share, which then serves as its own sink without a box of its own, or a
/// small type that passes the events on.
pub(crate) trait RecipeSink: Send + Sync {
    /// Takes one event of the recipe.
    fn deliver(&self, event: RecipeEvent);
}

/// Work a handle asks the loop to do: data only, matched in one place
/// ([`DriverTask::apply`]). A recipe's own commands are run by its module's
/// `run`; every command is applied in the order it was sent.
pub(crate) enum Command {
    /// A plain request. The op is boxed: every command waits in the channel
    /// in a node of the largest command's size, and with thousands of
    /// acquires queued at once an inline op would make each cost its size.
    Submit {
        op: Box<Op>,
        reply: oneshot::Sender<Result<Response, RequestError>>,
    },
    /// Add a recipe under the handle reserved for it (boxed, as `Submit`'s
    /// op), with the sink its events go to.
    Register {
        recipe: Box<NewRecipe<CoreMachine>>,
        sink: Sink,
    },
    /// Drop the recipe once it owes the server nothing.
    Retire(RecipeId),
    /// A lock's acquire, cancel, release or re-entry.
    Lock(Arc<RegisteredLock>, LockCommand),
    /// A semaphore's acquire, cancel or lease return. Boxed: the largest
    /// command otherwise (72 bytes), and every queued command's channel
    /// node is the largest command's size (a lock's acquire too).
    Lease(Arc<RegisteredSemaphore>, Box<LeaseCommand>),
    /// An election participant's start, resignation or close.
    Election(ElectionCommand),
    /// A shared count's write.
    Count(CountCommand),
    /// Answered once every command sent before it has run.
    Flush(oneshot::Sender<()>),
    /// Replace the servers the session dials (boxed, as `Submit`'s op).
    UpdateServers {
        servers: Box<ConnectString>,
        reply: oneshot::Sender<Result<bool, ApiMisuse>>,
    },
    /// The servers the session dials now.
    Servers(oneshot::Sender<Vec<String>>),
    Subscribe(mpsc::UnboundedSender<ConnectionState>),
    /// Answer once the recipe owes the server nothing (is quiescent): its
    /// releases' deletes have been applied. Fails if the session ends first.
    Settle {
        recipe: RecipeId,
        reply: oneshot::Sender<Result<(), RequestError>>,
    },
    Close,
}

/// What handles can see of the loop.
#[derive(Debug, Default)]
pub(crate) struct LoopState {
    pub(crate) connection: Option<ConnectionState>,
    pub(crate) local_ip: Option<IpAddr>,
    pub(crate) session_id: i64,
    /// The session has ended (closed, expired or refused): it serves nothing
    /// more, though the loop runs on until every handle is gone.
    pub(crate) ended: bool,
    /// Why the session ended, as the session tells it: more precise than
    /// the state's (a server that requires SASL ends it in the state
    /// `AuthFailed`, but the reason is `SaslAuthRequired`).
    pub(crate) end_error: Option<RequestError>,
    /// The loop has exited.
    pub(crate) finished: bool,
    /// [`crate::Client::close`] was called: handles are no longer made
    /// ([`Error::ClientClosed`](crate::Error::ClientClosed)).
    pub(crate) closed: bool,
    /// A connection failure no retry can fix ended the session.
    pub(crate) fatal: Option<crate::security::TlsError>,
    /// The last failed dial, once the session has ended as
    /// [`ConnectionState::Unreachable`].
    pub(crate) unreachable: Option<crate::DialError>,
}

/// What the loop and the handles share: the core client itself, and what
/// the loop tells the handles of the connection.
#[derive(Debug)]
pub(crate) struct LoopShared {
    /// The sans-IO client: the one ledger of every recipe. Never taken while
    /// a handle holds another lock of the driver's (the loop takes this one
    /// first, then a recipe's answers).
    core: StdMutex<CoreClient>,
    pub(crate) state: StdMutex<LoopState>,
    pub(crate) changed: Event,
    /// How many recipes the loop keeps (set as they come and go; nobody
    /// waits on it, so it is apart from `state` and wakes no one).
    pub(crate) recipes: std::sync::atomic::AtomicUsize,
    /// The session's lease, judged when a hold is read.
    pub(crate) lease: LeaseCell,
    /// The connect string, naming the client in its errors.
    hosts: Arc<str>,
}

impl LoopShared {
    /// The state of the loop driving `core`, the client of `hosts` whose
    /// clock starts at `origin`.
    pub(crate) fn new(origin: std::time::Instant, hosts: &str, core: CoreClient) -> LoopShared {
        LoopShared {
            core: StdMutex::new(core),
            state: StdMutex::default(),
            changed: Event::new(),
            recipes: Default::default(),
            lease: LeaseCell::new(origin),
            hosts: hosts.into(),
        }
    }

    /// This client, as its errors name it: the connect string and the
    /// latest session.
    pub(crate) fn name(&self) -> crate::ClientName {
        crate::ClientName::new(self.hosts.clone(), self.read(|s| s.session_id).unwrap_or(0))
    }

    /// [`Error::ClientClosed`](crate::Error::ClientClosed), naming this client.
    pub(crate) fn closed(&self) -> crate::Error {
        crate::Error::ClientClosed(self.name())
    }

    /// The core client, for one turn of the loop (or one read).
    fn core(&self) -> MutexGuard<'_, CoreClient> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the recipe behind `handle` in core (`None` once it is gone):
    /// a handle's query, answered by core's own state.
    pub(crate) fn read_recipe<R: Machine<CoreMachine>, T>(
        &self,
        handle: Handle<R>,
        f: impl FnOnce(&R) -> T,
    ) -> Option<T> {
        self.core().get(handle).ok().map(f)
    }

    pub(crate) fn update(&self, f: impl FnOnce(&mut LoopState)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s);
        }
        self.changed.notify(usize::MAX);
    }

    pub(crate) fn read<T>(&self, f: impl FnOnce(&LoopState) -> T) -> Option<T> {
        self.state.lock().ok().map(|s| f(&s))
    }
}

/// The driver loop. Spawned once per client by [`crate::Client::connect`].
pub(crate) struct DriverTask {
    runtime: Arc<dyn Runtime>,
    origin: std::time::Instant,
    shared: Arc<LoopShared>,
    commands: mpsc::UnboundedReceiver<Command>,
    handles_gone: bool,
    conn: Option<Box<dyn Conn>>,
    connecting: Option<BoxFuture<io::Result<Box<dyn Conn>>>>,
    /// Where the current or last dial went (`host:port`).
    dialing: String,
    /// Why the last dial failed: the cause carried when the session gives
    /// up on unreachable hosts.
    last_dial: Option<crate::DialError>,
    rx: BytesMut,
    scratch: Box<[u8]>,
    tx: BytesMut,
    timer: Option<(Instant, BoxFuture<()>)>,
    replies: HashMap<RequestId, oneshot::Sender<Result<Response, RequestError>>>,
    /// The sink of every recipe, until it is retired.
    slots: HashMap<RecipeId, Sink>,
    /// [`Command::Settle`]s not answered yet, by recipe: answered by the
    /// core's [`ClientEvent::Quiescent`] (or `Retired`), so waiting costs no
    /// scan of every waiting recipe per turn.
    settling: HashMap<RecipeId, Vec<oneshot::Sender<Result<(), RequestError>>>>,
    subscribers: Vec<mpsc::UnboundedSender<ConnectionState>>,
    /// Raises `zoolock_connected` while the connection is live.
    connected: Option<crate::metrics::Gauge>,
    /// The `zoolock_request_seconds` series, by operation.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    requests: crate::metrics::RequestSeries,
    /// Entered on every poll, so everything the loop logs carries the session.
    span: tracing::Span,
    pub(crate) security: crate::security::ConnSecurity,
}

const READ_CHUNK: usize = 64 * 1024;

/// Commands applied per turn of the event loop (see `take_commands`).
const COMMANDS_PER_TURN: usize = 256;

impl DriverTask {
    pub(crate) fn new(
        runtime: Arc<dyn Runtime>,
        origin: std::time::Instant,
        shared: Arc<LoopShared>,
        commands: mpsc::UnboundedReceiver<Command>,
        span: tracing::Span,
    ) -> Self {
        DriverTask {
            runtime,
            origin,
            shared,
            commands,
            handles_gone: false,
            conn: None,
            connecting: None,
            dialing: String::new(),
            last_dial: None,
            rx: BytesMut::with_capacity(READ_CHUNK),
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
            tx: BytesMut::new(),
            timer: None,
            replies: HashMap::new(),
            slots: HashMap::new(),
            settling: HashMap::new(),
            subscribers: Vec::new(),
            connected: None,
            requests: crate::metrics::RequestSeries::default(),
            span,
            security: Default::default(),
        }
    }

    fn now(&self) -> Instant {
        to_core(self.origin, self.runtime.now())
    }

    /// Publishes the session's lease to the handles, after every turn's
    /// events reached their sinks (so a renewed lease never shows beside a
    /// hold whose loss is still undelivered); wakes the waiters when a
    /// reader's answer changed in a way their timers do not catch.
    fn publish_lease(&self, client: &CoreClient) {
        if self.shared.lease.publish(self.now(), client.session()) {
            self.shared.changed.notify(usize::MAX);
        }
    }

    fn apply(&mut self, client: &mut CoreClient, command: Command) {
        let now = self.now();
        match command {
            Command::Submit { op, reply } => {
                tracing::trace!(?op, "submit");
                match client.submit(now, *op) {
                    Ok(id) => {
                        self.replies.insert(id, reply);
                    }
                    Err(_) => {
                        let _ = reply.send(Err(self.ended_error(client)));
                    }
                }
            }
            Command::Register { recipe, sink } => {
                // Reserved by this client's own handles: never foreign.
                if let Ok(id) = client.add_new(now, *recipe) {
                    tracing::trace!(?id, "recipe added");
                    self.slots.insert(id, sink);
                    self.shared.recipes.store(self.slots.len(), std::sync::atomic::Ordering::Relaxed);
                }
            }
            Command::Lock(recipe, command) => crate::lock::run(client, now, &recipe, command),
            Command::Lease(recipe, command) => crate::semaphore::run(client, now, &recipe, *command),
            Command::Election(command) => crate::leader::run(client, now, command),
            Command::Count(command) => crate::count::run(client, now, command),
            Command::Flush(reply) => {
                let _ = reply.send(());
            }
            Command::UpdateServers { servers, reply } => {
                let _ = reply.send(client.update_servers(now, &servers));
            }
            Command::Servers(reply) => {
                let _ = reply.send(client.session().hosts().iter().map(ToString::to_string).collect());
            }
            Command::Retire(id) => {
                if self.slots.contains_key(&id) {
                    // The core removes it once it owes the server nothing
                    // ([`ClientEvent::Retired`] drops the sink); retiring
                    // twice changes nothing.
                    let _ = client.retire(now, id);
                }
            }
            Command::Subscribe(tx) => {
                if let Some(Some(state)) = self.shared.read(|s| s.connection) {
                    let _ = tx.unbounded_send(state);
                }
                self.subscribers.push(tx);
            }
            Command::Settle { recipe, reply } => match client.notify_quiescent(now, recipe) {
                Ok(()) => self.settling.entry(recipe).or_default().push(reply),
                // Gone: nothing left to owe.
                Err(_) => {
                    let _ = reply.send(Ok(()));
                }
            },
            Command::Close => {
                tracing::debug!("closing the session");
                client.close(now);
            }
        }
    }

    /// Ends the session over a failure that reconnecting cannot fix.
    fn fatal(&mut self, client: &mut CoreClient, error: crate::security::TlsError) {
        tracing::info!(%error, "ending the session");
        self.shared.update(|s| s.fatal = Some(error));
        let now = self.now();
        client.close(now);
    }

    fn ended_error(&self, client: &CoreClient) -> RequestError {
        client.session().status().end_error().unwrap_or(RequestError::Closed)
    }

    fn dispatch(&mut self, client: &mut CoreClient, event: ClientEvent) {
        match event {
            ClientEvent::State(state) => {
                let session_id = client.session().session_id();
                if session_id != 0 {
                    self.span.record("session", tracing::field::display(format_args!("{session_id:#x}")));
                }
                match state {
                    ConnectionState::ServerMisbehaved(error) => {
                        tracing::error!(%error, "giving up on a server that misbehaved on every connection");
                    }
                    ConnectionState::Unreachable => {
                        let last = self.last_dial.as_ref().map(|e| e.to_string()).unwrap_or_default();
                        tracing::info!(last, "giving up: every host failed to connect");
                        let cause = self.last_dial.clone();
                        self.shared.update(|s| s.unreachable = cause);
                    }
                    _ => tracing::info!(?state, "connection state"),
                }
                let ended = client.session().is_ended();
                if state == ConnectionState::Lost && !ended {
                    // The client renewed the session at once.
                    crate::metrics::renewed();
                    tracing::info!("session expired: a new session is starting");
                }
                self.shared.update(|s| {
                    s.connection = Some(state);
                    s.session_id = session_id;
                    s.ended = ended;
                    s.end_error = ended.then(|| client.session().status().end_error()).flatten();
                });
                if matches!(state, ConnectionState::Connected | ConnectionState::ConnectedReadOnly) {
                    self.security.watch.had_session = true;
                }
                let live = matches!(
                    state,
                    ConnectionState::Connected | ConnectionState::ConnectedReadOnly | ConnectionState::Reconnected
                );
                if live != self.connected.is_some() {
                    self.connected = live.then(crate::metrics::Gauge::connected);
                }
                self.subscribers.retain(|tx| tx.unbounded_send(state).is_ok());
            }
            ClientEvent::Reply { id, result } => {
                if let Some(reply) = self.replies.remove(&id) {
                    let _ = reply.send(result);
                }
            }
            ClientEvent::Watch(event) => tracing::trace!(?event, "plain watch fired"),
            ClientEvent::Retired(id) | ClientEvent::Quiescent(id) => {
                if matches!(event, ClientEvent::Retired(_)) {
                    tracing::trace!(?id, "recipe dropped");
                    self.slots.remove(&id);
                    self.shared.recipes.store(self.slots.len(), std::sync::atomic::Ordering::Relaxed);
                }
                for reply in self.settling.remove(&id).unwrap_or_default() {
                    let _ = reply.send(Ok(()));
                }
            }
            ClientEvent::Recipe { recipe, event } => {
                tracing::trace!(?recipe, ?event, "recipe event");
                if let Some(sink) = self.slots.get(&recipe) {
                    sink.deliver(event);
                }
            }
            _ => {}
        }
    }

    /// Forgets the current connection and anything buffered for it: the one
    /// teardown, whoever ended the connection.
    fn drop_connection(&mut self) {
        self.conn = None;
        self.rx.clear();
        self.tx.clear();
    }

    /// The connection failed or the server closed it: tell the session.
    fn disconnected(&mut self, client: &mut CoreClient) {
        self.drop_connection();
        let now = self.now();
        client.handle_disconnected(now);
    }

    /// One pass over every input and output, in the core's order; true if
    /// anything happened.
    fn turn(&mut self, client: &mut CoreClient, cx: &mut Context<'_>) -> bool {
        let mut progress = self.take_commands(client, cx);
        progress |= self.poll_connect(client, cx);
        progress |= self.read(client, cx);
        progress |= self.fire_timers(client);
        progress |= self.transport_commands(client);
        progress |= self.transmit(client, cx);
        progress |= self.deliver_events(client);
        self.publish_lease(client);
        self.settle(client);
        progress
    }

    /// Applies the handles' commands; closes the session once every handle
    /// is gone.
    fn take_commands(&mut self, client: &mut CoreClient, cx: &mut Context<'_>) -> bool {
        let mut progress = false;
        let mut applied = 0;
        // At most a batch per turn: the rest wait for the next turn (this one
        // reports progress, so there is one), after this batch's frames went
        // out. Ten thousand acquires at once then never sit encoded in one
        // buffer, whose high-water mark the process would keep. While the
        // session has a window's worth of requests in flight, commands wait
        // in the channel (the replies that free the window wake this loop).
        while !self.handles_gone && applied < COMMANDS_PER_TURN && client.has_room() {
            match Pin::new(&mut self.commands).poll_next(cx) {
                Poll::Ready(Some(cmd)) => {
                    self.apply(client, cmd);
                    applied += 1;
                    progress = true;
                }
                Poll::Ready(None) => {
                    self.handles_gone = true;
                    let now = self.now();
                    client.close(now);
                    progress = true;
                }
                Poll::Pending => break,
            }
        }
        progress
    }

    /// Finishes a connect in progress, telling the session how it went.
    fn poll_connect(&mut self, client: &mut CoreClient, cx: &mut Context<'_>) -> bool {
        let Some(fut) = self.connecting.as_mut() else { return false };
        let Poll::Ready(result) = fut.as_mut().poll(cx) else { return false };
        self.connecting = None;
        match result {
            Ok(conn) => {
                let ip = conn.local_ip();
                self.shared.update(|s| s.local_ip = ip.or(s.local_ip));
                self.conn = Some(conn);
                self.security.watch.connected();
                let now = self.now();
                client.handle_connected(now);
            }
            Err(error) => {
                tracing::debug!(%error, addr = self.dialing, "connect failed");
                self.last_dial = Some(crate::DialError::new(self.dialing.clone(), &error));
                let now = self.now();
                client.handle_disconnected(now);
                let tls = self.security.uses_tls();
                if let Some(e) = self.security.watch.connect_failed(&error, tls) {
                    self.fatal(client, e);
                }
            }
        }
        true
    }

    /// Reads until the connection would block, feeding the session.
    fn read(&mut self, client: &mut CoreClient, cx: &mut Context<'_>) -> bool {
        let mut progress = false;
        while let Some(conn) = self.conn.as_mut() {
            // Read into a scratch buffer: growing `rx` by a zeroed chunk on
            // every poll would clear 64 KiB per wake-up, mostly for Pending.
            let Poll::Ready(result) = Pin::new(&mut **conn).poll_read(cx, &mut self.scratch) else { break };
            progress = true;
            let n = match result {
                Ok(n) => n,
                Err(error) => {
                    tracing::debug!(%error, "read failed");
                    if let Some(e) = self.security.watch.read_failed(&error) {
                        self.disconnected(client);
                        self.fatal(client, e);
                        continue;
                    }
                    0
                }
            };
            if n == 0 {
                tracing::debug!("connection closed");
                self.disconnected(client);
                if let Some(e) = self.security.watch.closed(self.security.uses_tls()) {
                    self.fatal(client, e);
                }
                continue;
            }
            self.security.watch.heard = true;
            self.rx.extend_from_slice(&self.scratch[..n.min(self.scratch.len())]);
            let now = self.now();
            let result = client.handle_bytes(now, &mut self.rx);
            if let Err(error) = result {
                // The session has dropped this connection (its Close
                // command follows): read nothing more from it.
                tracing::warn!(%error, "dropping the connection");
                self.drop_connection();
            }
        }
        progress
    }

    /// Fires the core's timers if one is due.
    fn fire_timers(&mut self, client: &mut CoreClient) -> bool {
        let now = self.now();
        let due = client.poll_timeout().is_some_and(|t| t <= now);
        if due {
            client.handle_timeout(now);
        }
        due
    }

    /// Carries out the session's connect and close commands.
    fn transport_commands(&mut self, client: &mut CoreClient) -> bool {
        let mut progress = false;
        while let Some(io) = client.poll_io() {
            progress = true;
            self.drop_connection();
            match io {
                IoCommand::Connect { addr, .. } => {
                    tracing::debug!(%addr, "connecting");
                    self.dialing = addr.to_string();
                    self.connecting = Some(self.security.connect(&*self.runtime, addr.host.clone(), addr.port));
                }
                IoCommand::Close => self.connecting = None,
                _ => {}
            }
        }
        progress
    }

    /// Writes what the session has to send, as far as the socket takes it.
    fn transmit(&mut self, client: &mut CoreClient, cx: &mut Context<'_>) -> bool {
        let _ = client.poll_transmit(&mut self.tx);
        let Some(conn) = self.conn.as_mut() else {
            self.tx.clear();
            return false;
        };
        let mut progress = false;
        while !self.tx.is_empty() {
            match Pin::new(&mut **conn).poll_write(cx, &self.tx) {
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => {
                    tracing::debug!("write failed");
                    self.disconnected(client);
                    return true;
                }
                Poll::Ready(Ok(n)) => {
                    self.tx.advance(n);
                    progress = true;
                }
                Poll::Pending => return progress,
            }
        }
        // A burst's frames grew it past a read's chunk: free it once sent.
        if self.tx.is_empty() && self.tx.capacity() > READ_CHUNK {
            self.tx = BytesMut::new();
        }
        let _ = Pin::new(&mut **conn).poll_flush(cx);
        progress
    }

    /// Hands the core's events to the handles.
    fn deliver_events(&mut self, client: &mut CoreClient) -> bool {
        let mut progress = false;
        while let Some(event) = client.poll_event() {
            self.dispatch(client, event);
            progress = true;
        }
        // Only with the feature does the session time requests at all.
        #[cfg(feature = "metrics")]
        while let Some(timing) = client.poll_timing() {
            self.requests.answered(&timing);
        }
        progress
    }

    /// Once the session has ended, answers every [`Command::Settle`] still
    /// waiting: settled if its recipe is quiescent (or gone), else the
    /// session's end.
    fn settle(&mut self, client: &mut CoreClient) {
        if self.settling.is_empty() || !client.session().is_ended() {
            return;
        }
        let ended = self.ended_error(client);
        for (id, replies) in std::mem::take(&mut self.settling) {
            let settled = client.recipe(id).is_none_or(|r| r.is_quiescent());
            for reply in replies {
                let _ = reply.send(if settled { Ok(()) } else { Err(ended.clone()) });
            }
        }
    }

    /// Every handle is gone and the session has ended (closed or expired).
    fn finished(&self, client: &CoreClient) -> bool {
        self.handles_gone && client.session().is_ended()
    }
}

impl Future for DriverTask {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let span = this.span.clone();
        let _entered = span.enter();
        // Bounded, so one busy connection cannot starve the executor; if
        // there is still work after the budget, ask to be polled again.
        let mut idle = false;
        let shared = this.shared.clone();
        for _ in 0..64 {
            // Taken for one turn at a time: a handle reading core waits at
            // most a turn.
            if !this.turn(&mut shared.core(), cx) {
                idle = true;
                break;
            }
        }
        if !idle {
            cx.waker().wake_by_ref();
        }
        let client = shared.core();
        if this.finished(&client) {
            tracing::debug!("event loop finished");
            this.shared.update(|s| {
                s.finished = true;
                s.ended = true;
            });
            return Poll::Ready(());
        }
        match client.poll_timeout() {
            Some(at) => {
                // Re-arm only for an earlier deadline. The session's deadline
                // moves later with every request sent (the next ping), and a
                // fresh timer per request cost an allocation and a timer-wheel
                // insert and removal on every turn with a send; a timer armed
                // for an earlier instant fires once, finds nothing due, and is
                // re-armed for the current deadline here.
                if this.timer.as_ref().is_none_or(|(t, _)| at < *t) {
                    let deadline = this.origin + std::time::Duration::from_nanos(at.as_nanos());
                    this.timer = Some((at, this.runtime.sleep_until(deadline)));
                }
                if let Some((_, timer)) = this.timer.as_mut() {
                    if timer.as_mut().poll(cx).is_ready() {
                        this.timer = None;
                        cx.waker().wake_by_ref();
                    }
                }
            }
            None => this.timer = None,
        }
        Poll::Pending
    }
}

/// Maps the runtime's clock onto core time (nanoseconds since `origin`).
pub(crate) fn to_core(origin: std::time::Instant, t: std::time::Instant) -> Instant {
    Instant::from_nanos(u64::try_from(t.saturating_duration_since(origin).as_nanos()).unwrap_or(u64::MAX))
}
