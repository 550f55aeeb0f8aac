//! [`Client`]: one [`Session`] shared by many recipes and plain requests.
//!
//! It maps each recipe's op ids to session request ids and back, delivers a
//! watch to the recipe that registered it, and broadcasts connection state
//! to every recipe. Drain order after any input: [`Client::poll_io`],
//! [`Client::poll_transmit`], [`Client::poll_event`], then
//! [`Client::poll_timeout`].

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec::Vec;

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use alloc::sync::Arc;

use bytes::{Bytes, BytesMut};
use zoolock_wire::Response;

use crate::connect_string::ConnectString;
use crate::error::{ApiMisuse, RequestError, SessionError};
use crate::machine::{ClientRecipe, CoreMachine, Machine, Machines};
use crate::op::Op;
use crate::recipe::{OpId, RecipeEvent};
use crate::rng::Rng;
use crate::session::{
    ConnectionState, IoCommand, RequestId, Session, SessionConfig, SessionEvent, SessionStatus, WatchEvent, WatcherId,
};
use crate::time::Instant;

/// Identifies a recipe registered with a [`Client`]. Never reused by that
/// client; issued by [`Client::add`] and [`Reserver::reserve`] only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecipeId(u64);

impl RecipeId {
    /// The id's number, for logs and metrics.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Displays as its number.
impl core::fmt::Display for RecipeId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(&self.0, f)
    }
}

/// A recipe registered with [`Client::add`], typed: [`Client::with`] reaches
/// it as an `R`. Only `add` and a [`Reserver`] make one, and it names its
/// client too, so a handle used on another client is refused
/// ([`ApiMisuse::ForeignHandle`]).
pub struct Handle<R> {
    id: RecipeId,
    client: usize,
    kind: core::marker::PhantomData<fn() -> R>,
}

impl<R> Handle<R> {
    /// The recipe's id, as its events carry it ([`ClientEvent::Recipe`]).
    pub fn id(&self) -> RecipeId {
        self.id
    }
}

/// A handle taken before its recipe is added ([`Reserver::reserve`]): the
/// handle is usable at once (commands through it wait behind the add, in a
/// driver whose commands run in order), and the reservation is spent by
/// the one add it allows ([`Reserved::with`], [`Client::add_new`]). Lets a
/// driver make a recipe's handle on the caller's side, with no round trip
/// to the task that owns the client.
#[derive(Debug)]
#[must_use = "a reservation adds nothing until it is given to `Client::add_new`"]
pub struct Reserved<R> {
    handle: Handle<R>,
}

impl<R> Reserved<R> {
    /// The handle the recipe will have.
    pub fn handle(&self) -> Handle<R> {
        self.handle
    }

    /// The recipe to add under this reservation, in the client's stored form.
    pub fn with<M>(self, recipe: R) -> NewRecipe<M>
    where
        R: Machine<M>,
    {
        NewRecipe { id: self.handle.id, client: self.handle.client, machine: recipe.into_machine() }
    }
}

/// A recipe bound to its reserved handle, ready for [`Client::add_new`].
#[derive(Debug)]
pub struct NewRecipe<M> {
    id: RecipeId,
    client: usize,
    machine: M,
}

impl<M> NewRecipe<M> {
    /// The id it will have.
    pub fn id(&self) -> RecipeId {
        self.id
    }
}

/// Reserves handles of one [`Client`] from any thread ([`Client::reserver`]).
#[derive(Debug, Clone)]
pub struct Reserver {
    client: usize,
    next: Arc<AtomicU64>,
}

impl Reserver {
    /// A handle for a recipe of type `R`, to be added with [`Client::add_new`].
    pub fn reserve<R>(&self) -> Reserved<R> {
        let id = RecipeId(self.next.fetch_add(1, Ordering::Relaxed));
        Reserved { handle: Handle { id, client: self.client, kind: core::marker::PhantomData } }
    }
}

/// Numbers clients, so a handle knows its own. Only compared, never part of
/// any output.
static NEXT_CLIENT: AtomicUsize = AtomicUsize::new(0);

