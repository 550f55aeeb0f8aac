//! `LockCore`: Curator's `LockInternals` loop as a state machine. The mutex,
//! both read-write halves and the semaphore's internal lock run on it.
//!
//! One acquire: protected create (with lazy container parents and recovery of
//! a create whose reply was lost), list the children, apply the pure rule from
//! [`policy`](super::policy), then either hold or watch the node the rule names
//! with getData and wait. Any wake-up re-lists. A node whose session was lost is
//! never trusted again (CURATOR-604); an abandoned node is deleted until the
//! server says OK or NoNode, or the session ends.

mod create;
mod events;
mod hold;
mod janitor;
mod listing;
mod node;
mod rare;

pub(crate) use node::Node;
use rare::Rare;

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use bytes::Bytes;
use zoolock_wire::{CreateMode, CreateRequest, ErrorCode, EventType, OpCode, Request, Response, WatcherType};

use super::config::{LockConfig, OpPlan, SharedLockConfig};
use super::kit::Outbox;
use super::lock_event::LockEvent;
use super::naming::LockName;
use super::policy::{self, NodeName, SortKey, Verdict};
use crate::error::{ApiMisuse, RequestError};
use crate::op::Op;
use crate::path::ZkPath;
use crate::recipe::{FencingToken, OpId, Recipe, RecipeOp};
use crate::rng::Rng;
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

/// The bytes a revoker writes into a holder's node.
pub const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// How many of the nodes nearest ahead of ours a waiter keeps from its last
/// listing for the fast handoff (standard rule).
const LISTING_WINDOW: usize = 4;

/// Which pure rule decides ownership.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Index below `max_leases` among all children.
    Standard { max_leases: usize },
    /// No write node ahead of ours.
    Read,
    /// At most `max_leases` children in all, ours included (semaphore
    /// leases). Waiting is a child watch on the base path, not a predecessor
    /// watch, and the watch is checked off once the lease is held.
    Count { max_leases: usize },
}

/// How the node name is formed after the protection prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `_c_<uuid>-<name>` + server sequence, EPHEMERAL_SEQUENTIAL.
    Sequential,
    /// `_c_<uuid>-<name><suffix>`, EPHEMERAL: the read node of a downgrade
    /// reuses the held write node's sequence (Curator 5.5+, CURATOR-621).
    Fixed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CreateStep {
    /// create2 in flight.
    Sent,
    /// Checking ancestor `idx` with exists: top-down with the Curator plan
    /// (5.4's mkdirs), bottom-up with the others (5.7.1, CURATOR-715:
    /// an ancestor that exists is never read, so a lock under a parent
    /// the client may not read still works where exists checks READ).
    Probe(usize),
    /// Creating ancestor `idx`.
    MakeParent(usize),
    /// The create's reply was lost; waiting to reconnect before the lookup.
    AwaitReconnect,
    /// getChildren(parent) in flight, looking for our protection prefix.
    Recover,
    /// Adopted a node found by prefix; reading its Stat for the token.
    AdoptStat,
}

#[derive(Debug)]
struct Create {
    /// The path to create (a sequential prefix, or the fixed path).
    target: ZkPath,
    /// How long the protection prefix (`_c_<uuid>-`) that begins the
    /// target's name is: 0 unprotected.
    prefix_len: usize,
    step: CreateStep,
    made_parents: bool,
    adopted: Option<ZkPath>,
}

impl Create {
    /// The protection prefix (empty when unprotected).
    fn prefix(&self) -> &str {
        self.target.name().get(..self.prefix_len).unwrap_or("")
    }
}

/// What a waiting node's watch is on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Watched {
    /// The base path's children (the count rule: any lease may go).
    Children,
    /// The node the rule names, by name under the base path.
    Pred(String),
}

/// What tells a holder that its node was deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeldWatch {
    /// A watch on the node itself (exists, or a revocable node's getData),
    /// armed or on its way.
    Node,
    /// The child watch on the base path that the granting listing armed:
    /// it fires on any change of the children, ours included.
    Children,
}

