//! What a transport provides: TCP connect, a timer, spawn and a clock.
//! Everything else runs once, in [`crate::task`].

use std::fmt::Debug;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;

use futures_lite::{AsyncRead, AsyncWrite};

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// One TCP connection to a ZooKeeper server.
pub trait Conn: AsyncRead + AsyncWrite + Send + Unpin + 'static {
    /// The local address of the connection (Curator writes it into lock
    /// nodes by default).
    fn local_ip(&self) -> Option<IpAddr>;
}

/// An async runtime, as the driver needs it.
pub trait Runtime: Send + Sync + Debug + 'static {
    /// Opens a TCP connection to `host:port` with `TCP_NODELAY` set.
    fn connect(&self, host: String, port: u16) -> BoxFuture<io::Result<Box<dyn Conn>>>;
    /// Completes at `deadline`.
    fn sleep_until(&self, deadline: std::time::Instant) -> BoxFuture<()>;
    /// Runs `task` in the background.
    fn spawn(&self, task: BoxFuture<()>);
    /// The clock; overridable for tests.
    fn now(&self) -> std::time::Instant {
        std::time::Instant::now()
    }
}
