//! Replays recorded connections against a live [`zoolock_core::Session`].
//!
//! A [`SessionReplay`] owns one session and drives it through the connection
//! files of **one** client session, in order (for example
//! `mutex-reconnect/B.conn1` then `B.conn2`). The trace plays the server and
//! the application; the session must put the same requests on the wire as the
//! recorded client did, structurally. The rules (`traces/README.md` and
//! `zk-wire.md` §12 "Replay rules", `struct` mode):
//!
//! * **Time.** Virtual time is the trace's `t_us` plus a per-connection base,
//!   so it only moves forward. Before every trace entry the session's timers
//!   are run up to the entry's time ([`Session::poll_timeout`] /
//!   [`Session::handle_timeout`]). Between connections time advances until the
//!   session asks to dial again, and at least by the wall-clock gap between the
//!   two recordings (`t0_unix_us`) when [`ReplayConfig::follow_recorded_gaps`]
//!   is set.
//! * **Handshake.** At the first client frame the session must have issued
//!   [`IoCommand::Connect`]; the harness calls [`Session::handle_connected`]
//!   and the ConnectRequest the session writes must equal the recorded one
//!   field by field. On a reconnect the recorded session id and password must
//!   be the previous ConnectResponse's, and `lastZxidSeen` the highest zxid of
//!   an ordinary reply delivered so far.
//! * **Application requests** (every client frame except ping, auth,
//!   setWatches and closeSession): the harness decodes the recorded request,
//!   checks it with [`Op::from_request`] and submits it at the recorded time
//!   with [`ReplayConfig::watcher`]. The next frame the session writes must
//!   equal the recorded one, xids aside. A successful `checkWatches` reply is
//!   followed by [`Session::remove_watch`] for the kinds it names, as the Java
//!   client's `removeWatches` does.
//! * **Session plumbing.** setWatches must already have been written by the
//!   session itself while handling the ConnectResponse, ahead of any
//!   application request; its relative zxid must match and its path lists are
//!   compared as sets (Java sends them in hash order). closeSession comes from
//!   [`Session::close`].
//! * **Xids.** Recorded xids map to the session's in order of first use; server
//!   frames are rewritten with the session's xids before they are fed.
//! * **Server frames** are fed through [`Session::handle_bytes`] with their
//!   length prefix, consecutive frames with the same timestamp together, either
//!   whole or split at random points ([`Chunking`]). Frames marked `dropped`
//!   never reached the client and are not fed; dropped client frames are still
//!   frames the client wrote.
//! * **Pings.** Recorded pings and their replies are skipped. Every ping the
//!   session writes is checked against its schedule (at least T/3 since the
//!   previous write) and answered at once with a synthetic `(-2, last zxid, 0)`
//!   reply, unless the link is down: after the session closed the socket, or,
//!   in a trace with dropped frames, after the last frame the proxy forwarded
//!   before the first one it dropped (the earliest moment the partition can
//!   have started).
//! * **Close events.** `by: client` means the client gave up by itself: unless
//!   it has closed already, the session must issue [`IoCommand::Close`] within
//!   [`ReplayConfig::close_tolerance`] of the recorded time, and not earlier.
//!   `by: proxy` / `server` (and any other value) is
//!   [`Session::handle_disconnected`] when the session still has the socket.
//! * **Events.** Every reply the session reports for a recorded server reply
//!   must carry the recorded result (`Ok` body or server error code), and
//!   every watch event must be one a ZooKeeper client would deliver: the
//!   harness keeps its own model of the watches the recorded reads left and
//!   expects exactly one [`SessionEvent::Watch`] to the watcher when a recorded
//!   notification triggers one. A handshake must report `Connected`,
//!   `Reconnected`, or `Lost` for an expired answer. Everything the session
//!   reports is kept in [`ReplayReport::events`] for further checks.
//!
//! [`SessionReplay::finish`] checks that nothing is left over: no frame the
//! session wrote that the trace lacks, no unconsumed bytes, and, once the
//! session has ended, a reply for every submitted request. Failures are
//! [`ReplayError`]s naming the trace file and line of the first mismatch with
//! what was expected and what the session did. Nothing here panics.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use zoolock_core::{
    ApiMisuse, ConnectString, ConnectionState, Instant, IoCommand, Op, RequestError, RequestId, Rng, Session,
    SessionConfig, SessionError, SessionEvent, SessionStatus, WatchEvent, WatchKind, WatcherId,
};
use zoolock_wire::{
    ConnectRequest, ConnectResponse, Encode, ErrorCode, EventType, FrameDecoder, LEN_PREFIX, OpCode, ReplyHeader,
    Request, RequestFrame, ServerMessage, WatcherType, Xid,
};

use crate::decode::{DecodedFrame, StreamDecoder, TraceDecodeError};
use crate::trace::{Close, ClosedBy, Direction, Entry, Frame, Trace, TraceError};

/// How server bytes are handed to [`Session::handle_bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunking {
    /// Each group of frames in one call.
    Whole,
    /// Split at random points drawn from `seed`: single bytes, splits inside
    /// the length prefix, and larger pieces.
    Random {
        /// Seed of the split points; print it when a replay fails.
        seed: u64,
    },
}

/// How a [`SessionReplay`] builds and drives its session.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReplayConfig {
    /// The session's connect string; the recorded traffic ignores it.
    pub connect_string: String,
    /// Seed of the session (host order, reconnect jitter).
    pub seed: u64,
    /// Upper bound of the session's reconnect pause.
    pub reconnect_jitter: Duration,
    /// Watcher given to every submitted request.
    pub watcher: WatcherId,
    /// How server bytes are fed.
    pub chunking: Chunking,
    /// Slack allowed between a recorded client-side close and the session's.
    pub close_tolerance: Duration,
    /// Between connections, wait at least as long as the recording did
    /// (from the headers' `t0_unix_us`) before the next one starts.
    pub follow_recorded_gaps: bool,
    /// Virtual time at which the session is created.
    pub start: Instant,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            connect_string: String::from("127.0.0.1:2181"),
            seed: 1,
            reconnect_jitter: Duration::from_millis(10),
            watcher: WatcherId(1),
            chunking: Chunking::Whole,
            close_tolerance: Duration::from_millis(100),
            follow_recorded_gaps: true,
            start: Instant::from_millis(1_000),
        }
    }
}

impl ReplayConfig {
    /// The defaults: `127.0.0.1:2181`, seed 1, 10 ms jitter, watcher 1, whole
    /// frames, 100 ms close tolerance, recorded gaps followed, start at 1 s.
    pub fn new() -> Self {
        ReplayConfig::default()
    }

