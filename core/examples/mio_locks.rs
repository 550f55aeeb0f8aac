//! zoolock's sans-IO core on a non-async event loop: `mio`, one socket, one
//! session, several locks. This is the shape of an embedding in a program
//! that already has its own poll loop (a proxy, a game server, an agent):
//! the core needs a readiness callback and a timer, nothing else.
//!
//! The loop ([`MioLoop::turn`]) follows the drive-loop contract documented
//! on `zoolock_core::Session` and `zoolock_core::Client`: the dial is
//! non-blocking (writable means connected), reads go to `handle_bytes` until
//! the socket would block, writes keep what the socket did not take for the
//! next writable event, and `poll_timeout` bounds every wait.
//!
//! Three mutexes share the session: two on different paths are both held at
//! once; a third on the first path queues behind the first and is granted
//! when it is released, with a higher fencing token.
//!
//! ```sh
//! ZOOLOCK_CONNECT=127.0.0.1:2181 cargo run -p zoolock-core --example mio_locks
//! ```
//!
//! Without `ZOOLOCK_CONNECT` it starts an embedded in-memory ZooKeeper;
//! `ZOOLOCK_LOCK_PATH` defaults to `/zoolock-examples/mio-locks`.

mod server;

use std::collections::BTreeMap;
use std::error::Error;
use std::hash::BuildHasher;
use std::io::{ErrorKind, Read, Write};
use std::net::ToSocketAddrs;
use std::time::Duration;

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use zoolock_core::wire::BytesMut;
use zoolock_core::{
    Client, ClientEvent, ConnectString, ConnectionState, FencingToken, Handle, Instant, IoCommand, RecipeEvent,
    RecipeId, SessionConfig, ZkPath,
    recipes::{LockConfig, Mutex},
};

const SOCKET: Token = Token(0);
/// How long the example may run before it gives up.
const LIMIT: Duration = Duration::from_secs(60);

/// The core's client on one mio socket.
struct MioLoop {
    client: Client,
    poll: Poll,
    events: Events,
    stream: Option<TcpStream>,
    /// Dialed, not yet writable.
    dialing: bool,
    origin: std::time::Instant,
    rx: BytesMut,
    /// Bytes the socket has not taken yet, sent on the next writable event.
    tx: BytesMut,
}

impl MioLoop {
    fn new(config: SessionConfig) -> Result<MioLoop, Box<dyn Error>> {
        Ok(MioLoop {
            client: Client::new(config, Instant::ZERO),
            poll: Poll::new()?,
            events: Events::with_capacity(16),
            stream: None,
            dialing: false,
            origin: std::time::Instant::now(),
            rx: BytesMut::new(),
            tx: BytesMut::new(),
        })
    }

    fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// Drops the socket (deregistering it) and forgets its bytes.
    fn drop_stream(&mut self) {
        if let Some(mut stream) = self.stream.take() {
            let _ = self.poll.registry().deregister(&mut stream);
        }
        self.dialing = false;
        self.rx.clear();
        self.tx.clear();
    }

    /// The connection failed or closed: tell the core.
    fn disconnected(&mut self) {
        self.drop_stream();
        let now = self.now();
        self.client.handle_disconnected(now);
    }

    /// Starts a non-blocking dial; the core hears of it on the writable event.
    fn dial(&mut self, host: &str, port: u16) -> Result<(), Box<dyn Error>> {
        let Some(addr) = (host, port).to_socket_addrs().ok().and_then(|mut a| a.next()) else {
            self.disconnected();
            return Ok(());
        };
        match TcpStream::connect(addr) {
            Ok(mut stream) => {
                self.poll.registry().register(&mut stream, SOCKET, Interest::READABLE | Interest::WRITABLE)?;
                self.stream = Some(stream);
                self.dialing = true;
            }
            Err(_) => self.disconnected(),
        }
        Ok(())
    }

