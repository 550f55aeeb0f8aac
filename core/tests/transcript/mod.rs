//! Transcript-test support for recipes: drive a [`Recipe`] by hand (no
//! session), render the ops it emits as text with protection UUIDs masked,
//! and answer them oldest first, as a ZooKeeper server does.
#![allow(dead_code)]

use std::collections::VecDeque;

use zoolock_core::recipes::{LeaseQueueEvent, LockEvent, QueueEvent, SemaphoreEvent};
use zoolock_core::wire::{Bytes, CreateMode, ErrorCode, EventType, Request, Response, Stat};
use zoolock_core::{ConnectionState, Instant, Recipe, RecipeEvent, RecipeOp, RequestError, WatchEvent};

/// `ms` milliseconds after the origin.
pub(crate) fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

/// True for a canonical lowercase version-4 UUID.
pub(crate) fn is_uuid_v4(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            14 => *c == b'4',
            19 => matches!(c, b'8' | b'9' | b'a' | b'b'),
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
        })
}

/// Rewrites the UUID of every `_c_<uuid>-` whose UUID is a valid v4 UUID
/// to `label(uuid)`, leaving the rest of `path` as it is.
pub(crate) fn mask_with(path: &str, mut label: impl FnMut(&str) -> String) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(idx) = rest.find("_c_") {
        out.push_str(&rest[..idx + 3]);
        rest = &rest[idx + 3..];
        if let Some(uuid) = rest.get(..36).filter(|u| is_uuid_v4(u) && rest.as_bytes().get(36) == Some(&b'-')) {
            out.push_str(&label(uuid));
            rest = &rest[36..];
        }
    }
    out.push_str(rest);
    out
}

/// Replaces every `_c_<uuid>-` whose UUID is a valid v4 UUID with the
/// literal `_c_<uuid>-` (the notation of `conformance/traces/README.md`).
pub(crate) fn mask(path: &str) -> String {
    mask_with(path, |_| "<uuid>".to_string())
}

/// The protection UUID in a node path.
pub(crate) fn uuid_of(path: &str) -> String {
    let idx = path.rfind("_c_").expect("a protected name");
    path[idx + 3..idx + 39].to_string()
}

/// The last segment of a path.
pub(crate) fn name(path: &str) -> String {
    path.rsplit('/').next().unwrap().to_string()
}

fn mode(flags: CreateMode) -> &'static str {
    match flags.0 {
        0 => "P",
        1 => "E",
        2 => "PS",
        3 => "ES",
        4 => "C",
        _ => "?",
    }
}

fn watch(w: bool) -> &'static str {
    if w { " w" } else { "" }
}

/// One op as text: `create2 /a/_c_<uuid>-lock- [ES]`, `getData /a/x w`, ...
pub(crate) fn describe(op: &RecipeOp) -> String {
    match op.op.request() {
        Request::Create2(r) => format!("create2 {} [{}]", mask(&r.path), mode(r.flags)),
        Request::Create(r) => format!("create {} [{}]", mask(&r.path), mode(r.flags)),
        Request::CreateContainer(r) => format!("createContainer {} [{}]", mask(&r.path), mode(r.flags)),
        Request::Delete(r) if r.version == -1 => format!("delete {}", mask(&r.path)),
        Request::Delete(r) => format!("delete {} v{}", mask(&r.path), r.version),
        Request::Exists(r) => format!("exists {}{}", mask(&r.path), watch(r.watch)),
        Request::GetData(r) => format!("getData {}{}", mask(&r.path), watch(r.watch)),
        Request::GetChildren(r) => format!("getChildren {}{}", mask(&r.path), watch(r.watch)),
        Request::GetChildren2(r) => format!("getChildren2 {}{}", mask(&r.path), watch(r.watch)),
        Request::SetData(r) => {
            let data = r.data.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
            format!("setData {} '{}' v{}", mask(&r.path), data, r.version)
        }
        Request::CheckWatches(r) => format!("checkWatches {} type={}", mask(&r.path), r.watcher_type.0),
        other => format!("{other:?}"),
    }
}

/// The path an op names (unmasked).
pub(crate) fn path_of(op: &RecipeOp) -> String {
    op.op.request().path().expect("an op with a path").to_string()
}

