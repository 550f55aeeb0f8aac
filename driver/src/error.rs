//! The async API's error type, and why a connection attempt failed.

use std::io;

use zoolock_core::{ApiMisuse, ConnectStringError, PathError, RequestError};

/// Why an async operation did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// ZooKeeper or the connection failed the request.
    #[error(transparent)]
    Request(#[from] RequestError),
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
    /// The client's event loop has stopped (the client was closed).
    #[error("the client is closed")]
    ClientClosed,
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
