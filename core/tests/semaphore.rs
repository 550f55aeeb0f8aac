//! Transcript tests for `Semaphore` and `SemaphoreMutex`: replies are fed by
//! hand and the exact op sequence and events are asserted. The uncontended and
//! contended transcripts are also compared with the recorded Curator 5.4.0
//! traces (`conformance/traces/curator-5.4.0/semaphore-{v2,mutex}`).

use std::collections::VecDeque;
use std::time::Duration;

use zoolock_core::recipes::{REVOKE_MESSAGE, SharedCount, count_bytes};
use zoolock_core::wire::{Bytes, ErrorCode, EventType, Request, Response, Stat};
use zoolock_core::{
    ApiMisuse, ConnectionState, FencingToken, Instant, Recipe, RecipeEvent, RecipeOp, RequestError, WatchEvent, ZkPath,
    recipes::{LockConfig, OpPlan, Semaphore, SemaphoreMutex},
};

mod transcript;

use transcript::at;

// ---- harness -------------------------------------------------------------------------

fn p(path: &str) -> ZkPath {
    ZkPath::new(path).unwrap()
}

fn curator() -> LockConfig {
    // Curator's own sequence: it does not watch a held node.
    LockConfig::new(7).with_plan(OpPlan::Curator).with_watch_held(false)
}

fn pipelined() -> LockConfig {
    LockConfig::new(7).with_plan(OpPlan::Pipelined)
}

fn stat(czxid: i64) -> Stat {
    Stat { czxid, mzxid: czxid, pzxid: czxid, ..Stat::default() }
}

fn no_node() -> Result<Response, RequestError> {
    Err(RequestError::Server(ErrorCode::NO_NODE))
}

fn empty() -> Result<Response, RequestError> {
    Ok(Response::Empty)
}

fn exists_ok() -> Result<Response, RequestError> {
    Ok(Response::Stat(stat(1)))
}

fn container(path: &str) -> Result<Response, RequestError> {
    Ok(Response::Create2 { path: path.into(), stat: stat(2) })
}

fn name(path: &str) -> String {
    path.rsplit('/').next().unwrap().to_string()
}

fn acquired(node: &str, token: i64) -> RecipeEvent {
    RecipeEvent::Acquired { node: node.into(), token: FencingToken(token) }
}

/// Replaces each protection UUID by `U<n>`, numbered in order of first
/// appearance across the whole transcript.
fn normalize(s: &str, uuids: &mut Vec<String>) -> String {
    transcript::mask_with(s, |uuid| {
        let n = match uuids.iter().position(|u| u == uuid) {
            Some(n) => n,
            None => {
                uuids.push(uuid.to_string());
                uuids.len() - 1
            }
        };
        format!("U{}", n + 1)
    })
}

/// `op path [w] [fN] [tN]`: the op name, its path, the watch flag of reads,
/// the flags of creates and the watcher type of checkWatches.
fn describe(req: &Request) -> String {
    let name = req.op_code().name().unwrap_or("?");
    let path = req.path().unwrap_or("");
    let suffix = match req {
        Request::Exists(r) | Request::GetData(r) | Request::GetChildren(r) | Request::GetChildren2(r) if r.watch => {
            " w".to_string()
        }
        Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => format!(" f{}", r.flags.0),
        Request::CheckWatches(r) => format!(" t{}", r.watcher_type.0),
        _ => String::new(),
    };
    format!("{name} {path}{suffix}")
}

/// A recipe under test plus a FIFO server: replies go to the oldest op in
/// flight, as ZooKeeper answers a session's requests in order.
struct T<R: Recipe> {
    r: R,
    now: Instant,
    in_flight: VecDeque<RecipeOp>,
    /// Every op sent, described and normalized.
    log: Vec<String>,
    /// Index into `log` of the first op not yet returned by `sent()`.
    seen: usize,
    uuids: Vec<String>,
    events: Vec<RecipeEvent>,
    /// `(position, total)` of every `Queued`, kept apart from `events`.
    queued: Vec<(usize, usize)>,
}

impl<R: Recipe> T<R>
where
    R::Event: Into<RecipeEvent>,
{
    fn new(r: R) -> Self {
        T {
            r,
            now: at(1000),
            in_flight: VecDeque::new(),
            log: Vec::new(),
            seen: 0,
            uuids: Vec::new(),
            events: Vec::new(),
            queued: Vec::new(),
        }
    }

    /// Pulls ops and events out of the recipe.
    fn pull(&mut self) {
        while let Some(op) = self.r.poll_op() {
            let d = normalize(&describe(op.op.request()), &mut self.uuids);
            self.log.push(d);
            self.in_flight.push_back(op);
        }
        while let Some(e) = self.r.poll_event().map(Into::into) {
            match e {
                RecipeEvent::Queued { position, total } => self.queued.push((position, total)),
                e => self.events.push(e),
            }
        }
    }

    /// Runs a command or feeds an input.
    fn cmd<X>(&mut self, f: impl FnOnce(&mut R, Instant) -> X) -> X {
        let out = f(&mut self.r, self.now);
        self.pull();
        out
    }

    /// Ops sent since the last call.
    fn sent(&mut self) -> Vec<String> {
        self.pull();
        let out = self.log[self.seen..].to_vec();
        self.seen = self.log.len();
        out
    }

    /// Events since the last call.
    fn events(&mut self) -> Vec<RecipeEvent> {
        self.pull();
        std::mem::take(&mut self.events)
    }

    /// The oldest op in flight.
    fn front(&mut self) -> &Request {
        self.pull();
        self.in_flight.front().expect("no op in flight").op.request()
    }

    /// Answers the oldest op in flight.
    fn answer(&mut self, result: Result<Response, RequestError>) {
        self.pull();
        let op = self.in_flight.pop_front().expect("no op in flight");
        self.r.handle_reply(self.now, op.id, result);
        self.pull();
    }

    /// Answers a create2 in flight with sequence `seq`; returns the node path.
    fn answer_create(&mut self, seq: u32, czxid: i64) -> String {
        let Request::Create2(req) = self.front() else { panic!("expected create2, got {:?}", self.front()) };
        let path = format!("{}{seq:010}", req.path);
        self.answer(Ok(Response::Create2 { path: path.clone(), stat: stat(czxid) }));
        path
    }

    /// Answers the create2 in flight (see [`T::answer_create`]) and then the
    /// listing, which shows the new node alone. Returns its path.
    fn answer_create_alone(&mut self, seq: u32, czxid: i64) -> String {
        let path = self.answer_create(seq, czxid);
        self.answer_children(&[&name(&path)]);
        path
    }

    /// Answers the Pipelined plan's `createContainer <base>` in flight, sent
    /// ahead of a base's first create, with NodeExists.
    fn answer_ensure(&mut self, base: &str) {
        let Request::CreateContainer(req) = self.front() else {
            panic!("expected createContainer, got {:?}", self.front())
        };
        assert_eq!(req.path, base);
        self.answer(Err(RequestError::Server(ErrorCode::NODE_EXISTS)));
    }

    /// Answers a getChildren2 in flight.
    fn answer_children(&mut self, children: &[&str]) {
        assert!(matches!(self.front(), Request::GetChildren2(_)), "expected getChildren2, got {:?}", self.front());
        let children = children.iter().map(|c| c.to_string()).collect();
        self.answer(Ok(Response::Children2 { children, stat: stat(3) }));
    }

    /// Answers a getChildren (the protected-create lookup) in flight.
    fn answer_names(&mut self, children: &[&str]) {
        assert!(matches!(self.front(), Request::GetChildren(_)), "expected getChildren, got {:?}", self.front());
        self.answer(Ok(Response::Children(children.iter().map(|c| c.to_string()).collect())));
    }

    fn watch(&mut self, event_type: EventType, path: &str) {
        self.cmd(|r, now| r.handle_watch(now, &WatchEvent { event_type, path: path.into() }));
    }

    fn session(&mut self, state: ConnectionState) {
        self.cmd(|r, now| r.handle_session(now, state));
    }

    fn advance_to(&mut self, now: Instant) {
        self.now = now;
        if self.r.poll_timeout().is_some_and(|t| t <= now) {
            self.r.handle_timeout(now);
        }
        self.pull();
        // A timer that was handled is never asked for again.
        assert!(self.r.poll_timeout().is_none_or(|t| t > now), "timer stuck in the past");
    }

    fn idle_wire(&mut self) -> bool {
        self.pull();
        self.in_flight.is_empty()
    }
}

