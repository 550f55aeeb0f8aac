//! The async API's error type, and why a connection attempt failed.

use std::io;
use std::sync::Arc;

use zoolock_core::{ApiMisuse, ConnectStringError, PathError, RequestError};

/// Why an async operation did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// ZooKeeper or the connection failed the request, or the session
    /// ended by itself (expired, refused, given up on). Never
    /// [`RequestError::Closed`]: a session this client's own
    /// [`Client::close`](crate::Client::close) ended is [`Error::ClientClosed`].
    #[error(transparent)]
    Request(RequestError),
    /// The API was used wrongly (for example a read→write upgrade).
    #[error(transparent)]
    Misuse(#[from] ApiMisuse),
    /// The wait ended at its deadline.
    #[error("timed out")]
    TimedOut,
    /// The connect string does not parse.
    #[error(transparent)]
    ConnectString(#[from] ConnectStringError),
    /// A path is not a valid ZooKeeper path.
    #[error(transparent)]
    Path(#[from] PathError),
    /// The session could not be established before the connect timeout:
    /// some host accepted the connection (or its dial did not finish) but no
    /// session came of it in time.
    #[error("could not connect within {0:?}")]
    ConnectTimeout(std::time::Duration),
    /// No server could be reached: before any session, every host of a full
    /// cycle failed to connect (refused, not resolved, ...). Carries the last
    /// attempt's failure. A local or network condition; no server answered.
    #[error("no server reachable; last attempt {0}")]
    Unreachable(DialError),
    /// A TLS or connection failure that no retry can fix ended the session.
    #[error(transparent)]
    Tls(#[from] crate::security::TlsError),
    /// You closed this client: [`Client::close`](crate::Client::close) was
    /// called (on it or a clone). Every call that needs the session returns
    /// this afterwards: making a handle, acquiring, plain requests, and
    /// acquires under way at the close. Releasing a hold is not among them
    /// (the close ended the hold; releasing it is not an error). A session
    /// the server ended (expired, refused) is [`Error::Request`] instead.
    /// Carries which client it was: its connect string and last session.
    #[error("the client of {0} is closed")]
    ClientClosed(ClientName),
    /// A fenced write was refused without a request: the hold read
    /// `Suspended` when it was asked ([`crate::Hold::suspension`]).
    #[error("the hold on {node} is suspended ({reason}); nothing was written")]
    Suspended {
        /// The hold's node.
        node: String,
        /// Why it reads `Suspended`.
        reason: zoolock_core::Suspension,
    },
    /// A fenced write ([`crate::Hold::fenced`])
    /// found the hold gone: its node was deleted (by someone else, or with
    /// the session), or the hold was already known lost. Nothing was written.
    #[error("not held: the lock node {node} is gone; nothing was written")]
    NotHeld {
        /// The hold's node.
        node: String,
    },
    /// A shared count's node holds `len` bytes, not a 4-byte int (it was
    /// written by something else than a shared count).
    #[error("{path} does not hold a shared count: {len} bytes, not 4")]
    CountMalformed {
        /// The count node.
        path: String,
        /// How many bytes it holds.
        len: usize,
    },
    /// Op `index` (counting from 0 in the caller's list) of a fenced write
    /// failed with `code` while the hold was good. Nothing was written: the
    /// ops run all or nothing.
    #[error("op {index} of the fenced write failed: {code}; nothing was written")]
    FencedOpFailed {
        /// The failed op's index in the caller's list.
        index: usize,
        /// The server's result code for it.
        code: zoolock_core::wire::ErrorCode,
    },
}

impl From<RequestError> for Error {
    /// A request's end as the caller sees it: [`RequestError::Closed`]
    /// (the session this client closed) is [`Error::ClientClosed`], the
    /// rest [`Error::Request`]. The client is named where the error leaves
    /// the driver (`Error::named`), which knows which client it is.
    fn from(e: RequestError) -> Error {
        match e {
            RequestError::Closed => Error::ClientClosed(ClientName::UNNAMED),
            e => Error::Request(e),
        }
    }
}

impl Error {
    /// Names `client` in a [`Error::ClientClosed`] that does not name its
    /// client yet (one raised where only the session's end was known);
    /// every other error is returned as it is.
    pub(crate) fn named(self, client: impl FnOnce() -> ClientName) -> Error {
        match self {
            Error::ClientClosed(name) if name.is_unnamed() => Error::ClientClosed(client()),
            other => other,
        }
    }
}

/// Which client an [`Error::ClientClosed`] came from: the connect string
/// it was made with, and its session when it was closed (0 if it never had
/// one). An application with several clients tells them apart by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientName {
    hosts: Option<Arc<str>>,
    session_id: i64,
}

impl ClientName {
    /// Not named yet (see [`Error::named`]).
    pub(crate) const UNNAMED: ClientName = ClientName { hosts: None, session_id: 0 };

    pub(crate) fn new(hosts: Arc<str>, session_id: i64) -> ClientName {
        ClientName { hosts: Some(hosts), session_id }
    }

    fn is_unnamed(&self) -> bool {
        self.hosts.is_none()
    }

    /// The connect string the client was made with (empty if unknown).
    pub fn connect_string(&self) -> &str {
        self.hosts.as_deref().unwrap_or("")
    }

    /// The client's session when it was closed; 0 if it never had one.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }
}

impl std::fmt::Display for ClientName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.hosts, self.session_id) {
            (None, _) => f.write_str("this client"),
            (Some(hosts), 0) => write!(f, "{hosts} (no session)"),
            (Some(hosts), id) => write!(f, "{hosts} (session {id:#x})"),
        }
    }
}

/// Why a connection attempt failed, as the transport reported it (see
/// [`crate::Runtime::connect`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DialError {
    /// The host name did not resolve to any address.
    #[error("{addr}: the host name does not resolve: {message}")]
    NotResolved {
        /// `host:port` as in the connect string.
        addr: String,
        /// The resolver's error.
        message: String,
    },
    /// The connection (or its TLS handshake) failed: refused, unreachable,
    /// reset, ...
    #[error("{addr}: {message}")]
    Io {
        /// `host:port` as in the connect string.
        addr: String,
        /// The I/O error's kind ([`io::ErrorKind::ConnectionRefused`] when
        /// nothing listens on the port).
        kind: io::ErrorKind,
        /// The I/O error's text.
        message: String,
    },
}

impl DialError {
    /// The failure of a dial to `addr` from the transport's error.
    pub(crate) fn new(addr: String, error: &io::Error) -> DialError {
        match error.get_ref().and_then(|e| e.downcast_ref::<Unresolved>()) {
            Some(unresolved) => DialError::NotResolved { addr, message: unresolved.0.clone() },
            None => DialError::Io { addr, kind: error.kind(), message: error.to_string() },
        }
    }
}

/// The resolver's failure inside the error [`unresolved`] makes.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Unresolved(String);

/// The error a [`crate::Runtime::connect`] returns when `host` does not
/// resolve: `error` (the resolver's) marked so that the driver reports
/// [`DialError::NotResolved`] rather than an outage of a resolved address.
pub fn unresolved(error: io::Error) -> io::Error {
    io::Error::new(error.kind(), Unresolved(error.to_string()))
}
