//! What a transport provides: TCP connect, a timer, spawn and a clock.
//! Everything else runs once, in [`crate::task`].

use std::fmt::Debug;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// One TCP connection to a ZooKeeper server.
pub trait Conn: AsyncRead + AsyncWrite + Send + Unpin + 'static {
    /// The local address of the connection (Curator writes it into lock
    /// nodes by default).
    fn local_ip(&self) -> Option<IpAddr>;
}

/// An async runtime, as the driver needs it: a TCP dial, a timer, a way to
/// spawn the event loop, and a clock. Everything else (the ticket queues,
/// reconnects, loss rules) is the driver's, so a runtime is all a new
/// executor needs.
///
/// To support another executor, implement the four required pieces with its
/// primitives and pass it to [`crate::Client::connect`]:
/// - [`Runtime::connect`]: resolve (wrapping a resolver error with
///   [`crate::unresolved`]), dial, set `TCP_NODELAY`, and wrap the stream in
///   [`IoConn`] with its local address; a stream that is not futures-io needs
///   an adapter (as tokio's `compat`).
/// - [`Runtime::sleep_until`]: the executor's timer at an instant.
/// - [`Runtime::spawn`]: run the loop detached; it ends by itself once every
///   handle is dropped or the client is closed.
/// - `Runtime::connect_tls` only for TLS: a rustls handshake over the
///   same dial, with the `TlsConnect` config and server name it is given
///   (with the `tls` feature).
///
/// The thinnest existing implementation is `SmolRuntime` in `zoolock-smol`
/// (about 60 lines, TLS included); `zoolock-blocking` reuses it to run the
/// loop on a background thread. Another runtime need not be published as a
/// crate: it can live in the program that uses it.
pub trait Runtime: Send + Sync + Debug + 'static {
    /// Opens a TCP connection to `host:port` with `TCP_NODELAY` set. A host
    /// name that does not resolve fails with the resolver's error wrapped by
    /// [`crate::unresolved`], so the driver can name the cause.
    fn connect(&self, host: String, port: u16) -> BoxFuture<io::Result<Box<dyn Conn>>>;
    /// Opens a TCP connection like [`Runtime::connect`] and runs the TLS
    /// handshake over it. A failed handshake returns the rustls error inside
    /// the `io::Error` (`get_ref`), so the driver can tell a certificate
    /// problem from an outage. The default has no TLS. Only with the `tls`
    /// feature.
    #[cfg(feature = "tls")]
    fn connect_tls(
        &self,
        host: String,
        port: u16,
        tls: crate::tls::TlsConnect,
    ) -> BoxFuture<io::Result<Box<dyn Conn>>> {
        let _ = (host, port, tls);
        Box::pin(async { Err(io::Error::new(io::ErrorKind::Unsupported, "this runtime has no TLS")) })
    }
    /// Completes at `deadline`.
    fn sleep_until(&self, deadline: std::time::Instant) -> BoxFuture<()>;
    /// Runs `task` in the background.
    fn spawn(&self, task: BoxFuture<()>);
    /// The clock; overridable for tests.
    fn now(&self) -> std::time::Instant {
        std::time::Instant::now()
    }
}

/// A [`Conn`] over any futures-io byte stream, remembering its local address.
/// Transports wrap their TCP stream in it.
#[derive(Debug)]
pub struct IoConn<S> {
    stream: S,
    local_ip: Option<IpAddr>,
}

impl<S> IoConn<S> {
    /// Wraps `stream`, whose local address is `local_ip`.
    pub fn new(stream: S, local_ip: Option<IpAddr>) -> Self {
        IoConn { stream, local_ip }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for IoConn<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for IoConn<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_close(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Send + Unpin + 'static> Conn for IoConn<S> {
    fn local_ip(&self) -> Option<IpAddr> {
        self.local_ip
    }
}
