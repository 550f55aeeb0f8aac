//! Test support: a virtual-time driver around [`Session`] and a fake server
//! that decodes what the session transmits and builds server frames.
#![allow(dead_code)]

use std::time::Duration;

use zoolock_core::wire::{
    Bytes, BytesMut, ConnectRequest, ConnectResponse, Encode, ErrorCode, EventType, FrameDecoder, KeeperState,
    PASSWORD_LEN, ReplyHeader, RequestFrame, Response, ServerMessage, Stat, WatcherEvent, Xid, encode_frame,
};
use zoolock_core::{
    ApiMisuse, ConnectString, ConnectionState, Instant, IoCommand, Op, RequestError, RequestId, Session, SessionConfig,
    SessionError, SessionEvent, SessionStatus, WatcherId, ZkPath,
};

/// The session password the fake server hands out.
pub(crate) const PASSWD: [u8; PASSWORD_LEN] = [7; PASSWORD_LEN];

/// A config with no reconnect jitter, so transcripts are exact.
pub(crate) fn config(connect: &str, timeout_ms: u64) -> SessionConfig {
    SessionConfig::new(ConnectString::parse(connect).unwrap(), 1)
        .with_session_timeout(Duration::from_millis(timeout_ms))
        .with_reconnect_jitter(Duration::ZERO)
}

/// `ms` milliseconds after the origin.
pub(crate) fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

/// A valid path.
pub(crate) fn p(path: &str) -> ZkPath {
    ZkPath::new(path).unwrap()
}

/// A Stat with recognisable zxids.
pub(crate) fn stat(zxid: i64) -> Stat {
    Stat { czxid: zxid, mzxid: zxid, pzxid: zxid, version: 1, ..Stat::default() }
}

/// Frames `msg` with its length prefix.
pub(crate) fn framed(msg: &impl Encode) -> BytesMut {
    let mut buf = BytesMut::new();
    encode_frame(msg, usize::MAX, &mut buf).unwrap();
    buf
}

/// A framed ConnectResponse.
pub(crate) fn connect_response(timeout_ms: i32, session_id: i64, read_only: Option<bool>) -> BytesMut {
    framed(&ConnectResponse {
        protocol_version: 0,
        timeout_ms,
        session_id,
        passwd: Some(Bytes::from_static(&PASSWD)),
        read_only,
    })
}

/// The framed answer of a server that considers the session expired.
pub(crate) fn expired_response() -> BytesMut {
    framed(&ConnectResponse {
        protocol_version: 0,
        timeout_ms: 0,
        session_id: 0,
        passwd: Some(Bytes::from_static(&[0; PASSWORD_LEN])),
        read_only: Some(false),
    })
}

/// A framed reply.
pub(crate) fn reply(xid: i32, zxid: i64, err: ErrorCode, response: Option<Response>) -> BytesMut {
    framed(&ServerMessage::Reply { header: ReplyHeader { xid: Xid(xid), zxid, err }, response })
}

/// A framed successful reply.
pub(crate) fn ok(xid: i32, zxid: i64, response: Response) -> BytesMut {
    reply(xid, zxid, ErrorCode::OK, Some(response))
}

/// A framed error reply (header only).
pub(crate) fn err(xid: i32, zxid: i64, err: ErrorCode) -> BytesMut {
    reply(xid, zxid, err, None)
}

/// A framed watch notification for a server path.
pub(crate) fn notification(event_type: EventType, server_path: &str) -> BytesMut {
    framed(&ServerMessage::Notification {
        header: ReplyHeader { xid: Xid::NOTIFICATION, zxid: -1, err: ErrorCode::OK },
        event: WatcherEvent { event_type, state: KeeperState::SYNC_CONNECTED, path: server_path.into() },
    })
}

/// Splits a byte stream into frame payloads; panics on a partial frame.
pub(crate) fn split_frames(mut bytes: BytesMut) -> Vec<Bytes> {
    let decoder = FrameDecoder::new(usize::MAX);
    let mut out = Vec::new();
    while let Some(frame) = decoder.decode(&mut bytes).unwrap() {
        out.push(frame);
    }
    assert!(bytes.is_empty(), "the session transmitted a partial frame: {bytes:?}");
    out
}

