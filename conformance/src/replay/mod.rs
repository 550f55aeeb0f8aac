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
//!
//! [`IoCommand::Connect`]: zoolock_core::IoCommand::Connect
//! [`IoCommand::Close`]: zoolock_core::IoCommand::Close

mod error;
pub(crate) mod harness;
mod plan;
mod report;

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use zoolock_core::{
    ConnectString, ConnectionState, Instant, Op, RequestError, RequestId, Session, SessionConfig, SessionEvent,
    SessionStatus, WatchEvent, WatchKind, WatcherId,
};
use zoolock_wire::{
    ConnectRequest, ConnectResponse, ErrorCode, EventType, OpCode, Request, RequestFrame, ServerMessage, WatcherType,
    Xid,
};

pub use error::{Location, MismatchKind, ReplayError};
pub use harness::Chunking;
use harness::{Rules, Wire, WrittenFrame, describe};
pub(crate) use plan::blackhole_start;
use plan::{Step, plan};
pub use report::{ConnectionReport, LoggedEvent, ReplayConfig, ReplayReport, Submitted};

use crate::decode::DecodedFrame;
use crate::trace::{Direction, Frame, Trace};

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

/// What the session replay checks of every event: one reply per request,
/// each server reply and watch event in the order the trace calls for.
#[derive(Debug)]
struct EventRules {
    expected: VecDeque<Expected>,
    outstanding: HashSet<RequestId>,
    report: ReplayReport,
}

impl Rules<Session> for EventRules {
    fn event(&mut self, wire: &Wire<Session>, event: SessionEvent) -> Result<(), ReplayError> {
        match &event {
            SessionEvent::State(_) => {}
            SessionEvent::Reply { id, result } => {
                if !self.outstanding.remove(id) {
                    return Err(wire.mismatch(MismatchKind::Reply, "one reply per request", format!("{event:?}")));
                }
                if matches!(result, Ok(_) | Err(RequestError::Server(_))) {
                    self.expect_next(wire, &event)?;
                } else {
                    // The session's own verdict (connection loss, expiry,
                    // close): logged for the caller to judge.
                    self.expected.retain(|e| !matches!(&e.event, SessionEvent::Reply { id: want, .. } if want == id));
                }
            }
            SessionEvent::Watch { .. } => self.expect_next(wire, &event)?,
            other => return Err(wire.mismatch(MismatchKind::Reply, "a known event", format!("{other:?}"))),
        }
        let connection = wire.link.as_ref().map(|l| l.index);
        self.report.events.push(LoggedEvent { at: wire.now, connection, event });
        Ok(())
    }
}

impl EventRules {
    fn expect_next(&mut self, wire: &Wire<Session>, event: &SessionEvent) -> Result<(), ReplayError> {
        let kind = if matches!(event, SessionEvent::Watch { .. }) { MismatchKind::Watch } else { MismatchKind::Reply };
        match self.expected.pop_front() {
            Some(want) if want.event == *event => Ok(()),
            Some(want) => Err(wire.mismatch_at(want.line, kind, format!("{:?}", want.event), format!("{event:?}"))),
            None => Err(wire.mismatch(kind, "no such event", format!("{event:?}"))),
        }
    }

    /// An event queued that the session never reported.
    fn missing(&self, wire: &Wire<Session>) -> Result<(), ReplayError> {
        match self.expected.front() {
            Some(e) => Err(wire.mismatch_at(e.line, MismatchKind::Reply, format!("{:?}", e.event), "no such event")),
            None => Ok(()),
        }
    }
}