/// The requests a Curator client sent under `base` in a recorded trace, in
/// the same notation as [`describe`].
fn trace_ops(scenario: &str, file: &str, base: &str) -> Vec<String> {
    let path = format!("{}/../conformance/traces/curator-5.4.0/{scenario}/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let field = |line: &str, key: &str| -> Option<String> {
        let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
        let end = start + line[start..].find('"')?;
        Some(line[start..end].to_string())
    };
    let mut uuids = Vec::new();
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.contains("\"dir\":\"c2s\"")) {
        let (Some(op), Some(path), Some(hex)) = (field(line, "op"), field(line, "path"), field(line, "hex")) else {
            continue;
        };
        // The recipe's paths and the ancestors mkdirs probes (not the
        // EnsembleTracker's /zookeeper/config).
        if !path.starts_with(base) && !base.starts_with(&format!("{path}/")) {
            continue;
        }
        let tail = |n: usize| i64::from_str_radix(&hex[hex.len() - n..], 16).unwrap();
        let suffix = match op.as_str() {
            "exists" | "getData" | "getChildren" | "getChildren2" if tail(2) == 1 => " w".to_string(),
            "create" | "create2" | "createContainer" => format!(" f{}", tail(8)),
            "checkWatches" => format!(" t{}", tail(8)),
            _ => String::new(),
        };
        out.push(normalize(&format!("{op} {path}{suffix}"), &mut uuids));
    }
    out
}

/// Curator's uncontended acquire on a fresh path (client A of both traces),
/// then the lease's release after `others` has happened.
fn first_client<R: Recipe<Event: Into<RecipeEvent>>>(t: &mut T<R>, base: &str) -> String {
    t.answer(no_node()); // create2 locks/…-lock-
    t.answer(exists_ok()); // exists /traces
    t.answer(no_node()); // exists base
    t.answer(container(base));
    t.answer(no_node()); // exists base/locks
    t.answer(container(&format!("{base}/locks")));
    t.answer_create_alone(0, 10);
    t.answer(no_node()); // create2 leases/…-lease-
    t.answer(exists_ok()); // exists /traces
    t.answer(exists_ok()); // exists base
    t.answer(no_node()); // exists base/leases
    t.answer(container(&format!("{base}/leases")));
    let lease = t.answer_create_alone(0, 14);
    assert_eq!(t.events(), vec![], "Curator reports the lease once the mutex node is deleted");
    t.answer(empty()); // checkWatches leases
    t.answer(empty()); // delete the lock node
    assert_eq!(t.events(), vec![acquired(&lease, 14)]);
    lease
}

const A_OPS: &[&str] = &[
    "create2 BASE/locks/_c_U1-lock- f3",
    "exists /traces",
    "exists BASE",
    "createContainer BASE f4",
    "exists BASE/locks",
    "createContainer BASE/locks f4",
    "create2 BASE/locks/_c_U1-lock- f3",
    "getChildren2 BASE/locks",
    "create2 BASE/leases/_c_U2-lease- f3",
    "exists /traces",
    "exists BASE",
    "exists BASE/leases",
    "createContainer BASE/leases f4",
    "create2 BASE/leases/_c_U2-lease- f3",
    "getChildren2 BASE/leases w",
    "checkWatches BASE/leases t3",
    "delete BASE/locks/_c_U1-lock-0000000000",
    "delete BASE/leases/_c_U2-lease-0000000000",
];

fn with_base(ops: &[&str], base: &str) -> Vec<String> {
    ops.iter().map(|o| o.replace("BASE", base)).collect()
}

// ---- Curator traces ------------------------------------------------------------------

#[test]
fn uncontended_with_missing_parents_matches_trace_a() {
    let base = "/traces/semaphore-v2";
    let mut t = T::new(Semaphore::new(p(base), 2, curator()));
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    let lease = first_client(&mut t, base);
    assert_eq!(t.r.leases(), vec![lease.as_str()]);
    // B's lease arrives: the child watch left armed by the last listing fires
    // and is ignored.
    t.watch(EventType::NODE_CHILDREN_CHANGED, &format!("{base}/leases"));
    assert!(t.idle_wire());
    t.cmd(|s, now| s.return_lease(now, &lease)).unwrap();
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert!(t.r.is_quiescent());
    assert_eq!(t.log, with_base(A_OPS, base));
    assert_eq!(t.log, trace_ops("semaphore-v2", "A.conn1.jsonl", base));
}

