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
//!
//! # Cookbook
//!
//! ## Work until the hold is lost
//!
//! [`Hold::lost_timeout`] blocks for at most its timeout: `None` means the
//! hold stayed good all that time, so the next slice of work may run;
//! `Some(status)` means it stopped being good, and `status` says how:
//! [`HoldStatus::Suspended`] (the connection dropped or its lease ran out;
//! the hold may come back, but nothing may be done under it now) or
//! [`HoldStatus::Lost`] (for good: the session expired, the node was
//! deleted, or the maximum hold passed). Either way, stop acting on the
//! hold.
//!
//! ```no_run
//! # fn demo(client: &zoolock_blocking::Client) -> Result<(), zoolock_blocking::Error> {
//! use std::time::Duration;
//! use zoolock_blocking::HoldStatus;
//!
//! let guard = client.mutex("/app/lock")?.acquire()?;
//! for step in 0..100 {
//!     // ... one short step of work (shorter than the timeout below) ...
//!     match guard.lost_timeout(Duration::from_millis(100)) {
//!         None => continue, // still held: go on
//!         Some(HoldStatus::Suspended) => { eprintln!("suspended at step {step}: stop"); break }
//!         Some(status) => { eprintln!("{status:?} at step {step}: stop"); break }
//!     }
//! }
//! guard.release() // never an error for a lost hold
//! # }
//! ```
//!
//! ## Print a fencing token
//!
//! A [`FencingToken`] prints as its number with `{}` (and `{:?}` shows the
//! type); `.0` is the `i64` itself, to store or compare.
//!
//! ```no_run
//! # fn demo(client: &zoolock_blocking::Client) -> Result<(), zoolock_blocking::Error> {
//! let guard = client.mutex("/app/lock")?.acquire()?;
//! let token = guard.fencing_token();
//! println!("writing under token {token}"); // "writing under token 4294967302"
//! let header = format!("X-Fencing-Token: {token}");
//! assert!(token.0 > 0 && header.ends_with(&token.0.to_string()));
//! guard.release()
//! # }
//! ```
//!
//! ## Threads: one shared handle, or one client each
//!
//! [`Client`], [`Lock`] and [`Semaphore`] are cheap to clone and may be sent
//! to other threads. Threads sharing one [`Lock`] (clones of it) are one
//! participant: their acquires queue in this process, first come first
//! served, and one thread holds at a time; the process queues on ZooKeeper
//! once. A [`ReadWriteLock`]'s reads through one handle take turns the same
//! way (its sharing rule); to read at once, give each thread its own
//! `read_write_lock(path)`.
//!
//! ```no_run
//! # fn demo(client: &zoolock_blocking::Client) -> Result<(), zoolock_blocking::Error> {
//! let lock = client.mutex("/app/lock")?;
//! let threads: Vec<_> = (0..4)
//!     .map(|i| {
//!         let lock = lock.clone();
//!         std::thread::spawn(move || -> Result<(), zoolock_blocking::Error> {
//!             let guard = lock.acquire()?; // one thread at a time
//!             println!("thread {i} holds {}", guard.node());
//!             guard.release()
//!         })
//!     })
//!     .collect();
//! for t in threads {
//!     t.join().expect("thread panicked")?;
//! }
//! # Ok(()) }
//! ```
//!
//! One client per thread gives each thread its own session: each is a
//! separate participant on ZooKeeper (as separate processes are), each
//! thread's hold is lost on its own session's end, and each session costs
//! its own connection and pings. Prefer one client per process unless the
//! threads must fail independently.
//!
//! ```no_run
//! # fn demo() -> Result<(), zoolock_blocking::Error> {
//! use zoolock_blocking::Options;
//! let threads: Vec<_> = (0..2)
//!     .map(|i| {
//!         std::thread::spawn(move || -> Result<(), zoolock_blocking::Error> {
//!             let client = zoolock_blocking::connect("127.0.0.1:2181", Options::default())?;
//!             let guard = client.mutex("/app/lock")?.acquire()?;
//!             println!("thread {i}, session {:#x}, holds {}", client.session_id(), guard.node());
//!             guard.release()?;
//!             client.close()
//!         })
//!     })
//!     .collect();
//! for t in threads {
//!     t.join().expect("thread panicked")?;
//! }
//! # Ok(()) }
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
/// The sans-IO core beneath this crate: an advanced module (see
/// `zoolock_smol::sans_io`), for what the handles do not cover.
pub use zoolock_smol::sans_io;
pub use zoolock_smol::{
    Acl, AclParseError, AclPolicy, AddWatchMode, ApiMisuse, AuthInfo, Bytes, ClientName, CloseMode, Compression,
    ConnectStringError, ConnectionState, CreateMode, DecodeError, DecodeErrorKind, DialError, ElectionKind,
    ElectionParticipant, Error, ErrorCode, FencingToken, HoldStatus, Id, LeadershipPolicy, LockKind, LockName,
    LockNameError, LockOptions, LockSpec, LossReason, Misbehavior, MultiResult, Op, OpCode, OpPlan, Options,
    Participant, PathError, PathProblem, Perms, QueuePosition, RequestError, RetryPolicy, SaslConfig, SaslError,
    SaslMechanism, SemaphoreOptions, SemaphoreSize, SessionError, SortKey, SortRule, Stat, Suspension, TlsError,
    VersionedCount, WatcherType, ZkPath, parse_acl,
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
