//! The ZooKeeper session as a sans-IO state machine.
//!
//! Inputs: [`Session::handle_connected`], [`Session::handle_bytes`],
//! [`Session::handle_disconnected`], [`Session::handle_timeout`], and the
//! commands [`Session::submit`], [`Session::add_auth`], [`Session::close`].
//!
//! Outputs, drained in this order after every input: [`Session::poll_io`]
//! (dial or drop the socket), [`Session::poll_transmit`] (bytes to write),
//! [`Session::poll_event`] (state changes, replies, watch notifications), and
//! last [`Session::poll_timeout`], since handling events may queue work.
//! With [`SessionConfig::request_timings`], [`Session::poll_timing`] gives
//! each answered request's send and reply instants (`timing.rs`).
//!
//! Timers follow the Java client, from the negotiated timeout T: a ping after
//! T/3 without sending, the connection declared dead after 2T/3 without
//! receiving, T/hosts per connect attempt, and the session declared lost once
//! T has passed since the disconnect without a successful reconnect.
//!
//! Before the first session, with [`SessionConfig::give_up_unreachable`],
//! a full cycle over the hosts in which every dial failed (the transport
//! called [`Session::handle_disconnected`] before
//! [`Session::handle_connected`]) ends the session with
//! [`ConnectionState::Unreachable`]: nothing answers, and trying until a
//! caller's timeout would only hide the cause. A host that accepts and then
//! stays silent keeps the session trying.
//!
//! A server that breaks the protocol (a reply out of FIFO order, a reply to
//! nothing, an undecodable frame) loses its connection. Once it has done so
//! on [`SessionConfig::max_misbehaving_connections`] connections in a row, or
//! on a connection T or more after the first of the run, with no reply that
//! matched its request in between, the session ends with
//! [`ConnectionState::ServerMisbehaved`]: a handshake that succeeds every
//! time would otherwise keep the client reconnecting forever.
//!
//! With [`SessionConfig::create_chroot`] the chroot's root is kept in place
//! as a Curator namespace is: after the handshake (and SASL) of a new
//! session it is probed and, if missing, created level by level outside the
//! chroot; requests wait for that, and `Connected` is reported once it is
//! there (or the session ends with [`ConnectionState::ChrootUnavailable`]).
//! Later, a create directly under the client's `/` that answers NoNode means
//! the root went (reaped as an empty container, or deleted): the create is
//! held back, the root made again, and the create resent, at most
//! [`ROOT_RETRIES`] times per request; then its NoNode is delivered. If the
//! root cannot be made, the held creates fail with
//! [`RequestError::ChrootUnavailable`] and the session goes on.
//!
//! With [`SessionConfig::follow_ensemble`] the session reads the ensemble's
//! membership (`/zookeeper/config`, outside the chroot) with a watch once
//! per session and dials only its members from then on; a connection to a
//! member that left moves to one that remains, with the same session
//! (`ensemble.rs`, [`Session::update_hosts`]).
//!
//! Watches are re-armed after a reconnect with setWatches (101). The table
//! holds only data, exist and child watches, which every server since 3.0
//! accepts in setWatches, so setWatches2 (105, 3.6+) is never needed and an
//! old server never sees an opcode it would answer with Unimplemented.

mod chroot;
mod config;
mod ensemble;
mod events;
mod inbound;
mod lease;
mod lifecycle;
mod outbound;
mod sasl;
mod timing;
mod watches;

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use bytes::{Bytes, BytesMut};
use zoolock_wire::{
    AuthPacket, ConnectRequest, ConnectResponse, DecodeErrorKind, ErrorCode, FrameDecoder, MultiResult, OpCode,
    PASSWORD_LEN, Request, RequestFrame, RequestHeader, Response, SaslRequest, ServerMessage, SetWatches, Xid,
    encode_frame,
};

pub use config::{ChrootPolicy, DEFAULT_MAX_MISBEHAVING_CONNECTIONS, SessionConfig};
pub use ensemble::EnsembleUpdate;
pub use events::{ConnectionState, HostId, IoCommand, RequestId, SessionEvent, SessionStatus, WatchEvent};
pub use lease::{SessionLease, Suspension};
pub use sasl::{DigestMd5Client, SaslClient, SaslConfig, SaslError, SaslMechanism};
pub use timing::{RequestTiming, TIMINGS_KEPT};
pub use watches::{WatchKind, WatcherId};