#[test]
fn semaphore_mutex_uncontended_matches_trace_a() {
    let base = "/traces/semaphore-mutex";
    let mut t = T::new(SemaphoreMutex::new(p(base), curator()));
    t.cmd(|m, now| m.acquire(now, None)).unwrap();
    let lease = first_client(&mut t, base);
    assert_eq!(t.r.holder(), Some((lease.as_str(), FencingToken(14))));
    t.watch(EventType::NODE_CHILDREN_CHANGED, &format!("{base}/leases"));
    t.cmd(|m, now| m.release(now)).unwrap();
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert_eq!(t.r.holder(), None);
    assert_eq!(t.cmd(|m, now| m.release(now)), Err(ApiMisuse::NotHeld));
    assert_eq!(t.log, trace_ops("semaphore-mutex", "A.conn1.jsonl", base));
}

#[test]
fn second_client_with_a_free_lease_matches_trace_b() {
    let base = "/traces/semaphore-v2";
    let a_lease = format!("{base}/leases/_c_036ccb59-721e-4729-b7b0-1beba76ce963-lease-0000000000");
    let mut t = T::new(Semaphore::new(p(base), 2, curator()));
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    t.answer_create_alone(1, 20);
    let lease = t.answer_create(1, 21);
    t.answer_children(&[&name(&a_lease), &name(&lease)]);
    t.answer(empty());
    t.answer(empty());
    assert_eq!(t.events(), vec![acquired(&lease, 21)]);
    t.watch(EventType::NODE_CHILDREN_CHANGED, &format!("{base}/leases"));
    t.cmd(|s, now| s.return_all(now));
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert_eq!(t.log, trace_ops("semaphore-v2", "B.conn1.jsonl", base));
}

/// C finds N+1 leases, waits holding the mutex, re-lists on the child watch,
/// gets its lease, checks the watch off and deletes its lock node.
fn contended<R: Recipe<Event: Into<RecipeEvent>>>(t: &mut T<R>, base: &str, others: &[&str], after: &[&str]) -> String {
    let lock = t.answer_create_alone(2, 30);
    let lease = t.answer_create(2, 31);
    let mut all: Vec<&str> = others.to_vec();
    let own = name(&lease);
    all.push(&own);
    t.answer_children(&all);
    t.sent();
    assert!(t.idle_wire(), "waiting on the child watch");
    assert_eq!(t.events(), vec![]);
    assert_eq!(t.r.poll_timeout(), None, "untimed");
    t.watch(EventType::NODE_CHILDREN_CHANGED, &format!("{base}/leases"));
    assert_eq!(t.sent(), vec![format!("getChildren2 {base}/leases w")]);
    let mut rest: Vec<&str> = after.to_vec();
    rest.push(&own);
    t.answer_children(&rest);
    assert_eq!(
        t.sent(),
        vec![format!("checkWatches {base}/leases t3"), normalize(&format!("delete {lock}"), &mut t.uuids),]
    );
    t.answer(empty());
    t.answer(empty());
    assert_eq!(t.events(), vec![acquired(&lease, 31)]);
    lease
}

#[test]
fn contended_waits_holding_the_mutex_matches_trace_c() {
    let base = "/traces/semaphore-v2";
    let a = "_c_036ccb59-721e-4729-b7b0-1beba76ce963-lease-0000000000";
    let b = "_c_653da8f7-9eb2-4845-a4ad-97e01855521f-lease-0000000001";
    let mut t = T::new(Semaphore::new(p(base), 2, curator()));
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    let lease = contended(&mut t, base, &[a, b], &[b]);
    // Holding the internal lock, waiting for a lease: next in line, three
    // leases listed (ours included); the listing that grants reports none.
    assert_eq!(t.queued, [(1, 3)]);
    t.watch(EventType::NODE_CHILDREN_CHANGED, &format!("{base}/leases"));
    t.cmd(|s, now| s.return_lease(now, &lease)).unwrap();
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert_eq!(t.log, trace_ops("semaphore-v2", "C.conn1.jsonl", base));
}

#[test]
fn semaphore_mutex_contended_matches_trace_b() {
    let base = "/traces/semaphore-mutex";
    let a = "_c_4e8419d8-b450-4bea-837b-9f5204bd10d2-lease-0000000000";
    let mut t = T::new(SemaphoreMutex::new(p(base), curator()));
    t.cmd(|m, now| m.acquire(now, None)).unwrap();
    let _ = contended(&mut t, base, &[a], &[]);
    t.cmd(|m, now| m.release(now)).unwrap();
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    let mut expected = trace_ops("semaphore-mutex", "B.conn1.jsonl", base);
    // The recorded lock node has sequence 1 and lease 1; ours used 2.
    for op in &mut expected {
        *op = op.replace("-0000000001", "-0000000002");
    }
    assert_eq!(t.log, expected);
}

// ---- more transcripts ------------------------------------------------------------------

/// A semaphore of `max` leases on `/s`, asked for `qty` of them (no deadline).
fn acquiring(max: usize, qty: usize, config: LockConfig) -> T<Semaphore> {
    let mut t = T::new(Semaphore::new(p("/s"), max, config));
    t.cmd(|s, now| s.acquire(now, qty, None)).unwrap();
    t
}

/// Parents exist: the internal-lock node at `lock_seq` is listed alone, then
/// the lease node at `lease_seq` is listed after `others`. Returns its path.
fn list_lease<R: Recipe<Event: Into<RecipeEvent>>>(
    t: &mut T<R>,
    lock_seq: u32,
    lease_seq: u32,
    others: &[&str],
) -> String {
    t.answer_create_alone(lock_seq, 100 + i64::from(lock_seq));
    let lease = t.answer_create(lease_seq, 200 + i64::from(lease_seq));
    let own = name(&lease);
    let mut all: Vec<&str> = others.to_vec();
    all.push(&own);
    t.answer_children(&all);
    lease
}

/// The ops of [`list_lease`] under `/s`: the internal-lock node (UUID
/// `U{u}`) and its listing, then the lease node (`U{u+1}`) and its listing.
fn listing_ops(u: u32) -> Vec<String> {
    vec![
        format!("create2 /s/locks/_c_U{u}-lock- f3"),
        "getChildren2 /s/locks".into(),
        format!("create2 /s/leases/_c_U{}-lease- f3", u + 1),
        "getChildren2 /s/leases w".into(),
    ]
}

