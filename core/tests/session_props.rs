//! Property test of the [`Session`] machine: random interleavings of submits,
//! server bytes, timeouts, refused dials, dropped connections, garbage and
//! close never panic and never lose a request.
//!
//! The driver here does exactly what the session asks (dial, close) and plays a
//! correct ZooKeeper server: it decodes every frame the session transmits
//! (checking the handshake, xids and that nothing is sent before the
//! ConnectResponse) and answers in FIFO order with random result codes,
//! occasional notifications, expiries, auth failures and Unimplemented.
//!
//! Invariants checked after every input:
//! - every [`RequestId`] returned by `submit` gets exactly one `Reply` event,
//!   and no `Reply` names an id that is not outstanding;
//! - after `handle_timeout(now)` the next deadline is strictly after `now`, or
//!   absent exactly when the session has ended;
//! - commands make sense: no `Connect` while a socket is open, no `Close`
//!   without one, no bytes without a connection, a `Close` after every
//!   `handle_bytes` error;
//! - at the end, after `close` and enough time, every request was answered.

mod support;

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use proptest::prelude::*;
use support::{PASSWD, check_deadline, connect_response, expired_response, notification, reply, split_frames, stat};
use zoolock_core::wire::{
    Acl, Bytes, BytesMut, ConnectRequest, CreateMode, ErrorCode, EventType, OpCode, Request, RequestFrame, Response,
    Xid,
};
use zoolock_core::{
    ApiMisuse, ConnectString, ConnectionState, Instant, IoCommand, Op, RequestId, Session, SessionConfig, SessionEvent,
    SessionStatus, WatcherId, ZkPath,
};

const PATHS: [&str; 4] = ["/a", "/b", "/a/c", "/lock"];

#[derive(Debug, Clone)]
struct Config {
    hosts: usize,
    chroot: bool,
    timeout_ms: u64,
    jitter_ms: u64,
    small_frames: bool,
    read_only: bool,
    seed: u64,
}

#[derive(Debug, Clone)]
enum Action {
    Submit { kind: u8, path: usize, watch: bool, watcher: Option<u64>, size: usize },
    Advance { ms: u64 },
    AdvanceToTimer,
    Dial { accept: bool },
    Serve(Serve),
    Drop,
    Garbage(Vec<u8>),
    AddAuth { bad: bool },
    RemoveWatcher(u64),
    Close,
}

#[derive(Debug, Clone)]
struct Serve {
    /// How many ordinary requests to answer.
    n: usize,
    /// Seeds the result codes.
    codes: u64,
    /// A notification before the replies: (path index, event type).
    notify: Option<(usize, i32)>,
    /// Negotiated timeout for a pending handshake.
    timeout_ms: i32,
    /// Answer a pending handshake as expired.
    expire: bool,
    /// Read-only server.
    read_only: bool,
    /// Answer the newest request first with Unimplemented, then close.
    overtake: bool,
    /// Chunk size for feeding the bytes (0 = all at once).
    chunk: usize,
    /// Whether result codes may include SessionExpired and Unimplemented.
    fatal: bool,
}

fn config_strategy() -> impl Strategy<Value = Config> {
    (1..=3usize, any::<bool>(), 1_000..30_000u64, prop_oneof![Just(0u64), 0..2_000u64], any::<bool>(), any::<bool>())
        .prop_flat_map(|(hosts, chroot, timeout_ms, jitter_ms, small, read_only)| {
            any::<u64>().prop_map(move |seed| Config {
                hosts,
                chroot,
                timeout_ms,
                jitter_ms,
                small_frames: small && seed % 4 == 0,
                read_only,
                seed,
            })
        })
}