    /// Sets how server bytes are fed.
    pub fn with_chunking(mut self, chunking: Chunking) -> Self {
        self.chunking = chunking;
        self
    }

    /// Sets the session seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the watcher given to submitted requests.
    pub fn with_watcher(mut self, watcher: WatcherId) -> Self {
        self.watcher = watcher;
        self
    }
}

/// A place in a trace: file and 1-based line (0 = the file as a whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The trace file.
    pub file: PathBuf,
    /// 1-based line, or 0.
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file.display())
        } else {
            write!(f, "{}:{}", self.file.display(), self.line)
        }
    }
}

/// What disagreed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MismatchKind {
    /// Transport commands: a missing or unexpected connect.
    Connect,
    /// The ConnectRequest the session wrote.
    ConnectRequest,
    /// A request frame the session wrote differs from the recorded one.
    Frame,
    /// The trace has a client frame the session did not write.
    MissingFrame,
    /// The session wrote a frame the trace does not have.
    UnexpectedFrame,
    /// A recorded xid with no session xid, or a bad session xid.
    Xid,
    /// The session's state after a ConnectResponse.
    Handshake,
    /// A reply event (result, duplicate, or missing).
    Reply,
    /// A watch event.
    Watch,
    /// A ping too early.
    Ping,
    /// Who closed the connection, and when.
    Close,
    /// Output or input left unconsumed.
    Leftover,
    /// The session's timers did not settle.
    Timer,
    /// A user-visible outcome (recipe event or connection state) differs
    /// from the recorded one (recipe-level replay).
    Outcome,
}

impl fmt::Display for MismatchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MismatchKind::Connect => "connect",
            MismatchKind::ConnectRequest => "ConnectRequest",
            MismatchKind::Frame => "frame",
            MismatchKind::MissingFrame => "missing frame",
            MismatchKind::UnexpectedFrame => "unexpected frame",
            MismatchKind::Xid => "xid",
            MismatchKind::Handshake => "handshake",
            MismatchKind::Reply => "reply",
            MismatchKind::Watch => "watch event",
            MismatchKind::Ping => "ping",
            MismatchKind::Close => "close",
            MismatchKind::Leftover => "leftover",
            MismatchKind::Timer => "timer",
            MismatchKind::Outcome => "outcome",
        })
    }
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A trace file could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A recorded frame does not decode.
    #[error(transparent)]
    Decode(#[from] TraceDecodeError),
    /// The session did something other than the recorded client.
    #[error("{at}: {kind} mismatch: expected {expected}, got {got}")]
    Mismatch {
        /// Where in the trace.
        at: Location,
        /// What disagreed.
        kind: MismatchKind,
        /// What the trace (or the protocol) calls for.
        expected: String,
        /// What the session did.
        got: String,
    },
    /// The session rejected recorded server bytes.
    #[error("{at}: the session rejected the server's bytes: {source}")]
    Session {
        /// Where in the trace.
        at: Location,
        /// The session's complaint.
        source: SessionError,
    },
    /// A recorded request could not be submitted.
    #[error("{at}: cannot submit the recorded request: {source}")]
    Submit {
        /// Where in the trace.
        at: Location,
        /// The session's complaint.
        source: ApiMisuse,
    },
    /// The trace cannot be replayed (unframed data, inconsistent handshake).
    #[error("{at}: cannot replay: {reason}")]
    Unsupported {
        /// Where in the trace.
        at: Location,
        /// Why.
        reason: String,
    },
}

impl ReplayError {
    /// The mismatch kind, when this is a mismatch.
    pub fn mismatch_kind(&self) -> Option<MismatchKind> {
        match self {
            ReplayError::Mismatch { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// Something the session reported, with when and during which connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedEvent {
    /// Virtual time.
    pub at: Instant,
    /// Index into [`ReplayReport::connections`] of the connection being
    /// replayed (or last replayed), `None` before the first.
    pub connection: Option<usize>,
    /// The event.
    pub event: SessionEvent,
}

/// A request the harness submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The session's id for it.
    pub id: RequestId,
    /// The recorded request (line 0 when submitted through
    /// [`SessionReplay::submit`]).
    pub at: Location,
    /// Its opcode.
    pub op: OpCode,
}

/// What happened on one replayed connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionReport {
    /// The trace file.
    pub file: PathBuf,
    /// Virtual time of the connection's `t_us = 0`.
    pub base: Instant,
    /// When [`Session::handle_connected`] was called.
    pub connected_at: Option<Instant>,
    /// The recorded ConnectResponse, once fed.
    pub handshake: Option<ConnectResponse>,
    /// When bytes (recorded or a synthetic ping reply) were last fed.
    pub last_received_at: Option<Instant>,
    /// When the socket went away.
    pub closed_at: Option<Instant>,
    /// True when the session closed it ([`IoCommand::Close`]), false when the
    /// harness reported the peer's close.
    pub closed_by_session: bool,
    /// Recorded client frames matched (ConnectRequest included).
    pub frames_matched: usize,
    /// Pings the session wrote.
    pub pings_sent: usize,
    /// Pings answered with a synthetic reply.
    pub pings_answered: usize,
}

/// The outcome of a whole replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayReport {
    /// Every event the session reported, in order.
    pub events: Vec<LoggedEvent>,
    /// One per replayed connection, in order.
    pub connections: Vec<ConnectionReport>,
    /// Every submitted request, in order.
    pub submitted: Vec<Submitted>,
    /// Submitted requests with no reply yet (the session is still alive).
    pub unanswered: Vec<RequestId>,
}

