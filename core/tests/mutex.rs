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

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use zoolock_core::recipes::REVOKE_MESSAGE;
use zoolock_core::wire::{Acl, CreateMode, ErrorCode, EventType, Request, Response, Stat};
use zoolock_core::{
    ApiMisuse, ConnectionState, FencingToken, Instant, LockConfig, Mutex, OpId, OpPlan, Recipe, RecipeEvent,
    RequestError, RetryPolicy, WatchEvent, ZkPath,
};

mod transcript;

use transcript::at;

const BASE: &str = "/app/lock";
/// Curator's default node data in the recorded traces.
const DATA: &[u8] = b"127.0.0.1";
/// Our session id, as the server would stamp it on our ephemerals.
const SESSION: i64 = 0x1234;
/// The listing of [`BASE`]: a Curator-plan listing, a re-list, or a
/// Pipelined acquire's listing on a mutex whose last acquire waited.
const LIST: &str = "getChildren2 /app/lock";
/// The same with a child watch: a quiet Pipelined acquire's listing where
/// held nodes are watched (DESIGN §4.10; see [`T::quiet_listing`]).
const LIST_W: &str = "getChildren2 /app/lock w";

// ---- harness ---------------------------------------------------------------------------

fn config(plan: OpPlan) -> LockConfig {
    // Curator's own sequence does not watch a held node.
    LockConfig::new(7).with_plan(plan).with_data(Bytes::from_static(DATA)).with_watch_held(plan != OpPlan::Curator)
}

/// Another contender's protected node, rendered as `<F{n}>`.
fn other(n: u32, seq: u32) -> String {
    format!("_c_{n:08x}-0000-4000-8000-000000000000-lock-{seq:010}")
}

fn full(name: &str) -> String {
    format!("{BASE}/{name}")
}

fn stat(czxid: i64) -> Stat {
    Stat { czxid, mzxid: czxid, ephemeral_owner: SESSION, ..Stat::default() }
}

fn created(path: &str, czxid: i64) -> Result<Response, RequestError> {
    Ok(Response::Create2 { path: path.to_string(), stat: stat(czxid) })
}

/// A getChildren2 reply (names in the server's order, which is unsorted).
fn children(names: &[&str]) -> Result<Response, RequestError> {
    Ok(Response::Children2 {
        children: names.iter().map(|s| s.to_string()).collect(),
        stat: Stat { num_children: i32::try_from(names.len()).unwrap(), ..Stat::default() },
    })
}

/// A getChildren (8) reply.
fn names(names: &[&str]) -> Result<Response, RequestError> {
    Ok(Response::Children(names.iter().map(|s| s.to_string()).collect()))
}

fn exists(czxid: i64) -> Result<Response, RequestError> {
    Ok(Response::Stat(stat(czxid)))
}

fn data(bytes: &[u8]) -> Result<Response, RequestError> {
    Ok(Response::Data { data: Some(Bytes::copy_from_slice(bytes)), stat: stat(3) })
}

fn path_reply(path: &str) -> Result<Response, RequestError> {
    Ok(Response::Path(path.to_string()))
}

fn empty() -> Result<Response, RequestError> {
    Ok(Response::Empty)
}

fn err(code: ErrorCode) -> Result<Response, RequestError> {
    Err(RequestError::Server(code))
}

fn no_node() -> Result<Response, RequestError> {
    err(ErrorCode::NO_NODE)
}

fn acquired(node: &str, czxid: i64) -> RecipeEvent {
    RecipeEvent::Acquired { node: node.to_string(), token: FencingToken(czxid) }
}

fn failed(e: RequestError) -> RecipeEvent {
    RecipeEvent::Failed(e)
}

/// One mutex on [`BASE`] under a virtual clock.
struct T {
    m: Mutex,
    now: Instant,
    /// Ops handed out and not yet answered, in send order.
    in_flight: VecDeque<(OpId, String)>,
    /// Protection UUIDs in first-use order (`<U0>`, `<U1>`, ...).
    uuids: Vec<String>,
    /// Data of every lock-node create, in send order.
    create_data: Vec<Bytes>,
    /// `(position, total)` of every `Queued`, kept apart from `events()`.
    queued: Vec<(usize, usize)>,
    /// Held nodes are watched ([`LockConfig::watch_held`]).
    watch_held: bool,
}

impl T {
    fn new(plan: OpPlan) -> T {
        T::with_config(config(plan))
    }

    /// A mutex whose first acquire (no deadline) has sent its first ops,
    /// which are in flight unanswered.
    fn creating(plan: OpPlan) -> T {
        let mut t = T::new(plan);
        t.acquire(None);
        t.ops();
        t
    }

    /// [`T::creating`], and then the connection drops: whether the create
    /// was applied is unknown.
    fn create_unknown(plan: OpPlan) -> T {
        let mut t = T::creating(plan);
        t.disconnect();
        t
    }

    fn with_config(config: LockConfig) -> T {
        T {
            watch_held: config.watch_held,
            m: Mutex::new(ZkPath::new(BASE).unwrap(), config),
            now: Instant::ZERO,
            in_flight: VecDeque::new(),
            uuids: Vec::new(),
            create_data: Vec::new(),
            queued: Vec::new(),
        }
    }

    /// Moves the clock (never backwards).
    fn set_time(&mut self, ms: u64) {
        assert!(at(ms) >= self.now, "time goes forward");
        self.now = at(ms);
    }

    fn acquire(&mut self, deadline_ms: Option<u64>) {
        self.m.acquire(self.now, deadline_ms.map(at)).unwrap();
    }

    fn release(&mut self) {
        self.m.release(self.now).unwrap();
    }

    fn cancel(&mut self) {
        self.m.cancel(self.now);
    }

    /// Our node `<U{uuid}>` with sequence `seq` (name only).
    fn own(&self, uuid: usize, seq: u32) -> String {
        format!("_c_{}-lock-{seq:010}", self.uuids[uuid])
    }

    fn own_path(&self, uuid: usize, seq: u32) -> String {
        full(&self.own(uuid, seq))
    }

