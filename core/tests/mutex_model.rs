//! Transcript tests for [`Mutex`] (see `mutex_harness` for how ops are
//! rendered and answered): randomized runs against a small server model.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use zoolock_core::recipes::REVOKE_MESSAGE;
use zoolock_core::wire::{CreateMode, ErrorCode, EventType, Request, Response, Stat};
use zoolock_core::{
    ConnectionState, Instant, OpId, Recipe, RecipeEvent, RequestError, WatchEvent, ZkPath,
    recipes::{Mutex, OpPlan, RetryPolicy},
};

mod mutex_harness;
mod transcript;

use mutex_harness::*;

// ---- randomized runs against a small server model ------------------------------------------

/// One node on the model server.
#[derive(Debug, Clone)]
struct ModelNode {
    seq: i32,
    owner: i64,
    czxid: i64,
    data: Bytes,
}

/// What the model server sends back on our connection, in order.
#[derive(Debug)]
enum Output {
    Reply(OpId, Result<Response, RequestError>),
    Watch(EventType, String),
}

/// A ZooKeeper server as our one session sees it: requests run in the order
/// sent, replies and notifications come back in order, a dropped connection
/// loses what was not yet delivered, and other contenders only add nodes at
/// the back of the queue or delete theirs.
struct Model {
    rng: zoolock_core::Rng,
    m: Mutex,
    now: Instant,
    session: i64,
    connected: bool,
    /// The session ended; ops submitted now fail at once (what `Client` does).
    ended: bool,
    parents: std::collections::BTreeSet<String>,
    nodes: std::collections::BTreeMap<String, ModelNode>,
    cversion: i32,
    zxid: i64,
    /// Data watches our session holds on the server.
    watches: std::collections::BTreeSet<String>,
    /// Our session holds a child watch on [`BASE`] (a listing with `w`).
    child_watch: bool,
    /// [`BASE`]'s children changed (or it went) while that watch could not
    /// be told: the reconnect's setWatches fires it.
    child_watch_due: bool,
    /// Submitted while disconnected.
    queued: VecDeque<(OpId, Request)>,
    /// Sent, not yet run by the server.
    sent: VecDeque<(OpId, Request)>,
    output: VecDeque<Output>,
    /// An acquire (not a reentrant one) is under way.
    acquiring: bool,
    /// Our nodes someone else deleted (no safety claim holds for them).
    tampered: std::collections::BTreeSet<String>,
    /// The node of the hold last reported `Acquired`, until it is released
    /// or lost.
    holding: Option<String>,
    /// The session is ending (its `Lost` needs no tampered node).
    expiring: bool,
    /// Reentrant acquires whose Acquired is still to come.
    reentrant: usize,
    /// Held nodes are watched ([`LockConfig::watch_held`]).
    watch_held: bool,
    log: Vec<String>,
}

impl Model {
    fn new(seed: u64, plan: OpPlan, fast_handoff: bool, revocable: bool) -> Model {
        let mut c = config(plan);
        let watch_held = c.watch_held;
        c.fast_handoff = fast_handoff;
        c.seed = seed;
        c.retry = RetryPolicy { base: Duration::from_millis(10), max_retries: 3, max_pause: Duration::from_millis(50) };
        let mut rng = zoolock_core::Rng::with_seed(seed ^ 0x5eed);
        let mut parents = std::collections::BTreeSet::new();
        if rng.next_u64() % 2 == 0 {
            parents.insert("/app".to_string());
            if rng.next_u64() % 2 == 0 {
                parents.insert(BASE.to_string());
            }
        }
        let mut m = Mutex::new(ZkPath::new(BASE).unwrap(), c);
        if revocable {
            m.make_revocable().unwrap();
        }
        Model {
            rng,
            m,
            now: Instant::ZERO,
            session: 1,
            connected: true,
            ended: false,
            parents,
            nodes: Default::default(),
            cversion: 0,
            zxid: 10,
            watches: Default::default(),
            child_watch: false,
            child_watch_due: false,
            queued: VecDeque::new(),
            sent: VecDeque::new(),
            output: VecDeque::new(),
            acquiring: false,
            tampered: Default::default(),
            holding: None,
            expiring: false,
            reentrant: 0,
            watch_held,
            log: Vec::new(),
        }
    }

    fn pick(&mut self, n: u64) -> u64 {
        self.rng.next_u64() % n
    }

    fn seq_of(name: &str) -> i32 {
        name.rsplit("lock-").next().unwrap().parse().unwrap()
    }