impl<R> Clone for Handle<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Handle<R> {}

impl<R> core::fmt::Debug for Handle<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Handle").field(&self.id).finish()
    }
}

/// Watcher id of plain requests' watches; recipes use their own id.
const PLAIN_WATCHER: WatcherId = WatcherId(u64::MAX);

/// Requests in flight beyond which [`Client::has_room`] asks a drive loop
/// to hold back new commands. ZooKeeper stops reading a connection while it
/// has more than its `globalOutstandingLimit` (1,000 by default) requests
/// outstanding, so a deeper pipeline buys no throughput; it only keeps each
/// waiting request's frame, routing entry and recipe state alive at once,
/// and a process keeps that high-water mark as resident memory.
pub const IN_FLIGHT_WINDOW: usize = 1024;

/// An output of the client.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// The connection state changed (every recipe has been told as well).
    State(ConnectionState),
    /// A plain request finished.
    Reply {
        /// From [`Client::submit`].
        id: RequestId,
        /// The response or why there is none.
        result: Result<Response, RequestError>,
    },
    /// A watch left by a plain request fired.
    Watch(WatchEvent),
    /// A recipe reported something.
    Recipe {
        /// Which recipe.
        recipe: RecipeId,
        /// What it reported.
        event: RecipeEvent,
    },
    /// A recipe given to [`Client::retire`] became quiescent and was
    /// removed; its events came before this one.
    Retired(RecipeId),
    /// A recipe given to [`Client::notify_quiescent`] is quiescent; its
    /// events came before this one.
    Quiescent(RecipeId),
}

#[derive(Debug, Clone, Copy)]
enum Route {
    Plain,
    Recipe(RecipeId, OpId),
}

/// A session plus the recipes that run on it.
///
/// **Driving it.** The drive loop is [`Session`]'s, unchanged: the same
/// inputs ([`Client::handle_connected`], [`Client::handle_bytes`],
/// [`Client::handle_disconnected`], [`Client::handle_timeout`]), the same
/// drain order after every input or command ([`Client::poll_io`] until
/// `None`, [`Client::poll_transmit`], [`Client::poll_event`] until `None`,
/// then [`Client::poll_timeout`]), and the same rules for `poll_timeout`
/// (the earliest of the session's and every recipe's deadlines; `&self`,
/// never changes state, never reads a clock; never sleep past it). See
/// [`Session`] for the full contract.
///
/// **Recipes.** Register a recipe with [`Client::add`], which returns a
/// typed [`Handle`], and drive it with [`Client::with`]: the closure runs
/// the recipe's command (acquire, release, cancel, ...) and the client sends
/// the ops it queued; the recipe's answers arrive as
/// [`ClientEvent::Recipe`] from `poll_event`. A client stores its recipes
/// as one type, `M` ([`CoreMachine`], every recipe of this crate, unless
/// built with [`Client::for_machines`]), so a handle reaches its recipe as
/// itself, by a match on the stored value (no run-time type check).
///
/// ```
/// use zoolock_core::{Client, ConnectString, Instant, SessionConfig, ZkPath, recipes::{LockConfig, Mutex}};
/// let config = SessionConfig::new(ConnectString::parse("127.0.0.1:2181").unwrap(), 7);
/// let now = Instant::ZERO;
/// let mut client = Client::new(config, now);
/// let lock = client.add(now, Mutex::new(ZkPath::new("/app/lock").unwrap(), LockConfig::new(7)));
/// client.with(now, lock, |m, now| m.acquire(now, None)).unwrap().unwrap();
/// // ... then the drive loop, until `poll_event` gives the lock's `Acquired`.
/// ```
///
/// A recipe's outputs (ops, events, deadline) change only when it gets an
/// input, so the client tracks which recipes got one since they were last
/// drained (`dirty`) and keeps their deadlines in an ordered index. Each
/// input then costs the recipes it touched, not every recipe: with thousands
/// of queued lock handles on one session, scanning them all per reply made
/// a queue's drain quadratic. The outputs and their order are the same as a
/// full scan in id order would give.
pub struct Client<M: Machines = CoreMachine> {
    /// Which client this is, for its handles.
    identity: usize,
    config: SessionConfig,
    /// Start a new session by itself after an expiry.
    renew: bool,
    /// Credentials added with [`Client::add_auth`], for renewed sessions.
    auth: alloc::vec::Vec<(alloc::string::String, Bytes)>,
    generation: u64,
    session: Session,
    /// Boxed: `M` is as large as its largest recipe (a read-write lock or a
    /// semaphore), and a map node keeps room for eleven of them, so a
    /// thousand mutexes stored inline cost a read-write lock's size each
    /// and more.
    recipes: BTreeMap<RecipeId, alloc::boxed::Box<M>>,
    /// The next recipe id, shared with the [`Reserver`]s.
    next_recipe: Arc<AtomicU64>,
    /// Where each request's reply goes, by ascending id: requests are
    /// numbered in order and answered in order, so a reply's route is almost
    /// always the first, and the queue keeps its memory between requests.
    routes: VecDeque<(RequestId, Route)>,
    events: VecDeque<ClientEvent>,
    /// Recipes that got an input since their outputs were last drained (in
    /// any order, repeats allowed: sorted and deduplicated when drained).
    dirty: Vec<RecipeId>,
    /// An empty vector that keeps its memory, swapped with `dirty` to drain it.
    drained: Vec<RecipeId>,
    /// Every recipe's `poll_timeout`, ordered by time; and by recipe.
    deadlines: BTreeSet<(Instant, RecipeId)>,
    deadline_of: BTreeMap<RecipeId, Instant>,
    /// Recipes to remove once quiescent ([`Client::retire`]): checked when
    /// they get an input, so a thousand handles dropped at once cost no scan
    /// of all of them per input.
    retiring: BTreeSet<RecipeId>,
    /// Recipes to report once quiescent ([`Client::notify_quiescent`]),
    /// checked the same way.
    awaited: BTreeSet<RecipeId>,
    /// Recipes that hold something ([`Recipe::holds`](crate::Recipe::holds)),
    /// kept as they are drained: while any does, the session confirms the
    /// quorum.
    holding: BTreeSet<RecipeId>,
}

