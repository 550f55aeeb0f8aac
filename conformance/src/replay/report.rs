//! What a session replay is told ([`ReplayConfig`]) and what it reports
//! ([`ReplayReport`], connection by connection).

use std::path::PathBuf;
use std::time::Duration;

use zoolock_core::{ConnectionState, Instant, RequestId, SessionEvent, WatcherId};
use zoolock_wire::{ConnectResponse, OpCode};

use super::Location;
use super::harness::Chunking;

/// How a [`SessionReplay`](super::SessionReplay) builds and drives its session.
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
    /// [`SessionReplay::submit`](super::SessionReplay::submit)).
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
    /// When [`Session::handle_connected`](zoolock_core::Session::handle_connected) was called.
    pub connected_at: Option<Instant>,
    /// The recorded ConnectResponse, once fed.
    pub handshake: Option<ConnectResponse>,
    /// When bytes (recorded or a synthetic ping reply) were last fed.
    pub last_received_at: Option<Instant>,
    /// When the socket went away.
    pub closed_at: Option<Instant>,
    /// True when the session closed it ([`IoCommand::Close`](zoolock_core::IoCommand::Close)), false when the
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