    fn norm(&mut self, path: &str, record: bool) -> String {
        transcript::mask_with(path, |uuid| {
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

    fn render(&mut self, req: &Request) -> String {
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
    fn ops(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(op) = self.m.poll_op() {
            let text = self.render(op.op.request());
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
    fn no_ops(&mut self) {
        assert_eq!(self.ops(), Vec::<String>::new());
    }

    /// Answers the oldest op in flight, which must render as `expect`.
    fn reply(&mut self, expect: &str, result: Result<Response, RequestError>) {
        let (id, text) = self.in_flight.pop_front().unwrap_or_else(|| panic!("no op in flight to answer `{expect}`"));
        assert_eq!(text, expect, "the oldest op in flight");
        self.m.handle_reply(self.now, id, result);
        self.check_timeout();
    }

    fn watch(&mut self, event_type: EventType, path: &str) {
        self.m.handle_watch(self.now, &WatchEvent { event_type, path: path.to_string() });
        self.check_timeout();
    }

    fn session(&mut self, state: ConnectionState) {
        self.m.handle_session(self.now, state);
        self.check_timeout();
    }

    /// An event of `event_type` on the node `name` (the watched
    /// predecessor) wakes the waiter, and it lists again.
    fn wake_relists(&mut self, event_type: EventType, name: &str) {
        self.watch(event_type, &full(name));
        assert_eq!(self.ops(), ["getChildren2 /app/lock"]);
    }

    /// `name` is deleted: we hold `own` at once (the fast handoff, with the
    /// last listing's knowledge alone), and no op at all: our own node is
    /// watched since the wait began (DESIGN §4.10).
    fn handed_off(&mut self, name: &str, own: &str) {
        self.watch(EventType::NODE_DELETED, &full(name));
        assert_eq!(self.events(), [acquired(&full(own), 100)]);
        self.no_ops();
    }

    /// The watch on our own node `own` (a name), rendered: `exists <own> w`
    /// (DESIGN §4.10). Where held nodes are watched, a waiter sends it when
    /// it starts to wait, right before its predecessor's getData, and a
    /// grant that neither that nor the granting listing's child watch covers
    /// sends it.
    fn own_watch(&mut self, own: &str) -> String {
        format!("exists {} w", self.norm(&full(own), false))
    }

    /// The ops a waiter with our node `own` sends when it starts to wait:
    /// the watch on its own node where held nodes are watched, then the
    /// getData watches on `watched` (the predecessor, then the fast
    /// handoff's look-ahead node, if any).
    fn waiting_ops(&mut self, own: &str, watched: &[&str]) -> Vec<String> {
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
    fn quiet_listing(&self) -> &'static str {
        if self.watch_held { LIST_W } else { LIST }
    }

    /// `name` is deleted and nothing follows: no op, no event.
    fn deleted_quietly(&mut self, name: &str) {
        self.watch(EventType::NODE_DELETED, &full(name));
        self.no_ops();
        self.no_events();
    }

    /// The look-ahead node `look` is deleted: the waiter lists, and the
    /// listing answers `listing`.
    fn look_relists(&mut self, look: &str, listing: &[&str]) {
        self.wake_relists(EventType::NODE_DELETED, look);
        self.reply(&format!("getChildren2 {BASE}"), children(listing));
    }

    /// The connection drops: every op in flight fails with ConnectionLoss,
    /// then Suspended (the session's order).
    fn disconnect(&mut self) {
        self.fail_in_flight(RequestError::ConnectionLoss);
        self.session(ConnectionState::Suspended);
    }

    /// The session ends: every op in flight fails with `error`, then `state`.
    fn end(&mut self, error: RequestError, state: ConnectionState) {
        self.fail_in_flight(error);
        self.session(state);
    }

    /// The session ends (see [`T::end`]) under an acquire, which fails
    /// with `error`, once.
    fn end_failing_acquire(&mut self, error: RequestError, state: ConnectionState) {
        self.end(error.clone(), state);
        assert_eq!(self.events(), [failed(error)]);
    }

    fn fail_in_flight(&mut self, error: RequestError) {
        while let Some((id, _)) = self.in_flight.pop_front() {
            self.m.handle_reply(self.now, id, Err(error.clone()));
        }
    }

    /// Runs the timer at `ms`, as a driver does once `poll_timeout` is due.
    fn timeout(&mut self, ms: u64) {
        self.set_time(ms);
        self.m.handle_timeout(self.now);
        self.check_timeout();
    }

    /// The cleanup delete `expect` is all that is sent; answered with
    /// `result`, it leaves nothing to report and nothing to do.
    fn cleanup_done(&mut self, expect: &str, result: Result<Response, RequestError>) {
        assert_eq!(self.ops(), [expect]);
        self.reply(expect, result);
        self.no_events();
        self.assert_quiescent();
    }

    /// The release's delete `expect` is answered with `result`: Released,
    /// and nothing is left to do.
    fn release_done(&mut self, expect: &str, result: Result<Response, RequestError>) {
        self.reply(expect, result);
        assert_eq!(self.events(), [RecipeEvent::Released]);
        self.assert_quiescent();
    }

    /// `poll_timeout` never asks to be woken in the past once it has been served.
    fn check_timeout(&self) {
        if let Some(t) = self.m.poll_timeout() {
            assert!(t > self.now, "poll_timeout {t} is not after now {}", self.now);
        }
    }

    fn events(&mut self) -> Vec<RecipeEvent> {
        let mut out = Vec::new();
        while let Some(event) = self.m.poll_event() {
            match event {
                RecipeEvent::Queued { position, total } => self.queued.push((position, total)),
                other => out.push(other),
            }
        }
        out
    }

    fn no_events(&mut self) {
        assert_eq!(self.events(), vec![]);
    }

    /// Nothing sent and nothing in flight (the mutex may hold).
    fn assert_nothing_in_flight(&mut self) {
        self.no_ops();
        assert!(self.in_flight.is_empty(), "unanswered ops: {:?}", self.in_flight);
    }

    /// Nothing in flight, nothing owed, nothing more to say.
    fn assert_quiescent(&mut self) {
        self.no_ops();
        assert!(self.in_flight.is_empty(), "unanswered ops: {:?}", self.in_flight);
        assert!(self.m.is_quiescent(), "mutex still has work");
    }

    /// Create + list with the base path present (Curator plan): we get `seq`
    /// and the listing shows `listing` (our node must be added by the caller).
    fn curator_create(&mut self, uuid: usize, seq: u32, czxid: i64) -> String {
        assert_eq!(self.ops(), [format!("create2 {BASE}/_c_<U{uuid}>-lock- [ES]")]);
        let own = self.own_path(uuid, seq);
        self.reply(&format!("create2 {BASE}/_c_<U{uuid}>-lock- [ES]"), created(&own, czxid));
        assert_eq!(self.ops(), [format!("getChildren2 {BASE}")]);
        self.own(uuid, seq)
    }

    /// Acquires an uncontended lock (Curator plan), returning our node name.
    fn curator_acquire_free(&mut self, uuid: usize, seq: u32, czxid: i64) -> String {
        self.acquire(None);
        let own = self.curator_create(uuid, seq, czxid);
        self.reply(&format!("getChildren2 {BASE}"), children(&[&own]));
        assert_eq!(self.events(), [acquired(&full(&own), czxid)]);
        own
    }

    /// A mutex that holds the lock, its node `<U0>` with sequence 0 and
    /// czxid `czxid` (see [`held`]).
    fn holding(plan: OpPlan, czxid: i64) -> T {
        let mut t = T::new(plan);
        held(&mut t, 0, czxid);
        t
    }

    /// Pipelined, the base path missing: both replies of the first pair are
    /// NoNode, and the bottom-up probe of the base is in flight.
    fn pipelined_base_missing() -> T {
        let mut t = T::new(OpPlan::Pipelined);
        t.acquire(None);
        assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);
        t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
        assert_eq!(t.ops(), ["exists /app/lock"]);
        t.reply(LIST_W, no_node());
        t
    }

    /// A mutex waiting right behind one other contender (`<F1>`, sequence
    /// `seq`), its own node next. Returns it, the contender's name and ours.
    fn waiting_behind_one(plan: OpPlan, seq: u32) -> (T, String, String) {
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
    fn wait_behind(&mut self, pipelined: bool, seq: u32, ahead: &[&str], watched: &[&str]) -> String {
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
    fn listed(&mut self, pipelined: bool, seq: u32, ahead: &[&str]) -> String {
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

// ---- Curator plan: acquire ----------------------------------------------------------------

/// mutex-uncontended, with two missing ancestors: create2 → NoNode, then
/// Curator 5.4's top-down mkdirs (exists, createContainer; never `/`), then
/// create2 again with the same UUID, one listing, Acquired with czxid.
#[test]
fn curator_uncontended_creates_missing_parents_top_down_with_same_uuid() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    assert_eq!(t.create_data, [Bytes::from_static(DATA)], "Curator's default data");
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    assert_eq!(t.ops(), ["exists /app"]);
    t.reply("exists /app", no_node());
    assert_eq!(t.ops(), ["createContainer /app [C]"]);
    t.reply("createContainer /app [C]", created("/app", 5));
    assert_eq!(t.ops(), ["exists /app/lock"]);
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["createContainer /app/lock [C]"]);
    t.reply("createContainer /app/lock [C]", created("/app/lock", 6));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"], "same UUID after mkdirs");
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 7));
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.no_events();
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 7)], "the token is the create2 Stat's czxid");
    assert_eq!(t.m.holder(), Some((full(&own).as_str(), FencingToken(7))));
    assert_eq!(t.m.hold_count(), 1);
    t.no_ops();
    assert_eq!(t.m.poll_timeout(), None);
}

/// The trace corpus' shape: `/traces` exists, only the base is missing.
#[test]
fn curator_mkdirs_skips_existing_ancestors() {
    let mut t = T::creating(OpPlan::Curator);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    assert_eq!(t.ops(), ["exists /app"]);
    t.reply("exists /app", exists(2));
    assert_eq!(t.ops(), ["exists /app/lock"]);
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["createContainer /app/lock [C]"]);
    // Another client made it first: NodeExists is ignored.
    t.reply("createContainer /app/lock [C]", err(ErrorCode::NODE_EXISTS));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    let own = t.own(0, 3);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 9));
    t.reply_list_and_acquire(&own, 9);
}

impl T {
    /// The prefix lookup in flight finds our node `<U0>` with sequence `seq`
    /// after `others`; an exists confirms it (czxid `czxid`), and it is
    /// adopted, listed alone and held.
    fn lookup_adopts_and_acquires(&mut self, seq: u32, others: &[&str], czxid: i64) {
        let own = self.own(0, seq);
        let listed: Vec<&str> = others.iter().copied().chain([own.as_str()]).collect();
        self.reply(&format!("getChildren {BASE}"), names(&listed));
        let exists_text = format!("exists {BASE}/_c_<U0>-lock-{seq:010}");
        assert_eq!(self.ops(), std::slice::from_ref(&exists_text));
        self.reply(&exists_text, exists(czxid));
        self.reply_list_and_acquire(&own, czxid);
    }

    fn reply_list_and_acquire(&mut self, own: &str, czxid: i64) {
        assert_eq!(self.ops(), [format!("getChildren2 {BASE}")]);
        self.reply(&format!("getChildren2 {BASE}"), children(&[own]));
        assert_eq!(self.events(), [acquired(&full(own), czxid)]);
    }
}

/// A NodeExists on the first parent as well (a concurrent mkdirs).
#[test]
fn curator_mkdirs_ignores_node_exists_on_every_parent() {
    let mut t = T::creating(OpPlan::Curator);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.ops();
    t.reply("exists /app", no_node());
    t.ops();
    t.reply("createContainer /app [C]", err(ErrorCode::NODE_EXISTS));
    assert_eq!(t.ops(), ["exists /app/lock"]);
    t.reply("exists /app/lock", exists(3));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    t.no_events();
}

/// A server without containers answers createContainer with Unimplemented:
/// the parent is made persistent instead, the way Curator's
/// `dontUseContainerParents()` makes it (create, opcode 1, flags 0), and the
/// rest of the parents follow suit.
#[test]
fn curator_container_unimplemented_falls_back_to_persistent_create() {
    let mut t = T::creating(OpPlan::Curator);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.ops();
    t.reply("exists /app", no_node());
    assert_eq!(t.ops(), ["createContainer /app [C]"]);
    t.reply("createContainer /app [C]", err(ErrorCode::UNIMPLEMENTED));
    assert_eq!(t.ops(), ["create /app [P]"]);
    t.reply("create /app [P]", path_reply("/app"));
    assert_eq!(t.ops(), ["exists /app/lock"]);
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["create /app/lock [P]"]);
    t.reply("create /app/lock [P]", path_reply("/app/lock"));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    t.no_events();
}

