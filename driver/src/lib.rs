//! zoolock's async layer: one event loop (the `task` module) that runs the
//! sans-IO session and recipes from `zoolock-core` over any [`Runtime`], and
//! the user-facing handles: [`Client`], [`Lock`] with its [`Guard`], and
//! [`Semaphore`] with its [`Lease`]s.
//!
//! Transports (`zoolock-tokio`, `zoolock-smol`) only implement [`Runtime`].
//!
//! Tracing: the event loop runs inside an `info` span named `zoolock` with
//! the connect string (`hosts`) and, once known, the session id
//! (`session`); connection state changes are logged at `info`, lost holds
//! at `warn`, grants, releases and cancellations at `debug`, and single
//! requests and recipe events at `trace`.

mod client;
mod count;
mod error;
#[cfg(feature = "gssapi")]
mod gssapi;
mod hold;
mod lock;
mod metrics;
mod options;
mod recipes;
mod runtime;
mod security;
mod semaphore;
mod task;
#[cfg(feature = "tls")]
mod tls;

pub use client::Client;
pub use count::{SharedCount, VersionedCount};
pub use error::{DialError, Error, unresolved};
/// The byte-stream traits a [`Conn`] implements (futures-io's, through futures-lite).
pub use futures_lite::{AsyncRead, AsyncWrite};
#[cfg(feature = "gssapi")]
pub use gssapi::{DEFAULT_SERVICE as GSSAPI_DEFAULT_SERVICE, GssapiClient};
pub use hold::{HoldStatus, QueuePosition, StatusChanges};
pub use lock::{Guard, Lock, ReadWriteLock};
pub use options::{LockOptions, Options};
pub use recipes::{LockSpec, ParticipantsOf, SemaphoreOptions, SemaphoreSize};
pub use runtime::{BoxFuture, Conn, IoConn, Runtime};
/// rustls, as the driver uses it (for [`TlsOptions::from_config`] and transports).
#[cfg(feature = "tls")]
pub use rustls;
pub use security::{AclParseError, AclPolicy, AuthInfo, TlsError, parse_acl};
pub use semaphore::{Lease, Semaphore};
#[cfg(feature = "tls")]
pub use tls::{TlsConfigError, TlsConnect, TlsOptions};
/// The sans-IO core, for plain ops ([`zoolock_core::Op`]) and wire types.
/// Named after its crate, so it never shadows `::core`.
pub use zoolock_core;
pub use zoolock_core::{Compression, ConnectionState, FencingToken, OpPlan, Participant, RetryPolicy};