impl<M: Machines> core::fmt::Debug for Client<M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Client")
            .field("session", &self.session)
            .field("recipes", &self.recipes.len())
            .field("routes", &self.routes.len())
            .finish()
    }
}

impl Client {
    /// A client whose session dials its first host at `now`, for the
    /// recipes of this crate ([`CoreMachine`]).
    pub fn new(config: SessionConfig, now: Instant) -> Client {
        Client::for_machines(config, now)
    }
}

impl<M: Machines> Client<M> {
    /// A client for the recipe set `M` (an embedder's own recipes, see
    /// [`Machines`]) whose session dials its first host at `now`.
    pub fn for_machines(config: SessionConfig, now: Instant) -> Client<M> {
        Client {
            identity: NEXT_CLIENT.fetch_add(1, Ordering::Relaxed),
            session: Session::new(config.clone(), now),
            config,
            renew: false,
            auth: alloc::vec::Vec::new(),
            generation: 0,
            recipes: BTreeMap::new(),
            next_recipe: Arc::new(AtomicU64::new(0)),
            routes: VecDeque::new(),
            events: VecDeque::new(),
            dirty: Vec::new(),
            drained: Vec::new(),
            deadlines: BTreeSet::new(),
            deadline_of: BTreeMap::new(),
            retiring: BTreeSet::new(),
            awaited: BTreeSet::new(),
            holding: BTreeSet::new(),
        }
    }

    /// A registered recipe, for inspection.
    pub fn recipe(&self, id: RecipeId) -> Option<&dyn ClientRecipe> {
        self.recipes.get(&id).map(|r| r.recipe())
    }

    /// The underlying session, for its status and ids.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Whether any recipe holds something, so the session confirms the
    /// quorum ([`Session::lease`]).
    pub fn is_holding(&self) -> bool {
        !self.holding.is_empty()
    }