#[derive(Debug)]
enum State {
    Idle,
    Creating(Create),
    /// getChildren2 in flight.
    Listing {
        node: Node,
    },
    /// getData(pred, watch) in flight.
    Watching {
        node: Node,
        pred: String,
        fired: bool,
    },
    /// A watch armed on what the rule waits for.
    Waiting {
        node: Node,
        on: Watched,
    },
    /// Pausing before a re-create with a new UUID.
    RetryPause {
        until: Instant,
    },
    Held {
        node: Node,
    },
    /// Curator plan: delete in flight; Released follows its reply.
    Releasing {
        path: ZkPath,
    },
}

/// What an op in flight is for. No variant carries data, so that the
/// entries of [`LockCore::expected`] stay small: a delete's path is found
/// by its op in [`LockCore::deleting`], an orphan lookup's prefix in
/// [`Rare::orphans`], a look-ahead watch's node in [`Rare::look_ops`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Create,
    /// getChildren2 of the base path; `watch`: with a child watch.
    List {
        watch: bool,
    },
    Probe,
    MakeParent,
    /// The Pipelined plan's container create of the base path, sent ahead
    /// of a handle's first create (see [`LockCore::begin_create`]).
    EnsureBase,
    Recover,
    AdoptStat,
    WatchPred,
    /// getData(watch) of the look-ahead node.
    WatchLook,
    RevokeRead,
    /// exists(watch) on our held node: its deletion ends the hold.
    WatchHeld,
    Verify,
    Delete,
    /// getChildren of the base path for an abandoned create's protection prefix.
    FindOrphans,
    CheckWatches,
}

/// The lock loop. Not a [`Recipe`](crate::Recipe) itself: wrappers add
/// reentrancy, revocation commands and their own events.
///
/// Sized for thousands per process: the settings are shared
/// ([`SharedLockConfig`]), and what an uncontended lock never uses is in
/// [`Rare`], made on first use.
#[derive(Debug)]
pub(crate) struct LockCore {
    config: Arc<LockConfig>,
    base: ZkPath,
    /// The node name, when not [`LockConfig::name`] (the read-write halves'
    /// and the semaphore's fixed names); `key` is the sort it implies (the
    /// read-write halves share one key for two names).
    fixed_name: Option<&'static LockName>,
    key: SortKey,
    rule: Rule,
    rng: Rng,
    state: State,
    /// Bumped at every new attempt, so replies to an abandoned one are ignored.
    attempt: u64,
    /// Ops in flight: (op, attempt, purpose). A few at a time, so a small
    /// vector: a map's node allocation per recipe adds up with thousands of
    /// waiting lock handles.
    expected: Vec<(OpId, u64, Purpose)>,
    deadline: Option<Instant>,
    /// Paths under guaranteed delete, sorted, each with its delete in
    /// flight.
    deleting: Vec<(ZkPath, Option<OpId>)>,
    rare: Option<Box<Rare>>,
    out: Outbox<LockEvent>,
    retries: u32,
    /// Read rule: this owner holds the write half (downgrade short-circuit).
    holds_write: bool,
    /// Revocable: empty data, a watch on our own node.
    revocable: bool,
    /// A vanished own node (or a NoNode create) ends the attempt with the
    /// verdict (`Failed(NodeVanished)` or the server's NoNode) instead of a
    /// re-create in place: the semaphore's lease core, whose retry must
    /// also release the internal mutex.
    defer_missing: bool,
    /// The fast handoff is off whatever the config says (the write half).
    no_fast_handoff: bool,
    /// The server answered Unimplemented to a container create: parents
    /// are persistent from then on, whatever the config says.
    no_containers: bool,
    /// The revocation watch on our node is armed server-side.
    revoke_armed: bool,
    /// While held: what tells us of the held node's deletion.
    held_watch: HeldWatch,
    /// The acquire under way has waited (a listing did not grant it).
    waited: bool,
    /// This attempt's node has an exists watch armed (or on its way),
    /// sent when it started to wait: its grant then needs no request.
    own_watched: bool,
    /// The last acquire was granted by its first listing: the next one
    /// lists with a child watch, which then serves as the held node's watch
    /// at no cost (see [`LockCore::child_watch_wanted`]).
    quiet: bool,
    /// The Pipelined plan sent its one `createContainer(base)` ahead of a
    /// create already.
    base_ensured: bool,
}

