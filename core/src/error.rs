//! Errors, typed by who is to blame.

use zoolock_wire::{DecodeError, ErrorCode};

/// How a request ended without a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The server answered with a result code (NoNode, NodeExists, ...).
    #[error("server answered {0}")]
    Server(ErrorCode),
    /// The connection dropped with the request in flight: its outcome is unknown.
    #[error("connection lost; the request's outcome is unknown")]
    ConnectionLoss,
    /// The session expired: its ephemeral nodes are gone.
    #[error("session expired")]
    SessionExpired,
    /// The session was closed by the user before the request completed.
    #[error("session closed")]
    Closed,
    /// The server rejected our credentials and closed the session.
    #[error("authentication failed")]
    AuthFailed,
    /// The server requires SASL authentication of every session
    /// (`sessionRequireClientSASLAuth`), and this one has none: the server
    /// answered SessionClosedRequireSaslAuth and closed the session.
    #[error("the server requires SASL authentication (configure a SASL user)")]
    SaslAuthRequired,
    /// The SASL exchange failed on the client's side (no credentials, a
    /// stale keytab, an unknown service principal, a server that could not
    /// prove itself): a local or KDC condition, no result code the
    /// ZooKeeper server sent. The session ended at once.
    #[error("{0}")]
    Sasl(crate::SaslError),
    /// The server misbehaved (wrong xids, undecodable replies, replies to
    /// nothing) on every connection of the session until the client gave up
    /// ([`SessionConfig::max_misbehaving_connections`](crate::SessionConfig)).
    /// The server is to blame; this is no result code it sent. Carries the
    /// last misbehavior.
    #[error("gave up on the server: {0}")]
    ServerMisbehaved(SessionError),
    /// No server could be reached before the first session: every host
    /// failed to connect (see
    /// [`SessionConfig::give_up_unreachable`](crate::SessionConfig::give_up_unreachable)).
    /// A local or network condition; no server sent anything.
    #[error("no server could be reached")]
    Unreachable,
    /// The server answered with a reply body of another kind than the
    /// request calls for (a create answered by a listing, say). The server is
    /// to blame; this is no result code it sent.
    #[error("the server answered {op} with a reply of another kind")]
    UnexpectedResponse {
        /// The request it answered.
        op: zoolock_wire::OpCode,
    },
    /// A recipe's own verdict: the lock path kept vanishing (NoNode on every
    /// one of the retry policy's attempts).
    #[error("gave up after {0} retries: the lock path keeps vanishing")]
    RetriesExhausted(u32),
    /// The chroot's root is missing and could not be created: the server
    /// refused the create (NoAuth, say), or the root kept vanishing while it
    /// was being made (NoNode). Carries the server's answer.
    #[error("the chroot is missing and could not be created: server answered {0}")]
    ChrootUnavailable(ErrorCode),
    /// A recipe's own verdict: a node this call created vanished before the
    /// call completed (deleted by someone else, or gone after a reconnect).
    #[error("a node of this call vanished before it completed")]
    NodeVanished,
    /// A recipe refused to build or run a request from its own state or
    /// configuration; nothing was sent.
    #[error("refused locally: {0}")]
    Refused(ApiMisuse),
    /// The request does not fit in a frame.
    #[error("request of {len} bytes exceeds the frame limit {max}")]
    TooLarge {
        /// Encoded length.
        len: usize,
        /// Configured maximum.
        max: usize,
    },
}

impl RequestError {
    /// The nearest ZooKeeper result code, for callers that speak in codes
    /// (client-generated ones included; the variant says who is to blame).
    pub fn code(&self) -> ErrorCode {
        match self {
            RequestError::Server(code) | RequestError::ChrootUnavailable(code) => *code,
            RequestError::ConnectionLoss => ErrorCode::CONNECTION_LOSS,
            RequestError::SessionExpired => ErrorCode::SESSION_EXPIRED,
            RequestError::Closed => ErrorCode::SESSION_EXPIRED,
            RequestError::AuthFailed | RequestError::Sasl(_) => ErrorCode::AUTH_FAILED,
            RequestError::SaslAuthRequired => ErrorCode::SESSION_CLOSED_REQUIRE_SASL_AUTH,
            RequestError::TooLarge { .. } => ErrorCode::MARSHALLING_ERROR,
            RequestError::UnexpectedResponse { .. } => ErrorCode::MARSHALLING_ERROR,
            RequestError::RetriesExhausted(_) | RequestError::NodeVanished => ErrorCode::NO_NODE,
            RequestError::Refused(_) => ErrorCode::BAD_ARGUMENTS,
            // The Java client treats a bad reply as a lost connection.
            RequestError::ServerMisbehaved(_) => ErrorCode::CONNECTION_LOSS,
            RequestError::Unreachable => ErrorCode::CONNECTION_LOSS,
        }
    }
}