/// `container_parents = false` is `dontUseContainerParents()`: create
/// (opcode 1) with flags 0 from the start.
#[test]
fn curator_persistent_parents_when_containers_are_off() {
    let mut c = config(OpPlan::Curator);
    c.container_parents = false;
    let mut t = T::with_config(c);
    t.acquire(None);
    t.ops();
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.ops();
    t.reply("exists /app", exists(1));
    t.ops();
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["create /app/lock [P]"]);
    t.reply("create /app/lock [P]", path_reply("/app/lock"));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
}

/// Unimplemented when parents are already persistent is a real failure.
#[test]
fn curator_persistent_parent_unimplemented_fails() {
    let mut c = config(OpPlan::Curator);
    c.container_parents = false;
    let mut t = T::with_config(c);
    t.acquire(None);
    t.ops();
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.ops();
    t.reply("exists /app", no_node());
    t.ops();
    t.reply("create /app [P]", err(ErrorCode::UNIMPLEMENTED));
    assert_eq!(t.events(), [failed(RequestError::Server(ErrorCode::UNIMPLEMENTED))]);
    t.assert_quiescent();
}

/// A nested acquire through the holding handle sends nothing, reports
/// Acquired at once with the same node and token; only the last release
/// deletes, and (Curator plan) Released follows the delete's reply.
#[test]
fn curator_reentrant_acquire_and_release() {
    let mut t = T::new(OpPlan::Curator);
    let own = t.curator_acquire_free(0, 0, 11);
    t.acquire(None);
    t.acquire(Some(0));
    t.no_ops();
    assert_eq!(t.events(), [acquired(&full(&own), 11), acquired(&full(&own), 11)]);
    assert_eq!(t.m.hold_count(), 3);
    t.release();
    t.release();
    t.no_ops();
    t.no_events();
    assert_eq!(t.m.hold_count(), 1);
    t.release();
    assert_eq!(t.ops(), [format!("delete {BASE}/_c_<U0>-lock-0000000000")]);
    t.no_events();
    t.reply("delete /app/lock/_c_<U0>-lock-0000000000", empty());
    assert_eq!(t.events(), [RecipeEvent::Released]);
    assert_eq!(t.m.hold_count(), 0);
    assert_eq!(t.m.holder(), None);
    t.assert_quiescent();
}

/// NoNode on the release's delete (expiry, or cleaned up already) ends it too.
#[test]
fn curator_release_delete_no_node_is_released() {
    let mut t = T::new(OpPlan::Curator);
    t.curator_acquire_free(0, 4, 11);
    t.release();
    t.ops();
    t.release_done("delete /app/lock/_c_<U0>-lock-0000000004", no_node());
}

/// mutex-contended, client B, with more contenders: watch only the
/// immediate predecessor (sorted by sequence, not server order), re-list on
/// every wake-up, acquire when first.
#[test]
fn curator_contended_watches_immediate_predecessor() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    let own = t.curator_create(0, 7, 70);
    let (f5, f6, f9) = (other(1, 5), other(2, 6), other(3, 9));
    t.reply("getChildren2 /app/lock", children(&[&f9, &own, &f6, &f5]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F2>-lock-0000000006 w"]);
    t.reply("getData /app/lock/_c_<F2>-lock-0000000006 w", data(b"10.0.0.2"));
    t.no_ops();
    assert_eq!(t.m.poll_timeout(), None, "no deadline, no timer");
    // Noise: the successor and an unrelated path change nothing.
    t.watch(EventType::NODE_DELETED, &full(&f9));
    t.watch(EventType::NODE_DELETED, "/elsewhere");
    t.no_ops();
    t.wake_relists(EventType::NODE_DELETED, &f6);
    t.reply("getChildren2 /app/lock", children(&[&own, &f9, &f5]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000005 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000005 w", data(b""));
    t.no_events();
    t.wake_relists(EventType::NODE_DELETED, &f5);
    t.reply("getChildren2 /app/lock", children(&[&f9, &own]));
    assert_eq!(t.events(), [acquired(&full(&own), 70)]);
    t.no_ops();
}

/// Any event on the predecessor wakes the waiter (Curator re-lists for a
/// NodeDataChanged too, as the revocation trace shows).
#[test]
fn curator_data_change_on_predecessor_relists() {
    let (mut t, f1, _) = T::waiting_behind_one(OpPlan::Curator, 1);
    t.wake_relists(EventType::NODE_DATA_CHANGED, &f1);
}

/// The predecessor is released between the listing and the watch: getData
/// answers NoNode and the machine re-lists at once (no wait, no timer).
#[test]
fn curator_predecessor_gone_before_watch_relists_at_once() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(Some(60_000));
    let own = t.curator_create(0, 2, 20);
    let f1 = other(1, 1);
    t.reply("getChildren2 /app/lock", children(&[&own, &f1]));
    t.ops();
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", no_node());
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    assert_eq!(t.m.poll_timeout(), None);
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 20)]);
}

/// A watch event that arrives while getData is still in flight (e.g. from a
/// watch armed earlier) is remembered: the machine re-lists right after the
/// reply instead of waiting (the lost-wakeup rule, reference §3.6).
#[test]
fn curator_watch_during_get_data_relists_after_reply() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    let own = t.curator_create(0, 2, 20);
    let f1 = other(1, 1);
    t.reply("getChildren2 /app/lock", children(&[&own, &f1]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"]);
    t.watch(EventType::NODE_DELETED, &full(&f1));
    t.no_ops();
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", data(b"x"));
    t.reply_list_and_acquire(&own, 20);
}

/// mutex-timeout, client B: at the deadline the loop runs once more
/// (getChildren2, getData w), sees the deadline passed, deletes its node and
/// reports TimedOut. The predecessor's watch is left to fire harmlessly.
#[test]
fn curator_timeout_runs_the_loop_once_more_then_deletes() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(Some(300));
    let own = t.curator_create(0, 1, 20);
    let f0 = other(1, 0);
    t.set_time(5);
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.set_time(10);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(DATA));
    assert_eq!(t.m.poll_timeout(), Some(at(300)));
    t.timeout(299);
    t.no_ops();
    assert_eq!(t.m.poll_timeout(), Some(at(300)));
    t.timeout(300);
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    assert_eq!(t.m.poll_timeout(), None);
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.no_events();
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(DATA));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    assert_eq!(t.events(), [RecipeEvent::TimedOut]);
    // The stale watch fires later (trace line 9): nothing happens.
    t.watch(EventType::NODE_DELETED, &full(&f0));
    t.reply("delete /app/lock/_c_<U0>-lock-0000000001", empty());
    t.no_events();
    t.assert_quiescent();
    assert_eq!(t.m.poll_timeout(), None);
}

/// A free lock at the deadline is still taken (Curator's one more loop).
#[test]
fn curator_free_lock_at_the_deadline_is_taken() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(Some(100));
    let own = t.curator_create(0, 1, 20);
    let f0 = other(1, 0);
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    t.ops();
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(b""));
    t.timeout(150);
    t.reply_list_and_acquire(&own, 20);
    t.no_ops();
}

/// `acquire(0)`: a free lock is taken; a held one costs create, list,
/// getData and the delete, with no wait (reference §3.6).
#[test]
fn curator_zero_timeout() {
    let mut t = T::new(OpPlan::Curator);
    t.set_time(50);
    t.acquire(Some(50));
    let own = t.curator_create(0, 0, 5);
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 5)]);

    let mut t = T::new(OpPlan::Curator);
    t.set_time(50);
    t.acquire(Some(50));
    let own = t.curator_create(0, 1, 5);
    t.reply("getChildren2 /app/lock", children(&[&own, &other(1, 0)]));
    t.ops();
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(b""));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    assert_eq!(t.events(), [RecipeEvent::TimedOut]);
    assert_eq!(t.m.poll_timeout(), None);
}

/// Our node is missing from a listing: delete it anyway (NoNode ignored),
/// pause per the retry policy (ExponentialBackoffRetry: the first pause is
/// exactly `base`), then a fresh create with a NEW UUID at the back of the queue.
#[test]
fn curator_own_node_missing_recreates_with_new_uuid_after_pause() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    let own = t.curator_create(0, 1, 20);
    t.set_time(1_000);
    t.reply("getChildren2 /app/lock", children(&[&other(1, 0)]));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    t.no_events();
    assert_eq!(t.m.poll_timeout(), Some(at(1_100)), "retry 0 pauses exactly base (100 ms)");
    t.reply("delete /app/lock/_c_<U0>-lock-0000000001", no_node());
    t.timeout(1_099);
    t.no_ops();
    t.timeout(1_100);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]"], "a new UUID");
    let own2 = t.own(1, 5);
    t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", created(&full(&own2), 50));
    t.reply_list_and_acquire(&own2, 50);
    assert_ne!(own, own2);
}

/// The same when the base path was reaped: getChildren2 NoNode lists as empty.
#[test]
fn curator_base_reaped_while_listing_is_own_node_missing() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    t.curator_create(0, 1, 20);
    t.reply("getChildren2 /app/lock", no_node());
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    assert!(t.m.poll_timeout().is_some());
    t.no_events();
}