    /// Whether a drive loop should apply more commands now: fewer than
    /// [`IN_FLIGHT_WINDOW`] requests are in flight. A loop that holds its
    /// commands back while this is false takes them up again as replies
    /// come in (requests in flight are answered, or failed when the
    /// connection goes); the bound is soft, as one command may send several
    /// requests, and requests queued while disconnected do not count.
    pub fn has_room(&self) -> bool {
        self.session.in_flight() < IN_FLIGHT_WINDOW
    }

    /// How many times the session was replaced after an expiry.
    pub fn renewals(&self) -> u64 {
        self.generation
    }

    // ---- commands ------------------------------------------------------------------

    /// Whether the client starts a new session by itself after an expiry
    /// (off by default here; the async driver turns it on). Every recipe is
    /// told `Lost` first, then the new session begins at once; its
    /// reconnect backoff paces the attempts while no server answers.
    pub fn set_renew_session(&mut self, renew: bool) {
        self.renew = renew;
    }

    /// Replaces an expired session with a new one (Curator does the same after
    /// LOST). Recipes keep their state: they learn of the new session through
    /// `Connected`, and nodes of the old one are deleted, never reused.
    /// Credentials added with [`Client::add_auth`] are carried over.
    pub fn restart_session(&mut self, now: Instant) -> Result<(), ApiMisuse> {
        if self.session.status() != SessionStatus::Expired {
            return Err(ApiMisuse::SessionNotExpired);
        }
        self.replace_session(now);
        self.pump(now);
        Ok(())
    }

    /// Replaces the servers the session dials with the hosts of
    /// `servers`, keeping the session and the chroot (see
    /// [`Session::update_hosts`]: a connection to a removed host moves to a
    /// remaining one). For callers that learn of membership changes another
    /// way than [`SessionConfig::follow_ensemble`]. A chroot in `servers`
    /// must be the client's own (or none): a different one is
    /// [`ApiMisuse::ChrootChanged`] and nothing changes. Returns whether
    /// the list changed (false when it names the hosts in use already). A
    /// renewed session starts from the list in use, not the original one.
    pub fn update_servers(&mut self, now: Instant, servers: &ConnectString) -> Result<bool, ApiMisuse> {
        if servers.chroot().is_some_and(|c| Some(c) != self.config.connect_string.chroot()) {
            return Err(ApiMisuse::ChrootChanged);
        }
        if self.session.is_ended() {
            return Err(ApiMisuse::SessionEnded);
        }
        let changed = self.session.update_hosts(now, servers.hosts().to_vec());
        self.pump(now);
        Ok(changed)
    }

    fn replace_session(&mut self, now: Instant) {
        self.generation += 1;
        let mut config = self.config.clone();
        // The membership may have changed since the client began.
        if let Some(current) = config.connect_string.with_hosts(self.session.hosts().to_vec()) {
            config.connect_string = current;
        }
        config.seed = Rng::fork(config.seed, self.generation);
        // The client had a session: a renewed one keeps trying through an
        // outage, however long, as a reconnect does.
        config.give_up_unreachable = false;
        let mut old = core::mem::replace(&mut self.session, Session::new(config, now));
        self.session.inherit_timings(&mut old);
        for (scheme, auth) in &self.auth {
            let _ = self.session.add_auth(now, scheme, auth.clone());
        }
        self.routes.clear();
        self.dirty.extend(self.recipes.keys().copied());
    }

    /// Registers a recipe and sends whatever it already wants to send;
    /// returns its typed handle, so commands reach it through
    /// [`Client::with`] without naming its type again.
    pub fn add<R: Machine<M>>(&mut self, now: Instant, recipe: R) -> Handle<R> {
        let reserved = self.reserver().reserve::<R>();
        let handle = reserved.handle();
        self.insert(now, reserved.with(recipe));
        handle
    }

    /// Reserves handles of this client from elsewhere (a handle made on
    /// the caller's side of a driver; see [`Reserved`]).
    pub fn reserver(&self) -> Reserver {
        Reserver { client: self.identity, next: self.next_recipe.clone() }
    }

