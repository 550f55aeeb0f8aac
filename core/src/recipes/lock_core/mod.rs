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
mod janitor;
mod listing;
mod node;

pub(crate) use node::Node;

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use bytes::Bytes;
use zoolock_wire::{CreateMode, CreateRequest, ErrorCode, EventType, OpCode, Request, Response, WatcherType};

use super::config::{LockConfig, OpPlan};
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
    /// (5.4's mkdirs), bottom-up with the Pipelined plan (5.7.1, CURATOR-715:
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
    prefix: String,
    /// The path to create (a sequential prefix, or the fixed path).
    target: ZkPath,
    step: CreateStep,
    made_parents: bool,
    adopted: Option<ZkPath>,
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

#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// getData(watch) of the look-ahead node, by name.
    WatchLook(String),
    RevokeRead,
    /// exists(watch) on our held node: its deletion ends the hold.
    WatchHeld,
    Verify,
    Delete(ZkPath),
    /// getChildren of the base path for an abandoned create's protection prefix.
    FindOrphans(String),
    CheckWatches,
}

/// The lock loop. Not a [`Recipe`](crate::Recipe) itself: wrappers add
/// reentrancy, revocation commands and their own events.
#[derive(Debug)]
pub(crate) struct LockCore {
    config: LockConfig,
    base: ZkPath,
    /// The node name and its protection; `key` is the sort it implies (the
    /// read-write halves share one key for two names).
    name: LockName,
    key: SortKey,
    rule: Rule,
    /// Read rule: this owner holds the write half (downgrade short-circuit).
    holds_write: bool,
    /// Revocable: empty data, a watch on our own node.
    revocable: bool,
    /// A vanished own node (or a NoNode create) ends the attempt with the
    /// verdict (`Failed(NodeVanished)` or the server's NoNode) instead of a
    /// re-create in place: the semaphore's lease core, whose retry must
    /// also release the internal mutex.
    defer_missing: bool,
    shape: Shape,
    rng: Rng,
    state: State,
    /// Bumped at every new attempt, so replies to an abandoned one are ignored.
    attempt: u64,
    /// Ops in flight: (op, attempt, purpose). A few at a time, so a small
    /// vector: a map's node allocation per recipe adds up with thousands of
    /// waiting lock handles.
    expected: Vec<(OpId, u64, Purpose)>,
    deadline: Option<Instant>,
    retries: u32,
    /// The revocation watch on our node is armed server-side.
    revoke_armed: bool,
    /// Last sorted listing while waiting, for the fast handoff. Standard
    /// rule: only the [`LISTING_WINDOW`] nodes nearest ahead of ours, and
    /// ours (see [`LockCore::keep_window`]).
    last_listing: Vec<NodeName>,
    /// The look-ahead node whose watch this session holds (or is arming)
    /// and has not seen fire, whatever the attempt: forgotten when the watch
    /// fires or fails to arm, when the session ends, or when it stops being
    /// the look-ahead (see [`LockCore::arm_look`]).
    look: Option<String>,
    /// Every name of the full last listing had a Curator sequence key.
    listing_keyed: bool,
    /// Nodes further ahead than the window were left out of `last_listing`.
    listing_truncated: bool,
    /// The last `Queued { position, total }` reported for this acquire.
    queued: Option<(usize, usize)>,
    /// Count rule: how many children the last listing held.
    listed: Option<usize>,
    /// Count rule: the limit the held node was granted under.
    granted_under: Option<usize>,
    /// Paths under guaranteed delete, with whether a delete is in flight.
    deleting: BTreeMap<ZkPath, bool>,
    /// Abandoned creates whose reply was lost: protection prefixes to find
    /// under the base path and delete.
    orphans: BTreeSet<String>,
    /// The node of a hold its deletion made `Lost` (seen by a watch or a
    /// read), for an owner that reports losses per node (the semaphore's
    /// leases): see [`LockCore::take_lost`].
    lost: Option<ZkPath>,
    /// While held: what tells us of the held node's deletion.
    held_watch: HeldWatch,
    /// While held with [`LockConfig::max_hold`]: when the hold expires.
    hold_until: Option<Instant>,
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
    out: Outbox<LockEvent>,
}

impl LockCore {
    pub(crate) fn new(config: LockConfig, base: ZkPath, name: LockName, key: SortKey, rule: Rule) -> Self {
        LockCore {
            rng: Rng::with_seed(config.seed),
            config,
            base,
            name,
            key,
            rule,
            holds_write: false,
            revocable: false,
            defer_missing: false,
            shape: Shape::Sequential,
            state: State::Idle,
            attempt: 0,
            expected: Vec::new(),
            deadline: None,
            retries: 0,
            revoke_armed: false,
            last_listing: Vec::new(),
            look: None,
            listing_keyed: false,
            listing_truncated: false,
            queued: None,
            listed: None,
            granted_under: None,
            deleting: BTreeMap::new(),
            orphans: BTreeSet::new(),
            lost: None,
            held_watch: HeldWatch::Node,
            hold_until: None,
            waited: false,
            own_watched: false,
            quiet: true,
            base_ensured: false,
            out: Outbox::default(),
        }
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
        self.lost.take()
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
        self.listed
    }

