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

// ---- shared by the transcripts -----------------------------------------------------------

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

// The tests, one file per concern: tests/semaphore/<concern>.rs. This file stays
// the crate root (not tests/semaphore/main.rs) so that `mod transcript;` above finds
// tests/transcript/mod.rs, which other test files share.
mod semaphore {
    mod cancel;
    mod curator_traces;
    mod edges;
    mod leases;
    mod pipelined;
    mod session_events;
    mod shared_count;
}