use crate::connect_string::HostAddr;
use crate::error::{ApiMisuse, Misbehavior, RequestError, SessionError};
use crate::op::{Op, WatchRead, apply_chroot, to_client_path, to_server_path};
use crate::rng::Rng;
use crate::time::Instant;
use chroot::RootKeeper;
use watches::WatchTable;

/// How many times one create under the client's `/` is held back and
/// resent after the chroot's root was made again (see the module docs).
pub const ROOT_RETRIES: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Closed,
    Expired,
    AuthFailed,
    SaslRequired,
    Sasl(SaslError),
    ServerMisbehaved(SessionError),
    Unreachable,
    ChrootUnavailable(ErrorCode),
}

#[derive(Debug)]
enum Phase {
    /// Waiting to dial at `at`.
    Idle {
        at: Instant,
    },
    /// A Connect command was issued.
    Connecting {
        host: usize,
        deadline: Instant,
    },
    /// ConnectRequest sent; nothing else goes out until the answer.
    Handshaking {
        host: usize,
        deadline: Instant,
    },
    Connected {
        host: usize,
    },
    /// closeSession sent; waiting for its reply.
    Closing {
        deadline: Instant,
    },
    Ended(End),
}

/// A watch a read will leave if it succeeds.
#[derive(Debug)]
struct PendingWatch {
    read: WatchRead,
    path: String,
    watcher: WatcherId,
}

#[derive(Debug)]
enum Purpose {
    User {
        id: RequestId,
        watch: Option<PendingWatch>,
        /// A create under the client's `/` (server paths) and how often it
        /// was resent after the chroot's root was made again. Boxed: rare,
        /// and a request inline would triple the size of every request in
        /// flight (thousands at once when thousands of locks acquire).
        retry: Option<alloc::boxed::Box<(Request, u32)>>,
    },
    /// A step of the chroot's root check (see [`RootKeeper`]).
    Root,
    /// A SASL token (opcode 102).
    Sasl,
    SetWatches,
    /// A quorum confirmation (`sync`, see [`Session::lease`]).
    Confirm,
    /// The membership read (`ensemble.rs`).
    Ensemble,
    Close,
}

#[derive(Debug)]
struct InFlight {
    xid: i32,
    op: OpCode,
    purpose: Purpose,
    /// When it was sent: its answer proves the session alive then.
    sent: Instant,
}

#[derive(Debug)]
struct Queued {
    id: RequestId,
    request: Request,
    watch: Option<PendingWatch>,
    /// Some for a create under the client's `/`: times resent so far.
    retries: Option<u32>,
}

/// Path characters per setWatches request, as the Java client splits them to
/// stay far below `jute.maxbuffer`.
const SET_WATCHES_CHUNK: usize = 128 * 1024;