    fn children(&mut self) -> Vec<String> {
        let mut names: Vec<String> =
            self.nodes.keys().map(|p| p.strip_prefix(&format!("{BASE}/")).unwrap().to_string()).collect();
        self.rng.shuffle(&mut names);
        names
    }

    fn node_stat(&self, path: &str) -> Option<Stat> {
        if let Some(n) = self.nodes.get(path) {
            return Some(Stat { czxid: n.czxid, ephemeral_owner: n.owner, ..Stat::default() });
        }
        self.parents.contains(path).then(|| Stat { czxid: 1, num_children: 0, ..Stat::default() })
    }

    fn delete_node(&mut self, path: &str) {
        self.nodes.remove(path);
        if self.connected && self.watches.remove(path) {
            self.output.push_back(Output::Watch(EventType::NODE_DELETED, path.to_string()));
        }
        self.children_changed();
    }

    /// A child of [`BASE`] was created or deleted: our child watch on it
    /// fires (after the node's own data watch, as ZooKeeper triggers them),
    /// now, or at the reconnect if the connection is down.
    fn children_changed(&mut self) {
        if !self.child_watch {
            return;
        }
        if self.connected {
            self.child_watch = false;
            self.output.push_back(Output::Watch(EventType::NODE_CHILDREN_CHANGED, BASE.to_string()));
        } else {
            self.child_watch_due = true;
        }
    }

    /// The server runs one request.
    fn run(&mut self, id: OpId, req: Request) {
        let parent_of =
            |p: &str| p.rsplit_once('/').map(|(a, _)| if a.is_empty() { "/" } else { a }).unwrap().to_string();
        let result = match req {
            Request::Create2(r) if r.flags == CreateMode::EPHEMERAL_SEQUENTIAL => {
                if !self.parents.contains(&parent_of(&r.path)) {
                    Err(RequestError::Server(ErrorCode::NO_NODE))
                } else {
                    let path = format!("{}{:010}", r.path, self.cversion);
                    self.cversion += 1;
                    self.zxid += 1;
                    let data = r.data.clone().unwrap_or_default();
                    let node = ModelNode { seq: self.cversion - 1, owner: self.session, czxid: self.zxid, data };
                    self.nodes.insert(path.clone(), node);
                    self.children_changed();
                    Ok(Response::Create2 { path: path.clone(), stat: self.node_stat(&path).unwrap() })
                }
            }
            Request::Create(r) | Request::CreateContainer(r) | Request::Create2(r) => {
                let parent = parent_of(&r.path);
                if parent != "/" && !self.parents.contains(&parent) {
                    Err(RequestError::Server(ErrorCode::NO_NODE))
                } else if !self.parents.insert(r.path.clone()) {
                    Err(RequestError::Server(ErrorCode::NODE_EXISTS))
                } else {
                    Ok(Response::Path(r.path))
                }
            }
            Request::Exists(r) => {
                let stat = self.node_stat(&r.path);
                // A watched exists on a node that is there arms a watch that
                // fires on its deletion or data change, as getData's does (on
                // a missing node it would wait for a create, which never comes
                // here: sequence numbers are not reused).
                if r.watch && stat.is_some() {
                    self.watches.insert(r.path.clone());
                }
                stat.map(Response::Stat).ok_or(RequestError::Server(ErrorCode::NO_NODE))
            }
            Request::GetData(r) => match self.node_stat(&r.path) {
                Some(stat) => {
                    if r.watch {
                        self.watches.insert(r.path.clone());
                    }
                    let data = self.nodes.get(&r.path).map(|n| n.data.clone()).unwrap_or_default();
                    Ok(Response::Data { data: Some(data), stat })
                }
                None => Err(RequestError::Server(ErrorCode::NO_NODE)),
            },
            Request::GetChildren(r) | Request::GetChildren2(r) if r.path == BASE => {
                if self.parents.contains(BASE) {
                    // A watched listing arms the child watch (one per path
                    // and session, however many listings ask for it).
                    self.child_watch |= r.watch;
                    let children = self.children();
                    Ok(Response::Children2 { children, stat: Stat::default() })
                } else {
                    Err(RequestError::Server(ErrorCode::NO_NODE))
                }
            }
            Request::Delete(r) => {
                if self.nodes.contains_key(&r.path) {
                    self.delete_node(&r.path);
                    Ok(Response::Empty)
                } else {
                    Err(RequestError::Server(ErrorCode::NO_NODE))
                }
            }
            Request::CheckWatches(_) => Ok(Response::Empty),
            other => panic!("unexpected request {other:?}"),
        };
        self.output.push_back(Output::Reply(id, result));
    }

