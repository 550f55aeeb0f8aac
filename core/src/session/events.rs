//! What a session tells its user and its transport: ids, transport
//! commands, connection states, events and status.

use alloc::string::String;

use zoolock_wire::{ErrorCode, EventType, Response};

use super::watches::WatcherId;
use crate::connect_string::HostAddr;
use crate::error::{RequestError, SessionError};

/// Index of a host in the session's (shuffled) host list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostId(pub usize);

/// Identifies a submitted request; its reply carries the same id. Issued by
/// [`Session::submit`](super::Session::submit) only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(u64);

impl RequestId {
    /// The id of the `n`-th request of a session.
    pub(crate) fn new(n: u64) -> RequestId {
        RequestId(n)
    }

    /// The id's number, for logs.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Something the driver must do to the transport.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoCommand {
    /// Open a TCP connection, then call [`Session::handle_connected`](super::Session::handle_connected) (or
    /// [`Session::handle_disconnected`](super::Session::handle_disconnected) if it fails).
    Connect {
        /// Which host, for logging.
        host: HostId,
        /// Where to dial.
        addr: HostAddr,
    },
    /// Drop the current connection. The session already knows; do not call
    /// [`Session::handle_disconnected`](super::Session::handle_disconnected) for it.
    Close,
}

/// Connection state changes, in Curator's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionState {
    /// The session was established for the first time.
    Connected,
    /// Established, but the server is read-only.
    ConnectedReadOnly,
    /// The connection dropped: the session may still be alive, so a lock held
    /// through it is uncertain until `Reconnected` or `Lost`.
    Suspended,
    /// The same session is connected again; ephemeral nodes survived.
    Reconnected,
    /// The session expired (server answer, -112 reply, or client-side timer):
    /// its ephemeral nodes are gone. Terminal.
    Lost,
    /// The session was closed by [`Session::close`](super::Session::close). Terminal.
    Closed,
    /// The server rejected our credentials. Terminal.
    AuthFailed,
    /// The SASL exchange failed on the client's side (no credentials, say):
    /// carries why. Terminal, and never renewed.
    SaslFailed(crate::SaslError),
    /// The server misbehaved on every connection until the client gave up
    /// (see [`SessionConfig::max_misbehaving_connections`](super::SessionConfig::max_misbehaving_connections)); carries the last
    /// misbehavior. Terminal, and never renewed: a new session would meet
    /// the same server.
    ServerMisbehaved(SessionError),
    /// No server could be reached before the first session: every host of a
    /// full cycle failed to connect (see
    /// [`SessionConfig::give_up_unreachable`](super::SessionConfig::give_up_unreachable)).
    /// Terminal, and never renewed.
    Unreachable,
    /// The chroot's root is missing and the new session could not create it
    /// ([`SessionConfig::create_chroot`](super::SessionConfig::create_chroot)):
    /// carries the server's answer (NoAuth, say). Reported instead of
    /// `Connected`. Terminal, and never renewed: a new session would meet
    /// the same refusal.
    ChrootUnavailable(ErrorCode),
}

impl ConnectionState {
    /// How requests fail once the session has ended this way; `None` while
    /// the session can still serve them.
    pub fn end_error(self) -> Option<RequestError> {
        match self {
            ConnectionState::Lost => Some(RequestError::SessionExpired),
            ConnectionState::Closed => Some(RequestError::Closed),
            ConnectionState::AuthFailed => Some(RequestError::AuthFailed),
            ConnectionState::SaslFailed(e) => Some(RequestError::Sasl(e)),
            ConnectionState::ServerMisbehaved(e) => Some(RequestError::ServerMisbehaved(e)),
            ConnectionState::Unreachable => Some(RequestError::Unreachable),
            ConnectionState::ChrootUnavailable(code) => Some(RequestError::ChrootUnavailable(code)),
            _ => None,
        }
    }

    /// True when the session has ended this way for good.
    pub fn is_end(self) -> bool {
        self.end_error().is_some()
    }
}

/// A watch notification, with the chroot stripped from the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent {
    /// What happened.
    pub event_type: EventType,
    /// The node it happened to (client path).
    pub path: String,
}

/// An output of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionEvent {
    /// The connection state changed.
    State(ConnectionState),
    /// A submitted request finished. Every [`RequestId`] gets exactly one.
    Reply {
        /// The request.
        id: RequestId,
        /// The response (chroot stripped) or why there is none.
        result: Result<Response, RequestError>,
    },
    /// A registered watch fired.
    Watch {
        /// Who registered it.
        watcher: WatcherId,
        /// The event.
        event: WatchEvent,
    },
}

/// Where the session is, as a plain status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionStatus {
    /// Waiting before the next connect attempt.
    Disconnected,
    /// A connect command is out; waiting for the transport.
    Connecting,
    /// ConnectRequest sent; waiting for the ConnectResponse.
    Handshaking,
    /// Connected and serving requests.
    Connected,
    /// closeSession sent.
    Closing,
    /// Closed by the user.
    Closed,
    /// Expired.
    Expired,
    /// Authentication failed.
    AuthFailed,
    /// The server requires SASL authentication, and this session has none.
    SaslRequired,
    /// The SASL exchange failed on the client's side.
    SaslFailed(crate::SaslError),
    /// The client gave up on a server that kept misbehaving.
    ServerMisbehaved(SessionError),
    /// No server could be reached before the first session.
    Unreachable,
    /// The chroot's root was missing and could not be created.
    ChrootUnavailable(ErrorCode),
}

impl SessionStatus {
    /// How requests fail once the session has ended; `None` while it can
    /// still serve them (or will again, after a reconnect).
    pub fn end_error(self) -> Option<RequestError> {
        match self {
            SessionStatus::Closed => Some(RequestError::Closed),
            SessionStatus::Expired => Some(RequestError::SessionExpired),
            SessionStatus::AuthFailed => Some(RequestError::AuthFailed),
            SessionStatus::SaslRequired => Some(RequestError::SaslAuthRequired),
            SessionStatus::SaslFailed(e) => Some(RequestError::Sasl(e)),
            SessionStatus::ServerMisbehaved(e) => Some(RequestError::ServerMisbehaved(e)),
            SessionStatus::Unreachable => Some(RequestError::Unreachable),
            SessionStatus::ChrootUnavailable(code) => Some(RequestError::ChrootUnavailable(code)),
            _ => None,
        }
    }
}