/// The ops of [`take_free_lease`] under `/s`: [`listing_ops`], then the watch
/// checked off and the internal-lock node (sequence `seq`) deleted.
fn taken_ops(u: u32, seq: u32) -> Vec<String> {
    let mut ops = listing_ops(u);
    ops.push("checkWatches /s/leases t3".into());
    ops.push(format!("delete /s/locks/_c_U{u}-lock-{seq:010}"));
    ops
}

/// [`taken_ops`] in the Pipelined plan where held nodes are watched (the
/// default config): the lease's listing's child watch is its held watch, so
/// the grant sends neither the checkWatches nor an exists, only the
/// internal-lock node's delete; that node is never watched (ARCHITECTURE §6.1).
fn taken_ops_pipelined(u: u32, seq: u32) -> Vec<String> {
    let mut ops = listing_ops(u);
    ops.push(format!("delete /s/locks/_c_U{u}-lock-{seq:010}"));
    ops
}

/// Parents exist and the semaphore is free: one lease taken in the Curator plan.
fn take_free_lease<R: Recipe<Event: Into<RecipeEvent>>>(
    t: &mut T<R>,
    lock_seq: u32,
    lease_seq: u32,
    others: &[&str],
) -> String {
    let lease = list_lease(t, lock_seq, lease_seq, others);
    t.answer(empty()); // checkWatches
    t.answer(empty()); // delete lock node
    lease
}

/// Of two leases asked for: the first is taken beside the foreign lease
/// `foreign`, the second waits behind both. Returns the two leases.
fn second_lease_waits(t: &mut T<Semaphore>, foreign: &str) -> (String, String) {
    let first = take_free_lease(t, 0, 0, &[foreign]);
    let lease = list_lease(t, 1, 1, &[foreign, &name(&first)]);
    t.sent();
    (first, lease)
}

/// A semaphore of `max` leases on `/s` that took one, free, and reported
/// it; returns the lease's path too.
fn holding_one(max: usize) -> (T<Semaphore>, String) {
    let mut t = acquiring(max, 1, curator());
    let lease = take_free_lease(&mut t, 0, 0, &[]);
    assert_eq!(t.events(), vec![acquired(&lease, 200)]);
    (t, lease)
}

#[test]
fn qty_two_takes_leases_one_at_a_time() {
    let mut t = acquiring(3, 2, curator());
    let first = take_free_lease(&mut t, 0, 0, &[]);
    assert_eq!(t.events(), vec![], "nothing is reported before the whole qty is held");
    let second = take_free_lease(&mut t, 1, 1, &[&name(&first)]);
    assert_eq!(t.events(), vec![acquired(&first, 200), acquired(&second, 201)]);
    // The next lease starts only after the mutex node's delete.
    assert_eq!(t.sent(), [taken_ops(1, 0), taken_ops(3, 1)].concat());
    assert_eq!(t.r.leases(), vec![first.as_str(), second.as_str()]);
    assert_eq!(t.r.lease_token(&second), Some(FencingToken(201)));
    t.cmd(|s, now| s.return_all(now));
    assert_eq!(t.sent(), vec!["delete /s/leases/_c_U2-lease-0000000000", "delete /s/leases/_c_U4-lease-0000000001"]);
    t.answer(empty());
    t.answer(no_node()); // already gone: fine
    assert_eq!(t.events(), vec![RecipeEvent::Released, RecipeEvent::Released]);
    assert!(t.r.leases().is_empty());
    assert!(t.r.is_quiescent());
}

#[test]
fn qty_zero_and_a_second_concurrent_acquire_are_refused() {
    let mut t = T::new(Semaphore::new(p("/s"), 1, curator()));
    assert_eq!(t.cmd(|s, now| s.acquire(now, 0, None)), Err(ApiMisuse::ZeroQuantity));
    assert!(t.sent().is_empty());
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    assert!(t.cmd(|s, now| s.acquire(now, 1, None)).is_err());
    assert_eq!(t.sent(), vec!["create2 /s/locks/_c_U1-lock- f3"]);
    assert!(t.cmd(|s, now| s.return_lease(now, "/s/leases/nope")).is_err());
}

#[test]
fn timeout_waiting_for_a_lease_returns_every_lease_of_the_call() {
    let mut t = T::new(Semaphore::new(p("/s"), 2, curator()));
    let deadline = at(5000);
    t.cmd(|s, now| s.acquire(now, 2, Some(deadline))).unwrap();
    let (first, lease) = second_lease_waits(&mut t, "_c_x-lease-0000000007");
    assert_eq!(t.r.poll_timeout(), Some(deadline));
    t.advance_to(at(5000));
    // Curator runs the loop once more at the deadline.
    assert_eq!(t.sent(), vec!["getChildren2 /s/leases w"]);
    assert_eq!(t.events(), vec![]);
    t.answer_children(&["_c_x-lease-0000000007", &name(&first), &name(&lease)]);
    assert_eq!(
        t.sent(),
        vec![
            "delete /s/leases/_c_U4-lease-0000000001",
            "checkWatches /s/leases t3",
            "delete /s/locks/_c_U3-lock-0000000001",
            "delete /s/leases/_c_U2-lease-0000000000",
        ]
    );
    assert_eq!(t.events(), vec![RecipeEvent::TimedOut]);
    assert!(t.r.leases().is_empty());
    assert!(!t.r.is_quiescent(), "deletes still in flight");
    for _ in 0..4 {
        t.answer(empty());
    }
    assert_eq!(t.events(), vec![]);
    assert!(t.r.is_quiescent());
    assert_eq!(t.r.poll_timeout(), None);
}