/// Retries exhausted: the policy allows `max_retries` re-creates, then
/// Failed(RetriesExhausted): the recipe's verdict, not a server code. Every pause is within Curator's bounds
/// `base × [1, 2^(n+1) - 1]`, capped at `max_pause`.
#[test]
fn curator_no_node_retries_exhausted_fails() {
    let mut c = config(OpPlan::Curator);
    c.retry = RetryPolicy { base: Duration::from_millis(100), max_retries: 3, max_pause: Duration::from_millis(500) };
    let mut t = T::with_config(c);
    t.acquire(None);
    let mut now = 0;
    for n in 0..=3u32 {
        let own = t.curator_create(n as usize, n, 20);
        t.reply("getChildren2 /app/lock", children(&[&other(1, 99)]));
        let delete = format!("delete /app/lock/_c_<U{n}>-lock-{n:010}");
        assert_eq!(t.ops(), std::slice::from_ref(&delete));
        t.reply(&delete, no_node());
        if n == 3 {
            assert_eq!(t.events(), [failed(RequestError::RetriesExhausted(3))]);
            assert_eq!(t.m.poll_timeout(), None);
            t.assert_quiescent();
            let _ = own;
            return;
        }
        t.no_events();
        let until = t.m.poll_timeout().expect("a retry pause");
        let pause = until.saturating_duration_since(at(now));
        let max = (100 * ((1u64 << (n + 1)) - 1)).min(500);
        assert!(pause >= Duration::from_millis(100) && pause <= Duration::from_millis(max), "pause {n}: {pause:?}");
        now = until.as_nanos() / 1_000_000;
        t.timeout(now);
    }
}

/// The second create2 NoNode after mkdirs (a container reaped in between) is
/// not retried inside the create: it takes the NoNode retry path (pause, new
/// UUID), and the new attempt runs mkdirs again.
#[test]
fn curator_second_create_no_node_takes_the_retry_path() {
    let mut t = T::creating(OpPlan::Curator);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.ops();
    t.reply("exists /app", exists(1));
    t.ops();
    t.reply("exists /app/lock", exists(2));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.no_ops();
    t.no_events();
    let until = t.m.poll_timeout().expect("a retry pause");
    t.timeout(until.as_nanos() / 1_000_000);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]"]);
    t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", no_node());
    assert_eq!(t.ops(), ["exists /app"], "a new attempt makes parents again");
}

// ---- Curator plan: connection loss ---------------------------------------------------------

/// ConnectionLoss on create2: after the reconnect, getChildren (opcode 8) of
/// the parent looks for our protection prefix; found → adopt it (an exists
/// reads its Stat for the fencing token), then list as usual.
#[test]
fn curator_create_connection_loss_adopts_the_landed_node() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    t.disconnect();
    t.no_ops();
    t.no_events();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.lookup_adopts_and_acquires(4, &[&other(1, 3)], 44);
}

/// Not found after the reconnect → create2 again with the SAME UUID; a
/// NoNode lookup (parent gone) counts as not found.
#[test]
fn curator_create_connection_loss_not_found_recreates_with_same_uuid() {
    let mut t = T::create_unknown(OpPlan::Curator);
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", names(&[&other(1, 3)]));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    t.disconnect();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", no_node());
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    assert_eq!(t.uuids.len(), 1);
    t.no_events();
}

/// The lookup itself dropping waits for the next reconnect and looks again;
/// the adopt's exists dropping does the same.
#[test]
fn curator_create_recovery_survives_further_drops() {
    let mut t = T::create_unknown(OpPlan::Curator);
    t.session(ConnectionState::Reconnected);
    t.ops();
    t.disconnect();
    t.no_ops();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    let own = t.own(0, 4);
    t.reply("getChildren /app/lock", names(&[&own]));
    assert_eq!(t.ops(), ["exists /app/lock/_c_<U0>-lock-0000000004"]);
    t.disconnect();
    t.no_ops();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", names(&[&own]));
    t.ops();
    // Gone between the lookup and the exists: create again (same UUID).
    t.reply("exists /app/lock/_c_<U0>-lock-0000000004", no_node());
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
}