impl LockCore {
    /// A core on `base` named `fixed_name` (`None`: the config's name),
    /// sorted by `key`, holding by `rule`.
    pub(crate) fn new(
        config: SharedLockConfig,
        base: ZkPath,
        fixed_name: Option<&'static LockName>,
        key: SortKey,
        rule: Rule,
    ) -> Self {
        LockCore {
            rng: Rng::with_seed(config.seed()),
            config: config.into_shared(),
            base,
            fixed_name,
            key,
            rule,
            state: State::Idle,
            attempt: 0,
            expected: Vec::new(),
            deadline: None,
            deleting: Vec::new(),
            rare: None,
            out: Outbox::default(),
            retries: 0,
            holds_write: false,
            revocable: false,
            defer_missing: false,
            no_fast_handoff: false,
            no_containers: false,
            revoke_armed: false,
            held_watch: HeldWatch::Node,
            waited: false,
            own_watched: false,
            quiet: true,
            base_ensured: false,
        }
    }

    /// The node name.
    fn name(&self) -> &LockName {
        self.fixed_name.unwrap_or(&self.config.name)
    }

    /// Containers for missing parents (unless the server has none).
    fn container_parents(&self) -> bool {
        self.config.container_parents && !self.no_containers
    }

    pub(crate) fn base(&self) -> &ZkPath {
        &self.base
    }

    /// Another core of the same handle on this base sent (or is sending)
    /// the Pipelined plan's `createContainer(base)`: this one sends none.
    pub(crate) fn assume_base(&mut self) {
        self.base_ensured = true;
    }

    /// Our node while held.
    pub(crate) fn held(&self) -> Option<&Node> {
        match &self.state {
            State::Held { node } => Some(node),
            _ => None,
        }
    }

    /// Our node while the acquire waits for it (listing, watching or
    /// waiting).
    fn waiting_node(&self) -> Option<&Node> {
        match &self.state {
            State::Listing { node } | State::Watching { node, .. } | State::Waiting { node, .. } => Some(node),
            _ => None,
        }
    }

    /// Our waiting node is gone: a watch in flight (or fired) makes the
    /// acquire look again, a wait looks again now, and a listing on its way
    /// will show it missing. Never granted through the fast handoff.
    fn waiting_node_gone(&mut self) {
        self.own_watched = false;
        match &mut self.state {
            State::Watching { fired, .. } => *fired = true,
            State::Waiting { node, .. } => {
                let node = node.clone();
                self.relist(node);
            }
            _ => {}
        }
    }

    /// The node of the hold last reported `Lost` (once).
    pub(crate) fn take_lost(&mut self) -> Option<ZkPath> {
        let lost = self.rare.as_mut()?.lost.take();
        self.tidy();
        lost
    }

    /// Held nodes are watched ([`LockConfig::watch_held`]).
    pub(crate) fn watches_held(&self) -> bool {
        self.config.watch_held
    }

    pub(crate) fn is_idle(&self) -> bool {
        matches!(self.state, State::Idle)
    }

    /// True while an acquire is under way (not idle, not held, not releasing).
    pub(crate) fn is_acquiring(&self) -> bool {
        !matches!(self.state, State::Idle | State::Held { .. } | State::Releasing { .. })
    }

    /// Count rule: how many children the last listing held, ours included.
    pub(crate) fn listed(&self) -> Option<usize> {
        self.rare().listed
    }

    /// Count rule: the limit in force when the held node was granted.
    pub(crate) fn granted_under(&self) -> Option<usize> {
        self.held().and(self.rare().granted_under)
    }

    /// Count rule: a new limit (the semaphore was resized). A waiter lists
    /// again and decides by it, as Curator's `notifyAll` on a count change.
    pub(crate) fn set_max_leases(&mut self, max_leases: usize) {
        let Rule::Count { max_leases: old } = &mut self.rule else { return };
        *old = max_leases;
        if let State::Waiting { node, .. } = &self.state {
            let node = node.clone();
            self.relist(node);
        }
    }