/// The server sent something well-formed but illegal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Misbehavior {
    /// A reply's xid is not the oldest outstanding request's.
    #[error("reply xid {got} but {expected:?} was next")]
    UnexpectedXid {
        /// The xid at the head of the FIFO (`None` when nothing was pending).
        expected: Option<i32>,
        /// The xid received.
        got: i32,
    },
    /// The handshake resumed a different session than the one asked for.
    #[error("asked to resume session {asked:#x}, server answered {got:#x}")]
    SessionIdChanged {
        /// Our session id.
        asked: i64,
        /// The server's.
        got: i64,
    },
}

/// The connection had to be dropped because of what the server sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Bytes that do not decode.
    #[error("undecodable frame from server: {0}")]
    Decode(#[from] DecodeError),
    /// Well-formed but illegal traffic.
    #[error("server misbehaved: {0}")]
    ServerMisbehaved(#[from] Misbehavior),
}

/// The caller used the API wrongly; nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApiMisuse {
    /// The session is closed, closing, expired or failed authentication.
    #[error("session is no longer usable")]
    SessionEnded,
    /// The op is session plumbing (ping, auth, setWatches, closeSession, ...),
    /// which the session sends itself.
    #[error("{0} is sent by the session itself")]
    ReservedOp(zoolock_wire::OpCode),
    /// A watch was requested with no watcher to deliver it to.
    #[error("a watch needs a watcher id")]
    WatchWithoutWatcher,
    /// A path in the request is not a valid ZooKeeper path.
    #[error("invalid path: {0}")]
    InvalidPath(#[from] crate::PathError),
    /// The recipe id is not registered with the client.
    #[error("unknown recipe {0}")]
    UnknownRecipe(u64),
    /// An acquire while the recipe is acquiring, releasing or holding (a
    /// held reentrant lock is re-entered with its own call).
    #[error("an acquire or release is already under way, or the lock is held")]
    AcquireInProgress,
    /// An acquire of a part this ticket already holds.
    #[error("the lock is already held")]
    AlreadyHeld,
    /// A read→write upgrade: the write half would wait for this process's
    /// own read hold forever. Release the read lock first.
    #[error("read→write upgrade would deadlock: release the read lock before acquiring the write lock")]
    UpgradeRefused,
    /// `make_revocable` after the first acquire.
    #[error("make_revocable must come before acquire")]
    RevocableAfterAcquire,
    /// A semaphore acquire of zero leases.
    #[error("qty must be at least 1")]
    ZeroQuantity,
    /// A listing or revocation request while the previous one is under way.
    #[error("the previous request of this recipe is still under way")]
    RequestInProgress,
    /// A multi-lock with no member.
    #[error("a multi-lock needs at least one member")]
    EmptyMultiLock,
    /// A new server list (`update_servers`) names a chroot other than the
    /// client's: the chroot is fixed for the client's life, and the list
    /// was not applied.
    #[error("the server list's chroot differs from the client's")]
    ChrootChanged,
    /// A multi-lock acquire after a member's hold was lost: release first.
    #[error("a member's hold was lost: release before acquiring again")]
    MemberLost,
    /// An election participant was started again after `close`.
    #[error("the election participant is closed")]
    ElectionClosed,
    /// A new session while the current one has not expired.
    #[error("only an expired session is replaced")]
    SessionNotExpired,
    /// Release or re-entry of a hold that this ticket does not have.
    #[error("the lock is not held by this acquire")]
    NotHeld,
    /// Re-entry of a lock that is not reentrant (Curator's semaphore mutex).
    #[error("this lock is not reentrant")]
    NotReentrant,
    /// A request for the queue of a lock kind that has none of its own (a
    /// multi-lock: each member has its own).
    #[error("a {} lock has no queue of its own", .0.label())]
    NoLayout(crate::recipes::LockKind),
    /// A downgrade on a lock that has no read half (not a read-write lock).
    #[error("only a read-write lock can be downgraded")]
    NoReadHalf,
    /// A handle used on a client other than the one that made it.
    #[error("the handle belongs to another client")]
    ForeignHandle,
    /// A compare-and-set at version -1, which the server reads as "any
    /// version": a node version that wrapped after 2^31 writes, or a value
    /// never read (ZOOKEEPER-4743; Curator 5.7 refuses it too).
    #[error("version -1 cannot be compared: the write would apply whatever the version")]
    VersionOverflowed,
}