/// One session driven through recorded connections. See the module docs.
#[derive(Debug)]
pub struct SessionReplay {
    config: ReplayConfig,
    wire: Wire<Session>,
    rules: EventRules,
    /// Recorded xid → the session's, for this replay's ordinary requests.
    xids: HashMap<i32, i32>,
    pending: HashMap<i32, PendingApp>,
    watches: BTreeSet<(String, WatchKind)>,
    /// Recording start of the previous connection file.
    prev_t0_unix_us: Option<u64>,
    /// The current connection's ConnectResponse, once fed.
    last_response: Option<ConnectResponse>,
    last_handshake: Option<ConnectResponse>,
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
        Ok(SessionReplay {
            wire: Wire::new(Some(session), config.start, config.chunking),
            config,
            rules: EventRules {
                expected: VecDeque::new(),
                outstanding: HashSet::new(),
                report: ReplayReport {
                    events: Vec::new(),
                    connections: Vec::new(),
                    submitted: Vec::new(),
                    unanswered: Vec::new(),
                },
            },
            xids: HashMap::new(),
            pending: HashMap::new(),
            watches: BTreeSet::new(),
            prev_t0_unix_us: None,
            last_response: None,
            last_handshake: None,
        })
    }

    /// The session under test.
    pub fn session(&self) -> &Session {
        // The replay creates its session up front and never removes it.
        self.wire.machine().unwrap_or_else(|| unreachable!("the session replay always has its session"))
    }

    fn session_mut(&mut self) -> &mut Session {
        self.wire.machine_mut().unwrap_or_else(|| unreachable!("the session replay always has its session"))
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.wire.now
    }

    /// Everything reported so far.
    pub fn report(&self) -> &ReplayReport {
        &self.rules.report
    }

    /// The highest zxid of an ordinary reply fed so far.
    pub fn max_reply_zxid(&self) -> i64 {
        self.wire.max_zxid
    }

    /// Submits `op` now, outside the trace (to check how the session treats a
    /// request across a disconnect, say). A frame it causes must still match
    /// the trace.
    pub fn submit(&mut self, op: Op, watcher: Option<WatcherId>) -> Result<RequestId, ReplayError> {
        self.wire.at.line = 0;
        self.submit_op(op, watcher)
    }

    fn submit_op(&mut self, op: Op, watcher: Option<WatcherId>) -> Result<RequestId, ReplayError> {
        let code = op.op_code();
        let now = self.wire.now;
        let id = self
            .session_mut()
            .submit(now, op, watcher)
            .map_err(|source| ReplayError::Submit { at: self.wire.at.clone(), source })?;
        self.rules.outstanding.insert(id);
        self.rules.report.submitted.push(Submitted { id, at: self.wire.at.clone(), op: code });
        self.wire.settle(&mut self.rules)?;
        Ok(id)
    }

    /// Runs the session's timers up to `until` with no server reachable:
    /// every connect attempt is refused at once with
    /// [`Session::handle_disconnected`].
    pub fn advance_offline(&mut self, until: Instant) -> Result<(), ReplayError> {
        self.wire.advance_offline(until, &mut self.rules)
    }

    /// Replays one connection file of this session.
    pub fn replay_connection(&mut self, trace: &Trace) -> Result<ConnectionReport, ReplayError> {
        let steps = plan(trace)?;
        self.start_connection(trace)?;
        for step in steps {
            match step {
                Step::Client(frame, decoded) => self.client_frame(&frame, decoded)?,
                Step::Server(frames) => self.server_frames(frames)?,
                Step::Close(close) => {
                    self.wire.at.line = close.line;
                    let t = self.time_of(close.t_us);
                    self.wire.close(&close, t, self.config.close_tolerance, &mut self.rules)?;
                }
            }
        }
        let link = self.wire.end_link(&mut self.rules)?;
        let report = ConnectionReport {
            file: link.file.clone(),
            base: link.base,
            connected_at: link.connected_at,
            handshake: self.last_response.take(),
            last_received_at: link.last_received_at,
            closed_at: link.closed_at,
            closed_by_session: link.closed_by_session,
            frames_matched: link.frames_matched,
            pings_sent: link.pings_sent,
            pings_answered: link.pings_answered,
        };
        self.rules.report.connections.push(report.clone());
        Ok(report)
    }

    /// Checks that nothing is left over and returns the report.
    pub fn finish(mut self) -> Result<ReplayReport, ReplayError> {
        self.wire.settle(&mut self.rules)?;
        self.wire.at.line = 0;
        if let Some(w) = self.wire.unmatched() {
            return Err(self.wire.mismatch(MismatchKind::UnexpectedFrame, "nothing more", describe(w)));
        }
        self.rules.missing(&self.wire)?;
        let mut unanswered: Vec<RequestId> = self.rules.outstanding.iter().copied().collect();
        unanswered.sort();
        if self.session().is_ended() && !unanswered.is_empty() {
            return Err(self.wire.mismatch(
                MismatchKind::Reply,
                "a reply for every request once the session has ended",
                format!("no reply for {unanswered:?}"),
            ));
        }
        self.rules.report.unanswered = unanswered;
        Ok(self.rules.report)
    }

    // ---- connections ---------------------------------------------------------------

    fn start_connection(&mut self, trace: &Trace) -> Result<(), ReplayError> {
        let now = self.wire.now;
        let target = match (self.wire.link.as_ref(), self.prev_t0_unix_us, trace.header.t0_unix_us) {
            (Some(prev), Some(prev_t0), Some(t0)) if self.config.follow_recorded_gaps => {
                prev.base + Duration::from_micros(t0.saturating_sub(prev_t0))
            }
            _ => now,
        };
        let index = self.rules.report.connections.len();
        self.wire.open_link(index, trace.path.clone(), now)?;
        self.prev_t0_unix_us = trace.header.t0_unix_us;
        self.wire.advance_to(target, &mut self.rules)?;
        if !self.wire.advance_until(None, &mut self.rules, |w, _| w.dialing)? {
            let got = format!("no connect attempt (status {:?})", self.session().status());
            return Err(self.wire.mismatch(MismatchKind::Connect, "the session to dial for this connection", got));
        }
        let base = self.wire.now;
        if let Some(link) = &mut self.wire.link {
            link.base = base;
            link.link_down_after = blackhole_start(trace).map(|t| base + Duration::from_micros(t));
        }
        Ok(())
    }

    // ---- trace entries -------------------------------------------------------------

    fn client_frame(&mut self, frame: &Frame, decoded: DecodedFrame) -> Result<(), ReplayError> {
        self.wire.at.line = frame.line;
        let t = self.time_of(frame.t_us);
        self.wire.advance_to(t, &mut self.rules)?;
        match decoded {
            DecodedFrame::ConnectRequest(want) => self.connect_request(&want),
            DecodedFrame::Request(want) => {
                let op = want.header.op;
                if op == OpCode::CLOSE_SESSION {
                    let now = self.wire.now;
                    self.session_mut().close(now);
                    self.wire.settle(&mut self.rules)?;
                    self.match_request(&want, false).map(|_| ())
                } else if matches!(op, OpCode::SET_WATCHES | OpCode::SET_WATCHES2 | OpCode::AUTH | OpCode::SASL) {
                    self.match_request(&want, op != OpCode::AUTH && op != OpCode::SASL).map(|_| ())
                } else {
                    self.app_request(want)
                }
            }
            other => Err(self.wire.unsupported(format!("client frame decoded as {other:?}"))),
        }
    }

    fn connect_request(&mut self, want: &ConnectRequest) -> Result<(), ReplayError> {
        // A reconnect must resume what the previous handshake granted.
        if want.session_id != 0 {
            let prev = self.last_handshake.as_ref();
            let consistent = prev.is_some_and(|p| p.session_id == want.session_id && p.passwd == want.passwd);
            if !consistent {
                return Err(self.wire.unsupported(format!(
                    "ConnectRequest resumes session {:#x}, but the previous handshake of this replay granted {:?}",
                    want.session_id,
                    prev.map(|p| p.session_id)
                )));
            }
            if want.last_zxid_seen != self.wire.max_zxid {
                return Err(self.wire.unsupported(format!(
                    "recorded lastZxidSeen {} but the highest reply zxid fed so far is {}",
                    want.last_zxid_seen, self.wire.max_zxid
                )));
            }
        }
        self.wire.connect(want, &mut self.rules)
    }

    fn app_request(&mut self, want: RequestFrame) -> Result<(), ReplayError> {
        let op = Op::from_request(want.request.clone())
            .map_err(|source| ReplayError::Submit { at: self.wire.at.clone(), source })?;
        self.submit_op(op, Some(self.config.watcher))?;
        let id = self.rules.report.submitted.last().map(|s| s.id);
        let xid = self.match_request(&want, false)?;
        if let Some(id) = id {
            self.pending.insert(xid, PendingApp { id, request: want.request });
        }
        Ok(())
    }

    /// Pops the next written frame and compares it with `want`; returns the
    /// session's xid. `from_handshake`: it must have been written while the
    /// ConnectResponse was handled.
    fn match_request(&mut self, want: &RequestFrame, from_handshake: bool) -> Result<i32, ReplayError> {
        let Some(written) = self.wire.pop_written() else {
            return Err(self.wire.mismatch(MismatchKind::MissingFrame, format!("{want:?}"), "nothing written"));
        };
        let got = match &written.frame {
            WrittenFrame::Request(got, _) => got,
            WrittenFrame::Connect(_) => {
                return Err(self.wire.mismatch(MismatchKind::Frame, format!("{want:?}"), describe(&written)));
            }
        };
        if got.header.op != want.header.op || normalize(&got.request) != normalize(&want.request) {
            return Err(self.wire.mismatch(MismatchKind::Frame, format!("{want:?}"), format!("{got:?}")));
        }
        if from_handshake && !written.during_handshake {
            return Err(self.wire.mismatch(
                MismatchKind::Frame,
                format!("{} written by the session while handling the ConnectResponse", want.header.op),
                format!("written at {} after it", written.at),
            ));
        }
        let (trace_xid, xid) = (want.header.xid, got.header.xid);
        if mapped(trace_xid) {
            if !xid.is_ordinary() {
                return Err(self.wire.mismatch(MismatchKind::Xid, "an ordinary xid", xid.to_string()));
            }
            self.xids.insert(trace_xid.0, xid.0);
        } else if trace_xid != xid {
            return Err(self.wire.mismatch(MismatchKind::Xid, trace_xid.to_string(), xid.to_string()));
        }
        self.wire.matched();
        Ok(xid.0)
    }

    fn server_frames(&mut self, frames: Vec<(Frame, DecodedFrame)>) -> Result<(), ReplayError> {
        let Some((first, _)) = frames.first() else {
            return Ok(());
        };
        let (first_line, t_us) = (first.line, first.t_us);
        self.wire.at.line = first_line;
        let t = self.time_of(t_us);
        self.wire.advance_to(t, &mut self.rules)?;
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
                other => return Err(self.wire.unsupported(format!("server frame decoded as {other:?}"))),
            };
            bytes.put_u32(u32::try_from(payload.len()).unwrap_or(u32::MAX));
            bytes.extend_from_slice(&payload);
        }
        let log_from = self.rules.report.events.len();
        self.wire.feed(&bytes, handshake.is_some(), &mut self.rules)?;
        self.rules.missing(&self.wire)?;
        for (path, kinds) in removals {
            for kind in kinds {
                let watcher = self.config.watcher;
                self.session_mut().remove_watch(&path, kind, watcher);
                self.watches.remove(&(path.clone(), kind));
            }
        }
        if let Some((line, response)) = handshake {
            self.wire.at.line = line;
            self.check_handshake(response, log_from)?;
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
                    self.rules.expected.push_back(Expected { line: frame.line, event });
                }
            }
            ServerMessage::Reply { header, response } => {
                if !mapped(header.xid) {
                    return Ok(payload);
                }
                let Some(&xid) = self.xids.get(&header.xid.0) else {
                    return Err(self.wire.mismatch_at(
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
                    self.wire.max_zxid = self.wire.max_zxid.max(header.zxid);
                }
                if let Some(app) = self.pending.remove(&xid) {
                    self.track_watches(&app.request, header.err, removals);
                    let result = match response {
                        Some(r) if header.err.is_ok() => Ok(r.clone()),
                        _ => Err(RequestError::Server(header.err)),
                    };
                    let event = SessionEvent::Reply { id: app.id, result };
                    self.rules.expected.push_back(Expected { line: frame.line, event });
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

    fn check_handshake(&mut self, response: ConnectResponse, log_from: usize) -> Result<(), ReplayError> {
        let states: Vec<ConnectionState> = self
            .rules
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
            return Err(self.wire.mismatch(
                MismatchKind::Handshake,
                format!("[{want_state:?}]"),
                format!("{states:?}"),
            ));
        }
        let session = self.session();
        if expired {
            let closed = self.wire.link.as_ref().is_some_and(|l| !l.open && l.closed_by_session);
            if session.status() != SessionStatus::Expired || session.poll_timeout().is_some() || !closed {
                let got = format!(
                    "status {:?}, poll_timeout {:?}, socket closed by the session: {closed}",
                    session.status(),
                    session.poll_timeout()
                );
                return Err(self.wire.mismatch(
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
                return Err(self.wire.mismatch(MismatchKind::Handshake, want, got));
            }
            self.wire.ping_gap = timeout / 3;
            self.last_handshake = Some(response.clone());
        }
        if let Some(link) = &mut self.wire.link {
            link.handshake_done = !expired;
        }
        self.last_response = Some(response);
        Ok(())
    }

    fn time_of(&self, t_us: u64) -> Instant {
        let base = self.wire.link.as_ref().map_or(self.wire.now, |l| l.base);
        (base + Duration::from_micros(t_us)).max(self.wire.now)
    }
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