#[test]
fn timeout_waiting_for_the_mutex_deletes_only_the_mutex_node() {
    let mut t = T::new(Semaphore::new(p("/s"), 2, curator()));
    t.cmd(|s, now| s.acquire(now, 1, Some(at(3000)))).unwrap();
    let lock = t.answer_create(5, 105);
    t.answer_children(&["_c_other-lock-0000000004", &name(&lock)]);
    t.answer(exists_ok().map(|r| match r {
        Response::Stat(stat) => Response::Data { data: None, stat },
        other => other,
    }));
    assert_eq!(
        t.sent(),
        vec!["create2 /s/locks/_c_U1-lock- f3", "getChildren2 /s/locks", "getData /s/locks/_c_other-lock-0000000004 w"]
    );
    assert_eq!(t.r.poll_timeout(), Some(at(3000)));
    t.advance_to(at(3000));
    assert_eq!(t.sent(), vec!["getChildren2 /s/locks"]);
    t.answer_children(&["_c_other-lock-0000000004", &name(&lock)]);
    t.answer(Ok(Response::Data { data: None, stat: stat(4) }));
    assert_eq!(t.sent(), vec!["getData /s/locks/_c_other-lock-0000000004 w", "delete /s/locks/_c_U1-lock-0000000005"]);
    assert_eq!(t.events(), vec![RecipeEvent::TimedOut]);
    // Behind the internal lock's holder, who is next in line for a lease;
    // the same position again at the deadline is not reported twice.
    assert_eq!(t.queued, [(2, 2)]);
    t.answer(empty());
    assert!(t.r.is_quiescent());
    assert!(t.r.leases().is_empty());
}

#[test]
fn a_free_lease_is_taken_even_after_the_deadline() {
    let mut t = T::new(Semaphore::new(p("/s"), 1, curator()));
    let now = t.now;
    t.cmd(|s, _| s.acquire(now, 1, Some(now))).unwrap();
    let lease = take_free_lease(&mut t, 0, 0, &[]);
    assert_eq!(t.events(), vec![acquired(&lease, 200)]);
}

#[test]
fn own_lease_missing_releases_the_mutex_and_starts_over() {
    let mut t = acquiring(1, 1, curator());
    t.answer_create_alone(0, 100);
    let lease = t.answer_create(0, 200);
    t.answer_children(&["_c_x-lease-0000000009"]);
    let mut expected = listing_ops(1);
    expected.extend([
        "delete /s/leases/_c_U2-lease-0000000000".into(),
        "checkWatches /s/leases t3".into(),
        "delete /s/locks/_c_U1-lock-0000000000".into(),
    ]);
    assert_eq!(t.sent(), expected);
    assert_eq!(t.events(), vec![]);
    t.answer(no_node()); // the lease is gone: fine
    t.answer(empty());
    t.answer(empty());
    // The retry policy's pause, then a new mutex node and a new lease node.
    let pause = t.r.poll_timeout().expect("retry pause");
    assert!(pause > t.now && pause <= t.now + Duration::from_millis(400));
    assert!(t.sent().is_empty());
    t.advance_to(pause);
    let lease2 = take_free_lease(&mut t, 1, 1, &[]);
    assert_ne!(lease, lease2);
    assert_eq!(t.sent(), taken_ops(3, 1));
    assert_eq!(t.events(), vec![acquired(&lease2, 201)]);
}

#[test]
fn own_lease_missing_too_often_fails() {
    let mut config = curator();
    config.retry.max_retries = 1;
    let mut t = acquiring(1, 1, config);
    for round in 0..2u32 {
        let lock = t.answer_create(round, 100);
        t.answer_children(&[&name(&lock)]);
        t.answer_create(round, 200);
        t.answer_children(&[]);
        for _ in 0..3 {
            t.answer(empty());
        }
        if round == 0 {
            let pause = t.r.poll_timeout().unwrap();
            t.advance_to(pause);
        }
    }
    assert_eq!(t.events(), vec![RecipeEvent::Failed(RequestError::RetriesExhausted(1))]);
    assert!(t.r.is_quiescent());
    assert_eq!(t.r.poll_timeout(), None);
}

#[test]
fn connection_loss_on_the_lease_create_recovers_by_prefix() {
    let mut t = acquiring(1, 1, curator());
    t.answer_create_alone(0, 100);
    let Request::Create2(req) = t.front() else { panic!() };
    let landed = format!("{}0000000003", req.path);
    t.answer(Err(RequestError::ConnectionLoss));
    t.session(ConnectionState::Suspended);
    assert!(t.idle_wire());
    t.session(ConnectionState::Reconnected);
    assert_eq!(
        t.sent(),
        vec![
            "create2 /s/locks/_c_U1-lock- f3",
            "getChildren2 /s/locks",
            "create2 /s/leases/_c_U2-lease- f3",
            // zoolock confirms the held mutex node survived the drop.
            "exists /s/locks/_c_U1-lock-0000000000",
            "getChildren /s/leases",
        ]
    );
    t.answer(exists_ok());
    t.answer_names(&["_c_x-lease-0000000001", &name(&landed)]);
    assert_eq!(t.sent(), vec!["exists /s/leases/_c_U2-lease-0000000003"]);
    t.answer(Ok(Response::Stat(stat(203))));
    assert_eq!(t.sent(), vec!["getChildren2 /s/leases w"]);
    t.answer_children(&[&name(&landed)]);
    t.answer(empty());
    t.answer(empty());
    assert_eq!(t.events(), vec![acquired(&landed, 203)], "no Suspended: nothing was held yet");
}

#[test]
fn suspension_while_holding_is_reported_once_for_all_leases() {
    let mut t = acquiring(3, 2, curator());
    let first = take_free_lease(&mut t, 0, 0, &[]);
    let second = take_free_lease(&mut t, 1, 1, &[&name(&first)]);
    t.events();
    t.sent();
    t.session(ConnectionState::Suspended);
    assert_eq!(t.events(), vec![RecipeEvent::Suspended]);
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.sent(), vec!["exists /s/leases/_c_U2-lease-0000000000", "exists /s/leases/_c_U4-lease-0000000001"]);
    t.answer(exists_ok());
    assert_eq!(t.events(), vec![]);
    t.answer(exists_ok());
    assert_eq!(t.events(), vec![RecipeEvent::Reconnected]);
    // Again, and this time one lease vanished: that lease alone is lost,
    // and the survivor is Reconnected (ARCHITECTURE §6.1).
    t.session(ConnectionState::Suspended);
    t.session(ConnectionState::Reconnected);
    t.answer(no_node());
    assert_eq!(t.events(), vec![RecipeEvent::Suspended, RecipeEvent::LeaseLost { node: first.clone() }]);
    assert_eq!(t.r.leases(), vec![second.as_str()]);
    t.answer(exists_ok());
    assert_eq!(t.events(), vec![RecipeEvent::Reconnected]);
    assert_eq!(t.r.leases(), vec![second.as_str()]);
}

