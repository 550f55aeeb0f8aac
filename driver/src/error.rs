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
    /// A fenced write ([`crate::Guard::fenced`], [`crate::Lease::fenced`])
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