fn serve_strategy() -> impl Strategy<Value = Serve> {
    (
        0..6usize,
        any::<u64>(),
        proptest::option::weighted(0.5, (0..PATHS.len(), 1..=4i32)),
        prop_oneof![100..2_000i32, 2_000..40_000i32],
        proptest::bool::weighted(0.03),
        any::<bool>(),
        proptest::bool::weighted(0.03),
        prop_oneof![Just(0usize), 1..40usize],
        proptest::bool::weighted(0.3),
    )
        .prop_map(|(n, codes, notify, timeout_ms, expire, read_only, overtake, chunk, fatal)| Serve {
            n,
            codes,
            notify,
            timeout_ms,
            expire,
            read_only,
            overtake,
            chunk,
            fatal,
        })
}

fn action_strategy() -> impl Strategy<Value = Action> {
    // Weighted so that most cases get deep into a session (connected,
    // answered, reconnected) before something ends it; Close is rare.
    prop_oneof![
        30 => (0..5u8, 0..PATHS.len(), any::<bool>(), proptest::option::weighted(0.95, 0..4u64), 0..400usize)
            .prop_map(|(kind, path, watch, watcher, size)| Action::Submit { kind, path, watch, watcher, size }),
        9 => prop_oneof![3 => 0..50u64, 2 => 0..3_000u64, 1 => 0..40_000u64].prop_map(|ms| Action::Advance { ms }),
        5 => Just(Action::AdvanceToTimer),
        18 => proptest::bool::weighted(0.85).prop_map(|accept| Action::Dial { accept }),
        30 => serve_strategy().prop_map(Action::Serve),
        2 => Just(Action::Drop),
        2 => proptest::collection::vec(any::<u8>(), 1..24).prop_map(Action::Garbage),
        2 => proptest::bool::weighted(0.1).prop_map(|bad| Action::AddAuth { bad }),
        3 => (0..4u64).prop_map(Action::RemoveWatcher),
        1 => Just(Action::Close),
    ]
}

/// One TCP connection as the fake server and the driver see it.
#[derive(Debug, Default)]
struct Conn {
    /// Bytes the session transmitted, not yet read by the server.
    c2s: BytesMut,
    /// The driver's receive buffer.
    s2c: BytesMut,
    /// The ConnectRequest, once read.
    hello: Option<ConnectRequest>,
    /// The ConnectResponse has been sent.
    answered: bool,
    /// Read requests not yet answered (auth and pings included), in order.
    inbox: VecDeque<RequestFrame>,
    /// The last ordinary xid read on this connection.
    last_xid: Option<i32>,
}

struct World {
    s: Session,
    now: Instant,
    chroot: Option<&'static str>,
    read_only_ok: bool,
    /// A Connect command not yet resolved by `Dial`.
    dialing: bool,
    conn: Option<Conn>,
    /// The server's view of the session.
    server_session: i64,
    server_expired: bool,
    zxid: i64,
    outstanding: BTreeSet<RequestId>,
    terminal: Option<ConnectionState>,
    ever_connected: bool,
    /// Garbage was fed: the session may believe things the server never said
    /// (a garbage prefix can merge with real bytes into a plausible frame), so
    /// the server stops asserting what the session should know.
    tainted: bool,
}

impl World {
    fn new(cfg: &Config) -> World {
        let hosts: Vec<String> = (0..cfg.hosts).map(|i| format!("h{i}:{}", 2181 + i)).collect();
        let chroot = if cfg.chroot { Some("/app") } else { None };
        let connect = format!("{}{}", hosts.join(","), chroot.unwrap_or(""));
        let mut config = SessionConfig::new(ConnectString::parse(&connect).unwrap(), cfg.seed)
            .with_session_timeout(Duration::from_millis(cfg.timeout_ms))
            .with_reconnect_jitter(Duration::from_millis(cfg.jitter_ms));
        if cfg.small_frames {
            config = config.with_max_frame_len(256);
        }
        config.can_be_read_only = cfg.read_only;
        let mut w = World {
            s: Session::new(config, Instant::ZERO),
            now: Instant::ZERO,
            chroot,
            read_only_ok: cfg.read_only,
            dialing: false,
            conn: None,
            server_session: 0,
            server_expired: false,
            zxid: 0,
            outstanding: BTreeSet::new(),
            terminal: None,
            ever_connected: false,
            tainted: false,
        };
        w.tick();
        w
    }

