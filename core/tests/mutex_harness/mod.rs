//! Transcript tests for [`Mutex`]: replies, watches, connection states and
//! timers are fed in by hand through the [`Recipe`] trait, and the exact op
//! sequence (opcode, path, create mode, watch flag, version) and events are
//! asserted, for both op plans.
//!
//! Ops are rendered as short strings: `create2 /app/lock/_c_<U0>-lock- [ES]`,
//! `getData /app/lock/_c_<F1>-lock-0000000005 w`. `<Un>` is the n-th distinct
//! protection UUID this mutex used (each checked to be a lowercase canonical
//! v4 UUID), so a repeated `<U0>` means the same UUID was reused and `<U1>` a
//! new one. `<Fn>` is another contender's node. Every rendered op is also
//! checked for the invariants Curator keeps: open ACL, delete version -1,
//! empty parent data.
//!
//! Replies are given in FIFO order, as ZooKeeper answers a session's
//! requests; `disconnect`/`expire`/`close` fail what is in flight first and
//! then report the state, in the order the session does.
//!
//! The harness the `mutex_*.rs` targets share: one mutex under a virtual
//! clock ([`T`]) and the replies a server gives.
#![allow(dead_code)]

use std::collections::VecDeque;

use bytes::Bytes;
use zoolock_core::wire::{Acl, CreateMode, ErrorCode, EventType, Request, Response, Stat};
use zoolock_core::{
    ConnectionState, FencingToken, Instant, OpId, Recipe, RecipeEvent, RequestError, WatchEvent, ZkPath,
    recipes::{LockConfig, Mutex, OpPlan},
};

use crate::transcript::{at, mask_with};

pub(crate) const BASE: &str = "/app/lock";
/// Curator's default node data in the recorded traces.
pub(crate) const DATA: &[u8] = b"127.0.0.1";
/// Our session id, as the server would stamp it on our ephemerals.
pub(crate) const SESSION: i64 = 0x1234;
/// The listing of [`BASE`]: a Curator-plan listing, a re-list, or a
/// Pipelined acquire's listing on a mutex whose last acquire waited.
pub(crate) const LIST: &str = "getChildren2 /app/lock";
/// The same with a child watch: a quiet Pipelined acquire's listing where
/// held nodes are watched (ARCHITECTURE §6.1; see [`T::quiet_listing`]).
pub(crate) const LIST_W: &str = "getChildren2 /app/lock w";

// ---- harness ---------------------------------------------------------------------------

pub(crate) fn config(plan: OpPlan) -> LockConfig {
    // Curator's own sequences do not watch a held node.
    let curator = matches!(plan, OpPlan::Curator | OpPlan::Curator57);
    LockConfig::new(7).with_plan(plan).with_data(Bytes::from_static(DATA)).with_watch_held(!curator)
}

/// Another contender's protected node, rendered as `<F{n}>`.
pub(crate) fn other(n: u32, seq: u32) -> String {
    format!("_c_{n:08x}-0000-4000-8000-000000000000-lock-{seq:010}")
}

pub(crate) fn full(name: &str) -> String {
    format!("{BASE}/{name}")
}

pub(crate) fn stat(czxid: i64) -> Stat {
    Stat { czxid, mzxid: czxid, ephemeral_owner: SESSION, ..Stat::default() }
}

pub(crate) fn created(path: &str, czxid: i64) -> Result<Response, RequestError> {
    Ok(Response::Create2 { path: path.to_string(), stat: stat(czxid) })
}

/// A getChildren2 reply (names in the server's order, which is unsorted).
pub(crate) fn children(names: &[&str]) -> Result<Response, RequestError> {
    Ok(Response::Children2 {
        children: names.iter().map(|s| s.to_string()).collect(),
        stat: Stat { num_children: i32::try_from(names.len()).unwrap(), ..Stat::default() },
    })
}

/// A getChildren (8) reply.
pub(crate) fn names(names: &[&str]) -> Result<Response, RequestError> {
    Ok(Response::Children(names.iter().map(|s| s.to_string()).collect()))
}

pub(crate) fn exists(czxid: i64) -> Result<Response, RequestError> {
    Ok(Response::Stat(stat(czxid)))
}