/// The ZooKeeper session machine: no sockets, no clock, no threads. The
/// caller owns the connection and the time and drives it by this contract
/// (the same for [`crate::Client`], which adds recipes on top; both
/// implement [`crate::Endpoint`], so one loop serves either).
///
/// **Time.** Every `now` is the caller's monotonic clock as an [`Instant`]
/// (nanoseconds since any origin the caller picks), never going backwards.
///
/// **Inputs**, one per thing that happened:
/// - a [`IoCommand::Connect`] from [`Session::poll_io`]: drop any current
///   connection (and the unread bytes kept for it), dial `addr` (TCP, or TLS
///   over it), then call [`Session::handle_connected`] once it is up, or
///   [`Session::handle_disconnected`] if the dial failed. Dialing may take
///   as long as it takes; the session's own connect deadline ends a dial
///   that hangs (it asks for the next host through `poll_io`).
/// - [`IoCommand::Close`]: drop the connection. The session already knows:
///   do not call `handle_disconnected` for it.
/// - bytes read: append them to one receive buffer kept across reads (and
///   cleared on every new connection), then call [`Session::handle_bytes`],
///   which consumes every complete frame and leaves a partial one in place.
///   An error means the server broke the protocol and the session has
///   dropped the connection itself: a `Close` follows; read no more from it.
/// - end of stream, or a read or write error: drop the connection and call
///   [`Session::handle_disconnected`].
/// - the timer: once `now` has reached [`Session::poll_timeout`], call
///   [`Session::handle_timeout`].
/// - a command ([`Session::submit`], [`Session::add_auth`],
///   [`Session::close`]) counts as an input too.
///
/// **Drain order** after every input: [`Session::poll_io`] until `None`
/// (acting on each command at once), then [`Session::poll_transmit`] (write
/// all of it, in order, before the next drain's bytes; with no connection,
/// discard it), then [`Session::poll_event`] until `None`, and last
/// [`Session::poll_timeout`], since handling events may queue work.
///
/// **`poll_timeout`** returns the earliest instant at which
/// `handle_timeout` must be called, or `None` when no timer is running (wait
/// for I/O or a command only). It takes `&self`: it never changes state,
/// never reads a clock and never does I/O, so read it again after every
/// drain rather than caching it. A deadline already past means "call
/// `handle_timeout` now". Calling `handle_timeout` early is harmless (it
/// fires only what is due), but the loop must never sleep or block in a read
/// past the deadline: pings, the dead-connection rule (2T/3 without
/// receiving) and the session expiry run on it.
///
/// The timers follow the Java client (see the module source for the
/// protocol rules: reconnects, chroot keeping, misbehaving servers).
#[derive(Debug)]
pub struct Session {
    config: SessionConfig,
    hosts: Vec<HostAddr>,
    chroot: Option<String>,
    /// Keeps the chroot's root in place ([`SessionConfig::create_chroot`]).
    root: Option<RootKeeper>,
    /// The state to report once the root check of a new session is done.
    announce: Option<ConnectionState>,
    /// Creates under `/` that answered NoNode, waiting for the root.
    parked: VecDeque<Queued>,
    rng: Rng,
    decoder: FrameDecoder,
    phase: Phase,
    /// A connect was issued and not yet closed, so a Close command is owed.
    socket_open: bool,
    next_host: usize,
    failed_in_cycle: usize,
    /// Attempts of this cycle whose dial failed (refused, not resolved, ...).
    unreachable_in_cycle: usize,
    session_id: i64,
    passwd: Bytes,
    negotiated: Option<Duration>,
    read_only: bool,
    last_zxid: i64,
    ever_connected: bool,
    /// A connected state has been reported: later handshakes report
    /// `Reconnected`. (A new session's root check may delay the first.)
    reported: bool,
    disconnected_at: Option<Instant>,
    last_send: Instant,
    last_recv: Instant,
    /// Send times of the pings not answered yet, and of the handshake.
    pings: VecDeque<Instant>,
    handshake_sent: Instant,
    /// See [`Session::confirmed_at`].
    confirmed: Option<Instant>,
    /// The leader's view of the session, and the confirmations (`lease.rs`).
    quorum: lease::QuorumClock,
    /// Why the connection is being dropped, when a rule of this session
    /// drops it; and why the last connection went.
    why_drop: Option<Suspension>,
    suspension: Suspension,
    /// Consecutive connections the server misbehaved on, and when the first
    /// of them did; a matched reply clears both.
    misbehaved: u32,
    misbehaving_since: Option<Instant>,
    next_xid: i32,
    next_request: u64,
    auth: Vec<(String, Bytes)>,
    /// The SASL exchange under way on this connection, and the state to
    /// report once it succeeds. Nothing else goes out until then.
    sasl: Option<(alloc::boxed::Box<dyn SaslMechanism>, ConnectionState)>,
    watches: WatchTable,
    /// Following the membership (`ensemble.rs`) and its last outcome.
    follow: ensemble::Follow,
    ensemble_update: Option<EnsembleUpdate>,
    queued: VecDeque<Queued>,
    in_flight: VecDeque<InFlight>,
    outbound: BytesMut,
    io: VecDeque<IoCommand>,
    events: VecDeque<SessionEvent>,
    timings: timing::Timings,
}

