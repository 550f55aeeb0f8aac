//! Differential test: random op sequences run against the real ZooKeeper
//! from `ZOOLOCK_TEST_CONNECT` (started by `.ci/run`) and against the model
//! (a [`TestingServer`] in this process), with the same raw client code, in
//! lockstep. Every reply must match modulo zxids and times, and so must the
//! watch notifications each session receives. Skipped, with the reason
//! printed, when the variable is unset; failing when it is set and the
//! server is unreachable.
//!
//! What is compared, per request: the error code and the normalised body
//! (Stat without czxid/mzxid/pzxid/ctime/mtime, ephemeralOwner as which of
//! our sessions owns the node, children as sorted lists, multi results op by
//! op), plus the notifications the requesting session received up to that
//! reply, as a sorted list of (type, path). Each seed runs under its own
//! fresh root, created first on both sides, so sequential suffixes match
//! exactly. Notifications a change causes on another connection are queued
//! there before any later reply on that connection (the server is one
//! pipeline, and the test waits for each reply before sending the next
//! request), so collecting "everything up to the reply" is deterministic.
//!
//! The model is a ZooKeeper 3.8. Against 3.9 or later (asked with `srvr`)
//! the generator leaves out what 3.9 changed, where the two differ by
//! design: `addWatch` (3.9 keeps a standard and a persistent watch of one
//! session on one path side by side, ZOOKEEPER-4466; 3.8 lets one replace
//! the other), `checkWatches` and `removeWatches` (3.9 matches a watcher
//! type differently, ZOOKEEPER-4471/4472: it found no data watch where the
//! model, as 3.8, found one), nodes only their creator may read (3.9.2's
//! `exists` checks READ, ZOOKEEPER-2590), and `create2`
//! inside a multi (3.9 answers it with a Stat, ZOOKEEPER-4026; the multi
//! sends `create` instead). Everything else is compared.
//!
//! The real server reaps empty containers on a 60 s timer, the model at
//! once: the generator never empties a container that had children (no
//! ephemerals under containers, no delete of a container's last child, no
//! delete inside a multi under a container), so neither side ever reaps.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::time::Instant;

use bytes::Bytes;
use zoolock_core::wire::{
    Acl, AddWatchMode, AddWatchRequest, CheckVersionRequest, ConnectResponse, CreateMode, CreateRequest, DeleteRequest,
    ErrorCode, MultiResult, PathRequest, PathWatchRequest, Request, RequestFrame, Response, ServerMessage,
    SetDataRequest, Stat, WatcherType, WatchesRequest, Xid,
};
use zoolock_model::ModelConfig;
use zoolock_model::TestingServer;
use zoolock_testkit::raw::RawConn;

/// Seeds per run and ops per seed; `ZOOLOCK_DIFF_SEEDS` / `ZOOLOCK_DIFF_OPS`
/// override them (and `ZOOLOCK_DIFF_FIRST_SEED` the first seed). With
/// `ZOOLOCK_DIFF_TRACE` set, every step and the real server's answer are
/// printed.
const SEEDS: u64 = 60;
const OPS: usize = 150;
/// Sessions per seed.
const SESSIONS: usize = 3;

// ---- randomness --------------------------------------------------------------------------

/// Core's seeded PRNG with the draws op choice makes.
struct Rng(zoolock_core::Rng);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).unwrap()).unwrap()
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

// ---- a raw client ------------------------------------------------------------------------

/// A raw connection speaking frames through the codec only; it keeps the
/// notifications it reads until [`Conn::take_events`].
struct Conn {
    raw: RawConn,
    session_id: i64,
    events: Vec<String>,
}

impl Conn {
    fn connect(addr: &str) -> (Conn, ConnectResponse) {
        let (raw, resp, _) = RawConn::connect(addr, 0, Bytes::from_static(&[0; 16]));
        (Conn { raw, session_id: resp.session_id, events: Vec::new() }, resp)
    }

    fn read_frame(&mut self) -> Option<Bytes> {
        self.raw.read_frame()
    }

