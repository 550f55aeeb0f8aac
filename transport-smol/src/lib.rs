//! zoolock on smol: the [`Runtime`] for async-io based executors, and
//! [`connect`]. With the `async-std` feature (off by default; async-std is
//! deprecated upstream in favour of smol), [`connect_async_std`] spawns the
//! event loop on async-std's executor instead; sockets and timers are the
//! same async-io ones.
//!
//! The handles, options and errors are `zoolock-driver`'s, re-exported by
//! name. [`sans_io`] is the advanced sans-IO layer beneath them (`zoolock-core`),
//! for what the handles do not cover.
//!
//! ```no_run
//! # fn demo() -> Result<(), zoolock_smol::Error> {
//! smol::block_on(async {
//!     let client = zoolock_smol::connect("127.0.0.1:2181", zoolock_smol::Options::default()).await?;
//!     let lock = client.mutex("/app/lock").await?;
//!     let guard = lock.acquire().await?;
//!     guard.release().await?;
//!     client.close().await
//! })
//! # }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use smol::net::TcpStream;

// The driver's public items by name (no glob), gated as the driver gates them.
#[doc(inline)]
pub use zoolock_driver::{
    Acl, AclParseError, AclPolicy, AddWatchMode, ApiMisuse, AsyncRead, AsyncWrite, AuthInfo, BoxFuture, Bytes, Client,
    ClientName, CloseMode, Compression, Conn, ConnectStringError, ConnectionState, CreateMode, DecodeError,
    DecodeErrorKind, DialError, ElectionKind, ElectionParticipant, Error, ErrorCode, FencingToken, Guard, Hold,
    HoldStatus, HolderChanges, Id, IoConn, LeaderChanges, LeaderLatch, LeaderSelector, Leadership, LeadershipChanges,
    LeadershipPolicy, Lease, Lock, LockKind, LockName, LockNameError, LockOptions, LockSpec, LossReason, Misbehavior,
    MultiResult, Op, OpCode, OpPlan, Options, Participant, PathError, PathProblem, Perms, QueuePosition, ReadWriteLock,
    RequestError, RetryPolicy, Runtime, SaslConfig, SaslError, SaslMechanism, Semaphore, SemaphoreOptions,
    SemaphoreSize, SessionError, SharedCount, SortKey, SortRule, Stat, StatusChanges, StreamExt, Suspension, TlsError,
    VersionedCount, WatcherType, ZkPath, parse_acl, unresolved,
};
#[cfg(feature = "gssapi")]
#[doc(inline)]
pub use zoolock_driver::{GSSAPI_DEFAULT_SERVICE, GssapiClient};
#[cfg(feature = "tls")]
#[doc(inline)]
pub use zoolock_driver::{TlsConfigError, TlsConnect, TlsOptions, rustls};
// The one module re-exported whole: the advanced sans-IO layer.
#[doc(inline)]
pub use zoolock_driver::sans_io;

/// Where the event loop is spawned; sockets and timers are async-io's either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spawner {
    Smol,
    #[cfg(feature = "async-std")]
    AsyncStd,
}

/// Runs zoolock's event loop on smol's global executor (or async-std's).
#[derive(Debug, Clone)]
pub struct SmolRuntime {
    spawner: Spawner,
}

impl SmolRuntime {
    /// Spawns on smol's global executor.
    pub fn new() -> SmolRuntime {
        SmolRuntime { spawner: Spawner::Smol }
    }

    /// Spawns on async-std's executor.
    #[cfg(feature = "async-std")]
    pub fn async_std() -> SmolRuntime {
        SmolRuntime { spawner: Spawner::AsyncStd }
    }
}

impl Default for SmolRuntime {
    fn default() -> Self {
        SmolRuntime::new()
    }
}

impl Runtime for SmolRuntime {
    fn connect(&self, host: String, port: u16) -> BoxFuture<io::Result<Box<dyn Conn>>> {
        Box::pin(async move {
            let (stream, local_ip) = tcp(&host, port).await?;
            Ok(Box::new(IoConn::new(stream, local_ip)) as Box<dyn Conn>)
        })
    }

    #[cfg(feature = "tls")]
    fn connect_tls(&self, host: String, port: u16, tls: TlsConnect) -> BoxFuture<io::Result<Box<dyn Conn>>> {
        Box::pin(async move {
            let (stream, local_ip) = tcp(&host, port).await?;
            let connector = futures_rustls::TlsConnector::from(tls.config.clone());
            let stream = connector.connect(tls.server_name.clone(), stream).await?;
            Ok(Box::new(IoConn::new(stream, local_ip)) as Box<dyn Conn>)
        })
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> BoxFuture<()> {
        Box::pin(async move {
            smol::Timer::at(deadline).await;
        })
    }

    fn spawn(&self, task: BoxFuture<()>) {
        match self.spawner {
            Spawner::Smol => smol::spawn(task).detach(),
            #[cfg(feature = "async-std")]
            Spawner::AsyncStd => drop(async_std::task::spawn(task)),
        }
    }
}

/// A TCP connection to `host:port` with Nagle's algorithm off, and the
/// local address it uses. Resolving first tells a name that does not resolve
/// from an address that refuses.
async fn tcp(host: &str, port: u16) -> io::Result<(TcpStream, Option<IpAddr>)> {
    let addrs: Vec<SocketAddr> = smol::net::resolve((host, port)).await.map_err(unresolved)?;
    let stream = TcpStream::connect(&addrs[..]).await?;
    stream.set_nodelay(true)?;
    let local_ip = stream.local_addr().ok().map(|a| a.ip());
    Ok((stream, local_ip))
}

/// Connects, running the event loop on smol's global executor, as
/// [`Client::connect`]: waits for the first session, at most
/// `options.connect_timeout`.
///
/// # Errors
///
/// As [`Client::connect`]: a bad connect string, every host unreachable
/// ([`Error::Unreachable`], at once), no session in time
/// ([`Error::ConnectTimeout`]), TLS or authentication refused.
///
/// # Cancel safety
///
/// Cancel-safe: dropping the future closes the session being set up, in
/// the background.
pub async fn connect(connect_string: &str, options: Options) -> Result<Client, Error> {
    Client::connect(Arc::new(SmolRuntime::new()), connect_string, options).await
}

/// Connects, running the event loop on async-std's executor.
///
/// # Errors
///
/// As [`connect`].
///
/// # Cancel safety
///
/// As [`connect`]: dropping the future closes the session being set up.
#[cfg(feature = "async-std")]
pub async fn connect_async_std(connect_string: &str, options: Options) -> Result<Client, Error> {
    Client::connect(Arc::new(SmolRuntime::async_std()), connect_string, options).await
}