impl Session {
    /// A session that will dial its first (shuffled) host at `now`.
    pub fn new(config: SessionConfig, now: Instant) -> Session {
        let mut rng = Rng::with_seed(config.seed);
        let mut hosts = config.connect_string.hosts().to_vec();
        rng.shuffle(&mut hosts);
        let chroot = config.connect_string.chroot().map(|c| String::from(c.as_str()));
        let root = config.create_chroot.clone().and_then(|policy| Some(RootKeeper::new(chroot.as_deref()?, policy)));
        let follow = if config.follow_ensemble { ensemble::Follow::Owed } else { ensemble::Follow::Off };
        Session {
            decoder: FrameDecoder::new(config.max_frame_len),
            timings: timing::Timings::new(config.request_timings),
            config,
            hosts,
            chroot,
            root,
            announce: None,
            parked: VecDeque::new(),
            rng,
            phase: Phase::Idle { at: now },
            socket_open: false,
            next_host: 0,
            failed_in_cycle: 0,
            unreachable_in_cycle: 0,
            session_id: 0,
            passwd: Bytes::from_static(&[0; PASSWORD_LEN]),
            negotiated: None,
            read_only: false,
            last_zxid: 0,
            ever_connected: false,
            reported: false,
            disconnected_at: None,
            last_send: now,
            last_recv: now,
            pings: VecDeque::new(),
            handshake_sent: now,
            confirmed: None,
            quorum: lease::QuorumClock::default(),
            why_drop: None,
            suspension: Suspension::Disconnected,
            misbehaved: 0,
            misbehaving_since: None,
            next_xid: 1,
            next_request: 0,
            auth: Vec::new(),
            sasl: None,
            watches: WatchTable::default(),
            follow,
            ensemble_update: None,
            queued: VecDeque::new(),
            in_flight: VecDeque::new(),
            outbound: BytesMut::new(),
            io: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    // ---- accessors ------------------------------------------------------------------

    /// Where the session is.
    pub fn status(&self) -> SessionStatus {
        match self.phase {
            Phase::Idle { .. } => SessionStatus::Disconnected,
            Phase::Connecting { .. } => SessionStatus::Connecting,
            Phase::Handshaking { .. } => SessionStatus::Handshaking,
            Phase::Connected { .. } => SessionStatus::Connected,
            Phase::Closing { .. } => SessionStatus::Closing,
            Phase::Ended(End::Closed) => SessionStatus::Closed,
            Phase::Ended(End::Expired) => SessionStatus::Expired,
            Phase::Ended(End::AuthFailed) => SessionStatus::AuthFailed,
            Phase::Ended(End::SaslRequired) => SessionStatus::SaslRequired,
            Phase::Ended(End::Sasl(e)) => SessionStatus::SaslFailed(e),
            Phase::Ended(End::ServerMisbehaved(e)) => SessionStatus::ServerMisbehaved(e),
            Phase::Ended(End::Unreachable) => SessionStatus::Unreachable,
            Phase::Ended(End::ChrootUnavailable(code)) => SessionStatus::ChrootUnavailable(code),
        }
    }

    /// The session id, 0 before the first handshake.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// The negotiated timeout, once a handshake has succeeded.
    pub fn negotiated_timeout(&self) -> Option<Duration> {
        self.negotiated
    }

    /// The highest zxid seen in a reply.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// The host of the current connection, once the handshake succeeded.
    pub fn connected_host(&self) -> Option<HostId> {
        match self.phase {
            Phase::Connected { host } => Some(HostId(host)),
            _ => None,
        }
    }

    /// True when the connected server is read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// True once the session can never serve requests again.
    pub fn is_ended(&self) -> bool {
        matches!(self.phase, Phase::Ended(_))
    }

    /// Requests sent and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    fn timeout(&self) -> Duration {
        self.negotiated.unwrap_or(self.config.session_timeout)
    }

    fn connect_timeout(&self) -> Duration {
        self.config.connect_timeout.unwrap_or_else(|| {
            let hosts = u32::try_from(self.hosts.len().max(1)).unwrap_or(u32::MAX);
            self.timeout() / hosts
        })
    }

    fn expiry_deadline(&self) -> Option<Instant> {
        if self.session_id == 0 || matches!(self.phase, Phase::Connected { .. } | Phase::Ended(_)) {
            return None;
        }
        self.disconnected_at.map(|at| at + self.timeout())
    }

    // ---- commands ------------------------------------------------------------------

    /// Queues `op`; its reply comes back as [`SessionEvent::Reply`] with the
    /// returned id. A read with `watch` set needs a `watcher` to deliver to.
    /// Requests submitted while disconnected go out after the next handshake.
    pub fn submit(&mut self, now: Instant, op: Op, watcher: Option<WatcherId>) -> Result<RequestId, ApiMisuse> {
        if matches!(self.phase, Phase::Ended(_) | Phase::Closing { .. }) {
            return Err(ApiMisuse::SessionEnded);
        }
        let watch = match (op.watch(), watcher) {
            (Some(_), None) => return Err(ApiMisuse::WatchWithoutWatcher),
            (Some((read, path)), Some(watcher)) => Some(PendingWatch { read, path: String::from(path), watcher }),
            (None, _) => None,
        };
        let id = RequestId::new(self.next_request);
        self.next_request += 1;
        let mut request = op.into_request();
        let retries = (self.root.is_some() && chroot::creates_under_root(&request)).then_some(0);
        if let Some(root) = self.chroot.as_ref() {
            apply_chroot(&mut request, root);
        }
        let queued = Queued { id, request, watch, retries };
        if self.serving() {
            self.send_user(now, queued);
        } else {
            self.queued.push_back(queued);
        }
        Ok(id)
    }

    /// Requests go out now: connected, authenticated, and the chroot's
    /// root is not being checked.
    fn serving(&self) -> bool {
        matches!(self.phase, Phase::Connected { .. })
            && self.sasl.is_none()
            && !self.root.as_ref().is_some_and(RootKeeper::running)
    }

    fn send_user(&mut self, now: Instant, q: Queued) {
        let retry = q.retries.map(|n| alloc::boxed::Box::new((q.request.clone(), n)));
        self.send(now, q.request, Purpose::User { id: q.id, watch: q.watch, retry });
    }

    /// Adds credentials (`digest`, `user:password`). They are sent now if
    /// connected, and again after every reconnect.
    pub fn add_auth(&mut self, now: Instant, scheme: &str, auth: Bytes) -> Result<(), ApiMisuse> {
        if matches!(self.phase, Phase::Ended(_) | Phase::Closing { .. }) {
            return Err(ApiMisuse::SessionEnded);
        }
        self.auth.push((String::from(scheme), auth.clone()));
        if matches!(self.phase, Phase::Connected { .. }) && self.sasl.is_none() {
            self.send_auth(now, scheme, auth);
        }
        Ok(())
    }

    /// Forgets a watcher's registration locally (see [`WatchKind`]).
    pub fn remove_watch(&mut self, path: &str, kind: WatchKind, watcher: WatcherId) -> bool {
        self.watches.remove(path, kind, watcher)
    }

    /// Forgets every registration of `watcher`.
    pub fn remove_watcher(&mut self, watcher: WatcherId) {
        self.watches.remove_watcher(watcher);
    }

    /// Ends the session: closeSession when connected (the server then deletes
    /// our ephemerals at once), otherwise immediately.
    pub fn close(&mut self, now: Instant) {
        match self.phase {
            Phase::Connected { .. } => {
                self.stop_following();
                self.send(now, Request::CloseSession, Purpose::Close);
                let deadline = now + self.timeout() * 2 / 3;
                self.phase = Phase::Closing { deadline };
            }
            Phase::Closing { .. } | Phase::Ended(_) => {}
            Phase::Idle { .. } | Phase::Connecting { .. } | Phase::Handshaking { .. } => self.end(End::Closed),
        }
    }

    // ---- inputs --------------------------------------------------------------------

    /// The transport asked for by [`IoCommand::Connect`] is up.
    pub fn handle_connected(&mut self, now: Instant) {
        let Phase::Connecting { host, deadline } = self.phase else {
            return;
        };
        self.phase = Phase::Handshaking { host, deadline };
        self.outbound.clear();
        let request = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            timeout_ms: i32::try_from(self.config.session_timeout.as_millis()).unwrap_or(i32::MAX),
            session_id: self.session_id,
            passwd: Some(self.passwd.clone()),
            read_only: Some(self.config.can_be_read_only),
        };
        // A ConnectRequest is 45 bytes; no configured limit is that small.
        let _ = encode_frame(&request, usize::MAX, &mut self.outbound);
        self.last_send = now;
        self.last_recv = now;
        self.handshake_sent = now;
        self.quorum.touched(now, self.timeout());
        self.pings.clear();
    }