    /// Registers a recipe under the handle reserved for it, as
    /// [`Client::add`] does. Fails with [`ApiMisuse::ForeignHandle`] (the
    /// recipe is not added) if the reservation came from another client.
    pub fn add_new(&mut self, now: Instant, recipe: NewRecipe<M>) -> Result<RecipeId, ApiMisuse> {
        if recipe.client != self.identity {
            return Err(ApiMisuse::ForeignHandle);
        }
        let id = recipe.id;
        self.insert(now, recipe);
        Ok(id)
    }

    /// Stores a recipe under its (reserved, so unused) id.
    fn insert(&mut self, now: Instant, recipe: NewRecipe<M>) {
        let id = recipe.id;
        self.recipes.insert(id, alloc::boxed::Box::new(recipe.machine));
        self.dirty.push(id);
        self.pump(now);
    }

    /// Runs a command on the recipe behind `handle`, then sends the ops it
    /// queued. Fails with [`ApiMisuse::UnknownRecipe`] if the recipe was
    /// removed, and with [`ApiMisuse::ForeignHandle`] if `handle` came from
    /// another client; the command does not run then.
    pub fn with<R: Machine<M>, T>(
        &mut self,
        now: Instant,
        handle: Handle<R>,
        f: impl FnOnce(&mut R, Instant) -> T,
    ) -> Result<T, ApiMisuse> {
        if handle.client != self.identity {
            return Err(ApiMisuse::ForeignHandle);
        }
        let machine = self.recipes.get_mut(&handle.id).ok_or(ApiMisuse::UnknownRecipe(handle.id.0))?;
        let recipe = R::from_machine(&mut **machine).ok_or(ApiMisuse::ForeignHandle)?;
        let out = f(recipe, now);
        self.dirty.push(handle.id);
        self.pump(now);
        Ok(out)
    }

    /// The recipe behind `handle`, to read (its queries: a ticket's status,
    /// a lease's). Fails as [`Client::with`] does.
    pub fn get<R: Machine<M>>(&self, handle: Handle<R>) -> Result<&R, ApiMisuse> {
        if handle.client != self.identity {
            return Err(ApiMisuse::ForeignHandle);
        }
        let machine = self.recipes.get(&handle.id).ok_or(ApiMisuse::UnknownRecipe(handle.id.0))?;
        R::from_machine_ref(&**machine).ok_or(ApiMisuse::ForeignHandle)
    }

    /// Unregisters a recipe and returns it. Replies still due to it are
    /// dropped and its watches forgotten. Whatever it owned on the server is
    /// the caller's to clean up first (release before removing).
    ///
    /// Costs O(log n): its routes and `dirty` entries stay behind and are
    /// dropped when met (ids are never reused, so nothing else can match
    /// them); a scan of every request in flight per removal made dropping
    /// n handles with n deletes in flight quadratic.
    pub fn remove_recipe(&mut self, id: RecipeId) -> Option<M> {
        let recipe = self.recipes.remove(&id)?;
        self.retiring.remove(&id);
        self.holding.remove(&id);
        self.awaited.remove(&id);
        if let Some(at) = self.deadline_of.remove(&id) {
            self.deadlines.remove(&(at, id));
        }
        self.session.remove_watcher(WatcherId(id.0));
        Some(*recipe)
    }

    /// Removes the recipe once it is quiescent (owes the server nothing),
    /// at once if it already is, and then reports
    /// [`ClientEvent::Retired`]. Commands still reach it until then. Fails
    /// with [`ApiMisuse::UnknownRecipe`] if it was removed already.
    pub fn retire(&mut self, now: Instant, id: RecipeId) -> Result<(), ApiMisuse> {
        if !self.recipes.contains_key(&id) {
            return Err(ApiMisuse::UnknownRecipe(id.0));
        }
        self.retiring.insert(id);
        self.dirty.push(id);
        self.pump(now);
        Ok(())
    }