    fn server_path(&self, path: &str) -> String {
        match self.chroot {
            Some(root) if path == "/" => root.into(),
            Some(root) => format!("{root}{path}"),
            None => path.into(),
        }
    }

    /// Drains every output, checking it.
    fn pump(&mut self) {
        while let Some(io) = self.s.poll_io() {
            match io {
                IoCommand::Connect { .. } => {
                    assert!(!self.dialing && self.conn.is_none(), "Connect while a socket is open");
                    self.dialing = true;
                }
                IoCommand::Close => {
                    assert!(self.dialing || self.conn.is_some(), "Close without a socket");
                    self.dialing = false;
                    self.conn = None;
                }
                other => panic!("unknown command {other:?}"),
            }
        }
        let mut out = BytesMut::new();
        let n = self.s.poll_transmit(&mut out);
        assert_eq!(n, out.len());
        if n > 0 {
            let conn = self.conn.as_mut().expect("bytes transmitted without a connection");
            conn.c2s.extend_from_slice(&out);
        }
        while let Some(event) = self.s.poll_event() {
            match event {
                SessionEvent::Reply { id, .. } => {
                    assert!(self.outstanding.remove(&id), "Reply for {id:?}, which is unknown or already answered");
                }
                SessionEvent::State(state) => {
                    assert!(self.terminal.is_none(), "{state:?} after the terminal {:?}", self.terminal);
                    match state {
                        ConnectionState::Lost
                        | ConnectionState::Closed
                        | ConnectionState::AuthFailed
                        | ConnectionState::ServerMisbehaved(_) => {
                            assert!(self.s.is_ended());
                            assert!(self.outstanding.is_empty(), "ended with requests unanswered");
                            self.terminal = Some(state);
                        }
                        ConnectionState::Connected => {
                            assert!(!self.ever_connected);
                            self.ever_connected = true;
                        }
                        ConnectionState::ConnectedReadOnly => self.ever_connected = true,
                        ConnectionState::Reconnected => assert!(self.ever_connected),
                        ConnectionState::Suspended => assert!(self.ever_connected),
                        other => panic!("unknown state {other:?}"),
                    }
                }
                SessionEvent::Watch { .. } => {}
                other => panic!("unknown event {other:?}"),
            }
        }
        assert_eq!(self.s.poll_timeout().is_none(), self.s.is_ended());
        assert_eq!(self.s.is_ended(), self.terminal.is_some());
    }

    fn tick(&mut self) {
        self.s.handle_timeout(self.now);
        check_deadline(&self.s, self.now);
        self.pump();
    }

    fn submit(&mut self, kind: u8, path: usize, watch: bool, watcher: Option<u64>, size: usize) {
        let path = ZkPath::new(PATHS[path]).unwrap();
        let (op, watches) = match kind {
            0 => (Op::get_data(&path, watch), watch),
            1 => (Op::create(&path, Bytes::from(vec![b'x'; size]), Acl::open_unsafe(), CreateMode::EPHEMERAL), false),
            2 => (Op::delete(&path, None), false),
            3 => (Op::exists(&path, watch), watch),
            _ => (Op::get_children(&path, watch), watch),
        };
        let ended = self.s.is_ended() || self.s.status() == zoolock_core::SessionStatus::Closing;
        match self.s.submit(self.now, op, watcher.map(WatcherId)) {
            Ok(id) => {
                assert!(!ended, "submit accepted by an ended session");
                assert!(self.outstanding.insert(id), "RequestId {id:?} reused");
            }
            Err(ApiMisuse::SessionEnded) => assert!(ended),
            Err(ApiMisuse::WatchWithoutWatcher) => assert!(!ended && watches && watcher.is_none()),
            Err(e) => panic!("unexpected {e:?}"),
        }
        self.pump();
    }

    fn dial(&mut self, accept: bool) {
        if !self.dialing {
            return;
        }
        self.dialing = false;
        if accept {
            self.conn = Some(Conn::default());
            self.s.handle_connected(self.now);
        } else {
            self.s.handle_disconnected(self.now);
        }
        self.pump();
    }