    /// The transport failed or the server closed it. Before
    /// [`Session::handle_connected`] this is a failed dial, which counts
    /// towards [`SessionConfig::give_up_unreachable`].
    pub fn handle_disconnected(&mut self, now: Instant) {
        self.socket_open = false;
        if matches!(self.phase, Phase::Connecting { .. }) {
            self.unreachable_in_cycle += 1;
        }
        self.drop_connection(now);
    }

    /// Consumes every complete frame at the front of `buf`, leaving a partial
    /// frame in place. On an error the connection has been dropped (a
    /// [`IoCommand::Close`] is queued) and the session will reconnect, unless
    /// the server has now misbehaved on too many connections in a row: then
    /// the session ends with [`ConnectionState::ServerMisbehaved`].
    pub fn handle_bytes(&mut self, now: Instant, buf: &mut BytesMut) -> Result<(), SessionError> {
        loop {
            if !matches!(self.phase, Phase::Handshaking { .. } | Phase::Connected { .. } | Phase::Closing { .. }) {
                buf.clear();
                return Ok(());
            }
            let frame = match self.decoder.decode(buf) {
                Ok(Some(frame)) => frame,
                Ok(None) => return Ok(()),
                Err(e) => {
                    buf.clear();
                    let e = SessionError::from(e);
                    self.misbehaved(now, e);
                    return Err(e);
                }
            };
            self.last_recv = now;
            let result = if matches!(self.phase, Phase::Handshaking { .. }) {
                self.handle_handshake(now, &frame)
            } else {
                self.handle_message(now, &frame)
            };
            if let Err(e) = result {
                buf.clear();
                self.misbehaved(now, e);
                return Err(e);
            }
        }
    }