/// How the fake server answers one op.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// create2 of a sequential node: the request path plus this sequence
    /// number; czxid = 1000 + seq.
    Seq(i32),
    /// create2 / createContainer of a fixed path: the request path; czxid = the given value.
    Made(i64),
    /// getChildren2: these names.
    Kids(Vec<String>),
    /// getData: these bytes.
    Data(&'static [u8]),
    /// exists / setData: a Stat.
    Stat,
    /// delete / checkWatches: no body.
    Empty,
    /// A server error code.
    Err(ErrorCode),
    /// The connection dropped with the op in flight.
    Loss,
}

/// `Answer::Kids` from names.
pub(crate) fn kids<S: AsRef<str>>(names: &[S]) -> Answer {
    Answer::Kids(names.iter().map(|s| s.as_ref().to_string()).collect())
}

/// A recipe under test, its unanswered ops, and everything it emitted.
pub(crate) struct Harness<R: Recipe> {
    pub(crate) recipe: R,
    /// Ops emitted and not yet answered, oldest first.
    pub(crate) pending: VecDeque<RecipeOp>,
    /// Every op ever emitted, as text, in order.
    pub(crate) log: Vec<String>,
    /// Every op ever emitted.
    pub(crate) sent_ops: Vec<RecipeOp>,
    seen: usize,
    events: Vec<RecipeEvent>,
    /// `Queued` events (also inside `Member`, `Ticket` and `Election`), kept apart so
    /// the transcripts of every other event read as before.
    pub(crate) queued: Vec<RecipeEvent>,
    /// The Pipelined plan's `createContainer <base>` sent ahead of a base's
    /// first create, as text: kept out of `log` and answered NodeExists at
    /// once (see [`Harness::pump`]), so the transcripts of what follows read
    /// as before. Tests of the preamble itself read this.
    pub(crate) ensured: Vec<String>,
    /// The latest time given to the recipe, for those answers.
    now: Instant,
}

/// The `(position, total)` of a `Queued` event, also inside `Member` or a
/// queue's ticket event.
pub(crate) fn queued_of(event: &RecipeEvent) -> Option<(usize, usize)> {
    match event {
        RecipeEvent::Queued { position, total } => Some((*position, *total)),
        RecipeEvent::Member { event: LockEvent::Queued { position, total }, .. }
        | RecipeEvent::Election(LockEvent::Queued { position, total }) => Some((*position, *total)),
        RecipeEvent::Lock(queued) => match &**queued {
            QueueEvent::Ticket { event: LockEvent::Queued { position, total }, .. } => Some((*position, *total)),
            _ => None,
        },
        RecipeEvent::Leases(leases) => match &**leases {
            LeaseQueueEvent::Ticket { event: SemaphoreEvent::Queued { position, total }, .. } => {
                Some((*position, *total))
            }
            _ => None,
        },
        _ => None,
    }
}