/// A session event as the tests compare it: a request id is its number
/// (tests cannot make a `RequestId`; the session issues them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ev {
    Reply { id: u64, result: Result<Response, RequestError> },
    State(ConnectionState),
    Watch { watcher: WatcherId, event: zoolock_core::WatchEvent },
}

impl From<SessionEvent> for Ev {
    fn from(event: SessionEvent) -> Ev {
        match event {
            SessionEvent::Reply { id, result } => Ev::Reply { id: id.get(), result },
            SessionEvent::State(state) => Ev::State(state),
            SessionEvent::Watch { watcher, event } => Ev::Watch { watcher, event },
            other => panic!("a session event the tests do not know: {other:?}"),
        }
    }
}

/// A reply event, for comparisons.
pub(crate) fn reply_ev(id: u64, result: Result<Response, zoolock_core::RequestError>) -> Ev {
    Ev::Reply { id, result }
}

/// A state event, for comparisons.
pub(crate) fn state_ev(state: zoolock_core::ConnectionState) -> Ev {
    Ev::State(state)
}

/// The events of a session's end, in its drain order: every request in
/// `ids` fails with `error`, oldest first, then the state `state`.
pub(crate) fn end_events(ids: &[u64], error: RequestError, state: ConnectionState) -> Vec<Ev> {
    ids.iter().map(|id| reply_ev(*id, Err(error.clone()))).chain([state_ev(state)]).collect()
}

/// A watch event, for comparisons.
pub(crate) fn watch_ev(watcher: u64, event_type: EventType, path: &str) -> Ev {
    Ev::Watch { watcher: WatcherId(watcher), event: zoolock_core::WatchEvent { event_type, path: path.into() } }
}

/// A session driven on virtual time. Every `tick` checks that the next
/// deadline lies strictly after `now` (or that there is none, once ended).
pub(crate) struct Sim {
    /// The machine under test.
    pub(crate) s: Session,
    /// Virtual time.
    pub(crate) now: Instant,
    /// The driver's receive buffer for the current connection.
    pub(crate) inbuf: BytesMut,
}

impl Sim {
    /// A session created at time zero.
    pub(crate) fn new(config: SessionConfig) -> Sim {
        Sim { s: Session::new(config, Instant::ZERO), now: Instant::ZERO, inbuf: BytesMut::new() }
    }

    /// Moves the clock to `ms` (never backwards).
    pub(crate) fn set(&mut self, ms: u64) {
        let t = at(ms);
        assert!(t >= self.now, "time must not go backwards");
        self.now = t;
    }

    /// Moves the clock to `ms` and fires the timers.
    pub(crate) fn tick_at(&mut self, ms: u64) {
        self.set(ms);
        self.tick();
    }

    /// Asserts that the next deadline is `ms` and that a millisecond before
    /// it nothing happens, then fires the timers at `ms`.
    pub(crate) fn tick_at_deadline(&mut self, ms: u64) {
        assert_eq!(self.s.poll_timeout(), Some(at(ms)));
        self.tick_at(ms - 1);
        self.assert_quiet();
        self.tick_at(ms);
    }

    /// Fires the timers at `now` and checks the next deadline.
    pub(crate) fn tick(&mut self) {
        self.s.handle_timeout(self.now);
        check_deadline(&self.s, self.now);
    }

    /// Drains the transport commands.
    pub(crate) fn io(&mut self) -> Vec<IoCommand> {
        std::iter::from_fn(|| self.s.poll_io()).collect()
    }

    /// Drains the events.
    pub(crate) fn events(&mut self) -> Vec<Ev> {
        std::iter::from_fn(|| self.s.poll_event()).map(Ev::from).collect()
    }

    /// Drains the transmitted bytes.
    pub(crate) fn tx(&mut self) -> BytesMut {
        let mut buf = BytesMut::new();
        let n = self.s.poll_transmit(&mut buf);
        assert_eq!(n, buf.len());
        buf
    }

    /// Asserts nothing at all is pending: no command, no bytes, no event.
    pub(crate) fn assert_quiet(&mut self) {
        assert_eq!(self.io(), []);
        assert_eq!(self.tx().len(), 0);
        assert_eq!(self.events(), []);
    }