    /// Count rule: the limit in force when the held node was granted.
    pub(crate) fn granted_under(&self) -> Option<usize> {
        self.held().and(self.granted_under)
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
        !self.deleting.is_empty() || !self.orphans.is_empty()
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
        self.queued = None;
        self.waited = false;
        self.shape = shape;
        self.begin_create(now);
        Ok(())
    }

    /// Gives the lock up: delete our node (guaranteed). In the Curator plan
    /// `Released` follows the delete's reply; in the Pipelined plan it is
    /// reported at once.
    pub(crate) fn release(&mut self, now: Instant) -> Result<(), ApiMisuse> {
        let State::Held { node } = core::mem::replace(&mut self.state, State::Idle) else {
            return Err(ApiMisuse::NotHeld);
        };
        let _ = now;
        if self.revoke_armed {
            self.revoke_armed = false;
            self.send(Op::check_watches(&node.path, WatcherType::ANY), Purpose::CheckWatches);
        }
        match self.config.plan {
            OpPlan::Curator => {
                self.start_delete(node.path.clone());
                self.state = State::Releasing { path: node.path };
            }
            OpPlan::Pipelined => {
                self.start_delete(node.path);
                self.out.emit(LockEvent::Released);
            }
        }
        Ok(())
    }

    /// Abandons an acquire in progress (cancellation): whatever node it made
    /// or may have made is deleted.
    pub(crate) fn cancel(&mut self, _now: Instant) {
        match core::mem::replace(&mut self.state, State::Idle) {
            State::Creating(c) => {
                self.remember_orphan(&c.prefix);
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
        self.last_listing.retain(|c| c.as_str() != pred);
        let listing = core::mem::take(&mut self.last_listing);
        let granted = !(self.listing_truncated && self.window_exhausted(&listing, node.name.as_str()))
            && self.verdict(&listing, node.name.as_str()) == Verdict::Acquired;
        if granted {
            let (keyed, truncated) = (self.listing_keyed, self.listing_truncated);
            // The kept listing has no nodes behind ours: count the one that
            // went off the last total.
            let total = self.queued.map_or(listing.len(), |(_, t)| t.saturating_sub(1));
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

/// The inputs and outputs of the one lock queue every lock kind is built on.
impl Recipe for LockCore {
    type Event = LockEvent;

    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
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
            Purpose::Delete(path) => return self.on_delete(path, result),
            Purpose::WatchLook(name) => return self.on_watch_look(&name, result),
            Purpose::FindOrphans(prefix) => return self.on_find_orphans(prefix, result),
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
            Purpose::Recover => self.on_recover(now, result),
            Purpose::AdoptStat => self.on_adopt_stat(now, result),
            Purpose::List { watch } => self.on_list(now, result, watch),
            Purpose::WatchPred => self.on_watch_pred(now, result),
            Purpose::Verify => self.on_verify(true, result),
            Purpose::WatchHeld => self.on_verify(false, result),
            Purpose::Delete(_)
            | Purpose::FindOrphans(..)
            | Purpose::CheckWatches
            | Purpose::RevokeRead
            | Purpose::EnsureBase
            | Purpose::WatchLook(_) => {}
        }
    }

    fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        // Our held node: its deletion ends the hold; a data change used up
        // the watch, so arm it again (a revocable node's re-read below does).
        // Held under the granting listing's child watch, any change of the
        // base's children (ours deleted, or someone queued) fired it: watch
        // the node itself from now on.
        if let State::Held { node } = &self.state {
            let children_changed = event.event_type == EventType::NODE_CHILDREN_CHANGED;
            if children_changed && self.held_watch == HeldWatch::Children && event.path == self.base.as_str() {
                self.held_watch = HeldWatch::Node;
                let path = node.path.clone();
                return self.send(Op::exists(&path, true), Purpose::WatchHeld);
            }
            if node.path.as_str() == event.path {
                if event.event_type == EventType::NODE_DELETED {
                    return self.hold_gone();
                }
                if event.event_type == EventType::NODE_DATA_CHANGED && !self.revocable && self.watches_held() {
                    let path = node.path.clone();
                    return self.send(Op::exists(&path, true), Purpose::WatchHeld);
                }
            }
        }
        // Our waiting node, watched by its own exists (see `own_watched`)
        // or, revocable, by its data watch: deleted by someone else, it is
        // missing (look again, and start over); a data change used the
        // exists watch up (the grant arms it again).
        if self.waiting_node().is_some_and(|n| n.path.as_str() == event.path) {
            let by_exists = !self.revocable && self.own_watched;
            if event.event_type == EventType::NODE_DELETED && (by_exists || self.revocable) {
                return self.waiting_node_gone();
            }
            if by_exists {
                self.own_watched = false;
                return;
            }
        }
        // Revocation: a data change on our own node.
        if self.revocable && event.event_type == EventType::NODE_DATA_CHANGED {
            let own = match &self.state {
                State::Held { node }
                | State::Listing { node }
                | State::Watching { node, .. }
                | State::Waiting { node, .. } => Some(node.path.clone()),
                _ => None,
            };
            if let Some(own) = own.filter(|own| own.as_str() == event.path) {
                self.send(Op::get_data(&own, true), Purpose::RevokeRead);
                return;
            }
        }
        let prefix = String::from(self.base_prefix());
        // Whether the event is on our base path's child `name`.
        let is_child =
            |name: &str| event.path.strip_prefix(prefix.as_str()).and_then(|r| r.strip_prefix('/')) == Some(name);
        if let Some(look) = self.look.take_if(|look| is_child(look)) {
            if event.event_type == EventType::NODE_DELETED {
                self.look_gone(&look);
            }
            return;
        }
        match &mut self.state {
            State::Watching { pred, fired, .. } if is_child(pred) => *fired = true,
            State::Waiting { node, on: Watched::Pred(pred) } if is_child(pred) => {
                let node = node.clone();
                let pred = pred.clone();
                if event.event_type == EventType::NODE_DELETED {
                    self.pred_gone(now, node, &pred);
                } else {
                    self.relist(node);
                }
            }
            State::Waiting { node, on: Watched::Children } if event.path == self.base.as_str() => {
                let node = node.clone();
                self.relist(node);
            }
            _ => {}
        }
    }

    fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        match state {
            ConnectionState::Suspended => match core::mem::replace(&mut self.state, State::Idle) {
                State::Held { node } => {
                    self.state = State::Held { node };
                    self.out.emit(LockEvent::Suspended);
                }
                // Curator's loop wakes on every connection event and re-lists;
                // the request waits in the session until the reconnect.
                State::Waiting { node, .. } => self.relist(node),
                State::Watching { node, pred, .. } => self.state = State::Watching { node, pred, fired: true },
                other => self.state = other,
            },
            ConnectionState::Reconnected | ConnectionState::Connected | ConnectionState::ConnectedReadOnly => {
                if let State::Creating(c) = &mut self.state {
                    if c.step == CreateStep::AwaitReconnect {
                        c.step = CreateStep::Recover;
                        self.send(Op::get_children_names(&self.base.clone(), false), Purpose::Recover);
                    }
                }
                if let State::Held { node } = &self.state {
                    if state == ConnectionState::Reconnected {
                        // Same session: confirm the node survived before
                        // telling the holder it may go on.
                        // The exists re-arms the held node's watch if its
                        // own arming was cut off by the drop.
                        let (path, watch) = (node.path.clone(), self.watches_held() && !self.revocable);
                        if watch {
                            self.held_watch = HeldWatch::Node;
                        }
                        self.send(Op::exists(&path, watch), Purpose::Verify);
                    }
                }
                let pending: Vec<ZkPath> =
                    self.deleting.iter().filter(|(_, in_flight)| !**in_flight).map(|(p, _)| p.clone()).collect();
                for path in pending {
                    self.send_delete(path);
                }
                self.find_orphans();
                let _ = now;
            }
            ConnectionState::Lost
            | ConnectionState::Closed
            | ConnectionState::AuthFailed
            | ConnectionState::SaslFailed(_)
            | ConnectionState::ServerMisbehaved(_)
            | ConnectionState::Unreachable
            | ConnectionState::ChrootUnavailable(_) => {
                // Nothing created under the old session may be trusted again
                // (CURATOR-604). After an expiry our nodes may still exist for
                // a while (the client-side timer can fire before the server's),
                // so they stay queued for deletion by a later session; after a
                // close the server has already deleted them.
                let stale = match &self.state {
                    State::Held { node }
                    | State::Listing { node }
                    | State::Watching { node, .. }
                    | State::Waiting { node, .. } => Some(node.path.clone()),
                    State::Releasing { path } => Some(path.clone()),
                    _ => None,
                };
                self.expected.clear();
                self.revoke_armed = false;
                self.look = None;
                if state == ConnectionState::Lost {
                    self.orphan_create();
                    self.deleting.values_mut().for_each(|in_flight| *in_flight = false);
                    if let Some(path) = stale {
                        self.deleting.insert(path, false);
                    }
                } else {
                    self.deleting.clear();
                    self.orphans.clear();
                }
                let error = state.end_error().unwrap_or(RequestError::Closed);
                match core::mem::replace(&mut self.state, State::Idle) {
                    // (The semaphore reports its leases lost with the
                    // session from `held()`, before its cores hear of it.)
                    State::Held { .. } => self.out.emit(LockEvent::Lost),
                    State::Releasing { .. } => self.out.emit(LockEvent::Released),
                    State::Idle => {}
                    _ => self.out.emit(LockEvent::Failed(error)),
                }
                self.attempt += 1;
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match &self.state {
            State::Held { .. } if self.hold_until.is_some_and(|until| now >= until) => self.expire(),
            State::RetryPause { until } if now >= *until => self.begin_create(now),
            State::Waiting { node, .. } if self.deadline.is_some_and(|d| now >= d) => {
                // Curator runs the loop once more at the deadline.
                let node = node.clone();
                self.relist(node);
            }
            _ => {}
        }
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
            State::Held { .. } => self.hold_until,
            _ => None,
        }
    }

    fn is_quiescent(&self) -> bool {
        self.is_idle() && !self.has_cleanup()
    }
}

impl LockCore {
    fn base_prefix(&self) -> &str {
        if self.base.is_root() { "" } else { self.base.as_str() }
    }

    fn send(&mut self, op: Op, purpose: Purpose) {
        let id = self.out.send(op);
        self.expected.push((id, self.attempt, purpose));
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

    /// The reply to a Verify (`Reconnected` on success) or to the held
    /// node's watch (nothing to tell on success).
    fn on_verify(&mut self, purpose_is_verify: bool, result: Result<Response, RequestError>) {
        if !purpose_is_verify && self.waiting_node().is_some() {
            // The waiting node's own watch: not armed if the node is gone
            // (look again and start over) or the connection dropped (the
            // grant arms it).
            match result {
                Ok(_) => {}
                Err(RequestError::Server(ErrorCode::NO_NODE)) => self.waiting_node_gone(),
                Err(_) => self.own_watched = false,
            }
            return;
        }
        if !matches!(self.state, State::Held { .. }) {
            return;
        }
        match (purpose_is_verify, result) {
            (true, Ok(_)) => self.out.emit(LockEvent::Reconnected),
            (false, Ok(_)) => {}
            (_, Err(RequestError::Server(ErrorCode::NO_NODE))) => self.hold_gone(),
            // Dropped: the next Reconnected verifies again, and re-arms.
            (_, Err(_)) => {}
        }
    }

    /// Our held node is gone (deleted by someone else, seen by its watch or
    /// by a read): the hold is `Lost`, at once and for good. Nothing is left
    /// to delete.
    fn hold_gone(&mut self) {
        if !matches!(self.state, State::Held { .. }) {
            return;
        }
        let State::Held { node } = core::mem::replace(&mut self.state, State::Idle) else { return };
        self.lost = Some(node.path);
        self.attempt += 1;
        self.revoke_armed = false;
        self.out.emit(LockEvent::Lost);
    }

    /// The hold reached [`LockConfig::max_hold`]: it is `Lost` (told as
    /// `Expired` first) and its node deleted, so the next in line gets it.
    fn expire(&mut self) {
        let State::Held { node } = core::mem::replace(&mut self.state, State::Idle) else { return };
        self.hold_until = None;
        if core::mem::take(&mut self.revoke_armed) {
            self.send(Op::check_watches(&node.path, WatcherType::ANY), Purpose::CheckWatches);
        }
        self.start_delete(node.path.clone());
        self.out.emit(LockEvent::Expired { node: node.path_string() });
        self.lost = Some(node.path);
        self.attempt += 1;
        self.out.emit(LockEvent::Lost);
    }

    fn on_revoke_read(&mut self, current: bool, result: Result<Response, RequestError>) {
        match result {
            Ok(Response::Data { data: Some(data), .. }) if super::revoker::is_revoke_message(&data) => {
                self.out.emit(LockEvent::RevocationRequested);
            }
            // Dropped before the watch was set: read again (the request waits
            // in the session for the reconnect), or revocation is lost.
            Err(RequestError::ConnectionLoss) if self.revoke_armed => {
                if let State::Held { node }
                | State::Listing { node }
                | State::Watching { node, .. }
                | State::Waiting { node, .. } = &self.state
                {
                    let path = node.path.clone();
                    self.send(Op::get_data(&path, true), Purpose::RevokeRead);
                }
            }
            // NoNode: our node is gone and the watch was not set; a hold
            // through it (this attempt's node) is lost.
            Err(RequestError::Server(ErrorCode::NO_NODE)) if current => self.hold_gone(),
            _ => {}
        }
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