    fn drop_conn(&mut self) {
        if self.conn.take().is_some() {
            self.s.handle_disconnected(self.now);
            self.pump();
        }
    }

    /// Feeds the connection's receive buffer, `chunk` new bytes at a time.
    fn feed(&mut self, bytes: &[u8], chunk: usize) {
        let chunk = if chunk == 0 { bytes.len().max(1) } else { chunk };
        for piece in bytes.chunks(chunk) {
            let Some(conn) = self.conn.as_mut() else {
                return;
            };
            conn.s2c.extend_from_slice(piece);
            let before = conn.s2c.len();
            let result = self.s.handle_bytes(self.now, &mut conn.s2c);
            assert!(conn.s2c.len() <= before);
            let had_error = result.is_err();
            self.pump();
            if had_error {
                assert!(self.conn.is_none() && !self.dialing, "a handle_bytes error must close the connection");
                return;
            }
        }
    }

    /// The server reads what the session sent, checking it.
    fn read_client_frames(&mut self) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        let frames = split_frames(std::mem::take(&mut conn.c2s));
        for frame in frames {
            if conn.hello.is_none() {
                assert_eq!(frame.len(), 45, "ConnectRequest size");
                let hello = ConnectRequest::decode(&frame).unwrap();
                assert_eq!(hello.protocol_version, 0);
                assert_eq!(hello.read_only, Some(self.read_only_ok));
                if self.tainted {
                } else if hello.session_id == 0 {
                    assert_eq!(hello.passwd.as_deref(), Some(&[0u8; 16][..]));
                } else {
                    assert_eq!(hello.session_id, self.server_session);
                    assert_eq!(hello.passwd.as_deref(), Some(&PASSWD[..]));
                    assert!(hello.last_zxid_seen <= self.zxid);
                }
                conn.hello = Some(hello);
                continue;
            }
            assert!(conn.answered, "the session sent a frame before the ConnectResponse");
            let request = RequestFrame::decode(&frame).expect("the session sent an undecodable request");
            assert_eq!(request.header.op, request.request.op_code());
            match request.header.xid {
                Xid::PING => assert_eq!(request.header.op, OpCode::PING),
                Xid::AUTH => assert_eq!(request.header.op, OpCode::AUTH),
                Xid(xid) => {
                    assert!(xid > 0, "ordinary xids are positive");
                    if let Some(last) = conn.last_xid {
                        assert!(xid > last, "xids increase on a connection");
                    }
                    conn.last_xid = Some(xid);
                }
            }
            conn.inbox.push_back(request);
        }
    }

    fn response(&mut self, request: &Request) -> Option<Response> {
        let s = stat(self.zxid);
        Some(match request {
            Request::GetData(_) => Response::Data { data: Some(Bytes::from_static(b"v")), stat: s },
            Request::Create2(r) => Response::Create2 { path: r.path.clone(), stat: s },
            Request::Exists(_) => Response::Stat(s),
            Request::GetChildren2(_) => Response::Children2 { children: vec!["x".into()], stat: s },
            _ => Response::Empty,
        })
    }

    fn serve(&mut self, serve: &Serve) {
        self.read_client_frames();
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        let mut out = BytesMut::new();
        let mut eof = false;
        if !conn.answered {
            let Some(hello) = conn.hello.clone() else {
                return;
            };
            conn.answered = true;
            let resumable = hello.session_id == self.server_session
                && !self.server_expired
                && hello.passwd.as_deref() == Some(&PASSWD[..]);
            if hello.last_zxid_seen > self.zxid {
                // The client has seen more than this server: refused with EOF.
                eof = true;
            } else if serve.expire || (hello.session_id != 0 && !resumable) {
                self.server_expired = true;
                out.extend_from_slice(&expired_response());
                eof = true;
            } else {
                if hello.session_id == 0 {
                    self.server_session += 1;
                    self.server_expired = false;
                }
                let ro = if self.read_only_ok { Some(serve.read_only) } else { None };
                out.extend_from_slice(&connect_response(serve.timeout_ms, self.server_session, ro));
            }
        }
        let mut codes = serve.codes;
        let fatal = serve.fatal;
        let mut next_code = move || {
            codes = codes.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            match (codes >> 33) % 40 {
                37..=39 if !fatal => ErrorCode::OK,
                0..=27 => ErrorCode::OK,
                28..=31 => ErrorCode::NO_NODE,
                32..=34 => ErrorCode::NODE_EXISTS,
                35 => ErrorCode::BAD_VERSION,
                36 => ErrorCode::NO_AUTH,
                37 => ErrorCode::UNIMPLEMENTED,
                38 => ErrorCode::SESSION_MOVED,
                _ => ErrorCode::SESSION_EXPIRED,
            }
        };
        if !eof {
            if let Some((path, event)) = serve.notify {
                let path = self.server_path(PATHS[path]);
                out.extend_from_slice(&notification(EventType(event), &path));
            }
            let conn = self.conn.as_mut().unwrap();
            // Auth is answered on arrival, outside the pipeline.
            let auths: Vec<RequestFrame> = conn.inbox.iter().filter(|r| r.header.xid == Xid::AUTH).cloned().collect();
            conn.inbox.retain(|r| r.header.xid != Xid::AUTH);
            for auth in auths {
                let Request::Auth(packet) = &auth.request else { unreachable!() };
                if packet.auth.as_deref() == Some(b"bad") {
                    out.extend_from_slice(&reply(-4, 0, ErrorCode::AUTH_FAILED, None));
                    eof = true;
                    break;
                }
                out.extend_from_slice(&reply(-4, 0, ErrorCode::OK, None));
            }
        }
        if !eof && serve.overtake {
            let conn = self.conn.as_mut().unwrap();
            if let Some(last) = conn.inbox.iter().rposition(|r| r.header.xid.0 > 0) {
                let victim = conn.inbox.remove(last).unwrap();
                out.extend_from_slice(&reply(victim.header.xid.0, 0, ErrorCode::UNIMPLEMENTED, None));
                eof = true;
            }
        }
        let mut answered = 0;
        while !eof && answered < serve.n {
            let Some(request) = self.conn.as_mut().unwrap().inbox.pop_front() else {
                break;
            };
            let xid = request.header.xid.0;
            match &request.request {
                Request::Ping => out.extend_from_slice(&reply(-2, self.zxid, ErrorCode::OK, None)),
                Request::SetWatches(_) => {
                    out.extend_from_slice(&reply(xid, self.zxid, ErrorCode::OK, Some(Response::Empty)))
                }
                Request::CloseSession => {
                    out.extend_from_slice(&reply(xid, self.zxid, ErrorCode::OK, Some(Response::Empty)));
                    self.server_expired = true;
                    eof = true;
                }
                other => {
                    answered += 1;
                    let code = next_code();
                    if matches!(other, Request::Create2(_) | Request::Delete(_)) && code.is_ok() {
                        self.zxid += 1;
                    }
                    let body = if code.is_ok() { self.response(other) } else { None };
                    out.extend_from_slice(&reply(xid, self.zxid, code, body));
                    if code == ErrorCode::SESSION_EXPIRED {
                        self.server_expired = true;
                        eof = true;
                    } else if code == ErrorCode::UNIMPLEMENTED {
                        eof = true;
                    }
                }
            }
        }
        self.feed(&out, serve.chunk);
        if eof {
            self.drop_conn();
        }
    }

    fn garbage(&mut self, bytes: &[u8]) {
        if self.conn.is_some() {
            self.tainted = true;
        }
        self.feed(bytes, 0);
    }

    fn apply(&mut self, action: &Action) {
        match action {
            Action::Submit { kind, path, watch, watcher, size } => self.submit(*kind, *path, *watch, *watcher, *size),
            Action::Advance { ms } => {
                self.now = self.now + Duration::from_millis(*ms);
                self.tick();
            }
            Action::AdvanceToTimer => {
                if let Some(t) = self.s.poll_timeout() {
                    self.now = self.now.max(t);
                }
                self.tick();
            }
            Action::Dial { accept } => self.dial(*accept),
            Action::Serve(serve) => self.serve(serve),
            Action::Drop => self.drop_conn(),
            Action::Garbage(bytes) => self.garbage(bytes),
            Action::AddAuth { bad } => {
                let auth = if *bad { Bytes::from_static(b"bad") } else { Bytes::from_static(b"u:p") };
                // Refused once the session is ending: closing, or ended.
                let ending = self.s.is_ended() || self.s.status() == SessionStatus::Closing;
                assert_eq!(self.s.add_auth(self.now, "digest", auth).is_err(), ending);
                self.pump();
            }
            Action::RemoveWatcher(w) => {
                self.s.remove_watcher(WatcherId(*w));
                self.pump();
            }
            Action::Close => {
                self.s.close(self.now);
                self.pump();
            }
        }
    }

    /// Closes the session and lets time pass until it has ended; a correct
    /// server answers everything, and new dials are refused.
    fn finish(&mut self) {
        self.s.close(self.now);
        self.pump();
        let everything = Serve {
            n: usize::MAX,
            codes: 0,
            notify: None,
            timeout_ms: 10_000,
            expire: false,
            read_only: false,
            overtake: false,
            chunk: 0,
            fatal: false,
        };
        for _ in 0..100 {
            if self.s.is_ended() {
                break;
            }
            self.serve(&everything);
            self.dial(false);
            if let Some(t) = self.s.poll_timeout() {
                self.now = self.now.max(t);
            }
            self.tick();
        }
        assert!(self.s.is_ended(), "still {:?} long after close", self.s.status());
        assert!(self.outstanding.is_empty(), "never answered: {:?}", self.outstanding);
        assert!(self.terminal.is_some());
        assert_eq!(self.s.poll_timeout(), None);
    }
}