#[test]
fn session_lost_while_holding_reports_lost() {
    let (mut t, lease) = holding_one(2);
    t.session(ConnectionState::Suspended);
    t.session(ConnectionState::Lost);
    // Each held lease is lost, then the handle.
    assert_eq!(
        t.events(),
        vec![RecipeEvent::Suspended, RecipeEvent::LeaseLost { node: lease.clone() }, RecipeEvent::Lost]
    );
    assert!(t.r.leases().is_empty());
    assert!(t.cmd(|s, now| s.return_lease(now, &lease)).is_err());
    // The server may not have expired the session yet: the next session
    // deletes the node if it is still there.
    assert!(!t.r.is_quiescent());
    assert!(t.idle_wire());
    t.sent();
    t.session(ConnectionState::Connected);
    assert_eq!(t.sent(), vec!["delete /s/leases/_c_U2-lease-0000000000"]);
    t.answer(no_node());
    assert_eq!(t.events(), vec![]);
    assert!(t.r.is_quiescent());
}

#[test]
fn a_suspension_is_answered_even_when_every_lease_was_returned_before_the_expiry() {
    // Found by the ensemble soak after a quorum loss: the holder returned
    // its lease while Suspended, the session then expired, and nothing
    // answered the Suspended; the async handle went on reporting every new
    // lease as Suspended.
    let (mut t, lease) = holding_one(2);
    t.session(ConnectionState::Suspended);
    assert_eq!(t.events(), vec![RecipeEvent::Suspended]);
    t.cmd(|s, now| s.return_lease(now, &lease)).unwrap();
    t.session(ConnectionState::Lost);
    let events = t.events();
    assert_eq!(events.last(), Some(&RecipeEvent::Lost), "{events:?}");
    assert_eq!(events.iter().filter(|e| **e == RecipeEvent::Lost).count(), 1, "{events:?}");
    // A session that ends with nothing reported and nothing held says nothing.
    let mut t = T::new(Semaphore::new(p("/s"), 2, curator()));
    t.session(ConnectionState::Lost);
    assert_eq!(t.events(), vec![]);
}

#[test]
fn session_lost_while_acquiring_fails_and_holding_is_lost() {
    let (mut t, held) = holding_one(1);
    // A second acquire waits for a lease (the first one is ours).
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    list_lease(&mut t, 1, 1, &[&name(&held)]);
    assert!(t.idle_wire());
    t.session(ConnectionState::Lost);
    assert_eq!(
        t.events(),
        vec![
            RecipeEvent::LeaseLost { node: held.clone() },
            RecipeEvent::Lost,
            RecipeEvent::Failed(RequestError::SessionExpired)
        ]
    );
    assert!(t.idle_wire());
    t.sent();
    t.session(ConnectionState::Connected);
    assert_eq!(
        t.sent(),
        vec![
            "delete /s/locks/_c_U3-lock-0000000001",
            "delete /s/leases/_c_U2-lease-0000000000",
            "delete /s/leases/_c_U4-lease-0000000001",
        ]
    );
    // The handle works again on the new session.
    cleaned_up_then_afresh(&mut t, 3, no_node);
}

/// Answers the `deletes` cleanup deletes in flight with `reply()`; then
/// nothing is reported or owed, and a new acquire starts afresh with a new
/// UUID for its internal-lock node (the fifth of the transcript).
fn cleaned_up_then_afresh(t: &mut T<Semaphore>, deletes: usize, reply: fn() -> Result<Response, RequestError>) {
    for _ in 0..deletes {
        t.answer(reply());
    }
    assert_eq!(t.events(), vec![]);
    assert!(t.r.is_quiescent());
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    assert_eq!(t.sent(), vec!["create2 /s/locks/_c_U5-lock- f3"]);
}

/// A tiny in-order server holding our nodes plus a foreign lease, for the
/// cancellation sweep. Every parent exists.
struct MiniServer {
    nodes: Vec<String>,
    seq: u32,
}

impl MiniServer {
    fn new() -> Self {
        MiniServer { nodes: vec!["/s/leases/_c_x-lease-0000000099".into()], seq: 0 }
    }

    fn children(&self, parent: &str) -> Vec<String> {
        let prefix = format!("{parent}/");
        self.nodes.iter().filter_map(|n| n.strip_prefix(&prefix)).map(|n| n.to_string()).collect()
    }

    /// Executes the oldest op in flight; `lose` answers ConnectionLoss after
    /// executing it (the reply is lost, the effect is not).
    fn serve<R: Recipe<Event: Into<RecipeEvent>>>(&mut self, t: &mut T<R>, lose: bool) {
        let req = t.front().clone();
        let result = match req {
            Request::Create2(r) => {
                let path = format!("{}{:010}", r.path, self.seq);
                self.seq += 1;
                self.nodes.push(path.clone());
                Ok(Response::Create2 { path, stat: stat(100 + i64::from(self.seq)) })
            }
            Request::Delete(r) => match self.nodes.iter().position(|n| *n == r.path) {
                Some(i) => {
                    self.nodes.remove(i);
                    empty()
                }
                None => no_node(),
            },
            Request::GetChildren2(r) => Ok(Response::Children2 { children: self.children(&r.path), stat: stat(3) }),
            Request::GetChildren(r) => Ok(Response::Children(self.children(&r.path))),
            Request::GetData(r) if !self.nodes.contains(&r.path) => no_node(),
            Request::GetData(_) => Ok(Response::Data { data: None, stat: stat(4) }),
            Request::Exists(r) if !self.nodes.contains(&r.path) => no_node(),
            Request::Exists(_) => exists_ok(),
            _ => empty(),
        };
        t.answer(if lose { Err(RequestError::ConnectionLoss) } else { result });
    }

    fn ours(&self) -> Vec<String> {
        self.nodes.iter().filter(|n| !n.contains("_c_x-")).cloned().collect()
    }
}