impl<R: Recipe> Harness<R>
where
    R::Event: Into<RecipeEvent>,
{
    pub(crate) fn new(recipe: R) -> Harness<R> {
        let mut h = Harness {
            recipe,
            pending: VecDeque::new(),
            log: Vec::new(),
            sent_ops: Vec::new(),
            seen: 0,
            events: vec![],
            queued: vec![],
            ensured: vec![],
            now: Instant::ZERO,
        };
        h.pump();
        h
    }

    /// Collects what the recipe emitted. A `createContainer <P>` sent
    /// before any other op on `P` or under it is the Pipelined plan's
    /// base preamble: it goes to `ensured` (a second one for the same base
    /// would land in `log`, and fail the test that did not expect it) and
    /// is answered NodeExists at once, as a server with the base does.
    fn pump(&mut self) {
        while let Some(op) = self.recipe.poll_op() {
            let text = describe(&op);
            if let Some(base) = text.strip_prefix("createContainer ").and_then(|t| t.strip_suffix(" [C]")) {
                let under = format!("{base}/");
                let touched = self
                    .log
                    .iter()
                    .chain(&self.ensured)
                    .any(|l| l.split(' ').nth(1).is_some_and(|p| p == base || p.starts_with(&under)));
                if !touched {
                    self.ensured.push(text);
                    self.recipe.handle_reply(self.now, op.id, Err(RequestError::Server(ErrorCode::NODE_EXISTS)));
                    continue;
                }
            }
            self.log.push(text);
            self.sent_ops.push(op.clone());
            self.pending.push_back(op);
        }
        while let Some(event) = self.recipe.poll_event().map(Into::into) {
            if queued_of(&event).is_some() {
                self.queued.push(event);
            } else {
                self.events.push(event);
            }
        }
    }

    /// Runs a command on the recipe, then collects what it emitted.
    pub(crate) fn run<T>(&mut self, f: impl FnOnce(&mut R) -> T) -> T {
        let out = f(&mut self.recipe);
        self.pump();
        out
    }

    /// Ops emitted since the last call, as text.
    pub(crate) fn sent(&mut self) -> Vec<String> {
        self.pump();
        let out = self.log[self.seen..].to_vec();
        self.seen = self.log.len();
        out
    }

    /// Events emitted since the last call.
    pub(crate) fn events(&mut self) -> Vec<RecipeEvent> {
        self.pump();
        std::mem::take(&mut self.events)
    }

    /// Answers the oldest pending op, whose text must start with `expect`.
    /// Returns the node path the answer names (created path, or the request
    /// path).
    pub(crate) fn answer(&mut self, now: Instant, expect: &str, answer: Answer) -> String {
        self.now = self.now.max(now);
        self.pump();
        let op = self.pending.pop_front().unwrap_or_else(|| panic!("nothing pending; expected {expect}"));
        let text = describe(&op);
        assert!(text.starts_with(expect), "oldest pending op is `{text}`, expected `{expect}…`");
        let path = path_of(&op);
        let (result, named) = match answer {
            Answer::Seq(seq) => {
                let created = format!("{path}{seq:010}");
                let stat = Stat { czxid: 1000 + i64::from(seq), ..Stat::default() };
                (Ok(Response::Create2 { path: created.clone(), stat }), created)
            }
            Answer::Made(czxid) => {
                let stat = Stat { czxid, ..Stat::default() };
                (Ok(Response::Create2 { path: path.clone(), stat }), path)
            }
            Answer::Kids(children) => (Ok(Response::Children2 { children, stat: Stat::default() }), path),
            Answer::Data(bytes) => {
                (Ok(Response::Data { data: Some(Bytes::from_static(bytes)), stat: Stat::default() }), path)
            }
            Answer::Stat => (Ok(Response::Stat(Stat::default())), path),
            Answer::Empty => (Ok(Response::Empty), path),
            Answer::Err(code) => (Err(RequestError::Server(code)), path),
            Answer::Loss => (Err(RequestError::ConnectionLoss), path),
        };
        self.recipe.handle_reply(now, op.id, result);
        self.pump();
        named
    }

    /// Answers the create `create` (its text, which names the node's path)
    /// while the node's parent is missing, as Curator's
    /// `creatingParentContainersIfNeeded` goes: the create fails with
    /// NO_NODE, every ancestor of the node, shortest first, is probed with
    /// `exists`, the first `present` of them are there and the rest are made
    /// as containers (czxid `czxid`, `czxid + 1`, …), and the retried create
    /// gets sequence 0. The answers are given at `at(t)`, `at(t + 1)`, …, one
    /// a millisecond. Returns the created node's path.
    pub(crate) fn create_making_parents(&mut self, t: u64, create: &str, present: usize, czxid: i64) -> String {
        let path = create.split(' ').nth(1).expect("`create2 PATH [MODE]`");
        let parent = &path[..path.rfind('/').expect("an absolute path")];
        let ancestors = parent.match_indices('/').skip(1).map(|(i, _)| &parent[..i]).chain([parent]);
        let mut t = t;
        let mut czxid = czxid;
        self.answer(at(t), create, Answer::Err(ErrorCode::NO_NODE));
        for (i, dir) in ancestors.enumerate() {
            t += 1;
            if i < present {
                self.answer(at(t), &format!("exists {dir}"), Answer::Stat);
            } else {
                self.answer(at(t), &format!("exists {dir}"), Answer::Err(ErrorCode::NO_NODE));
                t += 1;
                self.answer(at(t), &format!("createContainer {dir} [C]"), Answer::Made(czxid));
                czxid += 1;
            }
        }
        self.answer(at(t + 1), create, Answer::Seq(0))
    }

    /// Answers the watch on our own node `node` (ARCHITECTURE §6.1):
    /// `exists <node> w`, the oldest pending op, with a Stat. It goes out
    /// when an acquire starts to wait, after a grant that no child watch
    /// covers, or once the granting listing's child watch fired.
    pub(crate) fn answer_held_watch(&mut self, now: Instant, node: &str) {
        self.answer(now, &held_watch(node), Answer::Stat);
    }

    /// The child watch on `base` fires while `nodes` are held through it (a
    /// quiet acquire's listing, or a semaphore lease's): each holder now
    /// watches its own node, so exactly one `exists <node> w` each is sent,
    /// and nothing is reported. The ops already sent are drained first.
    pub(crate) fn children_changed(&mut self, now: Instant, base: &str, nodes: &[&str]) {
        self.sent();
        self.watch(now, EventType::NODE_CHILDREN_CHANGED, base);
        let watches: Vec<String> = nodes.iter().map(|n| held_watch(n)).collect();
        assert_eq!(self.sent(), watches, "one exists per node held through the child watch of {base}");
        assert!(self.events().is_empty());
    }

    /// Asserts that `op` (as text) was never sent.
    pub(crate) fn assert_never_sent(&self, op: &str) {
        assert!(!self.log.iter().any(|o| o == op), "`{op}` was sent: {:?}", self.log);
    }

    /// Delivers a watch notification.
    pub(crate) fn watch(&mut self, now: Instant, event_type: EventType, path: &str) {
        self.now = self.now.max(now);
        self.recipe.handle_watch(now, &WatchEvent { event_type, path: path.to_string() });
        self.pump();
    }

    /// Delivers a connection-state change.
    pub(crate) fn session(&mut self, now: Instant, state: ConnectionState) {
        self.now = self.now.max(now);
        self.recipe.handle_session(now, state);
        self.pump();
    }

    /// Fires the recipe's timer.
    pub(crate) fn timeout(&mut self, now: Instant) {
        self.now = self.now.max(now);
        self.recipe.handle_timeout(now);
        self.pump();
    }

    /// Asserts nothing is pending.
    pub(crate) fn assert_idle(&mut self) {
        self.pump();
        let left: Vec<String> = self.pending.iter().map(describe).collect();
        assert!(left.is_empty(), "unanswered ops: {left:?}");
    }
}