/// ConnectionLoss on the listing or on the predecessor's getData: re-list
/// (the request waits in the session for the reconnect).
#[test]
fn curator_connection_loss_while_listing_or_watching_relists() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    let own = t.curator_create(0, 2, 20);
    t.disconnect();
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.session(ConnectionState::Reconnected);
    t.no_ops();
    let f1 = other(1, 1);
    t.reply("getChildren2 /app/lock", children(&[&own, &f1]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"]);
    t.disconnect();
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.session(ConnectionState::Reconnected);
    t.no_ops();
    t.reply("getChildren2 /app/lock", children(&[&own, &f1]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"]);
    t.no_events();
}

/// mutex-reconnect, client B: Suspended while waiting wakes the loop; the
/// re-list is queued at once and the reconnect adds nothing (trace B.conn2:
/// getChildren2, getData w, NodeDeleted, getChildren2).
#[test]
fn curator_suspended_while_waiting_queues_a_relist() {
    let (mut t, f0, own) = T::waiting_behind_one(OpPlan::Curator, 0);
    t.session(ConnectionState::Suspended);
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.no_events();
    t.session(ConnectionState::Reconnected);
    t.no_ops();
    t.no_events();
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(DATA));
    t.watch(EventType::NODE_DELETED, &full(&f0));
    t.reply_list_and_acquire(&own, 100);
}

/// Holding through a drop: Suspended, then on the same session's reconnect
/// an exists on our node verifies it before Reconnected is reported. Where
/// held nodes are watched (the Pipelined plan's config here), that exists
/// also re-arms the held node's watch.
#[test]
fn held_suspended_then_reconnected_verifies_own_node() {
    for plan in [OpPlan::Curator, OpPlan::Pipelined] {
        let mut t = T::new(plan);
        let own = full(&held(&mut t, 0, 20));
        let verify = match plan {
            OpPlan::Curator => "exists /app/lock/_c_<U0>-lock-0000000000",
            _ => "exists /app/lock/_c_<U0>-lock-0000000000 w",
        };
        t.session(ConnectionState::Suspended);
        assert_eq!(t.events(), [RecipeEvent::Suspended]);
        t.no_ops();
        t.session(ConnectionState::Reconnected);
        assert_eq!(t.ops(), [verify]);
        t.no_events();
        t.reply(verify, exists(20));
        assert_eq!(t.events(), [RecipeEvent::Reconnected]);
        assert_eq!(t.m.holder(), Some((own.as_str(), FencingToken(20))));
        // Another drop during the check: checked again on the next reconnect.
        t.session(ConnectionState::Suspended);
        t.session(ConnectionState::Reconnected);
        t.ops();
        t.disconnect();
        assert_eq!(t.events(), [RecipeEvent::Suspended, RecipeEvent::Suspended]);
        t.session(ConnectionState::Reconnected);
        assert_eq!(t.ops(), [verify]);
        t.reply(verify, exists(20));
        assert_eq!(t.events(), [RecipeEvent::Reconnected]);
    }
}

/// The node is gone after the reconnect (deleted by someone): Lost.
#[test]
fn held_reconnected_but_node_gone_is_lost() {
    let mut t = T::holding(OpPlan::Curator, 20);
    t.session(ConnectionState::Suspended);
    t.session(ConnectionState::Reconnected);
    t.ops();
    t.reply("exists /app/lock/_c_<U0>-lock-0000000000", no_node());
    assert_eq!(t.events(), [RecipeEvent::Suspended, RecipeEvent::Lost]);
    assert_eq!(t.m.hold_count(), 0);
    assert_eq!(t.m.holder(), None);
    assert!(matches!(t.m.release(t.now), Err(ApiMisuse::NotHeld)));
    t.assert_quiescent();
}

/// session-expiry, client A: the session is lost while holding → Lost. The
/// old node is never used again; the next session deletes it (NoNode) as
/// Curator's later release does.
#[test]
fn held_session_lost_reports_lost_and_the_next_session_deletes_the_node() {
    let mut t = T::holding(OpPlan::Curator, 20);
    t.session(ConnectionState::Suspended);
    t.end(RequestError::SessionExpired, ConnectionState::Lost);
    assert_eq!(t.events(), [RecipeEvent::Suspended, RecipeEvent::Lost]);
    t.no_ops();
    assert_eq!(t.m.hold_count(), 0);
    assert!(matches!(t.m.release(t.now), Err(ApiMisuse::NotHeld)));
    // A new session.
    t.session(ConnectionState::Connected);
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000000", no_node());
}

/// Lost while waiting: Failed(SessionExpired) once, nothing more for the old
/// node on the dead session; a stale watch is ignored; the next session only
/// deletes the old node, and a new acquire starts afresh with a new UUID.
#[test]
fn waiting_session_lost_fails_and_never_trusts_the_old_node() {
    let (mut t, f0, _) = T::waiting_behind_one(OpPlan::Curator, 0);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    t.no_ops();
    assert_eq!(t.m.poll_timeout(), None);
    t.deleted_quietly(&f0);
    t.session(ConnectionState::Connected);
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]"]);
    t.reply("delete /app/lock/_c_<U0>-lock-0000000001", no_node());
    let own = t.own(1, 2);
    t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", created(&full(&own), 30));
    t.reply_list_and_acquire(&own, 30);
}

/// The same with requests in flight: the session fails them with
/// SessionExpired before reporting Lost. One Failed, nothing sent for the old
/// node on the dead session.
#[test]
fn session_lost_with_requests_in_flight_fails_once() {
    // Listing.
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    t.curator_create(0, 1, 10);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    drop_rejected(&mut t);
    // Watching.
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    let own = t.curator_create(0, 1, 10);
    t.reply("getChildren2 /app/lock", children(&[&own, &other(1, 0)]));
    t.ops();
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    drop_rejected(&mut t);
    // Creating.
    let mut t = T::creating(OpPlan::Curator);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    drop_rejected(&mut t);
}

/// What a [`zoolock_core::Client`] does with ops submitted to an ended
/// session: answers them at once with the session's error. Nothing may
/// come of it but more cleanup for a later session.
fn drop_rejected(t: &mut T) {
    for op in t.ops() {
        assert!(op.starts_with("delete "), "only cleanup after the session ended: {op}");
    }
    t.fail_in_flight(RequestError::SessionExpired);
    t.no_ops();
    t.no_events();
}

/// A lost session while a create's outcome is unknown: Failed, and the next
/// session looks for the protection prefix and deletes what it finds
/// (Curator's CURATOR-498 handling of a session change during a protected create).
#[test]
fn creating_session_lost_the_next_session_finds_and_deletes_by_prefix() {
    let mut t = T::create_unknown(OpPlan::Curator);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    t.no_ops();
    t.session(ConnectionState::Connected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    let own = t.own(0, 3);
    t.reply("getChildren /app/lock", names(&[&other(1, 2), &own]));
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000003", empty());

    // The same when the create is still in flight as the session ends.
    let mut t = T::creating(OpPlan::Pipelined);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    t.no_ops();
    t.session(ConnectionState::Connected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", names(&[]));
    t.assert_quiescent();
}

/// Closed: the acquire fails with Closed; a hold is reported Lost; the
/// server removed the ephemerals, so nothing is owed.
#[test]
fn closed_session() {
    let (mut t, _, _) = T::waiting_behind_one(OpPlan::Curator, 0);
    t.end_failing_acquire(RequestError::Closed, ConnectionState::Closed);
    t.assert_quiescent();

    let mut t = T::holding(OpPlan::Curator, 20);
    t.end(RequestError::Closed, ConnectionState::Closed);
    assert_eq!(t.events(), [RecipeEvent::Lost]);
    t.assert_quiescent();

    let mut t = T::creating(OpPlan::Curator);
    t.end_failing_acquire(RequestError::Closed, ConnectionState::Closed);
    t.assert_quiescent();
}

/// A release whose delete hits ConnectionLoss: re-sent after the reconnect,
/// and (Curator plan) Released only once it is answered OK or NoNode.
#[test]
fn curator_release_delete_is_resent_after_reconnect() {
    let mut t = T::holding(OpPlan::Curator, 20);
    t.release();
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000000"]);
    t.disconnect();
    t.no_ops();
    t.no_events();
    assert_eq!(t.m.acquire(t.now, None), Err(ApiMisuse::AcquireInProgress), "still releasing");
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000000"]);
    t.release_done("delete /app/lock/_c_<U0>-lock-0000000000", empty());
}

/// Commands out of place are refused and change nothing.
#[test]
fn api_misuse() {
    let mut t = T::new(OpPlan::Curator);
    assert!(matches!(t.m.release(t.now), Err(ApiMisuse::NotHeld)), "release when not held");
    t.acquire(None);
    t.ops();
    assert_eq!(t.m.acquire(t.now, None), Err(ApiMisuse::AcquireInProgress), "acquire while acquiring");
    assert!(matches!(t.m.release(t.now), Err(ApiMisuse::NotHeld)), "release while acquiring");
    assert_eq!(t.m.make_revocable(), Err(ApiMisuse::RevocableAfterAcquire), "revocable only before acquire");
    t.no_ops();
    t.no_events();
    assert_eq!(t.m.hold_count(), 0);
    // The acquire goes on undisturbed.
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 1));
    t.reply_list_and_acquire(&own, 1);
    t.release();
    t.ops();
    assert!(matches!(t.m.release(t.now), Err(ApiMisuse::NotHeld)), "release twice");
}

// ---- cancellation -----------------------------------------------------------------------

/// Cancel with the create's reply pending: the create may land, so a
/// prefix lookup goes out at once; the create's reply names the node and it
/// is deleted (once, though the lookup finds it too).
#[test]
fn cancel_while_create_reply_pending_deletes_the_landed_node() {
    for plan in [OpPlan::Curator, OpPlan::Pipelined] {
        let mut t = T::new(plan);
        t.acquire(None);
        let mut sent = vec!["create2 /app/lock/_c_<U0>-lock- [ES]".to_string()];
        if plan == OpPlan::Pipelined {
            sent.push(LIST_W.into());
        }
        assert_eq!(t.ops(), sent);
        t.cancel();
        assert_eq!(t.ops(), ["getChildren /app/lock"]);
        t.no_events();
        let own = t.own(0, 3);
        t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 30));
        assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000003"]);
        if plan == OpPlan::Pipelined {
            t.reply(LIST_W, children(&[&own]));
            t.no_ops();
        }
        t.reply("getChildren /app/lock", names(&[&own]));
        t.no_ops();
        t.reply("delete /app/lock/_c_<U0>-lock-0000000003", empty());
        t.no_events();
        t.assert_quiescent();
    }
}

/// Cancel after the create's ConnectionLoss: nothing can be sent until the
/// reconnect; then the prefix lookup finds the node and deletes it.
#[test]
fn cancel_after_create_connection_loss_finds_and_deletes_by_prefix() {
    let mut t = T::create_unknown(OpPlan::Curator);
    t.cancel();
    t.no_ops();
    assert!(!t.m.is_quiescent(), "a lookup is owed");
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    let own = t.own(0, 3);
    t.reply("getChildren /app/lock", names(&[&other(1, 1), &own]));
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000003", empty());
}

/// The lookup itself dropping is retried on the next reconnect; not found
/// (or NoNode) ends it.
#[test]
fn cancel_lookup_is_retried_until_answered() {
    let mut t = T::creating(OpPlan::Curator);
    t.cancel();
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.disconnect();
    t.no_ops();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", no_node());
    t.assert_quiescent();
}

/// A prefix lookup cut short by the end of the session is not dropped: the
/// create may have landed before the server noticed the expiry, so the next
/// session looks again and deletes what it finds.
#[test]
fn cancel_lookup_survives_session_expiry() {
    let mut t = T::creating(OpPlan::Curator);
    t.cancel();
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.end(RequestError::SessionExpired, ConnectionState::Lost);
    t.no_events();
    t.no_ops();
    assert!(!t.m.is_quiescent());
    t.session(ConnectionState::Connected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    let own = t.own(0, 3);
    t.reply("getChildren /app/lock", names(&[&own]));
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000003", empty());
}

/// Cancel while recovering a lost create reply (lookup in flight) and while
/// reading the adopted node's Stat: the node is deleted either way.
#[test]
fn cancel_during_create_recovery() {
    let mut t = T::create_unknown(OpPlan::Curator);
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.cancel();
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    let own = t.own(0, 3);
    t.reply("getChildren /app/lock", names(&[&own]));
    t.no_ops();
    t.reply("getChildren /app/lock", names(&[&own]));
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000003", empty());

    let mut t = T::create_unknown(OpPlan::Curator);
    t.session(ConnectionState::Reconnected);
    t.ops();
    let own = t.own(0, 3);
    t.reply("getChildren /app/lock", names(&[&own]));
    assert_eq!(t.ops(), ["exists /app/lock/_c_<U0>-lock-0000000003"]);
    t.cancel();
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000003", "getChildren /app/lock"]);
    t.reply("exists /app/lock/_c_<U0>-lock-0000000003", exists(3));
    t.reply("delete /app/lock/_c_<U0>-lock-0000000003", empty());
    t.reply("getChildren /app/lock", names(&[]));
    t.no_events();
    t.assert_quiescent();
}

/// Cancel while making parents: the create never landed, a lookup confirms it.
#[test]
fn cancel_during_mkdirs() {
    let mut t = T::creating(OpPlan::Curator);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    assert_eq!(t.ops(), ["exists /app"]);
    t.cancel();
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("exists /app", no_node());
    t.no_ops();
    t.reply("getChildren /app/lock", no_node());
    t.no_events();
    t.assert_quiescent();
}

/// Cancel while listing, watching or waiting: our node is deleted.
#[test]
fn cancel_while_listing_watching_or_waiting_deletes_own_node() {
    for plan in [OpPlan::Curator, OpPlan::Pipelined] {
        for stage in 0..3 {
            let mut t = T::new(plan);
            t.acquire(Some(1_000));
            let (own, list) = match plan {
                OpPlan::Curator => (t.curator_create(0, 1, 10), LIST),
                _ => {
                    t.ops();
                    let own = t.own(0, 1);
                    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 10));
                    (own, LIST_W)
                }
            };
            let watches = t.waiting_ops(&own, &[&other(1, 0)]);
            if stage >= 1 {
                t.reply(list, children(&[&own, &other(1, 0)]));
                assert_eq!(t.ops(), watches);
            }
            if stage >= 2 {
                for watch in &watches {
                    t.reply(watch, if watch.starts_with("exists") { exists(10) } else { data(b"") });
                }
                assert_eq!(t.m.poll_timeout(), Some(at(1_000)));
            }
            t.cancel();
            assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"], "{plan:?} stage {stage}");
            assert_eq!(t.m.poll_timeout(), None);
            // Late replies and events of the abandoned attempt change nothing.
            match stage {
                0 => t.reply(list, children(&[&own])),
                1 => {
                    for watch in &watches {
                        t.reply(watch, if watch.starts_with("exists") { exists(10) } else { data(b"") });
                    }
                }
                _ => t.watch(EventType::NODE_DELETED, &full(&other(1, 0))),
            }
            t.no_ops();
            t.reply("delete /app/lock/_c_<U0>-lock-0000000001", empty());
            t.no_events();
            t.assert_quiescent();
            t.timeout(2_000);
            t.assert_quiescent();
        }
    }
}

