//! zoolock on tokio: the [`Runtime`] for tokio, and [`connect`].
//!
//! The handles, options and errors are `zoolock-driver`'s, re-exported by
//! name. [`sans_io`] is the advanced sans-IO layer beneath them (`zoolock-core`),
//! for what the handles do not cover.
//!
//! ```no_run
//! # async fn demo() -> Result<(), zoolock_tokio::Error> {
//! let client = zoolock_tokio::connect("127.0.0.1:2181", zoolock_tokio::Options::default()).await?;
//! let lock = client.mutex("/app/lock").await?;
//! let guard = lock.acquire().await?;
//! println!("holding with fencing token {:?}", guard.fencing_token());
//! guard.release().await?;
//! client.close().await?;
//! # Ok(()) }
//! ```
//!
//! A secured ZooKeeper: digest auth with a creator-only ACL, mutual TLS
//! (rustls; the `tls` feature, with `ring` or `aws-lc-rs` for the crypto
//! provider unless the application installs one) and SASL DIGEST-MD5, or
//! GSSAPI (Kerberos) with the `gssapi` feature (see the README's "Secured
//! ZooKeeper").
//!
//! ```no_run
//! # #[cfg(feature = "tls")]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::path::Path;
//! use zoolock_tokio::{AclPolicy, Options, TlsOptions, parse_acl};
//!
//! let tls = TlsOptions::from_files(Path::new("ca.pem"), Some(Path::new("client.pem")), Some(Path::new("client.key")))?;
//! let options = Options::default()
//!     .auth("digest", "alice:secret")
//!     .acl(AclPolicy::new(parse_acl("auth::cdrwa")?).with_prefix(
//!         zoolock_tokio::ZkPath::new("/shared")?,
//!         parse_acl("auth::cdrwa,world:anyone:r")?,
//!     ))
//!     .tls(tls)
//!     .sasl_digest("alice", &std::env::var("ZK_PASSWORD")?);
//! let client = zoolock_tokio::connect("zk1:2281,zk2:2281", options).await?;
//! # drop(client);
//! # Ok(()) }
//! ```
//!
//! # Features and metrics
//!
//! * `metrics` (off by default): the driver's counters, gauges (waiting
//!   acquires, holds, live connections) and wait histogram through the
//!   `metrics` facade; the series and labels are listed in
//!   [`zoolock_driver`'s docs](zoolock_driver#features-and-metrics).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use tokio::net::TcpStream;
use tokio_util::compat::TokioAsyncReadCompatExt;

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

/// Runs zoolock's event loop on a tokio runtime.
#[derive(Debug, Clone)]
pub struct TokioRuntime {
    handle: tokio::runtime::Handle,
}

impl TokioRuntime {
    /// The runtime of the calling context.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio::runtime::Handle::current` does;
    /// use [`TokioRuntime::new`] with a runtime's handle there.
    pub fn current() -> TokioRuntime {
        TokioRuntime { handle: tokio::runtime::Handle::current() }
    }

    /// A specific runtime.
    pub fn new(handle: tokio::runtime::Handle) -> TokioRuntime {
        TokioRuntime { handle }
    }
}

impl Runtime for TokioRuntime {
    fn connect(&self, host: String, port: u16) -> BoxFuture<io::Result<Box<dyn Conn>>> {
        Box::pin(async move {
            let (stream, local_ip) = tcp(&host, port).await?;
            Ok(Box::new(IoConn::new(stream.compat(), local_ip)) as Box<dyn Conn>)
        })
    }

    #[cfg(feature = "tls")]
    fn connect_tls(&self, host: String, port: u16, tls: TlsConnect) -> BoxFuture<io::Result<Box<dyn Conn>>> {
        Box::pin(async move {
            let (stream, local_ip) = tcp(&host, port).await?;
            let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
            let stream = connector.connect(tls.server_name.clone(), stream).await?;
            Ok(Box::new(IoConn::new(stream.compat(), local_ip)) as Box<dyn Conn>)
        })
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> BoxFuture<()> {
        // The timer registers with the runtime it is created in: enter ours,
        // so a caller outside tokio (say `Client::connect` awaited on another
        // executor with `TokioRuntime::new`) does not panic.
        let _entered = self.handle.enter();
        Box::pin(tokio::time::sleep_until(deadline.into()))
    }

    fn spawn(&self, task: BoxFuture<()>) {
        drop(self.handle.spawn(task));
    }
}

/// A TCP connection to `host:port` with Nagle's algorithm off, and the
/// local address it uses. Resolving first tells a name that does not resolve
/// from an address that refuses.
async fn tcp(host: &str, port: u16) -> io::Result<(TcpStream, Option<IpAddr>)> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await.map_err(unresolved)?.collect();
    let stream = TcpStream::connect(&addrs[..]).await?;
    stream.set_nodelay(true)?;
    let local_ip = stream.local_addr().ok().map(|a| a.ip());
    Ok((stream, local_ip))
}

/// Connects on the current tokio runtime (its event loop is spawned there),
/// as [`Client::connect`]: waits for the first session, at most
/// `options.connect_timeout`.
///
/// # Errors
///
/// As [`Client::connect`]: a bad connect string, every host unreachable
/// ([`Error::Unreachable`], at once), no session in time
/// ([`Error::ConnectTimeout`]), TLS or authentication refused.
///
/// # Panics
///
/// When polled outside a tokio runtime (it takes
/// `tokio::runtime::Handle::current()`). From elsewhere, use
/// [`Client::connect`] with [`TokioRuntime::new`] and a runtime's handle.
///
/// # Cancel safety
///
/// Cancel-safe: dropping the future closes the session being set up, in
/// the background.
pub async fn connect(connect_string: &str, options: Options) -> Result<Client, Error> {
    Client::connect(Arc::new(TokioRuntime::current()), connect_string, options).await
}

/// The README's Rust examples, compiled and checked by `cargo test` (doctests)
/// so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