/// Serves `steps` replies of a two-lease acquire (the first lease is free,
/// the second waits behind the foreign lease), cancels, then lets everything
/// finish: no node of ours may remain. With `lose`, the connection drops at
/// the cancel, so every reply in flight is lost (their effects are not).
fn cancel_after(steps: usize, plan: OpPlan, lose: bool) {
    let config = LockConfig::new(7).with_plan(plan).with_watch_held(plan != OpPlan::Curator);
    let mut t = T::new(Semaphore::new(p("/s"), 2, config));
    let mut server = MiniServer::new();
    t.cmd(|s, now| s.acquire(now, 2, None)).unwrap();
    for _ in 0..steps {
        if t.idle_wire() {
            break;
        }
        server.serve(&mut t, false);
    }
    t.events();
    t.cmd(|s, now| s.cancel(now));
    assert!(!t.r.is_acquiring());
    if lose {
        while !t.idle_wire() {
            server.serve(&mut t, true);
        }
        t.session(ConnectionState::Suspended);
        t.session(ConnectionState::Reconnected);
    }
    let mut guard = 0;
    while !t.idle_wire() {
        guard += 1;
        assert!(guard < 100, "no end: {:#?}", t.log);
        server.serve(&mut t, false);
    }
    let ctx = format!("after {steps} steps ({plan:?}, lose={lose}); log: {:#?}", t.log);
    assert_eq!(t.events(), vec![], "cancel reports nothing, {ctx}");
    assert_eq!(server.ours(), Vec::<String>::new(), "leaked {ctx}");
    assert!(t.r.is_quiescent(), "{ctx}");
}

#[test]
fn cancel_leaves_no_node_at_any_step() {
    for plan in [OpPlan::Curator, OpPlan::Pipelined] {
        for lose in [false, true] {
            for steps in 0..16 {
                cancel_after(steps, plan, lose);
            }
        }
    }
}

#[test]
fn cancel_while_waiting_for_a_lease_deletes_lease_mutex_and_earlier_leases() {
    let mut t = acquiring(2, 2, curator());
    second_lease_waits(&mut t, "_c_x-lease-0000000005");
    t.cmd(|s, now| s.cancel(now));
    assert_eq!(
        t.sent(),
        vec![
            "delete /s/leases/_c_U4-lease-0000000001",
            "delete /s/locks/_c_U3-lock-0000000001",
            "delete /s/leases/_c_U2-lease-0000000000",
        ]
    );
    // A later acquire starts cleanly.
    cleaned_up_then_afresh(&mut t, 3, empty);
}

#[test]
fn pipelined_plan_sends_create_and_listing_back_to_back() {
    let mut t = acquiring(2, 1, pipelined());
    // A handle's first create on each base goes behind one createContainer
    // of the base, in the same round trip.
    assert_eq!(
        t.sent(),
        vec!["createContainer /s/locks f4", "create2 /s/locks/_c_U1-lock- f3", "getChildren2 /s/locks"]
    );
    t.answer_ensure("/s/locks");
    let lock = t.answer_create(0, 100);
    assert!(t.sent().is_empty());
    t.answer_children(&[&name(&lock)]);
    assert_eq!(
        t.sent(),
        vec!["createContainer /s/leases f4", "create2 /s/leases/_c_U2-lease- f3", "getChildren2 /s/leases w"]
    );
    t.answer_ensure("/s/leases");
    let lease = t.answer_create_alone(0, 200);
    // The held lease is watched by its listing's child watch (no
    // checkWatches, no exists); the internal mutex node is not watched.
    assert_eq!(t.sent(), vec!["delete /s/locks/_c_U1-lock-0000000000"]);
    // Reported once the mutex node's delete is queued; it stays guaranteed.
    assert_eq!(t.events(), vec![acquired(&lease, 200)]);
    t.cmd(|s, now| s.return_lease(now, &lease)).unwrap();
    assert_eq!(t.sent(), vec!["delete /s/leases/_c_U2-lease-0000000000"]);
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert!(!t.r.is_quiescent());
    t.answer(Err(RequestError::ConnectionLoss)); // the mutex delete: retried after the reconnect
    t.answer(empty());
    t.session(ConnectionState::Suspended);
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.sent(), vec!["delete /s/locks/_c_U1-lock-0000000000"]);
    t.answer(empty());
    assert!(t.r.is_quiescent());
}

#[test]
fn pipelined_plan_takes_the_next_lease_in_the_same_round_trip() {
    let mut t = acquiring(2, 2, pipelined());
    t.answer_ensure("/s/locks");
    t.answer_create_alone(0, 100);
    t.answer_ensure("/s/leases");
    t.answer_create_alone(0, 200);
    // One createContainer per base and handle: not for the second lease.
    let mut expected = taken_ops_pipelined(1, 0);
    expected.insert(0, "createContainer /s/locks f4".into());
    expected.insert(3, "createContainer /s/leases f4".into());
    expected.extend(["create2 /s/locks/_c_U3-lock- f3".into(), "getChildren2 /s/locks".into()]);
    assert_eq!(t.sent(), expected);
    assert_eq!(t.events(), vec![]);
}

#[test]
fn semaphore_mutex_is_not_reentrant() {
    let mut t = T::new(SemaphoreMutex::new(p("/m"), curator()));
    t.cmd(|m, now| m.acquire(now, None)).unwrap();
    assert!(t.r.is_acquiring());
    assert!(t.cmd(|m, now| m.acquire(now, None)).is_err());
    let lease = take_free_lease(&mut t, 0, 0, &[]);
    assert_eq!(t.events(), vec![acquired(&lease, 200)]);
    assert_eq!(t.cmd(|m, now| m.acquire(now, None)), Err(ApiMisuse::NotReentrant));
    assert_eq!(t.r.holder(), Some((lease.as_str(), FencingToken(200))));
    t.sent();
    t.cmd(|m, now| m.release(now)).unwrap();
    assert_eq!(t.sent(), vec!["delete /m/leases/_c_U2-lease-0000000000"]);
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert!(t.r.is_quiescent());
    t.cmd(|m, now| m.acquire(now, None)).unwrap();
    assert_eq!(t.sent(), vec!["create2 /m/locks/_c_U3-lock- f3"]);
}

#[test]
fn foreign_children_count_and_wake_ups_on_other_paths_are_ignored() {
    let mut t = acquiring(2, 1, curator());
    let lease = list_lease(&mut t, 0, 3, &["readme", "_c_x-lease-0000000001"]);
    t.sent();
    t.watch(EventType::NODE_CHILDREN_CHANGED, "/s/locks");
    t.watch(EventType::NODE_DELETED, "/s/leases/_c_x-lease-0000000001");
    assert!(t.idle_wire());
    t.watch(EventType::NODE_CHILDREN_CHANGED, "/s/leases");
    t.answer_children(&["readme", &name(&lease)]);
    t.answer(empty());
    t.answer(empty());
    assert_eq!(t.events(), vec![acquired(&lease, 203)]);
}