    /// Drains the mutex's ops into the connection (or the session's queue).
    fn pump(&mut self) {
        loop {
            let mut progressed = false;
            while let Some(op) = self.m.poll_op() {
                progressed = true;
                self.submit(op);
            }
            while let Some(event) = self.m.poll_event().map(RecipeEvent::from) {
                progressed = true;
                self.log.push(format!("event {event:?}"));
                self.check_event(&event);
            }
            if !progressed {
                break;
            }
        }
    }

    fn submit(&mut self, op: zoolock_core::RecipeOp) {
        {
            let req = op.op.request().clone();
            self.log.push(format!("op {} {req:?}", op.id.get()));
            if self.ended {
                self.m.handle_reply(self.now, op.id, Err(RequestError::SessionExpired));
            } else if self.connected {
                self.sent.push_back((op.id, req));
            } else {
                self.queued.push_back((op.id, req));
            }
        }
    }

    fn check_event(&mut self, event: &RecipeEvent) {
        match event {
            RecipeEvent::Acquired { node, token } => {
                if !self.acquiring {
                    assert!(self.reentrant > 0, "Acquired with no acquire under way");
                    self.reentrant -= 1;
                    return;
                }
                self.acquiring = false;
                self.holding = Some(node.to_string());
                if self.tampered.contains(&**node) {
                    return;
                }
                // Safety: our node exists under our session and nothing is ahead of it.
                let ours = self.nodes.get(&**node).unwrap_or_else(|| panic!("acquired through a missing node {node}"));
                assert_eq!(ours.owner, self.session, "acquired through another session's node");
                assert_eq!(ours.czxid, token.0, "the token is the node's czxid");
                let min = self.nodes.values().map(|n| n.seq).min().unwrap();
                assert_eq!(ours.seq, min, "acquired while a node is ahead of ours");
                assert_eq!(Self::seq_of(node), ours.seq);
            }
            RecipeEvent::TimedOut | RecipeEvent::Failed(_) => self.acquiring = false,
            RecipeEvent::Released | RecipeEvent::Lost => {
                assert_eq!(self.m.hold_count(), 0, "{event:?} while held");
                let node = self.holding.take();
                if *event == RecipeEvent::Lost && !self.expiring {
                    // On a live session only someone else's deletion of the
                    // held node ends the hold (ARCHITECTURE §6.1).
                    let node = node.expect("Lost with no hold");
                    assert!(self.tampered.contains(&node), "{node} reported Lost but nobody deleted it");
                }
            }
            RecipeEvent::RevocationRequested => {
                // Cooperative: the holder lets go (a waiter is simply told).
                while self.m.hold_count() > 0 {
                    self.m.release(self.now).unwrap();
                }
            }
            _ => {}
        }
    }

    fn deliver(&mut self) {
        match self.output.pop_front() {
            Some(Output::Reply(id, result)) => {
                self.log.push(format!("reply {} {result:?}", id.get()));
                self.m.handle_reply(self.now, id, result)
            }
            Some(Output::Watch(kind, path)) => {
                self.log.push(format!("watch {kind} {path}"));
                self.m.handle_watch(self.now, &WatchEvent { event_type: kind, path })
            }
            None => {}
        }
    }

    fn fail_connection(&mut self, error: RequestError) {
        let mut failed = Vec::new();
        for out in std::mem::take(&mut self.output) {
            match out {
                Output::Reply(id, _) => failed.push(id),
                // A notification lost with the connection: the client still
                // counts the watch as armed, and the reconnect's setWatches
                // fires it again.
                Output::Watch(_, path) if path == BASE => {
                    self.child_watch = true;
                    self.child_watch_due = true;
                }
                Output::Watch(kind, path) if kind == EventType::NODE_DELETED => {
                    self.watches.insert(path);
                }
                // (A lost data change is not told again: only a deletion is.)
                Output::Watch(..) => {}
            }
        }
        failed.extend(std::mem::take(&mut self.sent).into_iter().map(|(id, _)| id));
        if error != RequestError::ConnectionLoss {
            failed.extend(std::mem::take(&mut self.queued).into_iter().map(|(id, _)| id));
        }
        for id in failed {
            self.m.handle_reply(self.now, id, Err(error.clone()));
            self.pump();
        }
    }

    fn disconnect(&mut self) {
        self.log.push("disconnect".into());
        self.fail_connection(RequestError::ConnectionLoss);
        self.connected = false;
        self.m.handle_session(self.now, ConnectionState::Suspended);
    }

