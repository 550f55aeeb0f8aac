//! The async API's error type.

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
    /// The session could not be established before the connect timeout.
    #[error("could not connect within {0:?}")]
    ConnectTimeout(std::time::Duration),
    /// A TLS or connection failure that no retry can fix ended the session.
    #[error(transparent)]
    Tls(#[from] crate::security::TlsError),
    /// The client's event loop has stopped (the client was closed).
    #[error("the client is closed")]
    ClientClosed,
}