pub(crate) fn data(bytes: &[u8]) -> Result<Response, RequestError> {
    Ok(Response::Data { data: Some(Bytes::copy_from_slice(bytes)), stat: stat(3) })
}

pub(crate) fn path_reply(path: &str) -> Result<Response, RequestError> {
    Ok(Response::Path(path.to_string()))
}

pub(crate) fn empty() -> Result<Response, RequestError> {
    Ok(Response::Empty)
}

pub(crate) fn err(code: ErrorCode) -> Result<Response, RequestError> {
    Err(RequestError::Server(code))
}

pub(crate) fn no_node() -> Result<Response, RequestError> {
    err(ErrorCode::NO_NODE)
}

pub(crate) fn acquired(node: &str, czxid: i64) -> RecipeEvent {
    RecipeEvent::Acquired { node: node.to_string().into(), token: FencingToken(czxid) }
}

pub(crate) fn failed(e: RequestError) -> RecipeEvent {
    RecipeEvent::Failed(e)
}

/// One mutex on [`BASE`] under a virtual clock.
pub(crate) struct T {
    pub(crate) m: Mutex,
    pub(crate) now: Instant,
    /// Ops handed out and not yet answered, in send order.
    pub(crate) in_flight: VecDeque<(OpId, String)>,
    /// Protection UUIDs in first-use order (`<U0>`, `<U1>`, ...).
    pub(crate) uuids: Vec<String>,
    /// Data of every lock-node create, in send order.
    pub(crate) create_data: Vec<Bytes>,
    /// `(position, total)` of every `Queued`, kept apart from `events()`.
    pub(crate) queued: Vec<(usize, usize)>,
    /// Held nodes are watched ([`LockConfig::watch_held`]).
    pub(crate) watch_held: bool,
    /// The Pipelined plan's `createContainer /app/lock [C]` sent before any
    /// other op on the base: answered NodeExists at once and kept out of
    /// `ops()`, so the transcripts of what follows read as before (a second
    /// one shows in `ops()` and fails a test that does not expect it).
    pub(crate) ensured: Vec<String>,
    /// An op on the base or under it was rendered.
    base_touched: bool,
    /// Off: the preamble shows in `ops()` like any op, for tests of it.
    pub(crate) auto_ensure: bool,
}

impl T {
    pub(crate) fn new(plan: OpPlan) -> T {
        T::with_config(config(plan))
    }

    /// A mutex whose first acquire (no deadline) has sent its first ops,
    /// which are in flight unanswered.
    pub(crate) fn creating(plan: OpPlan) -> T {
        let mut t = T::new(plan);
        t.acquire(None);
        t.ops();
        t
    }

    /// [`T::creating`], and then the connection drops: whether the create
    /// was applied is unknown.
    pub(crate) fn create_unknown(plan: OpPlan) -> T {
        let mut t = T::creating(plan);
        t.disconnect();
        t
    }

    pub(crate) fn with_config(config: LockConfig) -> T {
        T {
            watch_held: config.watch_held,
            m: Mutex::new(ZkPath::new(BASE).unwrap(), config),
            now: Instant::ZERO,
            in_flight: VecDeque::new(),
            uuids: Vec::new(),
            create_data: Vec::new(),
            queued: Vec::new(),
            ensured: Vec::new(),
            base_touched: false,
            auto_ensure: true,
        }
    }

    /// Moves the clock (never backwards).
    pub(crate) fn set_time(&mut self, ms: u64) {
        assert!(at(ms) >= self.now, "time goes forward");
        self.now = at(ms);
    }

    pub(crate) fn acquire(&mut self, deadline_ms: Option<u64>) {
        self.m.acquire(self.now, deadline_ms.map(at)).unwrap();
    }

    pub(crate) fn release(&mut self) {
        self.m.release(self.now).unwrap();
    }

    pub(crate) fn cancel(&mut self) {
        self.m.cancel(self.now);
    }

    /// Our node `<U{uuid}>` with sequence `seq` (name only).
    pub(crate) fn own(&self, uuid: usize, seq: u32) -> String {
        format!("_c_{}-lock-{seq:010}", self.uuids[uuid])
    }

    pub(crate) fn own_path(&self, uuid: usize, seq: u32) -> String {
        full(&self.own(uuid, seq))
    }