    /// Writes what the socket takes now; the rest waits for writable.
    fn flush(&mut self) {
        let Some(stream) = self.stream.as_mut().filter(|_| !self.dialing) else { return };
        while !self.tx.is_empty() {
            match stream.write(&self.tx) {
                Ok(0) => return self.disconnected(),
                Ok(n) => {
                    let _ = self.tx.split_to(n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return self.disconnected(),
            }
        }
    }

    /// Reads until the socket would block, feeding the core after each read.
    fn read(&mut self) {
        let mut chunk = [0u8; 16 * 1024];
        while let Some(stream) = self.stream.as_mut() {
            match stream.read(&mut chunk) {
                Ok(0) => return self.disconnected(),
                Ok(n) => {
                    self.rx.extend_from_slice(&chunk[..n]);
                    let now = self.now();
                    if self.client.handle_bytes(now, &mut self.rx).is_err() {
                        // The core dropped the connection; its Close follows.
                        return;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return self.disconnected(),
            }
        }
    }

    /// One turn: timers, then the outputs in the contract's order, then one
    /// wait for readiness no longer than the next deadline.
    fn turn(&mut self) -> Result<Vec<ClientEvent>, Box<dyn Error>> {
        let now = self.now();
        if self.client.poll_timeout().is_some_and(|t| t <= now) {
            self.client.handle_timeout(now);
        }
        while let Some(command) = self.client.poll_io() {
            self.drop_stream();
            if let IoCommand::Connect { addr, .. } = command {
                self.dial(&addr.host, addr.port)?;
            }
        }
        if self.stream.is_some() {
            let _ = self.client.poll_transmit(&mut self.tx);
            self.flush();
        } else {
            let mut discard = BytesMut::new();
            let _ = self.client.poll_transmit(&mut discard);
        }
        let events: Vec<ClientEvent> = std::iter::from_fn(|| self.client.poll_event()).collect();
        if !events.is_empty() {
            return Ok(events);
        }
        let wait = self.client.poll_timeout().map(|t| t.saturating_duration_since(self.now()));
        self.poll.poll(&mut self.events, wait)?;
        let (readable, writable) = self
            .events
            .iter()
            .filter(|e| e.token() == SOCKET)
            .fold((false, false), |(r, w), e| (r || e.is_readable(), w || e.is_writable()));
        if writable && self.dialing {
            let stream = self.stream.as_ref().ok_or("dialing without a socket")?;
            match (stream.take_error(), stream.peer_addr()) {
                (Ok(None), Ok(_)) => {
                    stream.set_nodelay(true)?;
                    self.dialing = false;
                    let now = self.now();
                    self.client.handle_connected(now);
                }
                // Not connected yet: a spurious wake-up.
                (Ok(None), Err(e)) if e.kind() == ErrorKind::NotConnected => {}
                _ => self.disconnected(),
            }
        } else if writable {
            self.flush();
        }
        if readable && !self.dialing {
            self.read();
        }
        Ok(Vec::new())
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let server = server::Server::from_env()?;
    let connect = server.connect.clone();
    let base = std::env::var("ZOOLOCK_LOCK_PATH").unwrap_or_else(|_| "/zoolock-examples/mio-locks".into());
    let seed = std::collections::hash_map::RandomState::new().hash_one(0u8);
    let mut l = MioLoop::new(SessionConfig::new(ConnectString::parse(&connect)?, seed))?;

    // Three mutexes on the one session: `first` and `other` on two paths,
    // `second` on the first path, queued behind `first`.
    let now = l.now();
    let (path_a, path_b) = (format!("{base}/a"), format!("{base}/b"));
    let mut add = |path: &str, n: u64| -> Result<Handle<Mutex>, Box<dyn Error>> {
        Ok(l.client.add(now, Mutex::new(ZkPath::new(path)?, LockConfig::new(seed.wrapping_add(n)))))
    };
    let (first, other, second) = (add(&path_a, 1)?, add(&path_b, 2)?, add(&path_a, 3)?);
    let names: BTreeMap<RecipeId, &str> =
        [(first.id(), "first"), (other.id(), "other"), (second.id(), "second")].into();
    for lock in [first, other, second] {
        l.client.with(now, lock, |m, now| m.acquire(now, None))??;
    }

    let started = std::time::Instant::now();
    let mut held: BTreeMap<RecipeId, FencingToken> = BTreeMap::new();
    let mut released = 0;
    let mut closing = false;
    loop {
        if started.elapsed() > LIMIT {
            return Err("timed out".into());
        }
        for event in l.turn()? {
            match event {
                ClientEvent::State(ConnectionState::Connected) => {
                    println!("connected, session 0x{:x}", l.client.session().session_id());
                }
                ClientEvent::State(ConnectionState::Closed) if closing => {
                    println!("closed");
                    return Ok(());
                }
                ClientEvent::State(state) if state.end_error().is_some() => {
                    return Err(format!("session ended: {state:?}").into());
                }
                ClientEvent::Recipe { recipe, event: RecipeEvent::Acquired { node, token } } => {
                    println!("acquired {node} as {} with fencing token {}", names[&recipe], token.0);
                    held.insert(recipe, token);
                    if recipe == second.id() {
                        // Granted only after `first` let go, and fenced above it.
                        let first_token = held.get(&first.id()).ok_or("second before first")?;
                        assert!(token > *first_token, "fencing token did not rise");
                    }
                    if held.contains_key(&first.id())
                        && held.contains_key(&other.id())
                        && !held.contains_key(&second.id())
                    {
                        println!("first and other held at once; second waits");
                        let now = l.now();
                        l.client.with(now, first, |m, now| m.release(now))??;
                    }
                    if recipe == second.id() {
                        let now = l.now();
                        l.client.with(now, second, |m, now| m.release(now))??;
                        l.client.with(now, other, |m, now| m.release(now))??;
                    }
                }
                ClientEvent::Recipe { recipe, event: RecipeEvent::Released } => {
                    println!("released {}", names[&recipe]);
                    released += 1;
                    if released == 3 {
                        let now = l.now();
                        l.client.close(now);
                        closing = true;
                    }
                }
                ClientEvent::Recipe { event: RecipeEvent::Failed(e), .. } => return Err(e.into()),
                _ => {}
            }
        }
    }
}