    /// Work still owed to the server: deletes or orphan lookups.
    pub(crate) fn has_cleanup(&self) -> bool {
        !self.deleting.is_empty() || !self.rare().orphans.is_empty()
    }

    /// Revocable from now on: empty node data and a watch on our own node.
    /// Refused once an acquire has begun (its node was made without it).
    pub(crate) fn make_revocable(&mut self) -> Result<(), ApiMisuse> {
        if !self.is_idle() {
            return Err(ApiMisuse::RevocableAfterAcquire);
        }
        self.revocable = true;
        Ok(())
    }

    /// Reports `event` behind what the core has already reported (the
    /// owner's reentrant `Acquired`).
    pub(crate) fn emit(&mut self, event: LockEvent) {
        self.out.emit(event);
    }

    /// Revocable or not, at construction.
    pub(crate) fn with_revocable(mut self, revocable: bool) -> LockCore {
        self.revocable = revocable;
        self
    }

    /// Leaves a vanished node's retry to the owner (the `defer_missing` field).
    pub(crate) fn deferring_missing(mut self) -> LockCore {
        self.defer_missing = true;
        self
    }

    /// Never takes the fast handoff, whatever the config says (the
    /// read-write lock's write half).
    pub(crate) fn without_fast_handoff(mut self) -> LockCore {
        self.no_fast_handoff = true;
        self
    }

    /// Read rule: whether this owner holds the write half, which the read
    /// half may then take at once (a downgrade).
    pub(crate) fn set_holds_write(&mut self, holds_write: bool) {
        self.holds_write = holds_write;
    }

    // ---- commands ------------------------------------------------------------------

    /// Starts an acquire; `deadline` bounds the wait (Curator's semantics: a
    /// free lock is taken even when the deadline has passed).
    pub(crate) fn acquire(&mut self, now: Instant, deadline: Option<Instant>, shape: Shape) -> Result<(), ApiMisuse> {
        if !self.is_idle() {
            return Err(ApiMisuse::AcquireInProgress);
        }
        self.deadline = deadline;
        self.retries = 0;
        self.waited = false;
        if let Some(rare) = self.rare.as_mut() {
            rare.queued = None;
        }
        if shape != Shape::Sequential || self.rare.is_some() {
            self.rare_mut().shape = shape;
        }
        self.begin_create(now);
        self.tidy();
        Ok(())
    }

    /// Gives the lock up: delete our node (guaranteed). In the Curator plan
    /// `Released` follows the delete's reply; in the Pipelined plan it is
    /// reported at once.
    pub(crate) fn release(&mut self) -> Result<(), ApiMisuse> {
        let State::Held { node } = core::mem::replace(&mut self.state, State::Idle) else {
            return Err(ApiMisuse::NotHeld);
        };
        if let Some(rare) = self.rare.as_mut() {
            rare.hold_until = None;
        }
        if self.revoke_armed {
            self.revoke_armed = false;
            self.send(Op::check_watches(&node.path, WatcherType::ANY), Purpose::CheckWatches);
        }
        match self.config.plan {
            OpPlan::Curator | OpPlan::Curator57 => {
                self.start_delete(node.path.clone());
                self.state = State::Releasing { path: node.path };
            }
            OpPlan::Pipelined => {
                self.start_delete(node.path);
                self.out.emit(LockEvent::Released);
            }
        }
        self.tidy();
        Ok(())
    }

    /// Abandons an acquire in progress (cancellation): whatever node it made
    /// or may have made is deleted.
    pub(crate) fn cancel(&mut self, _now: Instant) {
        match core::mem::replace(&mut self.state, State::Idle) {
            State::Creating(c) => {
                self.remember_orphan(c.prefix());
                if let Some(path) = c.adopted {
                    self.start_delete(path);
                }
                if !matches!(c.step, CreateStep::AwaitReconnect) {
                    // Look now: the create may already have landed.
                    self.find_orphans();
                }
            }
            State::Listing { node } | State::Watching { node, .. } | State::Waiting { node, .. } => {
                self.start_delete(node.path)
            }
            State::Held { node } => self.start_delete(node.path),
            // Pausing before a re-create: no node of ours exists (the vanished
            // one is already being deleted), and none may be created now.
            State::RetryPause { .. } => {}
            other => self.state = other,
        }
        self.attempt += 1;
        self.tidy();
    }