    fn reconnect(&mut self) {
        self.log.push("reconnect".into());
        self.connected = true;
        // setWatches: watches on nodes deleted meanwhile fire now.
        let gone: Vec<String> = self.watches.iter().filter(|p| self.node_stat(p).is_none()).cloned().collect();
        for p in gone {
            self.watches.remove(&p);
            self.output.push_back(Output::Watch(EventType::NODE_DELETED, p));
        }
        if self.child_watch && std::mem::take(&mut self.child_watch_due) {
            self.child_watch = false;
            let kind =
                if self.parents.contains(BASE) { EventType::NODE_CHILDREN_CHANGED } else { EventType::NODE_DELETED };
            self.output.push_back(Output::Watch(kind, BASE.to_string()));
        }
        self.sent.extend(std::mem::take(&mut self.queued));
        self.m.handle_session(self.now, ConnectionState::Reconnected);
    }

    /// The session expires. `server_first`: the server has removed its
    /// ephemerals already; otherwise the client's own timer fired first and
    /// the nodes linger (until the server gets round to it, which this model
    /// leaves to our cleanup).
    fn expire(&mut self, server_first: bool) {
        self.log.push(format!("expire server_first={server_first}"));
        let session = self.session;
        let ours: Vec<String> = self.nodes.iter().filter(|(_, n)| n.owner == session).map(|(p, _)| p.clone()).collect();
        self.watches.clear();
        self.child_watch = false;
        self.child_watch_due = false;
        if server_first {
            for p in ours {
                self.nodes.remove(&p);
            }
        }
        self.ended = true;
        self.expiring = true;
        self.fail_connection(RequestError::SessionExpired);
        self.m.handle_session(self.now, ConnectionState::Lost);
        self.pump();
        self.expiring = false;
        self.ended = false;
        self.session += 1;
        self.connected = true;
        self.m.handle_session(self.now, ConnectionState::Connected);
    }

    fn step(&mut self) {
        match self.pick(100) {
            0..=29 => {
                if self.connected {
                    if let Some((id, req)) = self.sent.pop_front() {
                        self.run(id, req);
                    }
                }
            }
            30..=59 => self.deliver(),
            60..=64 => {
                // Another contender queues (a sequence number after everything).
                if self.parents.contains(BASE) {
                    let path = format!("{BASE}/{}", other(9, u32::try_from(self.cversion).unwrap()));
                    self.zxid += 1;
                    let node = ModelNode { seq: self.cversion, owner: 99, czxid: self.zxid, data: Bytes::new() };
                    self.nodes.insert(path, node);
                    self.cversion += 1;
                    self.children_changed();
                }
            }
            65..=74 => {
                let theirs: Vec<String> =
                    self.nodes.iter().filter(|(_, n)| n.owner == 99).map(|(p, _)| p.clone()).collect();
                if !theirs.is_empty() {
                    let i = self.pick(theirs.len() as u64) as usize;
                    self.delete_node(&theirs[i]);
                }
            }
            75..=76 => {
                if self.connected {
                    self.disconnect();
                }
            }
            77..=82 => {
                if !self.connected {
                    self.reconnect();
                }
            }
            83 => {
                if self.pick(5) == 0 {
                    let server_first = self.pick(2) == 0;
                    self.expire(server_first);
                }
            }
            84..=88 => {
                if self.m.hold_count() == 0 && !self.acquiring {
                    let deadline = match self.pick(3) {
                        0 => None,
                        _ => Some(self.now + Duration::from_millis(self.pick(300))),
                    };
                    if self.m.acquire(self.now, deadline).is_ok() {
                        self.acquiring = true;
                    }
                } else if self.m.hold_count() > 0 {
                    self.m.acquire(self.now, None).unwrap();
                    self.reentrant += 1;
                }
            }
            89..=92 => {
                if self.m.hold_count() > 0 {
                    self.m.release(self.now).unwrap();
                }
            }
            93..=94 => {
                if self.acquiring {
                    self.m.cancel(self.now);
                    self.acquiring = false;
                }
            }
            95 => {
                // The server reaps the empty container; a child watch on it
                // fires NodeDeleted.
                if self.nodes.is_empty() && self.parents.remove(BASE) && self.child_watch {
                    if self.connected {
                        self.child_watch = false;
                        self.output.push_back(Output::Watch(EventType::NODE_DELETED, BASE.to_string()));
                    } else {
                        self.child_watch_due = true;
                    }
                }
            }
            97 => {
                // A revoker writes `__REVOKE__` into one of our nodes, or
                // someone writes into another contender's node.
                let keys: Vec<String> = self.nodes.keys().cloned().collect();
                if !keys.is_empty() {
                    let p = keys[self.pick(keys.len() as u64) as usize].clone();
                    self.log.push(format!("setData {p}"));
                    self.nodes.get_mut(&p).unwrap().data = Bytes::from_static(REVOKE_MESSAGE);
                    if self.connected && self.watches.remove(&p) {
                        self.output.push_back(Output::Watch(EventType::NODE_DATA_CHANGED, p));
                    }
                }
            }
            96 => {
                // Someone deletes one of our nodes (an admin, a misbehaving client).
                let session = self.session;
                let ours: Vec<String> =
                    self.nodes.iter().filter(|(_, n)| n.owner == session).map(|(p, _)| p.clone()).collect();
                if let Some(p) = ours.first() {
                    self.log.push(format!("tamper {p}"));
                    self.tampered.insert(p.clone());
                    self.delete_node(&p.clone());
                }
            }
            _ => {
                self.now = self.now + Duration::from_millis(self.pick(200));
            }
        }
        self.pump();
        self.serve_timer();
    }