/// Cancel during the retry pause before a re-create: the vanished node is
/// already being deleted, and no new node is ever created.
#[test]
fn cancel_during_retry_pause_creates_nothing() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    t.curator_create(0, 1, 10);
    t.reply("getChildren2 /app/lock", children(&[&other(1, 0)]));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    let until = t.m.poll_timeout().expect("a retry pause");
    t.cancel();
    t.reply("delete /app/lock/_c_<U0>-lock-0000000001", no_node());
    t.timeout(until.as_nanos() / 1_000_000 + 1);
    t.no_ops();
    t.no_events();
    t.assert_quiescent();
    // And the handle is free for a new acquire.
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]"]);
}

/// Cancel while held or idle does nothing (release is the way out).
#[test]
fn cancel_when_not_acquiring_is_a_no_op() {
    let mut t = T::new(OpPlan::Curator);
    t.cancel();
    t.assert_quiescent();
    held(&mut t, 0, 5);
    t.cancel();
    t.no_ops();
    assert_eq!(t.m.hold_count(), 1);
}

// ---- revocation -------------------------------------------------------------------------

/// The revocation trace, client A: a revocable node has empty data; getData
/// on our own node (watch) goes out BEFORE getChildren2; a NodeDataChanged
/// re-reads it with the watch; `__REVOKE__` → RevocationRequested; release
/// checks the watch off (checkWatches type 3) and then deletes.
#[test]
fn curator_revocable_lock() {
    let mut t = T::new(OpPlan::Curator);
    t.m.make_revocable().unwrap();
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    assert_eq!(t.create_data, [Bytes::new()], "revocable nodes carry empty data");
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 8));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w", "getChildren2 /app/lock"]);
    t.reply("getData /app/lock/_c_<U0>-lock-0000000000 w", data(b""));
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 8)]);
    // A data change that is not a revocation: re-armed, nothing reported.
    t.watch(EventType::NODE_DATA_CHANGED, &full(&own));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w"]);
    t.reply("getData /app/lock/_c_<U0>-lock-0000000000 w", data(b"hello"));
    t.no_events();
    // Revoker.attemptRevoke.
    t.watch(EventType::NODE_DATA_CHANGED, &full(&own));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w"]);
    t.reply("getData /app/lock/_c_<U0>-lock-0000000000 w", data(REVOKE_MESSAGE));
    assert_eq!(t.events(), [RecipeEvent::RevocationRequested]);
    t.release();
    assert_eq!(
        t.ops(),
        ["checkWatches /app/lock/_c_<U0>-lock-0000000000 type=3", "delete /app/lock/_c_<U0>-lock-0000000000"]
    );
    t.reply("checkWatches /app/lock/_c_<U0>-lock-0000000000 type=3", empty());
    // The deletion fires our own data watch before the delete's reply.
    t.watch(EventType::NODE_DELETED, &full(&own));
    t.no_ops();
    t.release_done("delete /app/lock/_c_<U0>-lock-0000000000", empty());
}

/// A revocable waiter can be asked to revoke as well; other event types on
/// our node are ignored and do not re-arm the watch.
#[test]
fn curator_revocable_waiter() {
    let mut t = T::new(OpPlan::Curator);
    t.m.make_revocable().unwrap();
    t.acquire(None);
    t.ops();
    let own = t.own(0, 1);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 8));
    t.ops();
    t.reply("getData /app/lock/_c_<U0>-lock-0000000001 w", data(b""));
    let f0 = other(1, 0);
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(b""));
    t.watch(EventType::NODE_DATA_CHANGED, &full(&own));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000001 w"]);
    t.reply("getData /app/lock/_c_<U0>-lock-0000000001 w", data(REVOKE_MESSAGE));
    assert_eq!(t.events(), [RecipeEvent::RevocationRequested]);
    t.watch(EventType::NODE_CREATED, &full(&own));
    t.no_ops();
}

// ---- Pipelined plan -----------------------------------------------------------------------

/// Acquires the free lock (either plan; a quiet mutex in the Pipelined
/// plan) with sequence `seq` and czxid `czxid`. In the Pipelined plan with
/// held nodes watched, the grant sends nothing: the listing's child watch
/// is the held node's watch. A grant whose listing had no child watch
/// while held nodes are watched (a Curator-plan config with `watch_held`
/// on) sends `exists <own> w`, which is answered. Returns our node name.
fn held(t: &mut T, seq: u32, czxid: i64) -> String {
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

/// Uncontended in one round trip: create2 and getChildren2 go out back to
/// back before any reply.
#[test]
fn pipelined_uncontended_is_one_round_trip() {
    let mut t = T::new(OpPlan::Pipelined);
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);
    assert_eq!(t.create_data, [Bytes::from_static(DATA)]);
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 3));
    t.no_ops();
    t.no_events();
    t.reply(LIST_W, children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 3)]);
    // No op after the grant: the listing's child watch is the held node's
    // watch (DESIGN §4.10).
    t.assert_nothing_in_flight();
}

/// Release reports Released as soon as the delete is queued, so the next
/// acquire can ride in the same round trip; the delete stays guaranteed and
/// is re-sent after a ConnectionLoss.
#[test]
fn pipelined_release_is_immediate_and_the_delete_is_retried() {
    let mut t = T::holding(OpPlan::Pipelined, 3);
    t.release();
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000000"]);
    assert_eq!(t.events(), [RecipeEvent::Released]);
    assert_eq!(t.m.hold_count(), 0);
    assert!(!t.m.is_quiescent(), "the delete is still owed");
    // The last acquire was granted by its first listing: quiet.
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]", LIST_W]);
    t.disconnect();
    t.no_events();
    t.no_ops();
    t.session(ConnectionState::Reconnected);
    // The lost create's recovery, and the delete again.
    assert_eq!(t.ops(), ["getChildren /app/lock", "delete /app/lock/_c_<U0>-lock-0000000000"]);
    t.reply("getChildren /app/lock", names(&[]));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]", LIST_W]);
    t.reply("delete /app/lock/_c_<U0>-lock-0000000000", empty());
    let own = t.own(1, 1);
    t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", created(&full(&own), 9));
    t.reply(LIST_W, children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 9)]);
    t.assert_nothing_in_flight();
}

/// Bottom-up probing stops at the first ancestor that exists: the ones
/// above it are never read (they may deny READ to this client).
#[test]
fn pipelined_parent_probe_stops_at_the_deepest_existing_ancestor() {
    let mut t = T::pipelined_base_missing();
    t.reply("exists /app/lock", Ok(Response::Stat(stat(1))));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);
    t.no_events();
}

/// Missing parents: both replies of the pair are NoNode; the listing's is
/// ignored, mkdirs runs bottom-up (CURATOR-715), then the pair goes out again
/// with the same UUID.
#[test]
fn pipelined_no_node_create_ignores_the_listing_and_makes_parents() {
    let mut t = T::pipelined_base_missing();
    t.no_ops();
    t.no_events();
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["exists /app"]);
    t.reply("exists /app", no_node());
    assert_eq!(t.ops(), ["createContainer /app [C]"]);
    t.reply("createContainer /app [C]", created("/app", 1));
    // Known missing from the probe: made without another exists.
    assert_eq!(t.ops(), ["createContainer /app/lock [C]"]);
    t.reply("createContainer /app/lock [C]", created("/app/lock", 2));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 3));
    t.reply(LIST_W, children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 3)]);
    t.assert_nothing_in_flight();
}

/// ConnectionLoss on the pair: the listing's failure is stale; recovery as
/// in the Curator plan, then the pair again with the same UUID.
#[test]
fn pipelined_create_connection_loss_recovers_then_sends_the_pair_again() {
    let mut t = T::create_unknown(OpPlan::Pipelined);
    t.no_ops();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", names(&[]));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);

    // Found: adopted, then listed (no listing is in flight for it).
    let mut t = T::create_unknown(OpPlan::Pipelined);
    t.session(ConnectionState::Reconnected);
    t.ops();
    t.lookup_adopts_and_acquires(2, &[], 22);
}