#[test]
fn a_lease_of_the_call_vanishing_on_reconnect_fails_the_call() {
    let mut t = acquiring(2, 2, curator());
    let (first, lease) = second_lease_waits(&mut t, "_c_x-lease-0000000005");
    t.session(ConnectionState::Suspended);
    assert_eq!(t.sent(), vec!["getChildren2 /s/leases w"], "every connection event wakes the waiter");
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.sent(), vec!["exists /s/locks/_c_U3-lock-0000000001", "exists /s/leases/_c_U2-lease-0000000000"]);
    assert_eq!(t.events(), vec![], "nothing was reported as held");
    t.answer_children(&["_c_x-lease-0000000005", &name(&first), &name(&lease)]);
    t.answer(exists_ok());
    t.answer(no_node());
    assert_eq!(t.sent(), vec!["delete /s/leases/_c_U4-lease-0000000001", "delete /s/locks/_c_U3-lock-0000000001"]);
    assert_eq!(t.events(), vec![RecipeEvent::Failed(RequestError::NodeVanished)]);
    t.answer(empty());
    t.answer(empty());
    assert!(t.r.is_quiescent());
}

#[test]
fn an_acquire_right_after_a_cancel_waits_for_the_mutex_release() {
    let mut t = acquiring(1, 1, curator());
    list_lease(&mut t, 0, 1, &["_c_x-lease-0000000000"]);
    t.sent();
    t.cmd(|s, now| s.cancel(now));
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    assert_eq!(t.sent(), vec!["delete /s/leases/_c_U2-lease-0000000001", "delete /s/locks/_c_U1-lock-0000000000"]);
    t.answer(empty());
    assert!(t.sent().is_empty());
    t.answer(empty());
    assert_eq!(t.sent(), vec!["create2 /s/locks/_c_U3-lock- f3"]);
    let lease = take_free_lease(&mut t, 1, 2, &[]);
    assert_eq!(t.events(), vec![acquired(&lease, 202)]);
}

// ---- sized by a shared count (issue 18) ----------------------------------------------------

fn count_data(n: i32, version: i32) -> Result<Response, RequestError> {
    Ok(Response::Data { data: Some(count_bytes(n)), stat: Stat { version, mzxid: i64::from(version), ..stat(5) } })
}

#[test]
fn a_count_sized_semaphore_waits_for_the_count_and_lets_a_waiter_in_when_it_grows() {
    let count = SharedCount::new(p("/n"), 1, curator());
    let mut t = T::new(Semaphore::with_count(p("/s"), count, curator()));
    assert_eq!(t.sent(), vec!["create2 /n f0", "getData /n w"]);
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    assert!(t.sent().is_empty(), "no lease is sought before the size is known");
    t.answer(Err(RequestError::Server(ErrorCode::NODE_EXISTS)));
    t.answer(count_data(1, 3));
    assert_eq!(t.events(), vec![RecipeEvent::Count { value: 1, version: 3 }]);
    let lease = list_lease(&mut t, 0, 1, &["_c_x-lease-0000000000"]);
    assert_eq!(t.queued.last(), Some(&(1, 2)), "two leases of one: waiting");
    assert_eq!((t.r.max_leases(), t.r.available()), (1, Some(0)));
    // Someone sets 2: the count is re-read and the waiter lists again at once.
    t.watch(EventType::NODE_DATA_CHANGED, "/n");
    t.answer(count_data(2, 4));
    t.answer_children(&["_c_x-lease-0000000000", &name(&lease)]);
    t.answer(empty()); // checkWatches
    t.answer(empty()); // delete the lock node
    assert_eq!(t.events(), vec![RecipeEvent::Count { value: 2, version: 4 }, acquired(&lease, 201)]);
    assert_eq!(t.r.lease_limit(&lease), Some(2));
    // Shrinking keeps the lease; an older version never goes back.
    t.watch(EventType::NODE_DATA_CHANGED, "/n");
    t.answer(count_data(0, 2));
    assert_eq!(t.events(), vec![]);
    t.watch(EventType::NODE_DATA_CHANGED, "/n");
    t.answer(count_data(-1, 6));
    assert_eq!(t.events(), vec![RecipeEvent::Count { value: -1, version: 6 }]);
    assert_eq!((t.r.max_leases(), t.r.leases()), (0, vec![lease.as_str()]));
    // Foreign bytes: reported, the last good size stays.
    t.watch(EventType::NODE_DATA_CHANGED, "/n");
    t.answer(Ok(Response::Data { data: Some(Bytes::from_static(b"xy")), stat: Stat { version: 7, ..stat(5) } }));
    assert_eq!(t.events(), vec![RecipeEvent::CountMalformed { len: 2 }]);
    assert_eq!(t.r.max_leases(), 0);
}

#[test]
fn a_revocable_lease_is_told_of_a_revocation_request() {
    let mut sem = Semaphore::new(p("/s"), 2, pipelined());
    sem.make_revocable();
    let mut t = T::new(sem);
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    t.answer_ensure("/s/locks");
    t.answer_create_alone(0, 100);
    t.answer_ensure("/s/leases");
    let Request::Create2(create) = t.front() else { panic!("expected the lease's create") };
    assert_eq!(create.data.as_deref(), Some(&b""[..]), "a revocable lease node has empty data");
    let lease = t.answer_create(0, 200);
    let shown = "/s/leases/_c_U2-lease-0000000000"; // `lease`, its uuid normalized
    assert_eq!(t.sent()[5..], [format!("getData {shown} w"), "getChildren2 /s/leases w".into()]);
    t.answer(Ok(Response::Data { data: Some(Bytes::new()), stat: stat(200) }));
    t.answer_children(&[&name(&lease)]);
    t.answer(empty()); // checkWatches
    t.answer(empty()); // delete the lock node
    assert_eq!(t.events(), vec![acquired(&lease, 200)]);
    t.sent();
    t.watch(EventType::NODE_DATA_CHANGED, &lease);
    assert_eq!(t.sent(), vec![format!("getData {shown} w")]);
    t.answer(Ok(Response::Data { data: Some(Bytes::from_static(REVOKE_MESSAGE)), stat: stat(200) }));
    assert_eq!(t.events(), vec![RecipeEvent::LeaseRevocationRequested { node: lease.clone() }]);
    // Giving it back checks off the revocation watch and deletes the node.
    t.cmd(|s, now| s.return_lease(now, &lease)).unwrap();
    assert_eq!(t.sent(), vec![format!("checkWatches {shown} t3"), format!("delete {shown}")]);
}