    /// A driver runs the timer once it is due; afterwards it is never due again.
    fn serve_timer(&mut self) {
        if let Some(t) = self.m.poll_timeout() {
            if t <= self.now {
                self.m.handle_timeout(self.now);
                self.pump();
                if let Some(t2) = self.m.poll_timeout() {
                    assert!(t2 > self.now, "poll_timeout {t2} not after {} after handle_timeout", self.now);
                }
            }
        }
    }

    /// Faults stop, contenders leave; every acquire ends, every hold is
    /// released, and nothing of ours is left on the server.
    fn settle(&mut self) {
        if !self.connected {
            self.reconnect();
            self.pump();
        }
        let theirs: Vec<String> = self.nodes.iter().filter(|(_, n)| n.owner == 99).map(|(p, _)| p.clone()).collect();
        for p in theirs {
            self.delete_node(&p);
        }
        for _ in 0..10_000 {
            if let Some((id, req)) = self.sent.pop_front() {
                self.run(id, req);
            } else if !self.output.is_empty() {
                self.deliver();
            } else if self.m.hold_count() > 0 {
                // Nothing left to tell: a hold whose node someone deleted
                // was told by its watch (ARCHITECTURE §6.1), whatever watched it
                // (the granting listing's child watch, the waiting node's
                // exists, the grant's exists, the verify).
                if self.watch_held {
                    let node = self.holding.clone().expect("a hold");
                    assert!(self.nodes.contains_key(&node), "{node} was deleted but is still held");
                }
                self.m.release(self.now).unwrap();
            } else if let Some(t) = self.m.poll_timeout() {
                self.now = self.now.max(t);
            } else if self.acquiring {
                panic!("an acquire is stuck with nothing in flight");
            } else {
                break;
            }
            self.pump();
            self.serve_timer();
        }
        assert!(self.m.is_quiescent(), "the mutex still owes work");
        assert!(self.m.hold_count() == 0 && !self.acquiring);
        assert!(self.nodes.is_empty(), "leaked nodes: {:?}", self.nodes.keys().collect::<Vec<_>>());
    }
}

/// Random interleavings of replies, contenders, drops, expiry, container
/// reaping, acquire/release/cancel and timers, for both plans (and the
/// Pipelined plan without fast handoff). Checked throughout: every Acquired
/// is safe (our node, our session, first in the queue, token = czxid) and a
/// served timer is never due again. Checked at the end: no node leaked.
#[test]
fn randomized_runs_are_safe_and_leak_nothing() {
    let seeds = std::env::var("MUTEX_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(400u64);
    let steps = std::env::var("MUTEX_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(300u32);
    for seed in 0..seeds {
        for (plan, fast) in [(OpPlan::Curator, true), (OpPlan::Pipelined, true), (OpPlan::Pipelined, false)] {
            let revocable = seed % 4 == 3;
            let mut model = Model::new(seed, plan, fast, revocable);
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                for _ in 0..steps {
                    model.step();
                }
                model.settle();
            }));
            if let Err(e) = outcome {
                let tail: Vec<&String> = model.log.iter().rev().take(60).collect();
                eprintln!(
                    "seed {seed} plan {plan:?} fast_handoff {fast} revocable {revocable}; last steps (newest first):"
                );
                for line in tail {
                    eprintln!("  {line}");
                }
                std::panic::resume_unwind(e);
            }
        }
    }
}
