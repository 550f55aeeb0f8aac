//! [`TestingServer`]: the [`ZkModel`] served over TCP on loopback with
//! tokio, for tests that want a real socket without a real ZooKeeper.
//!
//! One task owns the model. Each connection has a reader task, which
//! forwards what it reads, and a writer task, which writes what the model
//! transmits and, when the model closes the connection, flushes, shuts the
//! socket down and stops the reader. A tokio timer drives
//! [`ZkModel::handle_timeout`] at [`ZkModel::poll_timeout`]. Model time is
//! the tokio clock since the server started, so `tokio::time::pause` works.
//!
//! The limits of [`ModelConfig`] that need addresses or sockets are enforced
//! here: `max_client_cnxns` per client IP (a connection over it is closed as
//! soon as it is accepted) and `max_queued_bytes` per connection (the server
//! task never waits for a writer; a connection whose client lets more than
//! that pile up is dropped, as on a network error).
//!
//! ```no_run
//! # async fn demo() {
//! use zoolock_model::TestingServer;
//! let server = TestingServer::start().await;
//! let connect = server.connect_string(); // "127.0.0.1:PORT"
//! # let _ = connect;
//! server.stop().await;
//! # }
//! ```

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle, JoinSet};
use zoolock_core::Instant;

use crate::{ConnId, ModelConfig, ZkModel};

/// A job run on the model inside the server task.
type Job = Box<dyn FnOnce(&mut ZkModel, Instant) + Send>;

enum Command {
    Run(Job),
    Stop,
}

/// What connection tasks report to the server task.
enum Inbound {
    Data(ConnId, Bytes),
    Eof(ConnId),
}

/// What the server task tells a writer task.
enum Outbound {
    Data(Bytes),
    Close,
}

/// The model on a loopback port. Dropping it stops the server (its
/// connections are closed as by a crash); [`TestingServer::stop`] does the
/// same and waits for it.
#[derive(Debug)]
pub struct TestingServer {
    addr: SocketAddr,
    connect_string: String,
    commands: mpsc::UnboundedSender<Command>,
    task: Option<JoinHandle<()>>,
}

impl TestingServer {
    /// Starts a server with [`ModelConfig::default`] on `127.0.0.1:0`.
    ///
    /// # Panics
    ///
    /// If no loopback port can be bound; use [`TestingServer::start_with`] to
    /// handle that.
    pub async fn start() -> TestingServer {
        match TestingServer::start_with(ModelConfig::default()).await {
            Ok(server) => server,
            Err(e) => panic!("cannot bind a loopback port: {e}"),
        }
    }

    /// Starts a server with `config` on `127.0.0.1:0`. Must be called inside
    /// a tokio runtime.
    pub async fn start_with(config: ModelConfig) -> io::Result<TestingServer> {
        TestingServer::start_on(0, config).await
    }

    /// Starts a server with `config` on `127.0.0.1:port` (0: any free port).
    /// Must be called inside a tokio runtime.
    pub async fn start_on(port: u16, config: ModelConfig) -> io::Result<TestingServer> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let (commands, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(serve(listener, ZkModel::new(config), rx));
        Ok(TestingServer { addr, connect_string: addr.to_string(), commands, task: Some(task) })
    }

    /// `127.0.0.1:PORT`, for a client's connect string.
    pub fn connect_string(&self) -> &str {
        &self.connect_string
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Runs `f` on the model (with the model's `now`) and returns its result;
    /// output it causes (notifications, closes) is sent afterwards. `None` if
    /// the server has stopped.
    pub async fn with_model<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut ZkModel, Instant) -> R + Send + 'static,
    ) -> Option<R> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |model, now| {
            let _ = tx.send(f(model, now));
        });
        self.commands.send(Command::Run(job)).ok()?;
        rx.await.ok()
    }

    /// Stops the server and waits until its task has ended and every
    /// connection is closed.
    pub async fn stop(mut self) {
        let _ = self.commands.send(Command::Stop);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for TestingServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            let _ = self.commands.send(Command::Stop);
            task.abort();
        }
    }
}

/// One connection as the server task sees it.
struct Link {
    inbuf: BytesMut,
    writer: mpsc::UnboundedSender<Outbound>,
    ip: IpAddr,
    /// Bytes handed to the writer and not yet written to the socket.
    queued: Arc<AtomicUsize>,
    reader: AbortHandle,
    writer_task: AbortHandle,
}

/// Every connection, and how many each client address holds open.
#[derive(Default)]
struct Links {
    by_conn: HashMap<ConnId, Link>,
    per_ip: HashMap<IpAddr, usize>,
}

impl Links {
    fn insert(&mut self, conn: ConnId, link: Link) {
        *self.per_ip.entry(link.ip).or_default() += 1;
        self.by_conn.insert(conn, link);
    }

    fn open_from(&self, ip: IpAddr) -> usize {
        self.per_ip.get(&ip).copied().unwrap_or(0)
    }

    fn remove(&mut self, conn: ConnId) -> Option<Link> {
        let link = self.by_conn.remove(&conn)?;
        if let Some(n) = self.per_ip.get_mut(&link.ip) {
            *n -= 1;
            if *n == 0 {
                self.per_ip.remove(&link.ip);
            }
        }
        Some(link)
    }
}