    /// Sends one request and returns its reply; notifications read on the
    /// way are kept.
    fn call(&mut self, request: Request) -> (ErrorCode, Option<Response>) {
        let xid = self.raw.next_xid();
        let op = request.op_code();
        self.raw.write(&RequestFrame::new(xid, request));
        loop {
            let frame = self.read_frame().unwrap_or_else(|| panic!("connection closed before the {op} reply"));
            match ServerMessage::decode(&frame, |x| (x == xid).then_some(op)).unwrap() {
                ServerMessage::Notification { event, .. } => {
                    self.events.push(format!("{} {}", event.event_type, event.path));
                }
                ServerMessage::Reply { header, response } => {
                    assert_eq!(header.xid, xid, "reply to another request");
                    return (header.err, response);
                }
            }
        }
    }

    /// addAuth (xid -4, answered out of band); the reply's error code.
    fn auth(&mut self, scheme: &str, credentials: &'static [u8]) -> ErrorCode {
        let packet = zoolock_core::wire::AuthPacket {
            auth_type: 0,
            scheme: scheme.to_owned(),
            auth: Some(Bytes::from_static(credentials)),
        };
        self.raw.write(&RequestFrame::new(Xid::AUTH, Request::Auth(packet)));
        loop {
            let frame = self.read_frame().unwrap_or_else(|| panic!("connection closed before the auth reply"));
            match ServerMessage::decode(&frame, |_| None).unwrap() {
                ServerMessage::Notification { event, .. } => {
                    self.events.push(format!("{} {}", event.event_type, event.path));
                }
                ServerMessage::Reply { header, .. } => return header.err,
            }
        }
    }

    fn take_events(&mut self) -> Vec<String> {
        let mut events = std::mem::take(&mut self.events);
        events.sort();
        events
    }
}

// ---- normalisation -----------------------------------------------------------------------

/// Session id → our name for it ("s1.0": session slot 1, first incarnation).
type Labels = HashMap<i64, String>;

fn norm_stat(s: &Stat, labels: &Labels) -> String {
    let owner = match s.ephemeral_owner {
        0 => "-".to_owned(),
        id => labels.get(&id).cloned().unwrap_or_else(|| format!("foreign:{id:#x}")),
    };
    format!(
        "{{v{} cv{} av{} len{} n{} owner {owner}}}",
        s.version, s.cversion, s.aversion, s.data_length, s.num_children
    )
}

fn norm_response(r: &Response, labels: &Labels) -> String {
    let sorted = |c: &[String]| {
        let mut c = c.to_vec();
        c.sort();
        c
    };
    match r {
        Response::Empty => "empty".into(),
        Response::Path(p) => format!("path {p}"),
        Response::Create2 { path, stat } => format!("create2 {path} {}", norm_stat(stat, labels)),
        Response::Stat(s) => format!("stat {}", norm_stat(s, labels)),
        Response::Data { data, stat } => format!(
            "data {:?} {}",
            data.as_deref().map(|d| String::from_utf8_lossy(d).into_owned()),
            norm_stat(stat, labels)
        ),
        Response::Children(c) => format!("children {:?}", sorted(c)),
        Response::Children2 { children, stat } => {
            format!("children2 {:?} {}", sorted(children), norm_stat(stat, labels))
        }
        Response::Multi(results) => {
            let parts: Vec<String> = results
                .iter()
                .map(|r| match r {
                    MultiResult::Ok { op, response } => format!("ok {op} {}", norm_response(response, labels)),
                    MultiResult::Error(e) => format!("err {e}"),
                })
                .collect();
            format!("multi [{}]", parts.join("; "))
        }
        other => format!("{other:?}"),
    }
}

/// One reply, normalised, with the notifications its session got up to it.
fn norm_reply(err: ErrorCode, response: Option<&Response>, events: &[String], labels: &Labels) -> String {
    let body = response.map_or_else(|| "-".to_owned(), |r| norm_response(r, labels));
    format!("{err} {body} events {events:?}")
}