    // ---- mechanism -----------------------------------------------------------------

    /// Our predecessor `pred` is gone (its deletion fired, or the getData
    /// that was to watch it answered NoNode). With the fast handoff, if the
    /// last listing minus `pred` grants us the lock, take it without a
    /// re-list. Otherwise re-list (or wait for the look-ahead's listing, on
    /// its way): the nodes still ahead in a remembered listing are most
    /// likely gone too (in a FIFO queue a node goes once it has held), so
    /// watching the next of them would mostly cost a getData answered NoNode
    /// before the re-list anyway.
    fn pred_gone(&mut self, now: Instant, node: Node, pred: &str) {
        if !self.fast_handoff_allowed() {
            return self.relist(node);
        }
        let rare = self.rare_mut();
        rare.last_listing.retain(|c| c.as_str() != pred);
        let listing = core::mem::take(&mut rare.last_listing);
        let (keyed, truncated, queued) = (rare.listing_keyed, rare.listing_truncated, rare.queued);
        let granted = !(truncated && self.window_exhausted(&listing, node.name()))
            && self.verdict(&listing, node.name()) == Verdict::Acquired;
        if granted {
            // The kept listing has no nodes behind ours: count the one that
            // went off the last total.
            let total = queued.map_or(listing.len(), |(_, t)| t.saturating_sub(1));
            self.evaluate_listing(
                now,
                node,
                listing,
                listing::Listed { keyed, truncated, total, armed: None, watched: false },
            );
        } else if self.list_in_flight() {
            // Sent after the predecessor's watch was armed and answered after
            // its deletion was told: that listing no longer has it.
            self.state = State::Listing { node };
        } else {
            self.relist(node);
        }
    }
}

/// The inputs, each followed by [`LockCore::tidy`] in the [`Recipe`] impl.
impl LockCore {
    fn on_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        let Some(at) = self.expected.iter().position(|(id, _, _)| *id == op) else {
            return;
        };
        let (_, attempt, purpose) = self.expected.swap_remove(at);
        if self.expected.is_empty() {
            // Nothing in flight (a held lock): keep no capacity.
            self.expected = Vec::new();
        }
        // Cleanup replies matter whatever attempt they belonged to, and so
        // does whether a look-ahead watch was armed.
        match purpose {
            Purpose::Delete => return self.on_delete(op, result),
            Purpose::WatchLook => return self.on_watch_look(op, result),
            Purpose::FindOrphans => return self.on_find_orphans(op, result),
            Purpose::CheckWatches => return,
            Purpose::RevokeRead => return self.on_revoke_read(attempt == self.attempt, result),
            Purpose::EnsureBase => return self.on_ensure_base(result),
            _ => {}
        }
        if attempt != self.attempt {
            // A reply to an abandoned attempt; a create that landed is an orphan.
            if purpose == Purpose::Create {
                // (A path no server would return cannot be deleted either.)
                if let Ok(Response::Create2 { path, .. }) = result {
                    if let Ok(path) = ZkPath::new(&path) {
                        self.start_delete(path);
                    }
                }
            }
            return;
        }
        match purpose {
            Purpose::Create => self.on_create(now, result),
            Purpose::Probe => self.on_probe(now, result),
            Purpose::MakeParent => self.on_make_parent(now, result),
            Purpose::Recover => self.on_recover(result),
            Purpose::AdoptStat => self.on_adopt_stat(now, result),
            Purpose::List { watch } => self.on_list(now, result, watch),
            Purpose::WatchPred => self.on_watch_pred(now, result),
            Purpose::Verify => self.on_verify(true, result),
            Purpose::WatchHeld => self.on_verify(false, result),
            Purpose::Delete
            | Purpose::FindOrphans
            | Purpose::CheckWatches
            | Purpose::RevokeRead
            | Purpose::EnsureBase
            | Purpose::WatchLook => {}
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        match &self.state {
            State::Held { .. } if self.rare().hold_until.is_some_and(|until| now >= until) => self.expire(),
            State::RetryPause { until } if now >= *until => self.begin_create(now),
            State::Waiting { node, .. } if self.deadline.is_some_and(|d| now >= d) => {
                // Curator runs the loop once more at the deadline.
                let node = node.clone();
                self.relist(node);
            }
            _ => {}
        }
    }
}