    /// The transmitted bytes, which must be exactly one ConnectRequest.
    pub(crate) fn sent_connect(&mut self) -> ConnectRequest {
        let frames = split_frames(self.tx());
        assert_eq!(frames.len(), 1, "exactly one frame during the handshake");
        assert_eq!(frames[0].len(), 45, "a ConnectRequest body is 45 bytes");
        ConnectRequest::decode(&frames[0]).unwrap()
    }

    /// The transmitted request frames.
    pub(crate) fn sent(&mut self) -> Vec<RequestFrame> {
        split_frames(self.tx()).iter().map(|f| RequestFrame::decode(f).unwrap()).collect()
    }

    /// Feeds server bytes through the driver's buffer.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<(), SessionError> {
        self.inbuf.extend_from_slice(bytes);
        self.s.handle_bytes(self.now, &mut self.inbuf)
    }

    /// Feeds server bytes that must be accepted.
    pub(crate) fn feed_ok(&mut self, bytes: &[u8]) {
        self.feed(bytes).unwrap();
    }

    /// Submits an op with no watcher.
    pub(crate) fn submit(&mut self, op: Op) -> RequestId {
        self.s.submit(self.now, op, None).unwrap()
    }

    /// Submits a watching read.
    pub(crate) fn submit_watch(&mut self, op: Op, watcher: u64) -> RequestId {
        self.s.submit(self.now, op, Some(WatcherId(watcher))).unwrap()
    }

    /// Tells the session the transport is up, with a fresh receive buffer.
    pub(crate) fn connected(&mut self) {
        self.inbuf.clear();
        self.s.handle_connected(self.now);
    }

    /// Tells the session the transport went down.
    pub(crate) fn disconnected(&mut self) {
        self.inbuf.clear();
        self.s.handle_disconnected(self.now);
    }

    /// Asserts that the session has ended as `status`: it wants no timer
    /// and refuses new requests.
    pub(crate) fn assert_ended(&mut self, status: SessionStatus) {
        assert_eq!(self.s.status(), status);
        assert!(self.s.is_ended());
        assert_eq!(self.s.poll_timeout(), None);
        let op = Op::sync(&ZkPath::new("/after-the-end").unwrap());
        assert_eq!(self.s.submit(self.now, op, None), Err(ApiMisuse::SessionEnded));
    }

    /// Takes the one dial the session asked for, connects the transport and
    /// takes the ConnectRequest: the session then waits for the answer.
    pub(crate) fn dial_connected(&mut self) {
        assert!(matches!(self.io().as_slice(), [IoCommand::Connect { .. }]));
        self.connected();
        let _ = self.sent_connect();
    }

    /// Dials now and resumes the session [`Sim::establish`] made (session
    /// id 0x1234), the server granting `negotiated_ms`.
    pub(crate) fn resume(&mut self, negotiated_ms: i32) {
        self.tick();
        self.dial_connected();
        self.feed_ok(&connect_response(negotiated_ms, 0x1234, Some(false)));
    }

    /// From a fresh session: dial at t=0, connect at t=5, handshake at t=10
    /// with the given negotiated timeout and session id 0x1234. Drains
    /// everything; returns the bytes sent right after the handshake.
    pub(crate) fn establish(&mut self, negotiated_ms: i32) -> Vec<RequestFrame> {
        self.tick_at(0);
        assert!(matches!(self.io().as_slice(), [IoCommand::Connect { .. }]));
        self.set(5);
        self.connected();
        let req = self.sent_connect();
        assert_eq!(req.session_id, 0);
        self.set(10);
        self.feed_ok(&connect_response(negotiated_ms, 0x1234, Some(false)));
        assert_eq!(self.events(), [state_ev(zoolock_core::ConnectionState::Connected)]);
        self.sent()
    }
}

/// The acceptance rule: after `handle_timeout(now)`, the next deadline is
/// strictly later than `now`, or absent exactly when the session has ended.
pub(crate) fn check_deadline(s: &Session, now: Instant) {
    match s.poll_timeout() {
        Some(t) => {
            assert!(t > now, "poll_timeout {t} is not after now {now} (status {:?})", s.status());
            assert!(!s.is_ended(), "an ended session has no timer");
        }
        None => assert!(s.is_ended(), "a live session must have a timer (status {:?})", s.status()),
    }
}