/// `Ok` if the two sides agree, else the report of the divergence.
fn compare(seed: u64, index: usize, action: &str, real: &str, model: &str) -> Result<(), String> {
    if real == model {
        Ok(())
    } else {
        Err(format!("divergence: seed {seed}, op {index}: {action}\n  real:  {real}\n  model: {model}"))
    }
}

// ---- the two sides -----------------------------------------------------------------------

/// The sessions of one side (real server or model).
struct Side {
    addr: String,
    conns: Vec<Option<Conn>>,
    generation: Vec<usize>,
    labels: Labels,
}

impl Side {
    fn new(addr: &str) -> Side {
        Side { addr: addr.to_owned(), conns: Vec::new(), generation: Vec::new(), labels: Labels::new() }
    }

    /// Opens the session in slot `k`; returns its normalised handshake.
    fn open(&mut self, k: usize) -> String {
        let (conn, resp) = Conn::connect(&self.addr);
        while self.conns.len() <= k {
            self.conns.push(None);
            self.generation.push(0);
        }
        self.generation[k] += 1;
        self.labels.insert(conn.session_id, format!("s{k}.{}", self.generation[k]));
        self.conns[k] = Some(conn);
        format!("connected timeout {} session {}", resp.timeout_ms, resp.session_id != 0)
    }

    fn call(&mut self, k: usize, request: Request) -> (String, ErrorCode, Option<Response>) {
        let conn = self.conns[k].as_mut().expect("open session");
        let (err, response) = conn.call(request);
        let events = conn.take_events();
        (norm_reply(err, response.as_ref(), &events, &self.labels), err, response)
    }

    /// closeSession, then the server's close of the socket.
    fn close(&mut self, k: usize) -> String {
        let Some(mut conn) = self.conns[k].take() else { return "not open".into() };
        let (err, response) = conn.call(Request::CloseSession);
        let events = conn.take_events();
        let eof = conn.read_frame().is_none();
        format!("close {} eof {eof}", norm_reply(err, response.as_ref(), &events, &self.labels))
    }

    fn run(&mut self, action: &Action) -> (String, ErrorCode, Option<Response>) {
        match action {
            Action::Call(k, request) => self.call(*k, request.clone()),
            Action::Auth(k, credentials) => {
                let conn = self.conns[*k].as_mut().expect("open session");
                let err = conn.auth("digest", credentials.as_bytes());
                (format!("auth {err}"), err, None)
            }
            Action::Reopen(k) => {
                let closed = self.close(*k);
                let opened = self.open(*k);
                (format!("{closed}; {opened}"), ErrorCode::OK, None)
            }
        }
    }
}

/// One step of a sequence.
#[derive(Debug, Clone)]
enum Action {
    /// Session `k` sends a request.
    Call(usize, Request),
    /// Session `k` closes its session (its ephemerals go) and opens a new one.
    Reopen(usize),
    /// Session `k` adds a digest identity (`user:password`).
    Auth(usize, &'static str),
}

/// The digest identities sessions may take (cleanup takes them all).
const IDENTITIES: [&str; 2] = ["alice:pw", "bob:pw"];

// ---- the generator -----------------------------------------------------------------------

/// What the generator remembers of the tree (from the model's answers).
struct Shadow {
    root: String,
    containers: BTreeSet<String>,
    created: Vec<String>,
    /// The real server is 3.9 or later: leave out what 3.9 changed (see the
    /// module doc).
    since_3_9: bool,
}

fn parent_of(path: &str) -> &str {
    path.rfind('/').map_or("/", |i| if i == 0 { "/" } else { &path[..i] })
}

impl Shadow {
    fn node(&self, rng: &mut Rng) -> String {
        let r = &self.root;
        match rng.below(20) {
            0..=6 => format!("{r}/{}", rng.pick(&["a", "a", "b", "c"])),
            7..=13 => format!("{r}/{}/{}", rng.pick(&["a", "a", "b"]), rng.pick(&["x", "y"])),
            14 => format!("{r}/a/x/z"),
            15 => format!("{r}/d/x"),
            16 => r.clone(),
            _ if !self.created.is_empty() => rng.pick(&self.created).clone(),
            _ => format!("{r}/a"),
        }
    }

