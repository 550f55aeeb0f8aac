//! `LockCore`: Curator's `LockInternals` loop as a state machine. The mutex,
//! both read-write halves and the semaphore's internal lock run on it.
//!
//! One acquire: protected create (with lazy container parents and recovery of
//! a create whose reply was lost), list the children, apply the pure rule from
//! [`policy`](super::policy), then either hold or watch the node the rule names
//! with getData and wait. Any wake-up re-lists. A node whose session was lost is
//! never trusted again (CURATOR-604); an abandoned node is deleted until the
//! server says OK or NoNode, or the session ends.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use bytes::Bytes;
use zoolock_wire::{CreateMode, CreateRequest, ErrorCode, EventType, OpCode, Request, Response, WatcherType};

use super::config::{LockConfig, OpPlan};
use super::policy::{self, SortKey, Verdict};
use crate::error::{ApiMisuse, RequestError};
use crate::op::Op;
use crate::path::ZkPath;
use crate::recipe::{FencingToken, OpId, RecipeEvent, RecipeOp};
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

/// Our lock node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) path: String,
    pub(crate) name: String,
    pub(crate) token: FencingToken,
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
    target: String,
    parent: String,
    step: CreateStep,
    made_parents: bool,
    adopted: Option<String>,
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
    /// Predecessor watch armed.
    Waiting {
        node: Node,
        pred: String,
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
        path: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Purpose {
    Create,
    List,
    Probe,
    MakeParent,
    Recover,
    AdoptStat,
    WatchPred,
    RevokeRead,
    Verify,
    Delete(String),
    FindOrphans(String, String),
    CheckWatches,
}

/// The lock loop. Not a [`Recipe`](crate::Recipe) itself: wrappers add
/// reentrancy, revocation commands and their own events.
#[derive(Debug)]
pub(crate) struct LockCore {
    config: LockConfig,
    base: ZkPath,
    name: &'static str,
    key: SortKey,
    rule: Rule,
    /// Read rule: this owner holds the write half (downgrade short-circuit).
    pub(crate) holds_write: bool,
    /// Revocable: empty data, a watch on our own node.
    pub(crate) revocable: bool,
    /// A vanished own node (or a NoNode create) ends the attempt with
    /// `Failed(NoNode)` instead of a re-create in place: the semaphore's
    /// lease core, whose retry must also release the internal mutex.
    pub(crate) defer_missing: bool,
    shape: Shape,
    rng: Rng,
    state: State,
    /// Bumped at every new attempt, so replies to an abandoned one are ignored.
    attempt: u64,
    /// Ops in flight: (op, attempt, purpose). A few at a time, so a small
    /// vector: a map's node allocation per recipe adds up with thousands of
    /// waiting lock handles.
    expected: Vec<(OpId, u64, Purpose)>,
    next_op: u64,
    deadline: Option<Instant>,
    retries: u32,
    /// The revocation watch on our node is armed server-side.
    revoke_armed: bool,
    /// Last sorted listing while waiting, for the fast handoff. Standard
    /// rule: only the [`LISTING_WINDOW`] nodes nearest ahead of ours, and
    /// ours (see [`LockCore::keep_window`]).
    last_listing: Vec<String>,
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
    deleting: BTreeMap<String, bool>,
    /// Abandoned creates whose reply was lost: (parent, prefix) to find and delete.
    orphans: BTreeSet<(String, String)>,
    ops: VecDeque<RecipeOp>,
    events: VecDeque<RecipeEvent>,
}

impl LockCore {
    pub(crate) fn new(config: LockConfig, base: ZkPath, name: &'static str, key: SortKey, rule: Rule) -> Self {
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
            next_op: 0,
            deadline: None,
            retries: 0,
            revoke_armed: false,
            last_listing: Vec::new(),
            listing_keyed: false,
            listing_truncated: false,
            queued: None,
            listed: None,
            granted_under: None,
            deleting: BTreeMap::new(),
            orphans: BTreeSet::new(),
            ops: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    pub(crate) fn base(&self) -> &ZkPath {
        &self.base
    }

    /// Our node while held.
    pub(crate) fn held(&self) -> Option<&Node> {
        match &self.state {
            State::Held { node } => Some(node),
            _ => None,
        }
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
            let path = node_path(&node.path);
            self.send(Op::check_watches(&path, WatcherType::ANY), Purpose::CheckWatches);
        }
        match self.config.plan {
            OpPlan::Curator => {
                self.start_delete(node.path.clone());
                self.state = State::Releasing { path: node.path };
            }
            OpPlan::Pipelined => {
                self.start_delete(node.path);
                self.events.push_back(RecipeEvent::Released);
            }
        }
        Ok(())
    }

    /// Abandons an acquire in progress (cancellation): whatever node it made
    /// or may have made is deleted.
    pub(crate) fn cancel(&mut self, _now: Instant) {
        match core::mem::replace(&mut self.state, State::Idle) {
            State::Creating(c) => {
                self.orphans.insert((c.parent.clone(), c.prefix.clone()));
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

    // ---- inputs --------------------------------------------------------------------

    pub(crate) fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        let Some(at) = self.expected.iter().position(|(id, _, _)| *id == op) else {
            return;
        };
        let (_, attempt, purpose) = self.expected.swap_remove(at);
        // Cleanup replies matter whatever attempt they belonged to.
        match purpose {
            Purpose::Delete(path) => return self.on_delete(path, result),
            Purpose::FindOrphans(parent, prefix) => return self.on_find_orphans(parent, prefix, result),
            Purpose::CheckWatches => return,
            Purpose::RevokeRead => return self.on_revoke_read(result),
            _ => {}
        }
        if attempt != self.attempt {
            // A reply to an abandoned attempt; a create that landed is an orphan.
            if purpose == Purpose::Create {
                if let Ok(Response::Create2 { path, .. }) = result {
                    self.start_delete(path);
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
            Purpose::List => self.on_list(now, result),
            Purpose::WatchPred => self.on_watch_pred(now, result),
            Purpose::Verify => self.on_verify(result),
            Purpose::Delete(_) | Purpose::FindOrphans(..) | Purpose::CheckWatches | Purpose::RevokeRead => {}
        }
    }

    pub(crate) fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        // Revocation: a data change on our own node.
        if self.revocable && event.event_type == EventType::NODE_DATA_CHANGED {
            let own = match &self.state {
                State::Held { node }
                | State::Listing { node }
                | State::Watching { node, .. }
                | State::Waiting { node, .. } => Some(node.path.clone()),
                _ => None,
            };
            if own.as_deref() == Some(event.path.as_str()) {
                self.send(Op::get_data(&node_path(&event.path), true), Purpose::RevokeRead);
                return;
            }
        }
        let base = String::from(self.base.as_str());
        let prefix = String::from(self.base_prefix());
        let pred_path = |pred: &str| if pred.is_empty() { base.clone() } else { format!("{prefix}/{pred}") };
        match &mut self.state {
            State::Watching { pred, fired, .. } if pred_path(pred) == event.path => *fired = true,
            State::Waiting { node, pred } if pred_path(pred) == event.path => {
                let node = node.clone();
                let pred = pred.clone();
                if event.event_type == EventType::NODE_DELETED {
                    self.pred_gone(now, node, &pred);
                } else {
                    self.relist(node);
                }
            }
            _ => {}
        }
    }

    /// Our predecessor `pred` is gone (its deletion fired, or the getData
    /// that was to watch it answered NoNode). With the fast handoff, if the
    /// last listing minus `pred` grants us the lock, take it without a
    /// re-list. Otherwise re-list: the nodes still ahead in a remembered
    /// listing are most likely gone too (in a FIFO queue a node goes once it
    /// has held), so watching the next of them would mostly cost a getData
    /// answered NoNode before the re-list anyway.
    fn pred_gone(&mut self, now: Instant, node: Node, pred: &str) {
        if !self.fast_handoff_allowed() {
            return self.relist(node);
        }
        self.last_listing.retain(|c| c != pred);
        let listing = core::mem::take(&mut self.last_listing);
        let granted = !(self.listing_truncated && self.window_exhausted(&listing, &node.name))
            && self.verdict(&listing, &node.name) == Verdict::Acquired;
        if granted {
            let (keyed, truncated) = (self.listing_keyed, self.listing_truncated);
            // The kept listing has no nodes behind ours: count the one that
            // went off the last total.
            let total = self.queued.map_or(listing.len(), |(_, t)| t.saturating_sub(1));
            self.evaluate_listing(now, node, listing, keyed, truncated, total);
        } else {
            self.relist(node);
        }
    }

    pub(crate) fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        match state {
            ConnectionState::Suspended => match core::mem::replace(&mut self.state, State::Idle) {
                State::Held { node } => {
                    self.state = State::Held { node };
                    self.events.push_back(RecipeEvent::Suspended);
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
                        let parent = node_path(&c.parent);
                        self.send(Op::get_children_names(&parent, false), Purpose::Recover);
                    }
                }
                if let State::Held { node } = &self.state {
                    if state == ConnectionState::Reconnected {
                        // Same session: confirm the node survived before
                        // telling the holder it may go on.
                        let path = node_path(&node.path);
                        self.send(Op::exists(&path, false), Purpose::Verify);
                    }
                }
                let pending: Vec<String> =
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
            | ConnectionState::ServerMisbehaved(_) => {
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
                    State::Held { .. } => self.events.push_back(RecipeEvent::Lost),
                    State::Releasing { .. } => self.events.push_back(RecipeEvent::Released),
                    State::Idle => {}
                    _ => self.events.push_back(RecipeEvent::Failed(error)),
                }
                self.attempt += 1;
            }
        }
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        match &self.state {
            State::RetryPause { until } if now >= *until => self.begin_create(now),
            State::Waiting { node, .. } if self.deadline.is_some_and(|d| now >= d) => {
                // Curator runs the loop once more at the deadline.
                let node = node.clone();
                self.relist(node);
            }
            _ => {}
        }
    }

    pub(crate) fn poll_op(&mut self) -> Option<RecipeOp> {
        self.ops.pop_front()
    }

    pub(crate) fn poll_event(&mut self) -> Option<RecipeEvent> {
        self.events.pop_front()
    }

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        match &self.state {
            State::RetryPause { until } => Some(*until),
            State::Waiting { .. } => self.deadline,
            _ => None,
        }
    }

    // ---- mechanism -----------------------------------------------------------------

    fn base_prefix(&self) -> &str {
        if self.base.is_root() { "" } else { self.base.as_str() }
    }

    fn send(&mut self, op: Op, purpose: Purpose) {
        let id = OpId(self.next_op);
        self.next_op += 1;
        self.expected.push((id, self.attempt, purpose));
        self.ops.push_back(RecipeOp { id, op });
    }

    fn node_data(&self) -> Bytes {
        if self.revocable { Bytes::new() } else { self.config.data.clone() }
    }

    fn begin_create(&mut self, _now: Instant) {
        self.attempt += 1;
        // `_c_<uuid>-`, then `<base>/<prefix><name>[<suffix>]`, built in place.
        let mut prefix = String::with_capacity(40);
        prefix.push_str("_c_");
        self.rng.push_uuid_v4(&mut prefix);
        prefix.push('-');
        let suffix = match &self.shape {
            Shape::Sequential => "",
            Shape::Fixed(suffix) => suffix.as_str(),
        };
        let base = self.base_prefix();
        let mut target = String::with_capacity(base.len() + 1 + prefix.len() + self.name.len() + suffix.len());
        for part in [base, "/", &prefix, self.name, suffix] {
            target.push_str(part);
        }
        let parent = String::from(self.base.as_str());
        self.state = State::Creating(Create {
            prefix,
            target,
            parent,
            step: CreateStep::Sent,
            made_parents: false,
            adopted: None,
        });
        self.send_create();
    }

    fn send_create(&mut self) {
        let State::Creating(c) = &mut self.state else { return };
        c.step = CreateStep::Sent;
        let mode = match self.shape {
            Shape::Sequential => CreateMode::EPHEMERAL_SEQUENTIAL,
            Shape::Fixed(_) => CreateMode::EPHEMERAL,
        };
        let op = match ZkPath::new_sequential_prefix(&c.target) {
            Ok(path) => Op::create(&path, self.node_data(), self.config.acl_for(path.as_str()), mode),
            Err(e) => {
                self.fail(RequestError::Refused(e.into()));
                return;
            }
        };
        self.send(op, Purpose::Create);
        if self.config.plan == OpPlan::Pipelined && !self.revocable {
            // The listing rides in the same round trip; the server runs it
            // after the create, so it sees our node.
            self.send(Op::get_children(&self.base.clone(), self.list_watch()), Purpose::List);
        }
    }

    /// Semaphore leases list with a child watch; locks list without one.
    fn list_watch(&self) -> bool {
        matches!(self.rule, Rule::Count { .. })
    }

    fn fail(&mut self, error: RequestError) {
        if error == RequestError::SessionExpired {
            self.orphan_create();
        }
        self.state = State::Idle;
        self.attempt += 1;
        self.events.push_back(RecipeEvent::Failed(error));
    }

    /// A create abandoned with the session: it may have landed, so a later
    /// session looks for its prefix and deletes what it finds (Curator's
    /// protected create does the same on a session change, CURATOR-498).
    fn orphan_create(&mut self) {
        if let State::Creating(c) = &self.state {
            self.orphans.insert((c.parent.clone(), c.prefix.clone()));
            if let Some(path) = &c.adopted {
                self.deleting.entry(path.clone()).or_insert(false);
            }
        }
    }

    fn on_create(&mut self, now: Instant, result: Result<Response, RequestError>) {
        let State::Creating(c) = &mut self.state else { return };
        match result {
            Ok(Response::Create2 { path, stat }) => {
                let node = make_node(&path, FencingToken(stat.czxid));
                self.created(now, node);
            }
            Ok(_) => self.fail(RequestError::UnexpectedResponse { op: OpCode::CREATE2 }),
            Err(RequestError::Server(ErrorCode::NO_NODE)) if !c.made_parents => {
                c.made_parents = true;
                // A pipelined listing of the missing parent is now stale.
                self.attempt += 1;
                self.start_probe();
            }
            Err(e @ RequestError::Server(ErrorCode::NO_NODE)) => self.no_node_retry(now, e),
            Err(RequestError::ConnectionLoss) => {
                c.step = CreateStep::AwaitReconnect;
                // The pipelined listing of this attempt is stale too.
                self.attempt += 1;
            }
            Err(e) => self.fail(e),
        }
    }

    /// Ancestors of the node to make, top-down, excluding `/` (Curator 5.4's mkdirs).
    fn ancestors(&self) -> Vec<String> {
        let State::Creating(c) = &self.state else { return Vec::new() };
        let mut out = Vec::new();
        for (idx, _) in c.target.match_indices('/').filter(|(i, _)| *i > 0) {
            if let Some(a) = c.target.get(..idx) {
                out.push(String::from(a));
            }
        }
        out
    }

    fn bottom_up(&self) -> bool {
        self.config.plan == OpPlan::Pipelined
    }

    fn start_probe(&mut self) {
        match self.ancestors().len().checked_sub(1) {
            Some(deepest) if self.bottom_up() => self.probe(deepest),
            Some(_) => self.probe(0),
            None => self.send_create(),
        }
    }

    /// After ancestor `idx` was made: top-down probes the next one;
    /// bottom-up already knows the ones below are missing.
    fn after_parent(&mut self, idx: usize) {
        if self.bottom_up() { self.make_parent(idx + 1) } else { self.probe(idx + 1) }
    }

    fn probe(&mut self, idx: usize) {
        let ancestors = self.ancestors();
        let State::Creating(c) = &mut self.state else { return };
        match ancestors.get(idx).and_then(|a| ZkPath::new(a).ok()) {
            Some(path) => {
                c.step = CreateStep::Probe(idx);
                self.send(Op::exists(&path, false), Purpose::Probe);
            }
            None => self.send_create(),
        }
    }

    fn make_parent(&mut self, idx: usize) {
        let ancestors = self.ancestors();
        let State::Creating(c) = &mut self.state else { return };
        let Some(path) = ancestors.get(idx).and_then(|a| ZkPath::new(a).ok()) else {
            return self.send_create();
        };
        c.step = CreateStep::MakeParent(idx);
        let op = if self.config.container_parents {
            Op::create_container(&path, Bytes::new(), self.config.acl_for(path.as_str()))
        } else {
            // Curator's `dontUseContainerParents()`: a plain create (opcode 1),
            // flags 0; no Stat is needed for a parent.
            let request = CreateRequest {
                path: String::from(path.as_str()),
                data: Some(Bytes::new()),
                acl: self.config.acl_for(path.as_str()),
                flags: CreateMode::PERSISTENT,
            };
            match Op::from_request(Request::Create(request)) {
                Ok(op) => op,
                Err(e) => return self.fail(RequestError::Refused(e)),
            }
        };
        self.send(op, Purpose::MakeParent);
    }

    fn on_probe(&mut self, _now: Instant, result: Result<Response, RequestError>) {
        let State::Creating(Create { step: CreateStep::Probe(idx), .. }) = self.state else { return };
        match result {
            Ok(_) if self.bottom_up() => self.make_parent(idx + 1),
            Ok(_) => self.probe(idx + 1),
            Err(RequestError::Server(ErrorCode::NO_NODE)) if self.bottom_up() && idx > 0 => self.probe(idx - 1),
            Err(RequestError::Server(ErrorCode::NO_NODE)) => self.make_parent(idx),
            Err(RequestError::ConnectionLoss) => self.probe(idx),
            Err(e) => self.fail(e),
        }
    }

    fn on_make_parent(&mut self, now: Instant, result: Result<Response, RequestError>) {
        let State::Creating(Create { step: CreateStep::MakeParent(idx), .. }) = self.state else { return };
        match result {
            Ok(_) | Err(RequestError::Server(ErrorCode::NODE_EXISTS)) => self.after_parent(idx),
            // An ancestor probed a moment ago has gone (the container reaper
            // took it): start over within the retry budget, as Curator's
            // attemptLock does on NoNode.
            Err(e @ RequestError::Server(ErrorCode::NO_NODE)) => self.no_node_retry(now, e),
            Err(RequestError::Server(ErrorCode::UNIMPLEMENTED)) if self.config.container_parents => {
                // A server without containers: persistent parents from now on.
                self.config.container_parents = false;
                self.make_parent(idx);
            }
            Err(RequestError::ConnectionLoss) => self.make_parent(idx),
            Err(e) => self.fail(e),
        }
    }

    fn on_recover(&mut self, now: Instant, result: Result<Response, RequestError>) {
        let State::Creating(c) = &mut self.state else { return };
        match result {
            Ok(Response::Children(names)) | Ok(Response::Children2 { children: names, .. }) => {
                match names.iter().find(|n| n.starts_with(&c.prefix)) {
                    Some(found) => {
                        let path = format!("{}/{found}", if c.parent == "/" { "" } else { c.parent.as_str() });
                        c.adopted = Some(path.clone());
                        c.step = CreateStep::AdoptStat;
                        self.send(Op::exists(&node_path(&path), false), Purpose::AdoptStat);
                    }
                    None => self.send_create(),
                }
            }
            Ok(_) => self.send_create(),
            Err(RequestError::Server(ErrorCode::NO_NODE)) => self.send_create(),
            Err(RequestError::ConnectionLoss) => c.step = CreateStep::AwaitReconnect,
            Err(e) => self.fail(e),
        }
        let _ = now;
    }

    fn on_adopt_stat(&mut self, now: Instant, result: Result<Response, RequestError>) {
        let State::Creating(c) = &mut self.state else { return };
        let Some(path) = c.adopted.clone() else { return };
        match result {
            Ok(Response::Stat(stat)) => self.created(now, make_node(&path, FencingToken(stat.czxid))),
            Err(RequestError::ConnectionLoss) => c.step = CreateStep::AwaitReconnect,
            // Gone between the lookup and now: create again.
            _ => {
                c.adopted = None;
                self.send_create();
            }
        }
    }

    /// Our node exists: arm revocation, then list (unless a pipelined listing
    /// is already on its way).
    fn created(&mut self, _now: Instant, node: Node) {
        let list_in_flight = self.expected.iter().any(|(_, a, p)| *a == self.attempt && *p == Purpose::List);
        if self.revocable {
            self.revoke_armed = true;
            self.send(Op::get_data(&node_path(&node.path), true), Purpose::RevokeRead);
        }
        if list_in_flight {
            self.state = State::Listing { node };
        } else {
            self.relist(node);
        }
    }

    fn relist(&mut self, node: Node) {
        self.state = State::Listing { node };
        self.send(Op::get_children(&self.base.clone(), self.list_watch()), Purpose::List);
    }

    fn on_list(&mut self, now: Instant, result: Result<Response, RequestError>) {
        let State::Listing { node } = &self.state else { return };
        let node = node.clone();
        let children = match result {
            Ok(Response::Children2 { children, .. }) | Ok(Response::Children(children)) => children,
            // A reaped base path lists as empty (Curator 4.0.1+).
            Err(RequestError::Server(ErrorCode::NO_NODE)) => Vec::new(),
            Err(RequestError::ConnectionLoss) => return self.relist(node),
            Err(e) => return self.abandon_with(node, RecipeEvent::Failed(e)),
            Ok(_) => {
                let error = RequestError::UnexpectedResponse { op: OpCode::GET_CHILDREN2 };
                return self.abandon_with(node, RecipeEvent::Failed(error));
            }
        };
        if let Rule::Count { max_leases } = self.rule {
            return self.evaluate_count(now, node, &children, max_leases);
        }
        let sorted = policy::sorted(&children, self.key);
        self.evaluate(now, node, sorted);
    }

    fn evaluate_count(&mut self, now: Instant, node: Node, children: &[String], max_leases: usize) {
        self.listed = Some(children.len());
        match policy::semaphore(children, &node.name, max_leases) {
            None => {
                self.start_delete(node.path.clone());
                self.no_node_retry(now, RequestError::NodeVanished);
            }
            Some(true) => {
                // Curator checks off the leases child watch once it has a lease.
                self.send(Op::check_watches(&self.base.clone(), WatcherType::ANY), Purpose::CheckWatches);
                self.events.push_back(RecipeEvent::Acquired { node: node.path.clone(), token: node.token });
                self.granted_under = Some(max_leases);
                self.state = State::Held { node };
            }
            Some(false) if self.deadline.is_some_and(|d| now >= d) => self.abandon_with(node, RecipeEvent::TimedOut),
            // Waiting on the child watch; `pred` empty means "the base path".
            Some(false) => {
                self.report_queued(children.len().saturating_sub(max_leases).max(1), children.len());
                self.state = State::Waiting { node, pred: String::new() };
            }
        }
    }

    /// The rule [`policy::position`] counts by.
    fn position_rule(&self) -> policy::PositionRule {
        match self.rule {
            Rule::Standard { max_leases } | Rule::Count { max_leases } => policy::PositionRule::Standard(max_leases),
            Rule::Read => policy::PositionRule::Read,
        }
    }

    fn verdict(&self, sorted: &[String], ours: &str) -> Verdict {
        match self.rule {
            Rule::Standard { max_leases } | Rule::Count { max_leases } => policy::standard(sorted, ours, max_leases),
            Rule::Read => policy::read(sorted, ours, self.holds_write),
        }
    }

    /// Evaluates a fresh listing.
    fn evaluate(&mut self, now: Instant, node: Node, sorted: Vec<String>) {
        let keyed = sorted.iter().all(|c| policy::is_sequence_key(self.key.key(c)));
        let total = sorted.len();
        self.evaluate_listing(now, node, sorted, keyed, false, total);
    }

    /// Reports `Queued` if the position or the count changed.
    fn report_queued(&mut self, position: usize, total: usize) {
        if self.queued != Some((position, total)) {
            self.queued = Some((position, total));
            self.events.push_back(RecipeEvent::Queued { position, total });
        }
    }

    /// Evaluates `sorted`, a fresh listing or a kept one minus a deleted
    /// predecessor; `keyed` and `truncated` describe the listing it came from,
    /// `total` how many nodes it stands for.
    fn evaluate_listing(
        &mut self,
        now: Instant,
        node: Node,
        sorted: Vec<String>,
        keyed: bool,
        truncated: bool,
        total: usize,
    ) {
        match self.verdict(&sorted, &node.name) {
            Verdict::Acquired => {
                self.last_listing.clear();
                self.listing_truncated = false;
                self.events.push_back(RecipeEvent::Acquired { node: node.path.clone(), token: node.token });
                self.state = State::Held { node };
            }
            Verdict::Missing => {
                // Our node vanished (expiry, deletion): delete it anyway and
                // re-create at the back of the queue.
                self.start_delete(node.path.clone());
                self.no_node_retry(now, RequestError::NodeVanished);
            }
            Verdict::Watch(pred) => {
                // A truncated window no longer knows the nodes it left out:
                // one fewer than before (the predecessor that went).
                let position = match self.queued {
                    Some((p, _)) if truncated => p.saturating_sub(1).max(1),
                    _ => policy::position(&sorted, &node.name, self.position_rule()),
                };
                self.report_queued(position, total);
                let pred_path = format!("{}/{}", self.base_prefix(), pred);
                let (kept, cut) = self.keep_window(sorted, &node.name);
                self.last_listing = kept;
                self.listing_keyed = keyed;
                self.listing_truncated = truncated || cut;
                match ZkPath::new(&pred_path) {
                    Ok(path) => {
                        self.state = State::Watching { node, pred, fired: false };
                        self.send(Op::get_data(&path, true), Purpose::WatchPred);
                    }
                    Err(_) => self.relist(node),
                }
            }
        }
    }

    fn on_watch_pred(&mut self, now: Instant, result: Result<Response, RequestError>) {
        let State::Watching { node, pred, fired } = &self.state else { return };
        let (node, pred, fired) = (node.clone(), pred.clone(), *fired);
        match result {
            Ok(_) => {
                if self.deadline.is_some_and(|d| now >= d) {
                    self.abandon_with(node, RecipeEvent::TimedOut);
                } else if fired {
                    self.relist(node);
                } else {
                    self.state = State::Waiting { node, pred };
                }
            }
            // Already gone: as if its deletion had fired (the fast handoff
            // skips the re-list a NoNode used to cost).
            Err(RequestError::Server(ErrorCode::NO_NODE)) if self.deadline.is_none_or(|d| now < d) => {
                self.pred_gone(now, node, &pred)
            }
            // The connection dropped (or the deadline passed): look again.
            Err(RequestError::Server(ErrorCode::NO_NODE)) | Err(RequestError::ConnectionLoss) => self.relist(node),
            Err(e) => self.abandon_with(node, RecipeEvent::Failed(e)),
        }
    }

    fn on_verify(&mut self, result: Result<Response, RequestError>) {
        if !matches!(self.state, State::Held { .. }) {
            return;
        }
        match result {
            Ok(_) => self.events.push_back(RecipeEvent::Reconnected),
            Err(RequestError::Server(ErrorCode::NO_NODE)) => {
                self.state = State::Idle;
                self.events.push_back(RecipeEvent::Lost);
            }
            // Dropped again: the next Reconnected verifies again.
            Err(_) => {}
        }
    }

    fn on_revoke_read(&mut self, result: Result<Response, RequestError>) {
        match result {
            Ok(Response::Data { data, .. }) if data.as_deref() == Some(REVOKE_MESSAGE) => {
                self.events.push_back(RecipeEvent::RevocationRequested);
            }
            // Dropped before the watch was set: read again (the request waits
            // in the session for the reconnect), or revocation is lost.
            Err(RequestError::ConnectionLoss) if self.revoke_armed => {
                if let State::Held { node }
                | State::Listing { node }
                | State::Watching { node, .. }
                | State::Waiting { node, .. } = &self.state
                {
                    let path = node_path(&node.path);
                    self.send(Op::get_data(&path, true), Purpose::RevokeRead);
                }
            }
            // NoNode: our node is gone and the watch was not set; nothing to do.
            _ => {}
        }
    }

    /// Leaves the queue: delete our node and report `event`.
    fn abandon_with(&mut self, node: Node, event: RecipeEvent) {
        self.start_delete(node.path);
        self.state = State::Idle;
        self.attempt += 1;
        self.revoke_armed = false;
        self.events.push_back(event);
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

    fn start_delete(&mut self, path: String) {
        if self.deleting.contains_key(&path) {
            return;
        }
        self.deleting.insert(path.clone(), false);
        self.send_delete(path);
    }

    fn send_delete(&mut self, path: String) {
        let Ok(zk) = ZkPath::new(&path) else {
            self.deleting.remove(&path);
            return;
        };
        match self.deleting.get_mut(&path) {
            Some(sent) => *sent = true,
            None => {
                self.deleting.insert(path.clone(), true);
            }
        }
        self.send(Op::delete(&zk, None), Purpose::Delete(path));
    }

    fn on_delete(&mut self, path: String, result: Result<Response, RequestError>) {
        match result {
            Ok(_) | Err(RequestError::Server(ErrorCode::NO_NODE)) => {
                self.deleting.remove(&path);
                if matches!(&self.state, State::Releasing { path: p } if *p == path) {
                    self.state = State::Idle;
                    self.events.push_back(RecipeEvent::Released);
                }
            }
            // Retried after the next (re)connect; a lost session's nodes are
            // retried by the next session.
            Err(RequestError::ConnectionLoss | RequestError::SessionExpired | RequestError::Closed) => {
                self.deleting.insert(path, false);
            }
            Err(e) => {
                // Not ours to fix (NoAuth, ...): report it and stop trying. A
                // failed release is the release's outcome; a failed clean-up of
                // an abandoned node is reported on its own, so it is never
                // mistaken for the outcome of an acquire under way.
                self.deleting.remove(&path);
                if matches!(&self.state, State::Releasing { path: p } if *p == path) {
                    self.state = State::Idle;
                    self.events.push_back(RecipeEvent::Failed(e));
                } else {
                    self.events.push_back(RecipeEvent::CleanupFailed { path, error: e });
                }
            }
        }
    }

    fn find_orphans(&mut self) {
        let lookups: Vec<(String, String)> = self.orphans.iter().cloned().collect();
        for (parent, prefix) in lookups {
            if let Ok(path) = ZkPath::new(&parent) {
                let already = self
                    .expected
                    .iter()
                    .any(|(_, _, p)| matches!(p, Purpose::FindOrphans(a, b) if *a == parent && *b == prefix));
                if !already {
                    self.send(Op::get_children_names(&path, false), Purpose::FindOrphans(parent, prefix));
                }
            }
        }
    }

    fn on_find_orphans(&mut self, parent: String, prefix: String, result: Result<Response, RequestError>) {
        match result {
            Ok(Response::Children(names)) | Ok(Response::Children2 { children: names, .. }) => {
                self.orphans.remove(&(parent.clone(), prefix.clone()));
                let base = if parent == "/" { "" } else { parent.as_str() };
                for name in names.iter().filter(|n| n.starts_with(&prefix)) {
                    self.start_delete(format!("{base}/{name}"));
                }
            }
            // Retried after the next (re)connect; as with deletes, a lost
            // session's lookups are retried by the next session.
            Err(RequestError::ConnectionLoss | RequestError::SessionExpired | RequestError::Closed) => {}
            _ => {
                self.orphans.remove(&(parent, prefix));
            }
        }
    }

    fn fast_handoff_allowed(&self) -> bool {
        self.config.plan == OpPlan::Pipelined
            && self.config.fast_handoff
            && !self.last_listing.is_empty()
            && self.listing_keyed
    }

    /// What of a sorted listing the fast handoff needs, and whether anything
    /// was left out. The standard rule (index below `max_leases`) depends only
    /// on the nodes ahead of ours, and deleting one of them moves the next
    /// nearest into its place; so ours and the nearest nodes ahead suffice
    /// while the window lasts ([`LockCore::window_exhausted`]). Without this
    /// a long queue keeps quadratic memory: every waiter the whole queue
    /// ahead of it. The read rule watches the first writer, wherever it is,
    /// so its listings are kept whole.
    fn keep_window(&self, mut sorted: Vec<String>, ours: &str) -> (Vec<String>, bool) {
        let Rule::Standard { max_leases } = self.rule else { return (sorted, false) };
        let Some(idx) = sorted.iter().position(|c| c == ours) else { return (sorted, false) };
        sorted.truncate(idx + 1);
        let keep = LISTING_WINDOW.max(max_leases);
        let cut = idx > keep;
        if cut {
            sorted.drain(..idx - keep);
        }
        sorted.shrink_to_fit();
        (sorted, cut)
    }

    /// A truncated window can no longer decide: fewer than `max_leases`
    /// nodes are left ahead of ours in it, but nodes left out may still be
    /// there. (Only the standard rule truncates.)
    fn window_exhausted(&self, listing: &[String], ours: &str) -> bool {
        let Rule::Standard { max_leases } = self.rule else { return false };
        policy::ahead_of(listing, ours).len() < max_leases
    }
}

fn make_node(path: &str, token: FencingToken) -> Node {
    let name = path.rsplit('/').next().unwrap_or(path);
    Node { path: String::from(path), name: String::from(name), token }
}

/// Paths we built or the server returned are valid; fall back to `/` rather
/// than panic if one ever is not.
fn node_path(path: &str) -> ZkPath {
    ZkPath::new(path).unwrap_or_else(|_| ZkPath::root())
}