/// Fast handoff: every child in the last listing has a 10-digit key, so when
/// the predecessor is deleted the listing minus that node decides. A node
/// further up still in that listing (here the look-ahead node, whose
/// deletion has not been told: the predecessor gave up) may still be there,
/// so the waiter re-lists rather than pay a getData answered NoNode first;
/// once the listing has nothing ahead but the watched predecessor, its
/// deletion is the grant, with no op at all.
#[test]
fn pipelined_fast_handoff_skips_the_relist() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2, f9) = (other(1, 1), other(2, 2), other(3, 9));
    let own = t.wait_behind(true, 3, &[&f9, &f2, &f1], &[&f2, &f1]);
    t.watch(EventType::NODE_DELETED, &full(&f2));
    assert_eq!(t.ops(), ["getChildren2 /app/lock"], "no getData on a remembered node further up");
    t.reply("getChildren2 /app/lock", children(&[&f9, &f1, &own]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", data(b""));
    t.no_ops();
    t.handed_off(&f1, &own);
    // Released and acquired again: the handoff state does not leak into it.
    t.release();
    t.ops();
    t.events();
}

/// The queue position comes from the listings the waiter makes anyway:
/// the first listing, then one fewer per predecessor handed off; a listing
/// that changes nothing reports nothing.
#[test]
fn queue_position_from_each_listing() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2, f9) = (other(1, 1), other(2, 2), other(3, 9));
    t.wait_behind(true, 3, &[&f9, &f2, &f1], &[&f2, &f1]);
    assert_eq!(t.queued, [(2, 4)], "two ahead of ours, four in all");
    t.wake_relists(EventType::NODE_DELETED, &f2);
    let own = t.own(0, 3);
    t.reply("getChildren2 /app/lock", children(&[&f9, &f1, &own]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", data(b""));
    t.no_events();
    assert_eq!(t.queued, [(2, 4), (1, 3)], "the handed-off predecessor counts off");
    t.watch(EventType::NODE_DELETED, &full(&f1));
    assert_eq!(t.events().len(), 1, "acquired");
    assert_eq!(t.queued.len(), 2, "acquired: no position");

    let (mut t, f4, own) = T::waiting_behind_one(OpPlan::Curator, 4);
    t.wake_relists(EventType::NODE_DATA_CHANGED, &f4);
    t.reply("getChildren2 /app/lock", children(&[&f4, &own]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000004 w"]);
    t.no_events();
    assert_eq!(t.queued, [(1, 2)], "the same position is reported once");
}

/// The look-ahead: with two or more ahead, the node just ahead of the
/// predecessor is watched too. In a FIFO queue it goes first (it held), and
/// the waiter re-lists while the predecessor holds; the predecessor's
/// deletion then finds nothing ahead in that listing and is the grant, with
/// no op: no round trip on the handoff.
#[test]
fn pipelined_look_ahead_relists_before_the_handoff() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2, f3, f9) = (other(1, 1), other(2, 2), other(3, 3), other(4, 9));
    let own = t.wait_behind(true, 4, &[&f9, &f3, &f2, &f1], &[&f3, &f2]);
    assert_eq!(t.queued, [(3, 5)]);
    // f1 goes: nothing is watched on it (two ahead of the predecessor).
    t.deleted_quietly(&f1);
    // The look-ahead node goes: list while f3 holds.
    t.look_relists(&f2, &[&f9, &f3, &own]);
    t.no_ops();
    t.no_events();
    assert_eq!(t.queued, [(3, 5), (1, 3)]);
    t.handed_off(&f3, &own);
    // A later deletion of an old look-ahead name is nothing to a holder.
    t.deleted_quietly(&f2);
}

/// A look-ahead listing that still shows nodes further up than the
/// look-ahead node (it gave up, or they hold): the waiter keeps its armed
/// predecessor watch (no second getData) and watches the new node just
/// ahead of the predecessor.
#[test]
fn pipelined_look_ahead_moves_up() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2, f3) = (other(1, 1), other(2, 2), other(3, 3));
    let own = t.wait_behind(true, 4, &[&f3, &f2, &f1], &[&f3, &f2]);
    t.look_relists(&f2, &[&f1, &f3, &own]);
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"], "only the new look-ahead node");
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", data(b""));
    t.look_relists(&f1, &[&f3, &own]);
    t.no_ops();
    t.handed_off(&f3, &own);
}

/// The predecessor is deleted while the look-ahead's listing is on its way,
/// and the kept listing still has a node further up: no second listing; the
/// one on its way decides. With nothing further up, both deletions told are
/// the grant at once.
#[test]
fn pipelined_handoff_waits_for_the_look_ahead_listing() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2, f3) = (other(1, 1), other(2, 2), other(3, 3));
    let own = t.wait_behind(true, 4, &[&f3, &f2, &f1], &[&f3, &f2]);
    t.wake_relists(EventType::NODE_DELETED, &f2);
    t.deleted_quietly(&f3);
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 100)]);
    // Nothing sent: our own node is watched since the wait began.
    t.assert_nothing_in_flight();

    let mut t = T::new(OpPlan::Pipelined);
    let own = t.wait_behind(true, 3, &[&f2, &f1], &[&f2, &f1]);
    t.wake_relists(EventType::NODE_DELETED, &f1);
    t.handed_off(&f2, &own);
    // The listing's late reply is nothing to a holder.
    t.reply("getChildren2 /app/lock", children(&[&own]));
    t.no_ops();
    t.no_events();
    t.assert_nothing_in_flight();
}

/// The look-ahead node is already gone when its getData arrives (NoNode):
/// list at once. A look-ahead listing that fails changes nothing: the
/// predecessor's watch still stands, and the connection's loss re-lists.
#[test]
fn pipelined_look_ahead_gone_or_failed() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2) = (other(1, 1), other(2, 2));
    let own = t.listed(true, 3, &[&f1, &f2]);
    assert_eq!(
        t.ops(),
        [
            "exists /app/lock/_c_<U0>-lock-0000000003 w",
            "getData /app/lock/_c_<F2>-lock-0000000002 w",
            "getData /app/lock/_c_<F1>-lock-0000000001 w"
        ]
    );
    t.reply("exists /app/lock/_c_<U0>-lock-0000000003 w", exists(100));
    t.reply("getData /app/lock/_c_<F2>-lock-0000000002 w", data(b""));
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", no_node());
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.reply("getChildren2 /app/lock", Err(RequestError::ConnectionLoss));
    t.no_ops();
    t.no_events();
    t.session(ConnectionState::Suspended);
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.reply("getChildren2 /app/lock", children(&[&f2, &own]));
    // Our own node's watch is still armed (the session sets it again).
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F2>-lock-0000000002 w"]);
    t.reply("getData /app/lock/_c_<F2>-lock-0000000002 w", data(b""));
    t.handed_off(&f2, &own);
}

/// A look-ahead listing answered at the deadline, before the timer ran, that
/// does not grant ends the wait as the watch's own reply would: delete and
/// TimedOut, no timer left already due.
#[test]
fn pipelined_look_ahead_listing_at_the_deadline_times_out() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2) = (other(1, 1), other(2, 2));
    t.acquire(Some(300));
    t.ops();
    let own = t.own(0, 3);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 100));
    t.reply(LIST_W, children(&[&f1, &f2, &own]));
    assert_eq!(
        t.ops(),
        [
            "exists /app/lock/_c_<U0>-lock-0000000003 w",
            "getData /app/lock/_c_<F2>-lock-0000000002 w",
            "getData /app/lock/_c_<F1>-lock-0000000001 w"
        ]
    );
    t.reply("exists /app/lock/_c_<U0>-lock-0000000003 w", exists(100));
    t.reply("getData /app/lock/_c_<F2>-lock-0000000002 w", data(b""));
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", data(b""));
    t.set_time(250);
    t.wake_relists(EventType::NODE_DELETED, &f1);
    t.set_time(300);
    t.reply("getChildren2 /app/lock", children(&[&f2, &own]));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000003"]);
    assert_eq!(t.events(), [RecipeEvent::TimedOut]);
    assert_eq!(t.m.poll_timeout(), None);
}

/// Fast handoff straight to Acquired: predecessor deleted, nothing else ahead.
#[test]
fn pipelined_fast_handoff_acquires_without_any_op() {
    let (mut t, f4, own) = T::waiting_behind_one(OpPlan::Pipelined, 4);
    t.handed_off(&f4, &own);
}

/// The watched predecessor is already gone when the getData arrives
/// (NoNode): as if its deletion had fired. Nothing else ahead: acquired
/// with no re-list; another node ahead: re-list.
#[test]
fn pipelined_gone_predecessor_is_a_handoff() {
    let mut t = T::new(OpPlan::Pipelined);
    let f4 = other(1, 4);
    let own = t.listed(true, 5, &[&f4]);
    assert_eq!(t.ops(), ["exists /app/lock/_c_<U0>-lock-0000000005 w", "getData /app/lock/_c_<F1>-lock-0000000004 w"]);
    t.reply("exists /app/lock/_c_<U0>-lock-0000000005 w", exists(100));
    t.reply("getData /app/lock/_c_<F1>-lock-0000000004 w", no_node());
    assert_eq!(t.events(), [acquired(&full(&own), 100)]);
    // Nothing sent: our own node is watched since the wait began.
    t.assert_nothing_in_flight();

    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2) = (other(1, 1), other(2, 2));
    let own = t.listed(true, 3, &[&f1, &f2]);
    let watches = t.waiting_ops(&own, &[&f2, &f1]);
    assert_eq!(t.ops(), watches);
    t.reply(&watches[0], exists(100));
    t.reply("getData /app/lock/_c_<F2>-lock-0000000002 w", no_node());
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.no_events();

    // The Curator plan re-lists on NoNode, as Curator does.
    let (mut t, f4, _) = T::waiting_behind_one(OpPlan::Curator, 4);
    t.wake_relists(EventType::NODE_DELETED, &f4);
}