    fn seq_parent(&self, rng: &mut Rng) -> String {
        let r = &self.root;
        match rng.below(5) {
            0 => r.clone(),
            1 => format!("{r}/c/x"),
            2 => format!("{r}/d"),
            _ => format!("{r}/{}", rng.pick(&["a", "b"])),
        }
    }

    fn data(rng: &mut Rng) -> Option<Bytes> {
        match rng.below(5) {
            0 => None,
            1 => Some(Bytes::new()),
            2 => Some(Bytes::from_static(b"v")),
            _ => Some(Bytes::from_static(b"data-2")),
        }
    }

    fn version(rng: &mut Rng) -> i32 {
        *rng.pick(&[-1, -1, 0, 0, 1, 2, 5])
    }

    /// A create: plain/ephemeral/sequential (as create or create2), or a
    /// container; sometimes an invalid path.
    fn create(&self, rng: &mut Rng) -> Request {
        let container = rng.chance(15);
        let mut mode = if container {
            CreateMode::CONTAINER
        } else {
            *rng.pick(&[
                CreateMode::PERSISTENT,
                CreateMode::PERSISTENT,
                CreateMode::EPHEMERAL,
                CreateMode::PERSISTENT_SEQUENTIAL,
                CreateMode::EPHEMERAL_SEQUENTIAL,
            ])
        };
        if mode.is_ephemeral() && !mode.is_sequential() && rng.chance(50) {
            // Fewer ephemeral inner nodes, so that the tree grows deeper.
            mode = CreateMode::PERSISTENT;
        }
        let path = if mode.is_sequential() {
            format!("{}/s-", self.seq_parent(rng))
        } else if rng.chance(3) {
            format!("{}/", self.node(rng))
        } else {
            self.node(rng)
        };
        if mode.is_ephemeral() && self.containers.contains(parent_of(&path)) {
            // An ephemeral child would empty the container when its session
            // closes, and only the model would reap it at once.
            mode = if mode.is_sequential() { CreateMode::PERSISTENT_SEQUENTIAL } else { CreateMode::PERSISTENT };
        }
        // Mostly open; sometimes the creator's identities only (InvalidACL
        // without one), or read-only for everyone (NoAuth below it).
        let acl = match rng.below(20) {
            0 | 1 if !self.since_3_9 => Acl::creator_all(),
            2 if !container => Acl::read_unsafe(),
            _ => Acl::open_unsafe(),
        };
        let req = CreateRequest { path, data: Shadow::data(rng), acl, flags: mode };
        if container {
            Request::CreateContainer(req)
        } else if rng.chance(20) {
            Request::Create(req)
        } else {
            Request::Create2(req)
        }
    }

    fn multi_op(&self, rng: &mut Rng) -> Request {
        match rng.below(4) {
            0 => match self.create(rng) {
                Request::Create2(r) if self.since_3_9 => Request::Create(r),
                create => create,
            },
            1 => {
                let path = self.node(rng);
                if self.containers.contains(parent_of(&path)) {
                    Request::Check(CheckVersionRequest { path, version: -1 })
                } else {
                    Request::Delete(DeleteRequest { path, version: Shadow::version(rng) })
                }
            }
            2 => Request::SetData(SetDataRequest {
                path: self.node(rng),
                data: Shadow::data(rng),
                version: Shadow::version(rng),
            }),
            _ => Request::Check(CheckVersionRequest { path: self.node(rng), version: Shadow::version(rng) }),
        }
    }