fn run(cfg: &Config, actions: &[Action]) {
    let mut w = World::new(cfg);
    for action in actions {
        w.apply(action);
    }
    w.finish();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_interleavings_never_panic_and_never_lose_a_request(
        cfg in config_strategy(),
        actions in proptest::collection::vec(action_strategy(), 1..120),
    ) {
        run(&cfg, &actions);
    }
}

/// A long, mostly healthy run: the random walk above rarely gets deep into a
/// session, so this one keeps the server answering and the dials accepted.
#[test]
fn long_healthy_run_answers_everything() {
    let cfg = Config {
        hosts: 3,
        chroot: true,
        timeout_ms: 9_000,
        jitter_ms: 500,
        small_frames: false,
        read_only: false,
        seed: 7,
    };
    let mut w = World::new(&cfg);
    let answered_serve = |codes: u64| Serve {
        n: 3,
        codes,
        notify: Some(((codes % 4) as usize, 1 + (codes % 4) as i32)),
        timeout_ms: 9_000,
        expire: false,
        read_only: false,
        overtake: false,
        chunk: (codes % 7) as usize,
        fatal: false,
    };
    let mut reconnects = 0;
    for i in 0..2_000u64 {
        let action = match i % 6 {
            0..=2 => Action::Submit {
                kind: (i % 5) as u8,
                path: (i % 4) as usize,
                watch: i % 2 == 0,
                watcher: Some(i % 3),
                size: 10,
            },
            3 => Action::Advance { ms: (i * 37) % 2_500 },
            4 if i % 60 == 4 => Action::Drop,
            _ => Action::AdvanceToTimer,
        };
        w.apply(&action);
        // A responsive network: dials succeed at once and the server keeps up.
        if w.dialing {
            reconnects += 1;
            w.dial(true);
        }
        w.serve(&answered_serve(i));
    }
    assert!(reconnects >= 30, "only {reconnects} dials");
    assert!(!w.s.is_ended(), "{:?}", w.s.status());
    w.finish();
}