/// The inputs and outputs of the one lock queue every lock kind is built on.
impl Recipe for LockCore {
    type Event = LockEvent;

    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        self.on_reply(now, op, result);
        self.tidy();
    }

    fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        self.on_watch(now, event);
        self.tidy();
    }

    fn handle_session(&mut self, _now: Instant, state: ConnectionState) {
        self.on_session(state);
        self.tidy();
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.on_timeout(now);
        self.tidy();
    }

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.out.poll_op()
    }

    fn poll_event(&mut self) -> Option<LockEvent> {
        self.out.poll_event()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match &self.state {
            State::RetryPause { until } => Some(*until),
            State::Waiting { .. } => self.deadline,
            State::Held { .. } => self.rare().hold_until,
            _ => None,
        }
    }

    fn is_quiescent(&self) -> bool {
        self.is_idle() && !self.has_cleanup()
    }

    fn holds(&self) -> bool {
        matches!(self.state, State::Held { .. })
    }
}

impl LockCore {
    fn base_prefix(&self) -> &str {
        if self.base.is_root() { "" } else { self.base.as_str() }
    }

    fn send(&mut self, op: Op, purpose: Purpose) {
        self.send_op(op, purpose);
    }

    /// Sends `op` for `purpose` and returns its id.
    fn send_op(&mut self, op: Op, purpose: Purpose) -> OpId {
        let id = self.out.send(op);
        self.expected.push((id, self.attempt, purpose));
        id
    }

    fn node_data(&self) -> Bytes {
        let data = if self.revocable { Bytes::new() } else { self.config.data.clone() };
        self.config.compression.encode(data)
    }

    /// Semaphore leases list with a child watch; locks list without one.
    fn list_watch(&self) -> bool {
        matches!(self.rule, Rule::Count { .. })
    }

    /// Whether the pipelined listing of a lock's acquire carries a child
    /// watch: when held nodes are watched and the last acquire was not
    /// contended, the listing that grants the lock arms, in the same round
    /// trip, a watch that fires on our node's deletion (as on any change of
    /// the base's children); the hold then needs no exists of its own.
    /// A contended lock lists without it: a waiter would only be told of
    /// every node joining or leaving the queue.
    pub(super) fn child_watch_wanted(&self) -> bool {
        self.watches_held() && self.quiet && !self.revocable && !matches!(self.rule, Rule::Count { .. })
    }

    fn fail(&mut self, error: RequestError) {
        if error == RequestError::SessionExpired {
            self.orphan_create();
        }
        self.state = State::Idle;
        self.attempt += 1;
        self.out.emit(LockEvent::Failed(error));
    }

    /// Leaves the queue: delete our node and report `event`.
    fn abandon_with(&mut self, node: Node, event: LockEvent) {
        self.start_delete(node.path);
        self.state = State::Idle;
        self.attempt += 1;
        self.revoke_armed = false;
        self.out.emit(event);
    }

    /// The lock path or our node vanished (`missing` says which): retry with
    /// a pause, or hand the verdict to the owner that retries itself.
    fn no_node_retry(&mut self, now: Instant, missing: RequestError) {
        if self.defer_missing {
            return self.fail(missing);
        }
        let policy = self.config.retry;
        if self.retries >= policy.max_retries {
            return self.fail(RequestError::RetriesExhausted(policy.max_retries));
        }
        let pause = policy.pause(self.retries, &mut self.rng);
        self.retries += 1;
        self.attempt += 1;
        self.state = State::RetryPause { until: now + pause };
    }
}