    /// The next action. `children` asks the model for a node's children.
    fn next(&self, rng: &mut Rng, children: &mut dyn FnMut(&str) -> Option<Vec<String>>) -> Action {
        let k = rng.below(SESSIONS);
        let watch = rng.chance(50);
        let request = match rng.below(100) {
            0..=21 => self.create(rng),
            22..=33 => {
                let path = self.node(rng);
                let mut version = Shadow::version(rng);
                let parent = parent_of(&path);
                if self.containers.contains(parent) {
                    let name = &path[parent.len() + 1..];
                    if children(parent).is_some_and(|c| c.len() == 1 && c[0] == name) {
                        // Deleting the last child would make the container
                        // a reaping candidate: keep it, with a wrong version.
                        version = 99;
                    }
                }
                Request::Delete(DeleteRequest { path, version })
            }
            34..=45 => Request::SetData(SetDataRequest {
                path: self.node(rng),
                data: Shadow::data(rng),
                version: Shadow::version(rng),
            }),
            46..=55 => Request::GetData(PathWatchRequest { path: self.node(rng), watch }),
            56..=63 => Request::Exists(PathWatchRequest { path: self.node(rng), watch }),
            64..=69 => Request::GetChildren2(PathWatchRequest { path: self.node(rng), watch }),
            70..=72 => Request::GetChildren(PathWatchRequest { path: self.node(rng), watch }),
            73..=86 => Request::Multi((0..1 + rng.below(4)).map(|_| self.multi_op(rng)).collect()),
            87..=90 => Request::Sync(PathRequest { path: self.node(rng) }),
            91..=93 => return Action::Reopen(k),
            94 => return Action::Auth(k, IDENTITIES[rng.below(IDENTITIES.len())]),
            95 if !self.since_3_9 => Request::AddWatch(AddWatchRequest {
                path: self.node(rng),
                mode: *rng.pick(&[AddWatchMode::PERSISTENT, AddWatchMode::PERSISTENT_RECURSIVE]),
            }),
            96 if !self.since_3_9 => {
                let w = WatchesRequest {
                    path: self.node(rng),
                    watcher_type: *rng.pick(&[WatcherType::CHILDREN, WatcherType::DATA, WatcherType::ANY]),
                };
                if rng.chance(50) { Request::CheckWatches(w) } else { Request::RemoveWatches(w) }
            }
            _ => Request::Exists(PathWatchRequest { path: self.node(rng), watch: true }),
        };
        Action::Call(k, request)
    }

    /// Learns from a successful request (answered identically by both sides).
    fn learn(&mut self, request: &Request, err: ErrorCode, response: Option<&Response>) {
        if err != ErrorCode::OK {
            return;
        }
        match (request, response) {
            (Request::Multi(ops), Some(Response::Multi(results))) => {
                for (op, result) in ops.iter().zip(results) {
                    if let MultiResult::Ok { response, .. } = result {
                        self.learn(op, ErrorCode::OK, Some(response));
                    }
                }
            }
            (Request::CreateContainer(_), Some(Response::Create2 { path, .. })) => {
                self.containers.insert(path.clone());
                self.created.push(path.clone());
            }
            (
                Request::Create(req) | Request::Create2(req),
                Some(Response::Path(path) | Response::Create2 { path, .. }),
            ) if req.flags.is_sequential() => {
                self.created.push(path.clone());
            }
            (Request::Delete(req), _) => {
                self.containers.remove(&req.path);
            }
            _ => {}
        }
    }
}

// ---- running -----------------------------------------------------------------------------

/// The server's (major, minor) version from its `srvr` answer; `None` when
/// four-letter words are off or the answer is not understood.
fn server_version(addr: &str) -> Option<(u32, u32)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(3))).ok()?;
    stream.write_all(b"srvr").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let version = answer.lines().find_map(|l| l.strip_prefix("Zookeeper version: "))?;
    let mut parts = version.split(|c: char| !c.is_ascii_digit()).map(str::parse::<u32>);
    Some((parts.next()?.ok()?, parts.next()?.ok()?))
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Deletes `path` and everything below it on the real server (best effort).
fn remove_tree(conn: &mut Conn, path: &str) {
    if let (ErrorCode::OK, Some(Response::Children2 { children, .. })) =
        conn.call(Request::GetChildren2(PathWatchRequest { path: path.to_owned(), watch: false }))
    {
        for child in children {
            remove_tree(conn, &format!("{path}/{child}"));
        }
    }
    let _ = conn.call(Request::Delete(DeleteRequest { path: path.to_owned(), version: -1 }));
}

