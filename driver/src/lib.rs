//! zoolock's async layer: one event loop (the `task` module) that runs the
//! sans-IO session and recipes from `zoolock-core` over any [`Runtime`], and
//! the user-facing handles: [`Client`], [`Lock`] with its [`Guard`],
//! [`Semaphore`] with its [`Lease`]s, and leader election
//! ([`LeaderSelector`] with its [`Leadership`], [`LeaderLatch`]).
//!
//! Transports (`zoolock-tokio`, `zoolock-smol`) only implement [`Runtime`].
//!
//! # Features and metrics
//!
//! * `metrics` (off by default): counts through the [`metrics`](https://docs.rs/metrics)
//!   facade, into whatever recorder the application installs (a Prometheus
//!   exporter, say). Without it, no metrics code is built. Series are
//!   described (unit and meaning) once per process, when the first client
//!   connects or the first lock is made: install the recorder before that.
//!   Each lock (and each client, for `zoolock_request_seconds`) registers a
//!   series with the recorder on its first use and keeps the handle, so an
//!   event builds no labels and allocates nothing, and with no recorder
//!   installed it updates the facade's no-op handle (BENCHMARKS.md, "Metrics
//!   and spans: what observing costs").
//!   `zoolock-tokio` and `zoolock-smol` forward the feature.
//!
//! | name | kind | unit | labels | what |
//! |---|---|---|---|---|
//! | `zoolock_acquires_total` | counter | count | `kind`, `path` | grants (a semaphore acquire counts once) |
//! | `zoolock_acquire_wait_seconds` | histogram | seconds | `kind`, `path` | from the call to the grant |
//! | `zoolock_acquire_timeouts_total` | counter | count | `kind`, `path` | acquires that ended at their deadline |
//! | `zoolock_acquires_waiting` | gauge | count | `kind`, `path` | acquires under way now (queued in the process or on ZooKeeper) |
//! | `zoolock_holds` | gauge | count | `kind`, `path` | holds the process has now: guards, leases and terms of leadership not yet released (lost ones included until let go) |
//! | `zoolock_hold_seconds` | histogram | seconds | `kind`, `path` | how long each hold (guard, lease, term of leadership) lasted: one sample as it ends (released or lost) |
//! | `zoolock_holds_suspended_total` | counter | count | `kind`, `path` | holds told `Suspended` |
//! | `zoolock_holds_lost_total` | counter | count | `kind`, `path` | holds told `Lost` |
//! | `zoolock_is_leader` | gauge | count | `kind`, `path` | 1 while the process's participant of the election leads under its leadership policy, else 0 |
//! | `zoolock_leadership_changes_total` | counter | count | `kind`, `path` | times that participant gained or lost leadership |
//! | `zoolock_cleanup_failures_total` | counter | count | `kind`, `path` | abandoned nodes that could not be deleted |
//! | `zoolock_connected` | gauge | count | none | clients with a live connection (1 per connected client, 0 while it has none) |
//! | `zoolock_session_renewals_total` | counter | count | none | sessions started after an expiry |
//! | `zoolock_request_seconds` | histogram | seconds | `op` | from a request's send to its reply, one sample per reply (errors included; not requests failed by a lost connection), labelled with ZooKeeper's name of the operation: `create2`, `getChildren2`, `getData`, `exists`, `delete`, `setData`, `multi`, `sync` (the quorum confirmations among them), `setWatches`, `closeSession`, ...; pings as `ping`, the server's bare round trip |
//!
//! The per-lock series carry `kind` (`mutex`, `rwlock`, `semaphore_mutex`,
//! `multi`, `semaphore`; `election` for a term's hold, suspended and lost
//! counts and the leadership series) and `path` (the lock path; a multi-lock's paths
//! joined with `,`). Services that make a lock per entity (`/orders/1234`)
//! turn `path` off with [`Options::metrics_path_label`](crate::Options::metrics_path_label),
//! so the number of series stays bounded; `kind` is always there.
//! `zoolock_request_seconds` has only `op`: the session times each answered
//! request from the `now` values it is given (`zoolock_core`'s
//! `SessionConfig::request_timings`, which this feature turns on, and
//! `Client::poll_timing`), and the event loop records them after each
//! turn's events; without the feature the session keeps no timings.
//!
//! # Tracing
//!
//! The event loop runs inside an `info` span named `zoolock` with the
//! connect string (`hosts`) and, once known, the session id (`session`);
//! connection state changes are logged at `info`, lost holds at `warn`,
//! grants (with the time waited), releases and cancellations at `debug`,
//! and single requests and recipe events at `trace`. Every lock event
//! carries the lock path (`path`) and, once there is one, the node (`node`).
//! Each acquire is an `info` span `zoolock.acquire` (`path`; `node` and
//! `token` once granted) open while it waits, and each hold (a guard, a
//! lease, a term of leadership) a span `zoolock.hold` (`path`, `node`,
//! `token`) open until it is released or dropped, so a trace view shows
//! the wait and the hold. Without a subscriber that wants them they are
//! disabled spans (a static interest check).