/// The server task: owns the model, the listener and every connection's tasks.
async fn serve(listener: TcpListener, mut model: ZkModel, mut commands: mpsc::UnboundedReceiver<Command>) {
    let origin = tokio::time::Instant::now();
    let now = move || Instant::from_nanos(u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX));
    let (inbound_tx, mut inbound) = mpsc::unbounded_channel::<Inbound>();
    let mut links = Links::default();
    // Dropping the set (when this task ends or is aborted) aborts every
    // connection task, which closes the sockets.
    let mut tasks = JoinSet::new();
    loop {
        let wake = model
            .poll_timeout()
            .map_or(origin + Duration::from_secs(365 * 24 * 3600), |t| origin + Duration::from_nanos(t.as_nanos()));
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let ip = peer.ip();
                    if model.config().max_client_cnxns.is_some_and(|max| links.open_from(ip) >= max) {
                        // maxClientCnxns: closed before it can send anything.
                        drop(stream);
                        continue;
                    }
                    let conn = model.connect(now());
                    let link = spawn_connection(&mut tasks, conn, stream, ip, inbound_tx.clone());
                    links.insert(conn, link);
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(event) = inbound.recv() => match event {
                Inbound::Data(conn, bytes) => {
                    if let Some(link) = links.by_conn.get_mut(&conn) {
                        link.inbuf.extend_from_slice(&bytes);
                        model.handle_bytes(now(), conn, &mut link.inbuf);
                    }
                }
                Inbound::Eof(conn) => {
                    if links.remove(conn).is_some() {
                        model.disconnect(now(), conn);
                    }
                }
            },
            command = commands.recv() => match command {
                Some(Command::Run(job)) => job(&mut model, now()),
                Some(Command::Stop) | None => break,
            },
            () = tokio::time::sleep_until(wake) => model.handle_timeout(now()),
        }
        flush(&mut model, &mut links, now());
        while tasks.try_join_next().is_some() {}
    }
}

/// Sends everything the model transmitted, then carries out its closes. A
/// connection whose unread output would exceed `max_queued_bytes` is
/// dropped instead (its session lives on).
fn flush(model: &mut ZkModel, links: &mut Links, now: Instant) {
    let max_queued = model.config().max_queued_bytes;
    while let Some(conn) = model.poll_writable() {
        let mut buf = BytesMut::new();
        model.poll_transmit(conn, &mut buf);
        let Some(link) = links.by_conn.get(&conn) else { continue };
        let queued = link.queued.fetch_add(buf.len(), Ordering::Relaxed) + buf.len();
        if max_queued.is_some_and(|max| queued > max) {
            if let Some(link) = links.remove(conn) {
                link.reader.abort();
                link.writer_task.abort();
            }
            model.disconnect(now, conn);
            continue;
        }
        let _ = link.writer.send(Outbound::Data(buf.freeze()));
    }
    while let Some(conn) = model.poll_close() {
        let mut buf = BytesMut::new();
        model.poll_transmit(conn, &mut buf);
        if let Some(link) = links.remove(conn) {
            if !buf.is_empty() {
                let _ = link.writer.send(Outbound::Data(buf.freeze()));
            }
            let _ = link.writer.send(Outbound::Close);
        }
    }
}

/// Spawns the reader and writer of one connection.
fn spawn_connection(
    tasks: &mut JoinSet<()>,
    conn: ConnId,
    stream: TcpStream,
    ip: IpAddr,
    inbound: mpsc::UnboundedSender<Inbound>,
) -> Link {
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    let broken = inbound.clone();
    let reader = tasks.spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if inbound.send(Inbound::Data(conn, Bytes::copy_from_slice(&buf[..n]))).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = inbound.send(Inbound::Eof(conn));
    });
    let (tx, mut rx) = mpsc::unbounded_channel::<Outbound>();
    let queued = Arc::new(AtomicUsize::new(0));
    let written = Arc::clone(&queued);
    let stop = reader.clone();
    let writer_task = tasks.spawn(async move {
        while let Some(out) = rx.recv().await {
            match out {
                Outbound::Data(bytes) => {
                    if wr.write_all(&bytes).await.is_err() {
                        // The reader is stopped below before it may see the
                        // end: report it here, or the connection (and its
                        // place under max_client_cnxns) would linger.
                        let _ = broken.send(Inbound::Eof(conn));
                        break;
                    }
                    written.fetch_sub(bytes.len(), Ordering::Relaxed);
                }
                Outbound::Close => {
                    let _ = wr.shutdown().await;
                    break;
                }
            }
        }
        stop_reader(&stop);
    });
    Link { inbuf: BytesMut::new(), writer: tx, ip, queued, reader, writer_task }
}

/// Drops the read half, which (with the write half gone) closes the socket.
fn stop_reader(reader: &AbortHandle) {
    reader.abort();
}

/// A [`TestingServer`] on a thread of its own (with its own tokio runtime),
/// for programs that are not on tokio: a blocking one, a smol one, a
/// hand-driven one. Dropping it stops the server and joins the thread.
#[derive(Debug)]
pub struct ThreadedServer {
    connect_string: String,
    stop: Option<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
}

impl ThreadedServer {
    /// Starts one.
    ///
    /// # Errors
    ///
    /// When the thread's runtime cannot be built or the server does not
    /// start.
    pub fn start() -> io::Result<ThreadedServer> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                let server = TestingServer::start().await;
                let _ = addr_tx.send(server.connect_string().to_owned());
                // Serve until stopped (or the owner is gone).
                let _ = tokio::task::spawn_blocking(move || stop_rx.recv()).await;
                server.stop().await;
            });
        });
        let connect_string =
            addr_rx.recv().map_err(|_| io::Error::other("the in-memory ZooKeeper's thread ended before it served"))?;
        Ok(ThreadedServer { connect_string, stop: Some((stop_tx, thread)) })
    }

    /// `127.0.0.1:PORT`.
    pub fn connect_string(&self) -> &str {
        &self.connect_string
    }
}

impl Drop for ThreadedServer {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.stop.take() {
            let _ = stop.send(());
            let _ = thread.join();
        }
    }
}