/// Runs one seed on both sides; `Err` describes the first divergence.
fn run_seed(
    seed: u64,
    ops: usize,
    real_addr: &str,
    model: &TestingServer,
    rt: &tokio::runtime::Runtime,
    tally: &mut BTreeMap<String, usize>,
) -> Result<(), String> {
    let root = format!("/zoolock-diff-{}-{seed}", std::process::id());
    let mut real = Side::new(real_addr);
    let mut sim = Side::new(model.connect_string());
    for k in 0..SESSIONS {
        compare(seed, 0, &format!("open s{k}"), &real.open(k), &sim.open(k))?;
    }
    let since_3_9 = server_version(real_addr).is_some_and(|v| v >= (3, 9));
    let mut shadow = Shadow { root: root.clone(), containers: BTreeSet::new(), created: Vec::new(), since_3_9 };
    let mut rng = Rng(zoolock_core::Rng::with_seed(seed));

    // (Run from the end: the root first, then s0 and s1 take identities; s2
    // stays anonymous.)
    let mut actions = vec![
        Action::Auth(1, IDENTITIES[1]),
        Action::Auth(0, IDENTITIES[0]),
        Action::Call(
            0,
            Request::Create2(CreateRequest {
                path: root.clone(),
                data: None,
                acl: Acl::open_unsafe(),
                flags: CreateMode::PERSISTENT,
            }),
        ),
    ];
    let mut index = 0;
    let result = loop {
        let action = if let Some(a) = actions.pop() {
            a
        } else if index <= ops {
            let mut children = |p: &str| {
                let p = p.to_owned();
                rt.block_on(model.with_model(move |m, _| m.children(&p))).flatten()
            };
            shadow.next(&mut rng, &mut children)
        } else {
            break Ok(());
        };
        let (real_out, _, _) = real.run(&action);
        let (model_out, err, response) = sim.run(&action);
        let described = match &action {
            Action::Call(k, request) => format!("s{k} {request:?}"),
            Action::Reopen(k) => format!("s{k} reopen"),
            Action::Auth(k, who) => format!("s{k} auth {who}"),
        };
        if std::env::var_os("ZOOLOCK_DIFF_TRACE").is_some() {
            eprintln!("{seed}/{index}: {described}\n    {real_out}");
        }
        if let Err(e) = compare(seed, index, &described, &real_out, &model_out) {
            break Err(e);
        }
        if let Action::Call(_, request) = &action {
            shadow.learn(request, err, response.as_ref());
            let outcome = match &response {
                Some(Response::Multi(results)) => match MultiResult::first_failure(results) {
                    Some((_, e)) => format!("{e}"),
                    None => "OK".into(),
                },
                _ => format!("{err}"),
            };
            *tally.entry(format!("{} {outcome}", request.op_code())).or_default() += 1;
        } else {
            *tally.entry(format!("{action:?}").split('(').next().unwrap_or_default().to_lowercase()).or_default() += 1;
        }
        *tally.entry("notifications".into()).or_default() +=
            model_out.rsplit(" events ").next().map_or(0, |e| e.matches(" /").count());
        index += 1;
    };

    // Flush every session's notifications, then close them all.
    let result = result.and_then(|()| {
        for k in 0..SESSIONS {
            let flush = Request::Exists(PathWatchRequest { path: root.clone(), watch: false });
            let (r, _, _) = real.call(k, flush.clone());
            let (m, _, _) = sim.call(k, flush);
            compare(seed, index, &format!("s{k} final exists"), &r, &m)?;
        }
        for k in 0..SESSIONS {
            compare(seed, index, &format!("s{k} close"), &real.close(k), &sim.close(k))?;
        }
        Ok(())
    });
    let (mut cleanup, _) = Conn::connect(real_addr);
    for who in IDENTITIES {
        cleanup.auth("digest", who.as_bytes());
    }
    remove_tree(&mut cleanup, &root);
    let _ = cleanup.call(Request::CloseSession);
    result
}