/// The watch on our own node `node`, as text: `exists <node> w`
/// (ARCHITECTURE §6.1; see [`Harness::answer_held_watch`] for when it is
/// sent).
pub(crate) fn held_watch(node: &str) -> String {
    format!("exists {} w", mask(node))
}

/// The listing of `base`, as text: `getChildren2 <base>`, with ` w` when it
/// carries a child watch. A lock's acquire in the Pipelined plan lists with
/// one when held nodes are watched and the lock's last acquire (if any) was
/// granted by its first listing; that listing's child watch is then the held
/// node's watch, and the grant sends nothing (ARCHITECTURE §6.1). Re-lists never
/// carry it; semaphore leases always list with one.
pub(crate) fn listing(base: &str, watch: bool) -> String {
    format!("getChildren2 {base}{}", self::watch(watch))
}

/// A `Member` event: `event` (one a lock reports) of member `index`.
pub(crate) fn member(index: usize, event: RecipeEvent) -> RecipeEvent {
    let event = match event {
        RecipeEvent::Acquired { node, token } => LockEvent::Acquired { node, token },
        RecipeEvent::Released => LockEvent::Released,
        RecipeEvent::TimedOut => LockEvent::TimedOut,
        RecipeEvent::Lost => LockEvent::Lost,
        RecipeEvent::Failed(e) => LockEvent::Failed(e),
        other => panic!("not a lock's event: {other:?}"),
    };
    RecipeEvent::Member { members: vec![index], event }
}

/// An `Acquired` event for `node` created with sequence `seq` by [`Answer::Seq`].
pub(crate) fn acquired(node: &str, czxid: i64) -> RecipeEvent {
    RecipeEvent::Acquired { node: node.to_string().into(), token: zoolock_core::FencingToken(czxid) }
}

/// A foreign protected node name (fixed UUID per `who`).
pub(crate) fn other(who: u8, kind: &str, seq: u32) -> String {
    format!("_c_{who:08x}-0000-4000-8000-00000000000{}-{kind}{seq:010}", who % 10)
}