impl ReplayReport {
    /// The connection-state events, in order.
    pub fn states(&self) -> Vec<ConnectionState> {
        self.events
            .iter()
            .filter_map(|e| match e.event {
                SessionEvent::State(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    /// The reply reported for `id`.
    pub fn reply(&self, id: RequestId) -> Option<&LoggedEvent> {
        self.events.iter().find(|e| matches!(&e.event, SessionEvent::Reply { id: got, .. } if *got == id))
    }
}

/// Replays the connection files of one client session in order, then
/// [`SessionReplay::finish`]es. The session timeout is taken from the first
/// file's ConnectRequest.
pub fn replay_session(traces: &[Trace], config: ReplayConfig) -> Result<ReplayReport, ReplayError> {
    let Some(first) = traces.first() else {
        return Err(ReplayError::Unsupported {
            at: Location { file: PathBuf::new(), line: 0 },
            reason: String::from("no trace files given"),
        });
    };
    let mut replay = SessionReplay::new(first, config)?;
    for trace in traces {
        replay.replay_connection(trace)?;
    }
    replay.finish()
}

/// A frame the session wrote and the trace has not matched yet.
#[derive(Debug)]
struct Emitted {
    at: Instant,
    during_handshake: bool,
    frame: EmittedFrame,
}

#[derive(Debug)]
enum EmittedFrame {
    Connect(ConnectRequest),
    Request(RequestFrame),
}

/// A submitted request whose frame has gone out.
#[derive(Debug)]
struct PendingApp {
    id: RequestId,
    request: Request,
}

/// An event the session must report next.
#[derive(Debug)]
struct Expected {
    line: usize,
    event: SessionEvent,
}

/// The connection being replayed.
#[derive(Debug)]
struct Conn {
    index: usize,
    file: PathBuf,
    t0_unix_us: Option<u64>,
    open: bool,
    connect_request_seen: bool,
    handshake_done: bool,
    outbound: BytesMut,
    inbound: BytesMut,
    link_down_after: Option<Instant>,
    report: ConnectionReport,
}

/// One session driven through recorded connections. See the module docs.
#[derive(Debug)]
pub struct SessionReplay {
    config: ReplayConfig,
    session: Session,
    now: Instant,
    decoder: FrameDecoder,
    chunk_rng: Option<Rng>,
    /// A Connect is out and `handle_connected` has not been called.
    dialing: bool,
    conn: Option<Conn>,
    line: usize,
    during_handshake: bool,
    emitted: VecDeque<Emitted>,
    xids: HashMap<i32, i32>,
    pending: HashMap<i32, PendingApp>,
    expected: VecDeque<Expected>,
    outstanding: HashSet<RequestId>,
    watches: BTreeSet<(String, WatchKind)>,
    pings_due: usize,
    last_write: Option<Instant>,
    max_zxid: i64,
    last_handshake: Option<ConnectResponse>,
    report: ReplayReport,
}

impl SessionReplay {
    /// A replay whose session requests the timeout of `first`'s
    /// ConnectRequest. The session is created at [`ReplayConfig::start`].
    pub fn new(first: &Trace, config: ReplayConfig) -> Result<SessionReplay, ReplayError> {
        let at = Location { file: first.path.clone(), line: 0 };
        let connect = first
            .frames()
            .find(|f| f.dir == Direction::C2s)
            .ok_or_else(|| ReplayError::Unsupported { at: at.clone(), reason: String::from("no client frame") })?;
        let request = ConnectRequest::decode(&connect.payload).map_err(|e| ReplayError::Unsupported {
            at: Location { file: first.path.clone(), line: connect.line },
            reason: format!("first client frame is not a ConnectRequest: {e}"),
        })?;
        let connect_string = ConnectString::parse(&config.connect_string).map_err(|e| ReplayError::Unsupported {
            at: at.clone(),
            reason: format!("connect string {:?}: {e}", config.connect_string),
        })?;
        let timeout = Duration::from_millis(u64::try_from(request.timeout_ms).unwrap_or(0));
        let session_config = SessionConfig::new(connect_string, config.seed)
            .with_session_timeout(timeout)
            .with_reconnect_jitter(config.reconnect_jitter);
        let session = Session::new(session_config, config.start);
        let chunk_rng = match config.chunking {
            Chunking::Whole => None,
            Chunking::Random { seed } => Some(Rng::with_seed(seed)),
        };
        Ok(SessionReplay {
            now: config.start,
            config,
            session,
            decoder: FrameDecoder::default(),
            chunk_rng,
            dialing: false,
            conn: None,
            line: 0,
            during_handshake: false,
            emitted: VecDeque::new(),
            xids: HashMap::new(),
            pending: HashMap::new(),
            expected: VecDeque::new(),
            outstanding: HashSet::new(),
            watches: BTreeSet::new(),
            pings_due: 0,
            last_write: None,
            max_zxid: 0,
            last_handshake: None,
            report: ReplayReport {
                events: Vec::new(),
                connections: Vec::new(),
                submitted: Vec::new(),
                unanswered: Vec::new(),
            },
        })
    }

    /// The session under test.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Everything reported so far.
    pub fn report(&self) -> &ReplayReport {
        &self.report
    }

    /// The highest zxid of an ordinary reply fed so far.
    pub fn max_reply_zxid(&self) -> i64 {
        self.max_zxid
    }

    /// Submits `op` now, outside the trace (to check how the session treats a
    /// request across a disconnect, say). A frame it causes must still match
    /// the trace.
    pub fn submit(&mut self, op: Op, watcher: Option<WatcherId>) -> Result<RequestId, ReplayError> {
        let code = op.op_code();
        let id = self
            .session
            .submit(self.now, op, watcher)
            .map_err(|source| ReplayError::Submit { at: self.at(0), source })?;
        self.outstanding.insert(id);
        self.report.submitted.push(Submitted { id, at: self.at(0), op: code });
        self.settle()?;
        Ok(id)
    }

    /// Runs the session's timers up to `until` with no server reachable:
    /// every connect attempt is refused at once with
    /// [`Session::handle_disconnected`].
    pub fn advance_offline(&mut self, until: Instant) -> Result<(), ReplayError> {
        if self.conn.as_ref().is_some_and(|c| c.open) {
            return Err(self.mismatch(0, MismatchKind::Connect, "no open connection", "a connection still open"));
        }
        self.refuse_dial()?;
        for _ in 0..100_000 {
            match self.session.poll_timeout() {
                Some(due) if due <= until => {
                    self.now = self.now.max(due);
                    self.session.handle_timeout(self.now);
                    self.settle()?;
                    self.refuse_dial()?;
                }
                _ => {
                    self.now = self.now.max(until);
                    return Ok(());
                }
            }
        }
        Err(self.mismatch(0, MismatchKind::Timer, "timers that settle", "more than 100000 timer firings"))
    }

    fn refuse_dial(&mut self) -> Result<(), ReplayError> {
        if self.dialing {
            self.dialing = false;
            self.session.handle_disconnected(self.now);
            self.settle()?;
        }
        Ok(())
    }

    /// Replays one connection file of this session.
    pub fn replay_connection(&mut self, trace: &Trace) -> Result<ConnectionReport, ReplayError> {
        let steps = plan(trace)?;
        self.start_connection(trace)?;
        for step in steps {
            match step {
                Step::Client(frame, decoded) => self.client_frame(&frame, decoded)?,
                Step::Server(frames) => self.server_frames(frames)?,
                Step::Close(close) => self.close_event(&close)?,
            }
        }
        self.end_connection()
    }

    /// Checks that nothing is left over and returns the report.
    pub fn finish(mut self) -> Result<ReplayReport, ReplayError> {
        self.settle()?;
        if let Some(e) = self.emitted.front() {
            return Err(self.mismatch(0, MismatchKind::UnexpectedFrame, "nothing more", format!("{:?}", e.frame)));
        }
        if let Some(e) = self.expected.front() {
            let line = e.line;
            let expected = format!("{:?}", e.event);
            return Err(self.mismatch(line, MismatchKind::Reply, expected, "no such event"));
        }
        let mut unanswered: Vec<RequestId> = self.outstanding.iter().copied().collect();
        unanswered.sort();
        if self.session.is_ended() && !unanswered.is_empty() {
            return Err(self.mismatch(
                0,
                MismatchKind::Reply,
                "a reply for every request once the session has ended",
                format!("no reply for {unanswered:?}"),
            ));
        }
        self.report.unanswered = unanswered;
        Ok(self.report)
    }

    // ---- connections ---------------------------------------------------------------

    fn start_connection(&mut self, trace: &Trace) -> Result<(), ReplayError> {
        if let Some(conn) = &self.conn {
            if conn.open {
                return Err(self.mismatch(
                    0,
                    MismatchKind::Close,
                    "the previous connection closed before the next one",
                    "it is still open",
                ));
            }
        }
        let target = match (&self.conn, trace.header.t0_unix_us) {
            (Some(prev), Some(t0)) if self.config.follow_recorded_gaps => match prev.t0_unix_us {
                Some(prev_t0) => prev.report.base + Duration::from_micros(t0.saturating_sub(prev_t0)),
                None => self.now,
            },
            _ => self.now,
        };
        let index = self.report.connections.len();
        self.line = 0;
        self.conn = Some(Conn {
            index,
            file: trace.path.clone(),
            t0_unix_us: trace.header.t0_unix_us,
            open: false,
            connect_request_seen: false,
            handshake_done: false,
            outbound: BytesMut::new(),
            inbound: BytesMut::new(),
            link_down_after: None,
            report: ConnectionReport {
                file: trace.path.clone(),
                base: self.now,
                connected_at: None,
                handshake: None,
                last_received_at: None,
                closed_at: None,
                closed_by_session: false,
                frames_matched: 0,
                pings_sent: 0,
                pings_answered: 0,
            },
        });
        self.advance_to(target)?;
        for _ in 0..100_000 {
            if self.dialing {
                break;
            }
            match self.session.poll_timeout() {
                Some(due) => self.advance_to(due.max(self.now))?,
                None => {
                    return Err(self.mismatch(
                        0,
                        MismatchKind::Connect,
                        "the session to dial for this connection",
                        format!("no timer left (status {:?})", self.session.status()),
                    ));
                }
            }
        }
        if !self.dialing {
            return Err(self.mismatch(0, MismatchKind::Timer, "a connect attempt", "timers that never dial"));
        }
        let base = self.now;
        let link_down_after = blackhole_start(trace).map(|t| base + Duration::from_micros(t));
        if let Some(conn) = &mut self.conn {
            conn.report.base = base;
            conn.link_down_after = link_down_after;
        }
        Ok(())
    }

    fn end_connection(&mut self) -> Result<ConnectionReport, ReplayError> {
        self.settle()?;
        let Some(conn) = &self.conn else {
            return Err(self.mismatch(0, MismatchKind::Connect, "a connection", "none"));
        };
        if conn.open {
            return Err(self.mismatch(0, MismatchKind::Close, "the connection closed at the end of the trace", "open"));
        }
        if !conn.inbound.is_empty() || !conn.outbound.is_empty() {
            let got = format!("{} bytes in, {} bytes out", conn.inbound.len(), conn.outbound.len());
            return Err(self.mismatch(0, MismatchKind::Leftover, "no partial frames", got));
        }
        if let Some(e) = self.emitted.front() {
            return Err(self.mismatch(0, MismatchKind::UnexpectedFrame, "nothing more", format!("{:?}", e.frame)));
        }
        let report = conn.report.clone();
        self.report.connections.push(report.clone());
        Ok(report)
    }

    // ---- trace entries -------------------------------------------------------------

    fn client_frame(&mut self, frame: &Frame, decoded: DecodedFrame) -> Result<(), ReplayError> {
        self.line = frame.line;
        let t = self.time_of(frame.t_us);
        self.advance_to(t)?;
        match decoded {
            DecodedFrame::ConnectRequest(want) => self.connect_request(frame.line, &want),
            DecodedFrame::Request(want) => {
                let op = want.header.op;
                if op == OpCode::CLOSE_SESSION {
                    self.session.close(self.now);
                    self.settle()?;
                    self.match_request(frame.line, &want, false).map(|_| ())
                } else if matches!(op, OpCode::SET_WATCHES | OpCode::SET_WATCHES2 | OpCode::AUTH | OpCode::SASL) {
                    self.match_request(frame.line, &want, op != OpCode::AUTH && op != OpCode::SASL).map(|_| ())
                } else {
                    self.app_request(frame.line, want)
                }
            }
            other => Err(self.unsupported(frame.line, format!("client frame decoded as {other:?}"))),
        }
    }

    fn connect_request(&mut self, line: usize, want: &ConnectRequest) -> Result<(), ReplayError> {
        if !self.dialing {
            return Err(self.mismatch(
                line,
                MismatchKind::Connect,
                "IoCommand::Connect before the ConnectRequest",
                format!("no connect pending (status {:?})", self.session.status()),
            ));
        }
        // A reconnect must resume what the previous handshake granted.
        if want.session_id != 0 {
            let prev = self.last_handshake.as_ref();
            let consistent = prev.is_some_and(|p| p.session_id == want.session_id && p.passwd == want.passwd);
            if !consistent {
                return Err(self.unsupported(
                    line,
                    format!(
                        "ConnectRequest resumes session {:#x}, but the previous handshake of this replay granted {:?}",
                        want.session_id,
                        prev.map(|p| p.session_id)
                    ),
                ));
            }
            if want.last_zxid_seen != self.max_zxid {
                return Err(self.unsupported(
                    line,
                    format!(
                        "recorded lastZxidSeen {} but the highest reply zxid fed so far is {}",
                        want.last_zxid_seen, self.max_zxid
                    ),
                ));
            }
        }
        self.dialing = false;
        self.session.handle_connected(self.now);
        if let Some(conn) = &mut self.conn {
            conn.open = true;
            conn.report.connected_at = Some(self.now);
        }
        self.settle()?;
        let Some(emitted) = self.emitted.pop_front() else {
            return Err(self.mismatch(line, MismatchKind::MissingFrame, format!("{want:?}"), "nothing written"));
        };
        match emitted.frame {
            EmittedFrame::Connect(got) if got == *want => {
                self.matched();
                Ok(())
            }
            other => Err(self.mismatch(line, MismatchKind::ConnectRequest, format!("{want:?}"), format!("{other:?}"))),
        }
    }

    fn app_request(&mut self, line: usize, want: RequestFrame) -> Result<(), ReplayError> {
        let op = Op::from_request(want.request.clone())
            .map_err(|source| ReplayError::Submit { at: self.at(line), source })?;
        let id = self
            .session
            .submit(self.now, op, Some(self.config.watcher))
            .map_err(|source| ReplayError::Submit { at: self.at(line), source })?;
        self.outstanding.insert(id);
        self.report.submitted.push(Submitted { id, at: self.at(line), op: want.header.op });
        self.settle()?;
        let xid = self.match_request(line, &want, false)?;
        self.pending.insert(xid, PendingApp { id, request: want.request });
        Ok(())
    }

    /// Pops the next written frame and compares it with `want`; returns the
    /// session's xid. `from_handshake`: it must have been written while the
    /// ConnectResponse was handled.
    fn match_request(&mut self, line: usize, want: &RequestFrame, from_handshake: bool) -> Result<i32, ReplayError> {
        let Some(emitted) = self.emitted.pop_front() else {
            return Err(self.mismatch(line, MismatchKind::MissingFrame, format!("{want:?}"), "nothing written"));
        };
        let got = match emitted.frame {
            EmittedFrame::Request(got) => got,
            other => {
                return Err(self.mismatch(line, MismatchKind::Frame, format!("{want:?}"), format!("{other:?}")));
            }
        };
        if got.header.op != want.header.op || normalize(&got.request) != normalize(&want.request) {
            return Err(self.mismatch(line, MismatchKind::Frame, format!("{want:?}"), format!("{got:?}")));
        }
        if from_handshake && !emitted.during_handshake {
            return Err(self.mismatch(
                line,
                MismatchKind::Frame,
                format!("{} written by the session while handling the ConnectResponse", want.header.op),
                format!("written at {} after it", emitted.at),
            ));
        }
        let (trace_xid, xid) = (want.header.xid, got.header.xid);
        if mapped(trace_xid) {
            if !xid.is_ordinary() {
                return Err(self.mismatch(line, MismatchKind::Xid, "an ordinary xid", xid.to_string()));
            }
            self.xids.insert(trace_xid.0, xid.0);
        } else if trace_xid != xid {
            return Err(self.mismatch(line, MismatchKind::Xid, trace_xid.to_string(), xid.to_string()));
        }
        self.matched();
        Ok(xid.0)
    }

    fn server_frames(&mut self, frames: Vec<(Frame, DecodedFrame)>) -> Result<(), ReplayError> {
        let Some((first, _)) = frames.first() else {
            return Ok(());
        };
        let (first_line, t_us) = (first.line, first.t_us);
        self.line = first_line;
        let t = self.time_of(t_us);
        self.advance_to(t)?;
        if !self.conn.as_ref().is_some_and(|c| c.open) {
            return Err(self.mismatch(
                first_line,
                MismatchKind::Close,
                "the connection open to receive the server's frame",
                "the session has closed it",
            ));
        }
        let mut bytes = BytesMut::new();
        let mut handshake = None;
        let mut removals = Vec::new();
        for (frame, decoded) in &frames {
            let payload = match decoded {
                DecodedFrame::ConnectResponse(r) => {
                    handshake = Some((frame.line, r.clone()));
                    frame.payload.to_vec()
                }
                DecodedFrame::Server { message, .. } => self.expect_server(frame, message, &mut removals)?,
                other => return Err(self.unsupported(frame.line, format!("server frame decoded as {other:?}"))),
            };
            bytes.put_u32(u32::try_from(payload.len()).unwrap_or(u32::MAX));
            bytes.extend_from_slice(&payload);
        }
        let log_from = self.report.events.len();
        self.during_handshake = handshake.is_some();
        let fed = self.feed(first_line, &bytes);
        self.during_handshake = false;
        fed?;
        if let Some(e) = self.expected.front() {
            let (line, expected) = (e.line, format!("{:?}", e.event));
            return Err(self.mismatch(line, MismatchKind::Reply, expected, "no such event"));
        }
        for (path, kinds) in removals {
            for kind in kinds {
                self.session.remove_watch(&path, kind, self.config.watcher);
                self.watches.remove(&(path.clone(), kind));
            }
        }
        if let Some((line, response)) = handshake {
            self.check_handshake(line, response, log_from)?;
        }
        Ok(())
    }

    /// Queues what the session must report for one recorded server message,
    /// updates the harness's watch model, and returns the payload with the
    /// session's xid.
    fn expect_server(
        &mut self,
        frame: &Frame,
        message: &ServerMessage,
        removals: &mut Vec<(String, Vec<WatchKind>)>,
    ) -> Result<Vec<u8>, ReplayError> {
        let mut payload = frame.payload.to_vec();
        match message {
            ServerMessage::Notification { event, .. } => {
                let kinds = fired_kinds(event.event_type);
                let mut fired = false;
                for kind in kinds {
                    fired |= self.watches.remove(&(event.path.clone(), *kind));
                }
                if fired {
                    let event = WatchEvent { event_type: event.event_type, path: event.path.clone() };
                    let event = SessionEvent::Watch { watcher: self.config.watcher, event };
                    self.expected.push_back(Expected { line: frame.line, event });
                }
            }
            ServerMessage::Reply { header, response } => {
                if !mapped(header.xid) {
                    return Ok(payload);
                }
                let Some(&xid) = self.xids.get(&header.xid.0) else {
                    return Err(self.mismatch(
                        frame.line,
                        MismatchKind::Xid,
                        format!("a request with recorded xid {} written by the session", header.xid),
                        "none",
                    ));
                };
                if let Some(head) = payload.get_mut(..4) {
                    head.copy_from_slice(&xid.to_be_bytes());
                }
                if header.zxid > 0 {
                    self.max_zxid = self.max_zxid.max(header.zxid);
                }
                if let Some(app) = self.pending.remove(&xid) {
                    self.track_watches(&app.request, header.err, removals);
                    let result = match response {
                        Some(r) if header.err.is_ok() => Ok(r.clone()),
                        _ => Err(RequestError::Server(header.err)),
                    };
                    self.expected
                        .push_back(Expected { line: frame.line, event: SessionEvent::Reply { id: app.id, result } });
                }
            }
        }
        Ok(payload)
    }

    /// The watch a successful read leaves, or the local removal a successful
    /// checkWatches leads to.
    fn track_watches(&mut self, request: &Request, err: ErrorCode, removals: &mut Vec<(String, Vec<WatchKind>)>) {
        let armed = match (request, err) {
            (Request::GetData(r), ErrorCode::OK) if r.watch => Some((&r.path, WatchKind::Data)),
            (Request::Exists(r), ErrorCode::OK) if r.watch => Some((&r.path, WatchKind::Data)),
            (Request::Exists(r), ErrorCode::NO_NODE) if r.watch => Some((&r.path, WatchKind::Exist)),
            (Request::GetChildren(r) | Request::GetChildren2(r), ErrorCode::OK) if r.watch => {
                Some((&r.path, WatchKind::Child))
            }
            _ => None,
        };
        if let Some((path, kind)) = armed {
            self.watches.insert((path.clone(), kind));
        }
        if let (Request::CheckWatches(r), ErrorCode::OK) = (request, err) {
            let kinds = match r.watcher_type {
                WatcherType::CHILDREN => vec![WatchKind::Child],
                WatcherType::DATA => vec![WatchKind::Data, WatchKind::Exist],
                WatcherType::ANY => vec![WatchKind::Data, WatchKind::Exist, WatchKind::Child],
                _ => Vec::new(),
            };
            removals.push((r.path.clone(), kinds));
        }
    }

    fn check_handshake(&mut self, line: usize, response: ConnectResponse, log_from: usize) -> Result<(), ReplayError> {
        let states: Vec<ConnectionState> = self
            .report
            .events
            .get(log_from..)
            .unwrap_or_default()
            .iter()
            .filter_map(|e| match e.event {
                SessionEvent::State(s) => Some(s),
                _ => None,
            })
            .collect();
        let expired = response.is_expired();
        let want_state = if expired {
            ConnectionState::Lost
        } else if response.read_only == Some(true) {
            ConnectionState::ConnectedReadOnly
        } else if self.last_handshake.is_some() {
            ConnectionState::Reconnected
        } else {
            ConnectionState::Connected
        };
        if states != [want_state] {
            return Err(self.mismatch(
                line,
                MismatchKind::Handshake,
                format!("[{want_state:?}]"),
                format!("{states:?}"),
            ));
        }
        let session = &self.session;
        if expired {
            let closed = self.conn.as_ref().is_some_and(|c| !c.open && c.report.closed_by_session);
            if session.status() != SessionStatus::Expired || session.poll_timeout().is_some() || !closed {
                let got = format!(
                    "status {:?}, poll_timeout {:?}, socket closed by the session: {closed}",
                    session.status(),
                    session.poll_timeout()
                );
                return Err(self.mismatch(
                    line,
                    MismatchKind::Handshake,
                    "status Expired, no timer, IoCommand::Close",
                    got,
                ));
            }
        } else {
            let timeout = Duration::from_millis(u64::try_from(response.timeout_ms).unwrap_or(0));
            if session.status() != SessionStatus::Connected
                || session.session_id() != response.session_id
                || session.negotiated_timeout() != Some(timeout)
            {
                let want = format!("Connected, session {:#x}, timeout {timeout:?}", response.session_id);
                let got = format!(
                    "{:?}, session {:#x}, timeout {:?}",
                    session.status(),
                    session.session_id(),
                    session.negotiated_timeout()
                );
                return Err(self.mismatch(line, MismatchKind::Handshake, want, got));
            }
            self.last_handshake = Some(response.clone());
        }
        if let Some(conn) = &mut self.conn {
            conn.handshake_done = !expired;
            conn.report.handshake = Some(response);
        }
        Ok(())
    }

    fn close_event(&mut self, close: &Close) -> Result<(), ReplayError> {
        self.line = close.line;
        let t = self.time_of(close.t_us);
        let tolerance = self.config.close_tolerance;
        let by_client = close.by == ClosedBy::Client;
        let open = self.conn.as_ref().is_some_and(|c| c.open);
        if open && by_client {
            self.advance_to(t + tolerance)?;
            if self.conn.as_ref().is_some_and(|c| c.open) {
                return Err(self.mismatch(
                    close.line,
                    MismatchKind::Close,
                    format!("the session to close the connection by {} (recorded client close)", t + tolerance),
                    "still open",
                ));
            }
        } else if open {
            self.advance_to(t)?;
            if self.conn.as_ref().is_some_and(|c| c.open) {
                self.session.handle_disconnected(self.now);
                if let Some(conn) = &mut self.conn {
                    conn.open = false;
                    conn.report.closed_at = Some(self.now);
                }
                self.settle()?;
            }
        }
        let closed = self.conn.as_ref().and_then(|c| c.report.closed_at.filter(|_| c.report.closed_by_session));
        if let (true, Some(at)) = (by_client, closed) {
            if at + tolerance < t {
                return Err(self.mismatch(
                    close.line,
                    MismatchKind::Close,
                    format!("the session to close the connection around {t}"),
                    format!("closed at {at}"),
                ));
            }
        }
        Ok(())
    }

    // ---- mechanism ----------------------------------------------------------------

    fn time_of(&self, t_us: u64) -> Instant {
        let base = self.conn.as_ref().map_or(self.now, |c| c.report.base);
        (base + Duration::from_micros(t_us)).max(self.now)
    }

    /// Runs every timer due up to `target`, then sets the clock to it.
    fn advance_to(&mut self, target: Instant) -> Result<(), ReplayError> {
        for _ in 0..100_000 {
            match self.session.poll_timeout() {
                Some(due) if due <= target => {
                    self.now = self.now.max(due);
                    self.session.handle_timeout(self.now);
                    self.settle()?;
                }
                _ => {
                    self.now = self.now.max(target);
                    return Ok(());
                }
            }
        }
        Err(self.mismatch(self.line, MismatchKind::Timer, "timers that settle", "more than 100000 timer firings"))
    }

    /// Feeds recorded server bytes at the current time, then answers the
    /// pings written meanwhile.
    fn feed(&mut self, line: usize, bytes: &[u8]) -> Result<(), ReplayError> {
        let undelivered = self.push_bytes(line, bytes)?;
        if undelivered > 0 {
            return Err(self.mismatch(
                line,
                MismatchKind::Close,
                "the connection open for the rest of the server's frames",
                format!("closed by the session with {undelivered} bytes still to deliver"),
            ));
        }
        if let Some(conn) = &self.conn {
            if !conn.inbound.is_empty() {
                let got = format!("{} bytes left in the buffer", conn.inbound.len());
                return Err(self.mismatch(line, MismatchKind::Leftover, "every fed byte consumed", got));
            }
        }
        self.answer_pings()
    }

    /// Hands `bytes` to [`Session::handle_bytes`], whole or in random pieces,
    /// draining after each; stops when the connection closes and returns how
    /// many bytes were left undelivered.
    fn push_bytes(&mut self, line: usize, bytes: &[u8]) -> Result<usize, ReplayError> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let n = self.chunk_len(rest.len());
            let Some(conn) = self.conn.as_mut().filter(|c| c.open) else {
                return Ok(rest.len());
            };
            let (chunk, tail) = rest.split_at(n);
            rest = tail;
            conn.inbound.extend_from_slice(chunk);
            conn.report.last_received_at = Some(self.now);
            let result = self.session.handle_bytes(self.now, &mut conn.inbound);
            self.drain()?;
            result.map_err(|source| ReplayError::Session { at: self.at(line), source })?;
        }
        Ok(0)
    }

    fn chunk_len(&mut self, remaining: usize) -> usize {
        let Some(rng) = &mut self.chunk_rng else {
            return remaining;
        };
        let r = rng.next_u64();
        let upto = |n: u64| usize::try_from(1 + (r >> 8) % n).unwrap_or(1);
        let n = match r % 4 {
            0 => 1,
            1 => upto(LEN_PREFIX as u64),
            2 => upto(24),
            _ => upto(u64::try_from(remaining).unwrap_or(u64::MAX)),
        };
        n.clamp(1, remaining)
    }

    /// Drains every output, then answers the pings it found.
    fn settle(&mut self) -> Result<(), ReplayError> {
        self.drain()?;
        self.answer_pings()
    }

    fn answer_pings(&mut self) -> Result<(), ReplayError> {
        while self.pings_due > 0 {
            self.pings_due -= 1;
            let header = ReplyHeader { xid: Xid::PING, zxid: self.max_zxid, err: ErrorCode::OK };
            let mut bytes = BytesMut::new();
            bytes.put_u32(u32::try_from(ReplyHeader::LEN).unwrap_or(16));
            header.encode(&mut bytes);
            if let Some(conn) = &mut self.conn {
                conn.report.pings_answered += 1;
            }
            self.push_bytes(self.line, &bytes)?;
        }
        Ok(())
    }

    /// Takes every output of the session: transport commands, written frames
    /// and events, checking each as it comes.
    fn drain(&mut self) -> Result<(), ReplayError> {
        while let Some(io) = self.session.poll_io() {
            match io {
                IoCommand::Connect { .. } => {
                    if self.dialing || self.conn.as_ref().is_some_and(|c| c.open) {
                        return Err(self.mismatch(
                            self.line,
                            MismatchKind::Connect,
                            "a Connect only when no socket is open",
                            "a second Connect",
                        ));
                    }
                    self.dialing = true;
                }
                IoCommand::Close => match &mut self.conn {
                    Some(conn) if conn.open => {
                        conn.open = false;
                        conn.report.closed_at = Some(self.now);
                        conn.report.closed_by_session = true;
                    }
                    _ => self.dialing = false,
                },
                other => {
                    let got = format!("{other:?}");
                    return Err(self.mismatch(self.line, MismatchKind::Connect, "Connect or Close", got));
                }
            }
        }
        let mut written = BytesMut::new();
        let n = self.session.poll_transmit(&mut written);
        if n > 0 {
            self.take_frames(&written)?;
        }
        while let Some(event) = self.session.poll_event() {
            self.check_event(&event)?;
            let connection = self.conn.as_ref().map(|c| c.index);
            self.report.events.push(LoggedEvent { at: self.now, connection, event });
        }
        Ok(())
    }

    fn take_frames(&mut self, written: &[u8]) -> Result<(), ReplayError> {
        let line = self.line;
        let previous_write = self.last_write.replace(self.now);
        let timeout = self.session.negotiated_timeout();
        let Some(conn) = &mut self.conn else {
            return Err(self.mismatch(line, MismatchKind::UnexpectedFrame, "no bytes outside a connection", "bytes"));
        };
        if !conn.open {
            return Err(self.mismatch(
                line,
                MismatchKind::UnexpectedFrame,
                "no bytes without an open connection",
                format!("{} bytes", written.len()),
            ));
        }
        conn.outbound.extend_from_slice(written);
        let mut frames = Vec::new();
        let mut bad_framing = None;
        loop {
            match self.decoder.decode(&mut conn.outbound) {
                Ok(Some(frame)) => {
                    let first = !conn.connect_request_seen;
                    conn.connect_request_seen = true;
                    frames.push((first, frame));
                }
                Ok(None) => break,
                Err(e) => {
                    bad_framing = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = bad_framing {
            return Err(self.mismatch(line, MismatchKind::Frame, "a well-framed stream", e.to_string()));
        }
        for (first, payload) in frames {
            let frame = if first {
                ConnectRequest::decode(&payload).map(EmittedFrame::Connect)
            } else {
                RequestFrame::decode(&payload).map(EmittedFrame::Request)
            };
            let frame = frame.map_err(|e| {
                self.mismatch(line, MismatchKind::Frame, "a frame that decodes", format!("{e} in {payload:02x?}"))
            })?;
            if let EmittedFrame::Request(r) = &frame {
                if r.header.op == OpCode::PING {
                    self.ping(line, previous_write, timeout)?;
                    continue;
                }
            }
            self.emitted.push_back(Emitted { at: self.now, during_handshake: self.during_handshake, frame });
        }
        Ok(())
    }

    fn ping(&mut self, line: usize, previous: Option<Instant>, timeout: Option<Duration>) -> Result<(), ReplayError> {
        let min_gap = timeout.map_or(Duration::ZERO, |t| t / 3);
        if let Some(previous) = previous {
            if self.now - previous < min_gap {
                return Err(self.mismatch(
                    line,
                    MismatchKind::Ping,
                    format!("a ping only after {min_gap:?} without writing"),
                    format!("a ping {:?} after the previous write", self.now - previous),
                ));
            }
        }
        let now = self.now;
        let Some(conn) = &mut self.conn else {
            return Ok(());
        };
        conn.report.pings_sent += 1;
        let link_up = conn.open && conn.handshake_done && conn.link_down_after.is_none_or(|down| now <= down);
        if link_up {
            self.pings_due += 1;
        }
        Ok(())
    }

    fn check_event(&mut self, event: &SessionEvent) -> Result<(), ReplayError> {
        let line = self.line;
        match event {
            SessionEvent::State(_) => Ok(()),
            SessionEvent::Reply { id, result } => {
                if !self.outstanding.remove(id) {
                    return Err(self.mismatch(
                        line,
                        MismatchKind::Reply,
                        "one reply per request",
                        format!("{event:?}"),
                    ));
                }
                let from_server = matches!(result, Ok(_) | Err(RequestError::Server(_)));
                if !from_server {
                    // The session's own verdict (connection loss, expiry,
                    // close): logged for the caller to judge.
                    self.expected.retain(|e| !matches!(&e.event, SessionEvent::Reply { id: want, .. } if want == id));
                    return Ok(());
                }
                self.expect_next(line, event)
            }
            SessionEvent::Watch { .. } => self.expect_next(line, event),
            other => Err(self.mismatch(line, MismatchKind::Reply, "a known event", format!("{other:?}"))),
        }
    }

    fn expect_next(&mut self, line: usize, event: &SessionEvent) -> Result<(), ReplayError> {
        let kind = if matches!(event, SessionEvent::Watch { .. }) { MismatchKind::Watch } else { MismatchKind::Reply };
        match self.expected.pop_front() {
            Some(want) if want.event == *event => Ok(()),
            Some(want) => Err(self.mismatch(want.line, kind, format!("{:?}", want.event), format!("{event:?}"))),
            None => Err(self.mismatch(line, kind, "no such event", format!("{event:?}"))),
        }
    }

    fn matched(&mut self) {
        if let Some(conn) = &mut self.conn {
            conn.report.frames_matched += 1;
        }
    }

    fn at(&self, line: usize) -> Location {
        let file = self.conn.as_ref().map(|c| c.file.clone()).unwrap_or_default();
        Location { file, line }
    }

    fn mismatch(
        &self,
        line: usize,
        kind: MismatchKind,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) -> ReplayError {
        ReplayError::Mismatch { at: self.at(line), kind, expected: expected.into(), got: got.into() }
    }

    fn unsupported(&self, line: usize, reason: String) -> ReplayError {
        ReplayError::Unsupported { at: self.at(line), reason }
    }
}

/// One unit of replay work.
#[derive(Debug)]
enum Step {
    /// A client frame (pings excluded).
    Client(Frame, DecodedFrame),
    /// Server frames fed together: same timestamp, consecutive, delivered.
    Server(Vec<(Frame, DecodedFrame)>),
    /// The close event.
    Close(Close),
}

/// Decodes `trace` and groups it into steps; pings, ping replies and dropped
/// server frames are left out.
fn plan(trace: &Trace) -> Result<Vec<Step>, ReplayError> {
    let mut decoder = StreamDecoder::new();
    let mut steps: Vec<Step> = Vec::new();
    // Whether the last step may take more server frames.
    let mut open_group = false;
    for entry in &trace.entries {
        match entry {
            Entry::Frame(frame) => {
                let decoded = decoder.decode(frame.dir, &frame.payload).map_err(|error| TraceDecodeError::Frame {
                    path: trace.path.clone(),
                    line: frame.line,
                    dir: frame.dir,
                    error,
                })?;
                let ping = match &decoded {
                    DecodedFrame::Request(r) => r.header.op == OpCode::PING,
                    DecodedFrame::Server { message, .. } => message.header().xid == Xid::PING,
                    _ => false,
                };
                if ping || (frame.dir == Direction::S2c && frame.dropped) {
                    continue;
                }
                match frame.dir {
                    Direction::C2s => {
                        open_group = false;
                        steps.push(Step::Client(frame.clone(), decoded));
                    }
                    Direction::S2c => {
                        let handshake = matches!(decoded, DecodedFrame::ConnectResponse(_));
                        // A checkWatches reply ends its group: the client
                        // forgets the watch before it reads the next frame.
                        let ends_group =
                            matches!(&decoded, DecodedFrame::Server { reply_to: Some(OpCode::CHECK_WATCHES), .. });
                        let joined = match steps.last_mut() {
                            Some(Step::Server(group))
                                if open_group
                                    && !handshake
                                    && group.first().is_some_and(|(f, _)| f.t_us == frame.t_us) =>
                            {
                                group.push((frame.clone(), decoded.clone()));
                                true
                            }
                            _ => false,
                        };
                        if !joined {
                            steps.push(Step::Server(vec![(frame.clone(), decoded)]));
                        }
                        open_group = !handshake && !ends_group;
                    }
                }
            }
            Entry::Close(close) => {
                open_group = false;
                steps.push(Step::Close(close.clone()));
            }
            Entry::Raw(raw) => {
                return Err(ReplayError::Unsupported {
                    at: Location { file: trace.path.clone(), line: raw.line },
                    reason: String::from("raw (unframed) chunk"),
                });
            }
            Entry::Other { .. } => {}
        }
    }
    Ok(steps)
}

/// In a trace with dropped frames: `t_us` of the last frame forwarded before
/// the first dropped one (0 if none was).
pub(crate) fn blackhole_start(trace: &Trace) -> Option<u64> {
    let mut last = 0;
    for frame in trace.frames() {
        if frame.dropped {
            return Some(last);
        }
        last = frame.t_us;
    }
    None
}

/// Xids that are mapped between trace and session: all but the fixed ones.
fn mapped(xid: Xid) -> bool {
    !matches!(xid, Xid::NOTIFICATION | Xid::PING | Xid::AUTH)
}

/// The watch kinds an event triggers, as ZooKeeper's client watch manager.
fn fired_kinds(event_type: EventType) -> &'static [WatchKind] {
    match event_type {
        EventType::NODE_CREATED | EventType::NODE_DATA_CHANGED => &[WatchKind::Data, WatchKind::Exist],
        EventType::NODE_CHILDREN_CHANGED => &[WatchKind::Child],
        EventType::NODE_DELETED => &[WatchKind::Data, WatchKind::Exist, WatchKind::Child],
        _ => &[],
    }
}

/// The request with setWatches path lists sorted (they are sets).
fn normalize(request: &Request) -> Request {
    let mut request = request.clone();
    match &mut request {
        Request::SetWatches(w) => {
            w.data_watches.sort();
            w.exist_watches.sort();
            w.child_watches.sort();
        }
        Request::SetWatches2(w) => {
            w.data_watches.sort();
            w.exist_watches.sort();
            w.child_watches.sort();
            w.persistent_watches.sort();
            w.persistent_recursive_watches.sort();
        }
        _ => {}
    }
    request
}

/// Loads the given files of one session, in order.
pub fn load_session(files: &[impl AsRef<Path>]) -> Result<Vec<Trace>, ReplayError> {
    files.iter().map(|f| Trace::load(f).map_err(ReplayError::from)).collect()
}
