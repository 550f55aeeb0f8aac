//! CPU cost of the sans-IO core with no I/O at all.
//!
//! - `mutex_cycle/*`: one uncontended acquire + release of a [`Mutex`] through
//!   [`Client`], per op plan. Every request goes through the session's encoder
//!   and every reply through its frame decoder and reply decoder; a minimal
//!   fake server in this file reads the xid, opcode and path of each request
//!   frame and writes the reply frames a real server would send.
//! - `reply_decode/*`: `ServerMessage::decode` of each reply a lock cycle
//!   sees, as the session calls it once a frame is split off.

use std::hint::black_box;
use std::time::Duration;

use bytes::{Buf, BufMut, BytesMut};
use criterion::{Criterion, Throughput, criterion_main};
use zoolock_core::wire::{
    Bytes, ConnectResponse, Encode, ErrorCode, EventType, KeeperState, OpCode, PASSWORD_LEN, ReplyHeader, Response,
    ServerMessage, Stat, WatcherEvent, Xid, encode_frame,
};
use zoolock_core::{
    Client, ClientEvent, ConnectString, Handle, Instant, IoCommand, RecipeEvent, SessionConfig, ZkPath,
    recipes::{LockConfig, Mutex, OpPlan},
};

/// The lock path.
const BASE: &str = "/bench/lock";
/// The session id the fake server hands out (stamped on our ephemerals).
const SESSION: i64 = 0x5eed;

/// Appends a jute string (i32 length, then the bytes).
fn put_str(buf: &mut BytesMut, s: &[u8]) {
    buf.put_i32(i32::try_from(s.len()).expect("short string"));
    buf.put_slice(s);
}

/// The smallest server that answers a lock cycle: create2, getChildren2,
/// getChildren, exists (the held node's watch) and delete, with the
/// notifications a delete sends first to the watches armed (the node's,
/// and the lock path's child watch of a quiet acquire's listing). It keeps no
/// tree, only our last node's name, which is all an uncontended listing
/// holds, and whether it is watched.
struct FakeServer {
    zxid: i64,
    seq: u32,
    /// Name (last path segment) of the node made by the last create2.
    node: Vec<u8>,
    /// An exists with a watch was answered for `node`.
    watched: bool,
    /// A listing with a watch armed a child watch on the lock path.
    child_watched: bool,
    /// Replies are built here and handed over in one copy, as the driver
    /// hands the client what one socket read returned (scratch buffer,
    /// then `extend_from_slice`), so the bench times the client's buffer
    /// handling, not a reply written into it field by field.
    out: BytesMut,
}

impl FakeServer {
    /// Answers every complete request frame in `tx` (as the driver writes
    /// it out, without splitting it), appending reply frames to `rx`.
    /// Panics on a request the lock cycle never sends.
    fn answer(&mut self, tx: &[u8], rx: &mut BytesMut) {
        let mut tx = tx;
        self.out.clear();
        let out = &mut self.out;
        while tx.len() >= 4 {
            let len = usize::try_from(tx.get_u32()).expect("u32 fits usize");
            let mut frame = &tx[..len];
            tx.advance(len);
            let xid = frame.get_i32();
            let op = OpCode(frame.get_i32());
            let path_len = usize::try_from(frame.get_i32()).expect("a path");
            let path = &frame[..path_len];
            if op == OpCode::DELETE {
                // ZooKeeper tells the watchers before it answers the delete.
                let path = String::from_utf8_lossy(path).into_owned();
                if std::mem::take(&mut self.watched) {
                    notify(out, EventType::NODE_DELETED, path.clone());
                }
                if std::mem::take(&mut self.child_watched) {
                    let parent = path.rsplit_once('/').map_or(String::new(), |(p, _)| p.to_owned());
                    notify(out, EventType::NODE_CHILDREN_CHANGED, parent);
                }
            }
            let start = out.len();
            out.put_u32(0); // length, patched below
            self.zxid += 1;
            ReplyHeader { xid: Xid(xid), zxid: self.zxid, err: ErrorCode::OK }.encode(out);
            match op {
                OpCode::CREATE2 => {
                    // The sequential suffix: 10 zero-padded digits.
                    self.seq += 1;
                    let mut digits = [b'0'; 10];
                    let mut n = self.seq;
                    for d in digits.iter_mut().rev() {
                        *d = b'0' + (n % 10) as u8;
                        n /= 10;
                    }
                    let name = path.rsplit(|b| *b == b'/').next().expect("a name");
                    self.node.clear();
                    self.node.extend_from_slice(name);
                    self.node.extend_from_slice(&digits);
                    out.put_i32(i32::try_from(path.len() + digits.len()).expect("short path"));
                    out.put_slice(path);
                    out.put_slice(&digits);
                    let stat = Stat { czxid: self.zxid, mzxid: self.zxid, ephemeral_owner: SESSION, ..Stat::default() };
                    stat.encode(out);
                }
                OpCode::GET_CHILDREN2 | OpCode::GET_CHILDREN => {
                    self.child_watched |= frame[path_len] != 0;
                    out.put_i32(1);
                    put_str(out, &self.node);
                    if op == OpCode::GET_CHILDREN2 {
                        Stat { num_children: 1, pzxid: self.zxid, ..Stat::default() }.encode(out);
                    }
                }
                OpCode::EXISTS => {
                    self.watched = frame[path_len] != 0;
                    Stat { czxid: self.zxid, ephemeral_owner: SESSION, ..Stat::default() }.encode(out);
                }
                OpCode::DELETE => {}
                other => panic!("the lock cycle never sends {other:?}"),
            }
            let n = u32::try_from(out.len() - start - 4).expect("small frame");
            out[start..start + 4].copy_from_slice(&n.to_be_bytes());
        }
        assert!(tx.is_empty(), "the session transmitted a partial frame");
        rx.extend_from_slice(out);
    }
}

