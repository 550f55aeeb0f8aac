//! Where a replay failed and why: shared by the session and the recipe replays.

use std::fmt;
use std::path::PathBuf;

use zoolock_core::{ApiMisuse, SessionError};

use crate::decode::TraceDecodeError;
use crate::trace::TraceError;

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