    /// Reports [`ClientEvent::Quiescent`] once the recipe is quiescent (owes
    /// the server nothing), at once if it already is; once per call. Fails
    /// with [`ApiMisuse::UnknownRecipe`] if it was removed (nothing is
    /// reported then). Removing the recipe first cancels the notice.
    pub fn notify_quiescent(&mut self, now: Instant, id: RecipeId) -> Result<(), ApiMisuse> {
        if !self.recipes.contains_key(&id) {
            return Err(ApiMisuse::UnknownRecipe(id.0));
        }
        self.awaited.insert(id);
        self.dirty.push(id);
        self.pump(now);
        Ok(())
    }

    /// Sends a plain request; its reply comes as [`ClientEvent::Reply`], and a
    /// watch it leaves fires as [`ClientEvent::Watch`].
    pub fn submit(&mut self, now: Instant, op: Op) -> Result<RequestId, ApiMisuse> {
        let id = self.session.submit(now, op, Some(PLAIN_WATCHER))?;
        self.routes.push_back((id, Route::Plain));
        self.pump(now);
        Ok(id)
    }

    /// Adds credentials, replayed after every reconnect.
    pub fn add_auth(&mut self, now: Instant, scheme: &str, auth: Bytes) -> Result<(), ApiMisuse> {
        self.session.add_auth(now, scheme, auth.clone())?;
        self.auth.push((alloc::string::String::from(scheme), auth));
        Ok(())
    }

    /// Closes the session.
    pub fn close(&mut self, now: Instant) {
        self.session.close(now);
        self.pump(now);
    }

    // ---- inputs --------------------------------------------------------------------

    /// See [`Session::handle_connected`].
    pub fn handle_connected(&mut self, now: Instant) {
        self.session.handle_connected(now);
        self.pump(now);
    }

    /// See [`Session::handle_bytes`]. Events produced before an error are
    /// still delivered.
    pub fn handle_bytes(&mut self, now: Instant, buf: &mut BytesMut) -> Result<(), SessionError> {
        let result = self.session.handle_bytes(now, buf);
        self.pump(now);
        result
    }

    /// See [`Session::handle_disconnected`].
    pub fn handle_disconnected(&mut self, now: Instant) {
        self.session.handle_disconnected(now);
        self.pump(now);
    }