#[test]
fn model_matches_the_real_server_on_random_sequences() {
    let Some(addr) = zoolock_testkit::real_server("model_matches_the_real_server_on_random_sequences") else { return };
    let seeds = env_or("ZOOLOCK_DIFF_SEEDS", SEEDS);
    let first = env_or("ZOOLOCK_DIFF_FIRST_SEED", 1u64);
    let ops = env_or("ZOOLOCK_DIFF_OPS", OPS);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let model = rt.block_on(TestingServer::start_with(ModelConfig::default())).unwrap();
    let started = Instant::now();
    let mut failures = String::new();
    let mut tally = BTreeMap::new();
    for seed in first..first + seeds {
        if let Err(e) = run_seed(seed, ops, &addr, &model, &rt, &mut tally) {
            let _ = writeln!(failures, "{e}");
            break;
        }
    }
    eprintln!("differential: {seeds} seeds x {ops} ops in {:?}; outcomes: {tally:?}", started.elapsed());
    rt.block_on(model.stop());
    assert!(failures.is_empty(), "{failures}");
}

// ---- the comparator itself ---------------------------------------------------------------

fn stat(version: i32, owner: i64, zxid: i64) -> Stat {
    Stat {
        czxid: zxid,
        mzxid: zxid,
        ctime: zxid * 1000,
        mtime: zxid * 1000,
        version,
        cversion: 0,
        aversion: 0,
        ephemeral_owner: owner,
        data_length: 1,
        num_children: 0,
        pzxid: zxid,
    }
}

#[test]
fn comparator_ignores_zxids_times_and_child_order_only() {
    let real_labels: Labels = [(0x1111, "s0.1".to_owned())].into();
    let model_labels: Labels = [(0x0100_0000_0000_0000, "s0.1".to_owned())].into();
    let real = |r: &Response| norm_reply(ErrorCode::OK, Some(r), &[], &real_labels);
    let model = |r: &Response| norm_reply(ErrorCode::OK, Some(r), &[], &model_labels);

    // Zxids, times and the owner's actual id do not matter.
    let a = Response::Stat(stat(1, 0x1111, 7));
    let b = Response::Stat(stat(1, 0x0100_0000_0000_0000, 99));
    assert!(compare(1, 0, "x", &real(&a), &model(&b)).is_ok());
    // Child order does not matter.
    let a = Response::Children(vec!["x".into(), "y".into()]);
    let b = Response::Children(vec!["y".into(), "x".into()]);
    assert!(compare(1, 0, "x", &real(&a), &model(&b)).is_ok());

    // A version, an owner, a child, an error code, an event: all matter.
    let a = Response::Stat(stat(1, 0, 7));
    let b = Response::Stat(stat(2, 0, 7));
    let err = compare(3, 4, "setData", &real(&a), &model(&b)).unwrap_err();
    assert!(err.contains("seed 3, op 4") && err.contains("v1") && err.contains("v2"), "{err}");
    let b = Response::Stat(stat(1, 0x0100_0000_0000_0000, 7));
    assert!(compare(1, 0, "x", &real(&a), &model(&b)).is_err());
    let a = Response::Children(vec!["x".into()]);
    let b = Response::Children(vec!["x".into(), "y".into()]);
    assert!(compare(1, 0, "x", &real(&a), &model(&b)).is_err());
    let a = norm_reply(ErrorCode::NO_NODE, None, &[], &real_labels);
    let b = norm_reply(ErrorCode::NODE_EXISTS, None, &[], &model_labels);
    assert!(compare(1, 0, "x", &a, &b).is_err());
    let a = norm_reply(ErrorCode::OK, None, &["NodeDeleted /r/a".into()], &real_labels);
    let b = norm_reply(ErrorCode::OK, None, &[], &model_labels);
    assert!(compare(1, 0, "x", &a, &b).is_err());
    // Multi results compare op by op.
    let a = Response::Multi(vec![MultiResult::Error(ErrorCode::OK), MultiResult::Error(ErrorCode::BAD_VERSION)]);
    let b = Response::Multi(vec![MultiResult::Error(ErrorCode::OK), MultiResult::Error(ErrorCode::NO_NODE)]);
    assert!(compare(1, 0, "x", &real(&a), &model(&b)).is_err());
}