/// Appends a watch notification frame (xid -1) of `event_type` on `path`.
fn notify(out: &mut BytesMut, event_type: EventType, path: String) {
    let notification = ServerMessage::Notification {
        header: ReplyHeader { xid: Xid::NOTIFICATION, zxid: -1, err: ErrorCode::OK },
        event: WatcherEvent { event_type, state: KeeperState::SYNC_CONNECTED, path },
    };
    encode_frame(&notification, usize::MAX, out).expect("a small frame");
}

/// A connected client with one mutex, its fake server and reused buffers.
struct Bench {
    client: Client,
    mutex: Handle<Mutex>,
    server: FakeServer,
    now: Instant,
    tx: BytesMut,
    rx: BytesMut,
}

impl Bench {
    /// Dials, answers the handshake by hand, and registers the mutex.
    fn new(plan: OpPlan) -> Bench {
        let config = SessionConfig::new(ConnectString::parse("127.0.0.1:2181").expect("valid"), 1)
            .with_session_timeout(Duration::from_secs(30))
            .with_reconnect_jitter(Duration::ZERO);
        let now = Instant::from_millis(1);
        let mut client = Client::new(config, now);
        client.handle_timeout(now);
        assert!(matches!(client.poll_io(), Some(IoCommand::Connect { .. })));
        client.handle_connected(now);
        let mut tx = BytesMut::with_capacity(4096);
        assert!(client.poll_transmit(&mut tx) > 0, "a ConnectRequest");
        tx.clear();
        let mut rx = BytesMut::with_capacity(4096);
        let response = ConnectResponse {
            protocol_version: 0,
            timeout_ms: 30_000,
            session_id: SESSION,
            passwd: Some(Bytes::from_static(&[7; PASSWORD_LEN])),
            read_only: Some(false),
        };
        encode_frame(&response, usize::MAX, &mut rx).expect("fits");
        client.handle_bytes(now, &mut rx).expect("handshake");
        assert!(matches!(client.poll_event(), Some(ClientEvent::State(_))));
        let config = LockConfig::new(7).with_plan(plan).with_data(Bytes::from_static(b"127.0.0.1"));
        let mutex = client.add(now, Mutex::new(ZkPath::new(BASE).expect("valid"), config));
        let server = FakeServer {
            zxid: 100,
            seq: 0,
            node: Vec::with_capacity(64),
            watched: false,
            child_watched: false,
            out: BytesMut::with_capacity(4096),
        };
        Bench { client, mutex, server, now, tx, rx }
    }

    /// Round trips until the client has nothing left to send, following the
    /// client's drain order (transmit, then events are read by the caller).
    fn settle(&mut self) {
        loop {
            self.tx.clear();
            if self.client.poll_transmit(&mut self.tx) == 0 {
                return;
            }
            self.server.answer(&self.tx, &mut self.rx);
            self.client.handle_bytes(self.now, &mut self.rx).expect("valid replies");
            black_box(self.client.poll_timeout());
        }
    }

    /// The next recipe event, if any.
    fn event(&mut self) -> Option<RecipeEvent> {
        match self.client.poll_event()? {
            ClientEvent::Recipe { event, .. } => Some(event),
            other => panic!("unexpected {other:?}"),
        }
    }