    /// Fires the session's and every recipe's due timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.session.handle_timeout(now);
        let mut due: alloc::vec::Vec<RecipeId> =
            self.deadlines.iter().take_while(|(at, _)| *at <= now).map(|(_, id)| *id).collect();
        due.sort_unstable();
        for id in due {
            if let Some(recipe) = self.recipes.get_mut(&id).map(|m| m.recipe_mut()) {
                if recipe.poll_timeout().is_some_and(|t| t <= now) {
                    recipe.handle_timeout(now);
                }
                self.dirty.push(id);
            }
        }
        self.pump(now);
    }

    // ---- outputs -------------------------------------------------------------------

    /// See [`Session::poll_io`].
    #[must_use]
    pub fn poll_io(&mut self) -> Option<IoCommand> {
        self.session.poll_io()
    }

    /// See [`Session::poll_transmit`].
    #[must_use]
    pub fn poll_transmit(&mut self, dst: &mut BytesMut) -> usize {
        self.session.poll_transmit(dst)
    }

    /// The next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// The next answered request's timing (see [`Session::poll_timing`]);
    /// `None` unless [`SessionConfig::request_timings`] is on. A session
    /// renewed after an expiry hands its undrained timings to the new one.
    ///
    /// [`SessionConfig::request_timings`]: crate::SessionConfig::request_timings
    #[must_use]
    pub fn poll_timing(&mut self) -> Option<crate::RequestTiming> {
        self.session.poll_timing()
    }

    /// The earliest of the session's and the recipes' deadlines.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let recipes = self.deadlines.first().map(|(at, _)| *at);
        match (recipes, self.session.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ---- mechanism -----------------------------------------------------------------

    /// Routes session events and sends recipes' ops until neither has more.
    fn pump(&mut self, now: Instant) {
        loop {
            let mut progressed = false;
            while let Some(event) = self.session.poll_event() {
                progressed = true;
                self.route(now, event);
            }
            // In id order, as a scan of every recipe would go; the others
            // have nothing to say.
            let mut batch = core::mem::take(&mut self.drained);
            core::mem::swap(&mut batch, &mut self.dirty);
            batch.sort_unstable();
            batch.dedup();
            for &rid in &batch {
                let Some(recipe) = self.recipes.get_mut(&rid).map(|m| m.recipe_mut()) else { continue };
                while let Some(op) = recipe.poll_op() {
                    progressed = true;
                    match self.session.submit(now, op.op, Some(WatcherId(rid.0))) {
                        Ok(req) => {
                            self.routes.push_back((req, Route::Recipe(rid, op.id)));
                        }
                        Err(_) => {
                            let error = self.session.status().end_error().unwrap_or(RequestError::Closed);
                            recipe.handle_reply(now, op.id, Err(error));
                        }
                    }
                }
                while let Some(event) = recipe.poll_event() {
                    progressed = true;
                    self.events.push_back(ClientEvent::Recipe { recipe: rid, event });
                }
                let at = recipe.poll_timeout();
                if recipe.holds() {
                    self.holding.insert(rid);
                } else {
                    self.holding.remove(&rid);
                }
                if (self.retiring.contains(&rid) || self.awaited.contains(&rid)) && recipe.is_quiescent() {
                    if self.awaited.remove(&rid) {
                        self.events.push_back(ClientEvent::Quiescent(rid));
                    }
                    if self.retiring.contains(&rid) {
                        self.remove_recipe(rid);
                        self.events.push_back(ClientEvent::Retired(rid));
                        continue;
                    }
                }
                if self.deadline_of.get(&rid).copied() != at {
                    if let Some(old) = self.deadline_of.remove(&rid) {
                        self.deadlines.remove(&(old, rid));
                    }
                    if let Some(at) = at {
                        self.deadline_of.insert(rid, at);
                        self.deadlines.insert((at, rid));
                    }
                }
            }
            batch.clear();
            crate::slack::shrink_vec(&mut batch);
            self.drained = batch;
            // Turning confirmation on may send a sync: nothing a recipe waits for.
            self.session.set_confirming(now, !self.holding.is_empty());
            if !progressed {
                crate::slack::shrink_vec(&mut self.dirty);
                crate::slack::shrink_deque(&mut self.routes);
                crate::slack::shrink_deque(&mut self.events);
                return;
            }
        }
    }

    /// Removes and returns the route of request `id` (the first one, but
    /// for replies the session dropped).
    fn take_route(&mut self, id: RequestId) -> Option<Route> {
        if self.routes.front().is_some_and(|(first, _)| *first == id) {
            return self.routes.pop_front().map(|(_, route)| route);
        }
        let at = self.routes.binary_search_by_key(&id, |(r, _)| *r).ok()?;
        self.routes.remove(at).map(|(_, route)| route)
    }

    fn route(&mut self, now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::State(state) => {
                for recipe in self.recipes.values_mut() {
                    recipe.recipe_mut().handle_session(now, state);
                }
                self.dirty.extend(self.recipes.keys().copied());
                self.events.push_back(ClientEvent::State(state));
                if state == ConnectionState::Lost && self.renew {
                    // Every recipe has been told; ops they queue meanwhile go
                    // to the new session.
                    self.replace_session(now);
                }
            }
            SessionEvent::Reply { id, result } => match self.take_route(id) {
                Some(Route::Plain) => self.events.push_back(ClientEvent::Reply { id, result }),
                Some(Route::Recipe(rid, op)) => {
                    if let Some(recipe) = self.recipes.get_mut(&rid) {
                        recipe.recipe_mut().handle_reply(now, op, result);
                        self.dirty.push(rid);
                    }
                }
                None => {}
            },
            SessionEvent::Watch { watcher, event } => {
                if watcher == PLAIN_WATCHER {
                    self.events.push_back(ClientEvent::Watch(event));
                } else if let Some(recipe) = self.recipes.get_mut(&RecipeId(watcher.0)) {
                    recipe.recipe_mut().handle_watch(now, &event);
                    self.dirty.push(RecipeId(watcher.0));
                }
            }
        }
    }
}