/// A child without a 10-digit Curator key (kazoo naming, or a wrapped
/// counter such as `-2147483648`, which sorts first) could sort ahead of
/// ours later, so the waiter re-lists instead of handing off.
#[test]
fn pipelined_foreign_child_in_the_listing_disables_fast_handoff() {
    // kazoo-style: the whole name is the key; it sorts after every Curator node.
    let mut t = T::new(OpPlan::Pipelined);
    let kazoo = "514e5a831836450cb1a56c741e990fd8__lock__0000000032";
    let f1 = other(1, 1);
    t.wait_behind(true, 2, &[&f1, kazoo], &[&f1]);
    t.wake_relists(EventType::NODE_DELETED, &f1);

    // A wrapped sequence counter: key "-2147483648" sorts before "0...".
    let mut t = T::new(OpPlan::Pipelined);
    let wrapped = "_c_00000002-0000-4000-8000-000000000000-lock--2147483648";
    let f1 = other(1, 1);
    t.wait_behind(true, 2, &[&f1, wrapped], &[&f1]);
    t.wake_relists(EventType::NODE_DELETED, &f1);

    // Ahead of ours, it is the node to watch.
    let mut t = T::new(OpPlan::Pipelined);
    let own = t.wait_behind(true, 2, &[wrapped], &[wrapped]);
    t.watch(EventType::NODE_DELETED, &full(wrapped));
    t.reply_list_and_acquire(&own, 100);
}

/// `fast_handoff = false` (and the Curator plan) always re-list.
#[test]
fn fast_handoff_off_relists() {
    let mut c = config(OpPlan::Pipelined);
    c.fast_handoff = false;
    let mut t = T::with_config(c);
    let f1 = other(1, 1);
    t.wait_behind(true, 2, &[&f1], &[&f1]);
    t.wake_relists(EventType::NODE_DELETED, &f1);
    t.no_events();

    let mut t = T::new(OpPlan::Curator);
    t.wait_behind(false, 2, &[&f1], &[&f1]);
    t.wake_relists(EventType::NODE_DELETED, &f1);
    t.no_events();
}

/// Only a deletion hands off; any other event on the predecessor re-lists.
#[test]
fn pipelined_other_events_on_the_predecessor_relist() {
    let (mut t, f1, _) = T::waiting_behind_one(OpPlan::Pipelined, 1);
    t.wake_relists(EventType::NODE_DATA_CHANGED, &f1);
    t.no_events();
}

/// The pipelined plan times out exactly as the Curator plan does.
#[test]
fn pipelined_timeout() {
    let mut t = T::new(OpPlan::Pipelined);
    t.acquire(Some(300));
    t.ops();
    let own = t.own(0, 1);
    let f0 = other(1, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 10));
    t.reply(LIST_W, children(&[&own, &f0]));
    assert_eq!(t.ops(), ["exists /app/lock/_c_<U0>-lock-0000000001 w", "getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.reply("exists /app/lock/_c_<U0>-lock-0000000001 w", exists(10));
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(b""));
    assert_eq!(t.m.poll_timeout(), Some(at(300)));
    t.timeout(300);
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    // Our own node is watched already: the predecessor's getData alone.
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(b""));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    assert_eq!(t.events(), [RecipeEvent::TimedOut]);
}

/// Revocable locks skip the pipelined listing: getData(own, watch) must come
/// before the listing, as in Curator.
#[test]
fn pipelined_revocable_reads_own_node_before_listing() {
    let mut t = T::new(OpPlan::Pipelined);
    t.m.make_revocable().unwrap();
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 1));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w", "getChildren2 /app/lock"]);
}

// ---- timers -----------------------------------------------------------------------------

/// `poll_timeout` never returns an instant at or before `now` once
/// `handle_timeout(now)` ran, whatever the state: a waiter past its deadline,
/// a retry pause, an early or late timer, and a spurious call. (Every
/// `T::timeout`, reply and event in this file checks the same.)
#[test]
fn poll_timeout_is_never_in_the_past_after_handle_timeout() {
    for plan in [OpPlan::Curator, OpPlan::Pipelined] {
        let mut t = T::new(plan);
        t.timeout(1);
        assert_eq!(t.m.poll_timeout(), None);
        t.acquire(Some(500));
        t.timeout(2);
        let ops = t.ops();
        let own = t.own(0, 1);
        t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 10));
        let list = if ops.len() == 1 {
            t.ops();
            LIST
        } else {
            t.quiet_listing()
        };
        // Own node missing → retry pause.
        t.reply(list, children(&[&other(1, 0)]));
        t.ops();
        let until = t.m.poll_timeout().unwrap();
        t.timeout(until.as_nanos() / 1_000_000 + 250); // served late
        let ops = t.ops();
        assert_eq!(ops[0], "create2 /app/lock/_c_<U1>-lock- [ES]");
        let own = t.own(1, 3);
        t.reply("delete /app/lock/_c_<U0>-lock-0000000001", empty());
        t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", created(&full(&own), 30));
        if ops.len() == 1 {
            t.ops();
        }
        t.reply(list, children(&[&own, &other(1, 2)]));
        let watches = t.waiting_ops(&own, &[&other(1, 2)]);
        assert_eq!(t.ops(), watches);
        if plan == OpPlan::Pipelined {
            t.reply(&watches[0], exists(30));
        }
        t.reply("getData /app/lock/_c_<F1>-lock-0000000002 w", data(b""));
        assert_eq!(t.m.poll_timeout(), Some(at(500)));
        t.timeout(499);
        t.timeout(10_000); // served very late
        assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
        t.timeout(10_001);
        t.timeout(10_001);
        assert_eq!(t.m.poll_timeout(), None);
    }
}

// ---- more edges --------------------------------------------------------------------------

/// Hold counting does not depend on when events are polled: a nested acquire
/// (or a release) issued before `Acquired` was drained counts the first hold.
#[test]
fn reentrant_counting_before_the_acquired_event_is_polled() {
    let mut t = T::creating(OpPlan::Pipelined);
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 5));
    t.reply(LIST_W, children(&[&own]));
    assert_eq!(t.m.hold_count(), 1, "held before the event is polled");
    // No watch sent: the listing's child watch is the held node's.
    t.no_ops();
    t.acquire(None);
    assert_eq!(t.m.hold_count(), 2);
    assert_eq!(t.events(), [acquired(&full(&own), 5), acquired(&full(&own), 5)]);
    assert_eq!(t.m.hold_count(), 2);
    t.release();
    t.no_ops();
    t.release();
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000000"]);
    // Released is queued; a new acquire completes before anything is polled,
    // and a nested acquire on it counts from the new hold.
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]", LIST_W]);
    let own2 = t.own(1, 1);
    t.reply("delete /app/lock/_c_<U0>-lock-0000000000", empty());
    t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", created(&full(&own2), 6));
    t.reply(LIST_W, children(&[&own2]));
    t.acquire(None);
    assert_eq!(
        t.events(),
        [RecipeEvent::Released, acquired(&full(&own2), 6), acquired(&full(&own2), 6)],
        "events in the order things happened"
    );
    assert_eq!(t.m.hold_count(), 2);
    t.release();
    t.release();
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U1>-lock-0000000001"]);
}

/// The revocation watch must survive a ConnectionLoss on its getData: the
/// read is sent again (Curator's foreground getData retries it).
#[test]
fn revocation_watch_is_rearmed_after_connection_loss() {
    let mut t = T::new(OpPlan::Curator);
    t.m.make_revocable().unwrap();
    t.acquire(None);
    t.ops();
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 8));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w", "getChildren2 /app/lock"]);
    t.disconnect();
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w", "getChildren2 /app/lock"]);
    t.session(ConnectionState::Reconnected);
    t.no_ops();
    t.reply("getData /app/lock/_c_<U0>-lock-0000000000 w", data(b""));
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 8)]);
    // Armed: a revocation reaches the holder.
    t.watch(EventType::NODE_DATA_CHANGED, &full(&own));
    t.ops();
    t.reply("getData /app/lock/_c_<U0>-lock-0000000000 w", data(REVOKE_MESSAGE));
    assert_eq!(t.events(), [RecipeEvent::RevocationRequested]);
}

/// Lost during the retry pause: Failed, no create later; the vanished node is
/// still deleted by the next session.
#[test]
fn session_lost_during_retry_pause() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    t.curator_create(0, 1, 10);
    t.reply("getChildren2 /app/lock", children(&[&other(1, 0)]));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    assert_eq!(t.m.poll_timeout(), None);
    t.timeout(10_000);
    t.no_ops();
    t.session(ConnectionState::Connected);
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000001", no_node());
}

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
            while let Some(event) = self.m.poll_event() {
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
                self.holding = Some(node.clone());
                if self.tampered.contains(node) {
                    return;
                }
                // Safety: our node exists under our session and nothing is ahead of it.
                let ours = self.nodes.get(node).unwrap_or_else(|| panic!("acquired through a missing node {node}"));
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
                    // held node ends the hold (DESIGN §4.10).
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
                // was told by its watch (DESIGN §4.10), whatever watched it
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