    pub(crate) fn norm(&mut self, path: &str, record: bool) -> String {
        mask_with(path, |uuid| {
            if let Some(n) = self.uuids.iter().position(|u| u == uuid) {
                format!("<U{n}>")
            } else if uuid.ends_with("-0000-4000-8000-000000000000") {
                format!("<F{}>", u32::from_str_radix(&uuid[..8], 16).unwrap())
            } else if record {
                self.uuids.push(uuid.to_string());
                format!("<U{}>", self.uuids.len() - 1)
            } else {
                panic!("unknown protection uuid in {path}");
            }
        })
    }

    pub(crate) fn render(&mut self, req: &Request) -> String {
        fn watch(w: bool) -> &'static str {
            if w { " w" } else { "" }
        }
        fn mode(m: CreateMode) -> String {
            match m {
                CreateMode::PERSISTENT => "[P]".into(),
                CreateMode::EPHEMERAL => "[E]".into(),
                CreateMode::EPHEMERAL_SEQUENTIAL => "[ES]".into(),
                CreateMode::CONTAINER => "[C]".into(),
                other => format!("[{}]", other.0),
            }
        }
        match req {
            Request::Create2(r) | Request::Create(r) | Request::CreateContainer(r) => {
                assert_eq!(r.acl, Acl::open_unsafe(), "every node gets the open ACL");
                let lock_node = r.path.starts_with(&format!("{BASE}/_c_"));
                if lock_node {
                    self.create_data.push(r.data.clone().unwrap_or_default());
                } else {
                    assert_eq!(r.data.as_deref(), Some(&[][..]), "parents are created with empty data");
                }
                let name = match req {
                    Request::Create2(_) => "create2",
                    Request::Create(_) => "create",
                    _ => "createContainer",
                };
                format!("{name} {} {}", self.norm(&r.path, lock_node), mode(r.flags))
            }
            Request::Exists(r) => format!("exists {}{}", self.norm(&r.path, false), watch(r.watch)),
            Request::GetData(r) => format!("getData {}{}", self.norm(&r.path, false), watch(r.watch)),
            Request::GetChildren(r) => format!("getChildren {}{}", self.norm(&r.path, false), watch(r.watch)),
            Request::GetChildren2(r) => format!("getChildren2 {}{}", self.norm(&r.path, false), watch(r.watch)),
            Request::Delete(r) => {
                assert_eq!(r.version, -1, "deletes are unconditional");
                format!("delete {}", self.norm(&r.path, false))
            }
            Request::CheckWatches(r) => format!("checkWatches {} type={}", self.norm(&r.path, false), r.watcher_type.0),
            other => format!("{other:?}"),
        }
    }

    /// The ops emitted since the last call, rendered; they are now in flight.
    pub(crate) fn ops(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(op) = self.m.poll_op() {
            let text = self.render(op.op.request());
            if self.auto_ensure && !self.base_touched && text == format!("createContainer {BASE} [C]") {
                self.ensured.push(text);
                self.base_touched = true;
                self.m.handle_reply(self.now, op.id, err(ErrorCode::NODE_EXISTS));
                continue;
            }
            self.base_touched |= text.split(' ').nth(1).is_some_and(|p| p.starts_with(BASE));
            assert!(
                text.split(' ').nth(1).is_none_or(|p| p != "/"),
                "the root is never probed, created or listed: {text}"
            );
            self.in_flight.push_back((op.id, text.clone()));
            out.push(text);
        }
        out
    }

    /// Asserts that nothing was emitted.
    pub(crate) fn no_ops(&mut self) {
        assert_eq!(self.ops(), Vec::<String>::new());
    }

    /// Answers the oldest op in flight, which must render as `expect`.
    pub(crate) fn reply(&mut self, expect: &str, result: Result<Response, RequestError>) {
        let (id, text) = self.in_flight.pop_front().unwrap_or_else(|| panic!("no op in flight to answer `{expect}`"));
        assert_eq!(text, expect, "the oldest op in flight");
        self.m.handle_reply(self.now, id, result);
        self.check_timeout();
    }

    pub(crate) fn watch(&mut self, event_type: EventType, path: &str) {
        self.m.handle_watch(self.now, &WatchEvent { event_type, path: path.to_string() });
        self.check_timeout();
    }

    pub(crate) fn session(&mut self, state: ConnectionState) {
        self.m.handle_session(self.now, state);
        self.check_timeout();
    }

    /// An event of `event_type` on the node `name` (the watched
    /// predecessor) wakes the waiter, and it lists again.
    pub(crate) fn wake_relists(&mut self, event_type: EventType, name: &str) {
        self.watch(event_type, &full(name));
        assert_eq!(self.ops(), ["getChildren2 /app/lock"]);
    }

    /// `name` is deleted: we hold `own` at once (the fast handoff, with the
    /// last listing's knowledge alone), and no op at all: our own node is
    /// watched since the wait began (ARCHITECTURE §6.1).
    pub(crate) fn handed_off(&mut self, name: &str, own: &str) {
        self.watch(EventType::NODE_DELETED, &full(name));
        assert_eq!(self.events(), [acquired(&full(own), 100)]);
        self.no_ops();
    }

    /// The watch on our own node `own` (a name), rendered: `exists <own> w`
    /// (ARCHITECTURE §6.1). Where held nodes are watched, a waiter sends it when
    /// it starts to wait, right before its predecessor's getData, and a
    /// grant that neither that nor the granting listing's child watch covers
    /// sends it.
    pub(crate) fn own_watch(&mut self, own: &str) -> String {
        format!("exists {} w", self.norm(&full(own), false))
    }

    /// The ops a waiter with our node `own` sends when it starts to wait:
    /// the watch on its own node where held nodes are watched, then the
    /// getData watches on `watched` (the predecessor, then the fast
    /// handoff's look-ahead node, if any).
    pub(crate) fn waiting_ops(&mut self, own: &str, watched: &[&str]) -> Vec<String> {
        let mut ops = Vec::new();
        if self.watch_held {
            ops.push(self.own_watch(own));
        }
        ops.extend(watched.iter().map(|w| format!("getData {} w", self.norm(&full(w), false))));
        ops
    }

    /// The listing that rides with a Pipelined acquire's create on a quiet
    /// mutex (a fresh one, or one whose last acquire was granted by its
    /// first listing): with a child watch where held nodes are watched,
    /// which is then the held node's watch if that listing grants.
    pub(crate) fn quiet_listing(&self) -> &'static str {
        if self.watch_held { LIST_W } else { LIST }
    }

    /// `name` is deleted and nothing follows: no op, no event.
    pub(crate) fn deleted_quietly(&mut self, name: &str) {
        self.watch(EventType::NODE_DELETED, &full(name));
        self.no_ops();
        self.no_events();
    }

    /// The look-ahead node `look` is deleted: the waiter lists, and the
    /// listing answers `listing`.
    pub(crate) fn look_relists(&mut self, look: &str, listing: &[&str]) {
        self.wake_relists(EventType::NODE_DELETED, look);
        self.reply(&format!("getChildren2 {BASE}"), children(listing));
    }

    /// The connection drops: every op in flight fails with ConnectionLoss,
    /// then Suspended (the session's order).
    pub(crate) fn disconnect(&mut self) {
        self.fail_in_flight(RequestError::ConnectionLoss);
        self.session(ConnectionState::Suspended);
    }

    /// The session ends: every op in flight fails with `error`, then `state`.
    pub(crate) fn end(&mut self, error: RequestError, state: ConnectionState) {
        self.fail_in_flight(error);
        self.session(state);
    }

    /// The session ends (see [`T::end`]) under an acquire, which fails
    /// with `error`, once.
    pub(crate) fn end_failing_acquire(&mut self, error: RequestError, state: ConnectionState) {
        self.end(error.clone(), state);
        assert_eq!(self.events(), [failed(error)]);
    }

    pub(crate) fn fail_in_flight(&mut self, error: RequestError) {
        while let Some((id, _)) = self.in_flight.pop_front() {
            self.m.handle_reply(self.now, id, Err(error.clone()));
        }
    }

    /// Runs the timer at `ms`, as a driver does once `poll_timeout` is due.
    pub(crate) fn timeout(&mut self, ms: u64) {
        self.set_time(ms);
        self.m.handle_timeout(self.now);
        self.check_timeout();
    }

    /// The cleanup delete `expect` is all that is sent; answered with
    /// `result`, it leaves nothing to report and nothing to do.
    pub(crate) fn cleanup_done(&mut self, expect: &str, result: Result<Response, RequestError>) {
        assert_eq!(self.ops(), [expect]);
        self.reply(expect, result);
        self.no_events();
        self.assert_quiescent();
    }

    /// The release's delete `expect` is answered with `result`: Released,
    /// and nothing is left to do.
    pub(crate) fn release_done(&mut self, expect: &str, result: Result<Response, RequestError>) {
        self.reply(expect, result);
        assert_eq!(self.events(), [RecipeEvent::Released]);
        self.assert_quiescent();
    }

    /// `poll_timeout` never asks to be woken in the past once it has been served.
    pub(crate) fn check_timeout(&self) {
        if let Some(t) = self.m.poll_timeout() {
            assert!(t > self.now, "poll_timeout {t} is not after now {}", self.now);
        }
    }

    pub(crate) fn events(&mut self) -> Vec<RecipeEvent> {
        let mut out = Vec::new();
        while let Some(event) = self.m.poll_event().map(RecipeEvent::from) {
            match event {
                RecipeEvent::Queued { position, total } => self.queued.push((position, total)),
                other => out.push(other),
            }
        }
        out
    }

    pub(crate) fn no_events(&mut self) {
        assert_eq!(self.events(), vec![]);
    }

    /// Nothing sent and nothing in flight (the mutex may hold).
    pub(crate) fn assert_nothing_in_flight(&mut self) {
        self.no_ops();
        assert!(self.in_flight.is_empty(), "unanswered ops: {:?}", self.in_flight);
    }

    /// Nothing in flight, nothing owed, nothing more to say.
    pub(crate) fn assert_quiescent(&mut self) {
        self.no_ops();
        assert!(self.in_flight.is_empty(), "unanswered ops: {:?}", self.in_flight);
        assert!(self.m.is_quiescent(), "mutex still has work");
    }

    /// Create + list with the base path present (Curator plan): we get `seq`
    /// and the listing shows `listing` (our node must be added by the caller).
    pub(crate) fn curator_create(&mut self, uuid: usize, seq: u32, czxid: i64) -> String {
        assert_eq!(self.ops(), [format!("create2 {BASE}/_c_<U{uuid}>-lock- [ES]")]);
        let own = self.own_path(uuid, seq);
        self.reply(&format!("create2 {BASE}/_c_<U{uuid}>-lock- [ES]"), created(&own, czxid));
        assert_eq!(self.ops(), [format!("getChildren2 {BASE}")]);
        self.own(uuid, seq)
    }

    /// Acquires an uncontended lock (Curator plan), returning our node name.
    pub(crate) fn curator_acquire_free(&mut self, uuid: usize, seq: u32, czxid: i64) -> String {
        self.acquire(None);
        let own = self.curator_create(uuid, seq, czxid);
        self.reply(&format!("getChildren2 {BASE}"), children(&[&own]));
        assert_eq!(self.events(), [acquired(&full(&own), czxid)]);
        own
    }

    /// A mutex that holds the lock, its node `<U0>` with sequence 0 and
    /// czxid `czxid` (see [`held`]).
    pub(crate) fn holding(plan: OpPlan, czxid: i64) -> T {
        let mut t = T::new(plan);
        held(&mut t, 0, czxid);
        t
    }

    /// Pipelined, the base path's parent missing: the container create of
    /// the base ahead of the pair and both replies of the pair are NoNode,
    /// and the bottom-up probe of the base is in flight.
    pub(crate) fn pipelined_base_missing() -> T {
        let mut t = T::new(OpPlan::Pipelined);
        t.auto_ensure = false;
        t.acquire(None);
        assert_eq!(t.ops(), ["createContainer /app/lock [C]", "create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);
        t.reply("createContainer /app/lock [C]", no_node());
        t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
        assert_eq!(t.ops(), ["exists /app/lock"]);
        t.reply(LIST_W, no_node());
        t
    }

    /// A mutex waiting right behind one other contender (`<F1>`, sequence
    /// `seq`), its own node next. Returns it, the contender's name and ours.
    pub(crate) fn waiting_behind_one(plan: OpPlan, seq: u32) -> (T, String, String) {
        let mut t = T::new(plan);
        let pred = other(1, seq);
        let own = t.wait_behind(plan == OpPlan::Pipelined, seq + 1, &[&pred], &[&pred]);
        (t, pred, own)
    }

    /// Queues behind `ahead` (other contenders' names) and arms the watches
    /// on our own node (where held nodes are watched) and on `watched`: the
    /// immediate predecessor, then the fast handoff's look-ahead node if
    /// there is one (Curator plan, or a quiet pipelined acquire when
    /// `pipelined`). Returns our node name.
    pub(crate) fn wait_behind(&mut self, pipelined: bool, seq: u32, ahead: &[&str], watched: &[&str]) -> String {
        let own = self.listed(pipelined, seq, ahead);
        let texts = self.waiting_ops(&own, watched);
        assert_eq!(self.ops(), texts);
        for text in &texts {
            let reply = if text.starts_with("exists") { exists(100) } else { data(b"10.0.0.9") };
            self.reply(text, reply);
        }
        self.no_ops();
        self.no_events();
        own
    }

    /// Acquires (Curator plan, or pipelined on a quiet mutex when
    /// `pipelined`) with sequence `seq`, and answers the create and the
    /// listing: `ahead` (other contenders' names) and ours. Returns our node
    /// name.
    pub(crate) fn listed(&mut self, pipelined: bool, seq: u32, ahead: &[&str]) -> String {
        self.acquire(None);
        let (own, list) = if pipelined {
            let list = self.quiet_listing();
            assert_eq!(self.ops(), [format!("create2 {BASE}/_c_<U0>-lock- [ES]"), list.to_string()]);
            let own = self.own(0, seq);
            self.reply(&format!("create2 {BASE}/_c_<U0>-lock- [ES]"), created(&full(&own), 100));
            self.no_ops();
            (own, list)
        } else {
            (self.curator_create(0, seq, 100), LIST)
        };
        let mut listing: Vec<&str> = ahead.to_vec();
        listing.insert(listing.len() / 2, &own);
        self.reply(list, children(&listing));
        own
    }
}

/// Acquires the free lock (either plan; a quiet mutex in the Pipelined
/// plan) with sequence `seq` and czxid `czxid`. In the Pipelined plan with
/// held nodes watched, the grant sends nothing: the listing's child watch
/// is the held node's watch. A grant whose listing had no child watch
/// while held nodes are watched (a Curator-plan config with `watch_held`
/// on) sends `exists <own> w`, which is answered. Returns our node name.
pub(crate) fn held(t: &mut T, seq: u32, czxid: i64) -> String {
    t.acquire(None);
    let ops = t.ops();
    assert_eq!(ops[0], "create2 /app/lock/_c_<U0>-lock- [ES]");
    let own = t.own(0, seq);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), czxid));
    let list = if ops.len() == 1 {
        assert_eq!(t.ops(), [LIST]);
        LIST
    } else {
        assert_eq!(ops[1], t.quiet_listing());
        t.quiet_listing()
    };
    t.reply(list, children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), czxid)]);
    if t.watch_held && list == LIST {
        let watch = t.own_watch(&own);
        assert_eq!(t.ops(), std::slice::from_ref(&watch));
        t.reply(&watch, exists(czxid));
        t.no_events();
    }
    t.no_ops();
    own
}

impl T {
    /// The prefix lookup in flight finds our node `<U0>` with sequence `seq`
    /// after `others`; an exists confirms it (czxid `czxid`), and it is
    /// adopted, listed alone and held.
    pub(crate) fn lookup_adopts_and_acquires(&mut self, seq: u32, others: &[&str], czxid: i64) {
        let own = self.own(0, seq);
        let listed: Vec<&str> = others.iter().copied().chain([own.as_str()]).collect();
        self.reply(&format!("getChildren {BASE}"), names(&listed));
        let exists_text = format!("exists {BASE}/_c_<U0>-lock-{seq:010}");
        assert_eq!(self.ops(), std::slice::from_ref(&exists_text));
        self.reply(&exists_text, exists(czxid));
        self.reply_list_and_acquire(&own, czxid);
    }

    pub(crate) fn reply_list_and_acquire(&mut self, own: &str, czxid: i64) {
        assert_eq!(self.ops(), [format!("getChildren2 {BASE}")]);
        self.reply(&format!("getChildren2 {BASE}"), children(&[own]));
        assert_eq!(self.events(), [acquired(&full(own), czxid)]);
    }
}