    /// The latest instant at which the server is known to have held this
    /// session alive: the send time of the newest request (or ping, or
    /// handshake) it has answered, so never later than the question. A
    /// reply that arrives after a long pause (bytes queued while this
    /// process was stopped) confirms only when it was asked, which is what
    /// a hold's staleness rule needs: the server may have expired the
    /// session since. Notifications confirm nothing. `None` before the
    /// first answer.
    pub fn confirmed_at(&self) -> Option<Instant> {
        self.confirmed
    }

    fn confirm(&mut self, sent: Instant) {
        self.confirmed = Some(self.confirmed.map_or(sent, |c| c.max(sent)));
    }

    /// Fires every timer due at `now`. Idempotent.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.expiry_deadline().is_some_and(|d| now >= d) {
            self.end(End::Expired);
            return;
        }
        match self.phase {
            Phase::Connecting { deadline, .. } | Phase::Handshaking { deadline, .. } if now >= deadline => {
                self.drop_connection(now)
            }
            Phase::Connected { .. } => {
                let t = self.timeout();
                if now >= self.last_recv + t * 2 / 3 {
                    self.why_drop = Some(Suspension::ServerSilent);
                    self.drop_connection(now);
                } else if self.quorum.is_overdue(now, t) {
                    self.why_drop = Some(Suspension::QuorumUnconfirmed);
                    self.drop_connection(now);
                } else {
                    // A confirmation is a send: no ping is then due.
                    self.confirm_if_due(now);
                    self.ping_if_due(now);
                }
            }
            Phase::Closing { deadline } if now >= deadline => self.end(End::Closed),
            _ => {}
        }
        // Checked last: a connection dropped just above may have scheduled the
        // next attempt for `now` (a zero reconnect pause), and leaving that
        // deadline in place would hand the driver a timer that is already due.
        if matches!(self.phase, Phase::Idle { at } if now >= at) {
            self.start_attempt(now);
        }
    }

    // ---- outputs -------------------------------------------------------------------

    /// The next transport command.
    #[must_use]
    pub fn poll_io(&mut self) -> Option<IoCommand> {
        self.io.pop_front()
    }

    /// Appends every frame ready to send to `dst`; returns the byte count.
    #[must_use]
    pub fn poll_transmit(&mut self, dst: &mut BytesMut) -> usize {
        let n = self.outbound.len();
        if dst.is_empty() {
            // Hand the frames over without a copy (a burst's frames would
            // otherwise sit in both buffers).
            core::mem::swap(dst, &mut self.outbound);
            self.outbound.clear();
        } else {
            dst.extend_from_slice(&self.outbound);
            self.outbound.clear();
        }
        crate::slack::shrink_buf(&mut self.outbound);
        crate::slack::shrink_deque(&mut self.in_flight);
        crate::slack::shrink_deque(&mut self.events);
        n
    }

    /// The next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<SessionEvent> {
        self.events.pop_front()
    }

    /// When [`Session::handle_timeout`] must next be called; `None` is never.
    /// Changes after any input or command.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let t = self.timeout();
        let phase = match self.phase {
            Phase::Idle { at } => Some(at),
            Phase::Connecting { deadline, .. } | Phase::Handshaking { deadline, .. } => Some(deadline),
            // No ping while SASL is under way, so only the read timeout.
            Phase::Connected { .. } if self.sasl.is_some() => Some(self.last_recv + t * 2 / 3),
            Phase::Connected { .. } => {
                let confirm = self.quorum.next_timer(t).filter(|_| self.serving());
                let at = (self.last_send + t / 3).min(self.last_recv + t * 2 / 3);
                Some(confirm.map_or(at, |c| c.min(at)))
            }
            Phase::Closing { deadline } => Some(deadline),
            Phase::Ended(_) => None,
        };
        match (phase, self.expiry_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