    /// One acquire + release; returns the fencing token.
    fn cycle(&mut self) -> i64 {
        let now = self.now;
        self.client.with(now, self.mutex, |m, now| m.acquire(now, None)).expect("a mutex").expect("idle");
        self.settle();
        let token = match self.event() {
            Some(RecipeEvent::Acquired { token, .. }) => token.0,
            other => panic!("expected Acquired, got {other:?}"),
        };
        self.client.with(now, self.mutex, |m, now| m.release(now)).expect("a mutex").expect("held");
        self.settle();
        assert_eq!(self.event(), Some(RecipeEvent::Released));
        token
    }
}

fn mutex_cycle(c: &mut Criterion) {
    let mut group = c.benchmark_group("mutex_cycle");
    group.throughput(Throughput::Elements(1));
    for (name, plan) in [("pipelined", OpPlan::Pipelined), ("curator", OpPlan::Curator)] {
        let mut bench = Bench::new(plan);
        // Sanity: tokens grow, nothing is left in flight or owed.
        let first = bench.cycle();
        assert!(bench.cycle() > first);
        assert_eq!(bench.client.session().in_flight(), 0);
        assert!(bench.client.recipe(bench.mutex.id()).is_some_and(|m| m.is_quiescent()));
        assert!(bench.client.poll_event().is_none());
        group.bench_function(name, |b| b.iter(|| black_box(bench.cycle())));
    }
    group.finish();
}

/// A Curator lock node name with sequence number `i`.
fn lock_node(i: usize) -> String {
    format!("_c_{:08x}-1f2e-4d3c-8b4a-59687766554{}-lock-{:010}", i * 7919, i % 10, 1000 + i)
}

/// A reply payload (no length prefix) with xid 9.
fn reply(response: Option<Response>) -> Bytes {
    let header = ReplyHeader { xid: Xid(9), zxid: 0x1_0000_0042, err: ErrorCode::OK };
    ServerMessage::Reply { header, response }.to_bytes()
}

fn children2(n: usize) -> Bytes {
    let children: Vec<String> = (0..n).map(lock_node).collect();
    let stat = Stat { num_children: i32::try_from(n).expect("small"), ..Stat::default() };
    reply(Some(Response::Children2 { children, stat }))
}

fn reply_decode(c: &mut Criterion) {
    let stat = Stat { czxid: 0x1_0000_0042, mzxid: 0x1_0000_0042, ephemeral_owner: SESSION, ..Stat::default() };
    let notification = ServerMessage::Notification {
        header: ReplyHeader { xid: Xid::NOTIFICATION, zxid: -1, err: ErrorCode::OK },
        event: WatcherEvent {
            event_type: EventType::NODE_DELETED,
            state: KeeperState::SYNC_CONNECTED,
            path: format!("{BASE}/{}", lock_node(1)),
        },
    }
    .to_bytes();
    let cases: [(&str, OpCode, Bytes); 6] = [
        ("create2", OpCode::CREATE2, reply(Some(Response::Create2 { path: format!("{BASE}/{}", lock_node(0)), stat }))),
        ("get_children2_1", OpCode::GET_CHILDREN2, children2(1)),
        ("get_children2_100", OpCode::GET_CHILDREN2, children2(100)),
        ("get_children_1", OpCode::GET_CHILDREN, reply(Some(Response::Children(vec![lock_node(0)])))),
        ("delete", OpCode::DELETE, reply(Some(Response::Empty))),
        ("node_deleted_watch", OpCode::GET_DATA, notification),
    ];
    let mut group = c.benchmark_group("reply_decode");
    for (name, op, payload) in &cases {
        let lookup = |xid: Xid| (xid == Xid(9)).then_some(*op);
        let decoded = ServerMessage::decode(payload, lookup).expect("valid");
        assert_eq!(&decoded.to_bytes(), payload, "{name} round-trips");
        group.throughput(Throughput::Bytes(payload.len() as u64));
        group.bench_function(*name, |b| b.iter(|| ServerMessage::decode(black_box(payload), lookup)));
    }
    group.finish();
}

/// Every benchmark (what `criterion_group!` would generate, minus the
/// undocumented `pub fn` the workspace lints refuse).
fn benches() {
    let mut criterion = Criterion::default().configure_from_args();
    mutex_cycle(&mut criterion);
    reply_decode(&mut criterion);
}

criterion_main!(benches);