mod acquire;
mod client;
mod count;
mod error;
#[cfg(feature = "gssapi")]
mod gssapi;
mod hold;
mod latch;
mod leader;
mod lock;
mod metrics;
mod observe;
mod options;
mod recipes;
mod runtime;
mod security;
mod semaphore;
mod session_lease;
mod task;
#[cfg(feature = "tls")]
mod tls;

/// Node data, as [`Op`]s carry it.
pub use bytes::Bytes;
pub use client::Client;
pub use count::{SharedCount, VersionedCount};
pub use error::{ClientName, DialError, Error, unresolved};
/// `next()` and the other adapters for the streams the handles return
/// ([`StatusChanges`], [`LeadershipChanges`], [`HolderChanges`], ...), so a
/// crate that depends on a face alone can read them.
pub use futures_lite::StreamExt;
/// The byte-stream traits a [`Conn`] implements (futures-io's, through futures-lite).
pub use futures_lite::{AsyncRead, AsyncWrite};
#[cfg(feature = "gssapi")]
pub use gssapi::{DEFAULT_SERVICE as GSSAPI_DEFAULT_SERVICE, GssapiClient};
pub use hold::{Hold, QueuePosition, StatusChanges};
pub use latch::{CloseMode, LeaderLatch, LeadershipChanges};
pub use leader::{LeaderSelector, Leadership};
pub use lock::{Guard, Lock, ReadWriteLock};
pub use observe::{HolderChanges, LeaderChanges};
pub use options::{LockOptions, Options, SemaphoreOptions};
pub use runtime::{BoxFuture, Conn, IoConn, Runtime};
/// rustls, as the driver uses it (for [`TlsOptions::from_config`] and transports).
#[cfg(feature = "tls")]
pub use rustls;
pub use security::{AclParseError, AclPolicy, AuthInfo, TlsError, parse_acl};
pub use semaphore::{Lease, Semaphore};
#[cfg(feature = "tls")]
pub use tls::{TlsConfigError, TlsConnect, TlsOptions};
/// What the errors carry: why a request failed and who is to blame
/// ([`Error::Request`]), an API misuse ([`Error::Misuse`]), a bad path or
/// connect string, the server's result codes.
pub use zoolock_core::wire::ErrorCode;
/// What the plain operations take and return ([`Client::create`],
/// [`Client::get_data`], ...) and the SASL settings of [`Options::sasl`].
pub use zoolock_core::wire::{Acl, CreateMode, Stat};
/// What those values and errors carry in turn: an ACL's permissions and
/// identity, an operation's code (in [`ApiMisuse`] and [`RequestError`]), a
/// watch's kind, a frame that did not decode ([`SessionError`]).
pub use zoolock_core::wire::{AddWatchMode, DecodeError, DecodeErrorKind, Id, OpCode, Perms, WatcherType};
pub use zoolock_core::{
    ApiMisuse, ConnectStringError, Misbehavior, PathError, PathProblem, RequestError, SaslError, SessionError,
};
/// A hold's status and why it was lost (decided in core).
pub use zoolock_core::{HoldStatus, LossReason};
pub use zoolock_core::{SaslConfig, SaslMechanism};

/// The sans-IO core beneath this crate: an advanced module, for what the
/// handles do not cover (the wire codec, node layouts and naming policy,
/// the session and recipe machines). Everything a handle's signature or
/// error names is also at this crate's root; reach here only for the rest.
/// Its API is `zoolock-core`'s, which follows its own version.
pub mod sans_io {
    pub use zoolock_core::*;
}
pub use zoolock_core::recipes::{
    ElectionKind, ElectionParticipant, LeadershipPolicy, LockKind, LockName, LockNameError, LockSpec, SemaphoreSize,
    SortRule, policy::SortKey,
};
pub use zoolock_core::{
    Compression, ConnectionState, FencingToken, Participant, Suspension,
    recipes::{OpPlan, RetryPolicy},
};
/// A plain ZooKeeper operation ([`Hold::fenced`]), the path it names, and
/// its result.
pub use zoolock_core::{Op, ZkPath, wire::MultiResult};
