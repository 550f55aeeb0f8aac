//! zoolock for thread-based programs: the handles of the async API
//! ([`Client`], [`Lock`] with its [`Guard`], [`Semaphore`] with its
//! [`Lease`]s, [`SharedCount`], [`LeaderSelector`] with its [`Leadership`],
//! [`LeaderLatch`]) under the same names, with blocking methods.
//!
//! This is a facade over the one event loop of `zoolock-driver`, not a
//! second implementation: [`connect`] starts that loop on smol's executor,
//! which runs on a background thread of its own, and each method here blocks
//! the calling thread on the matching async method (like `reqwest::blocking`).
//! No async runtime appears in this API. Queueing, reconnects, loss signals
//! and renewal are the driver's, so they behave exactly as in `zoolock-tokio`
//! and `zoolock-smol`; what the async docs say about cancelling a future
//! applies here to a time-out: an acquire that times out is cancelled and
//! leaves no node behind.
//!
//! Do not call these methods from inside an async task: they block its
//! executor thread. Use `zoolock-tokio` or `zoolock-smol` there.
//!
//! ```no_run
//! # fn demo() -> Result<(), zoolock_blocking::Error> {
//! use std::time::Duration;
//! let client = zoolock_blocking::connect("127.0.0.1:2181", zoolock_blocking::Options::default())?;
//! let lock = client.mutex("/app/lock")?;
//! let guard = lock.acquire_timeout(Duration::from_secs(5))?;
//! // ... the critical section, passing guard.fencing_token() to the resource ...
//! guard.release()?;
//! client.close()
//! # }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

mod client;
mod count;
mod hold;
mod leader;
mod lock;
mod semaphore;

use std::time::Duration;

pub use client::{Client, StateChanges, connect};
pub use count::{CountChanges, SharedCount};
pub use hold::{Hold, StatusChanges};
pub use leader::{HolderChanges, LeaderChanges, LeaderLatch, LeaderSelector, Leadership, LeadershipChanges};
pub use lock::{Guard, Lock, ReadWriteLock};
pub use semaphore::{Lease, Semaphore};
/// The sans-IO core, for plain ops ([`zoolock_core::Op`]) and wire types
/// (named after its crate, as the async crates re-export it).
pub use zoolock_core;
pub use zoolock_smol::{
    AclParseError, AclPolicy, AuthInfo, CloseMode, Compression, ConnectionState, DialError, ElectionKind,
    ElectionParticipant, Error, FencingToken, HoldStatus, LockKind, LockOptions, LockSpec, LossReason, OpPlan, Options,
    Participant, QueuePosition, RetryPolicy, SemaphoreOptions, SemaphoreSize, Suspension, TlsError, VersionedCount,
    parse_acl,
};
#[cfg(feature = "gssapi")]
pub use zoolock_smol::{GSSAPI_DEFAULT_SERVICE, GssapiClient};
#[cfg(feature = "tls")]
pub use zoolock_smol::{TlsConfigError, TlsOptions, rustls};

/// Blocks the calling thread on `future`. The event loop runs on smol's
/// executor thread, so this only waits for its answers.
fn wait<T>(future: impl Future<Output = T>) -> T {
    smol::block_on(future)
}

/// Blocks on `future` for at most `timeout`; `None` if it did not finish.
/// The future is dropped on time-out, which cancels what it was doing.
fn wait_timeout<T>(future: impl Future<Output = T>, timeout: Duration) -> Option<T> {
    wait(futures_lite::future::or(async { Some(future.await) }, async {
        smol::Timer::after(timeout).await;
        None
    }))
}
