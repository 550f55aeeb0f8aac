//! zoolock's sans-IO core driven by hand: no async runtime, no driver crate,
//! only `zoolock-core` and a blocking `std::net::TcpStream`.
//!
//! The loop below ([`Loop::turn`]) is the whole embedding: it follows the
//! drive-loop contract documented on `zoolock_core::Session` and
//! `zoolock_core::Client` (dial on `Connect`, feed every read to
//! `handle_bytes`, fire `handle_timeout` once `poll_timeout` is reached;
//! after every input drain `poll_io`, `poll_transmit`, `poll_event`, then
//! read `poll_timeout`). The same loop fits an embedded target with its own
//! socket and clock.
//!
//! ```sh
//! ZOOLOCK_CONNECT=127.0.0.1:2181 cargo run -p zoolock-core --example hand_driven
//! ```
//!
//! Without `ZOOLOCK_CONNECT` it starts an embedded in-memory ZooKeeper;
//! `ZOOLOCK_LOCK_PATH` defaults to `/zoolock-examples/hand-driven`.

mod server;

use std::error::Error;
use std::hash::BuildHasher;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use zoolock_core::wire::{Bytes, BytesMut};
use zoolock_core::{
    Client, ClientEvent, ConnectString, ConnectionState, Instant, IoCommand, RecipeEvent, SessionConfig, ZkPath,
    recipes::{LockConfig, Mutex},
};

/// How long any one step may take before the example gives up.
const STEP: Duration = Duration::from_secs(30);

/// The core's client, its one connection, and the clock it runs on.
struct Loop {
    client: Client,
    stream: Option<TcpStream>,
    /// The clock's origin: the core's `Instant` is time since then.
    origin: std::time::Instant,
    /// Bytes read and not yet a whole frame; kept across reads.
    rx: BytesMut,
    tx: BytesMut,
}

impl Loop {
    fn new(config: SessionConfig) -> Loop {
        Loop {
            client: Client::new(config, Instant::ZERO),
            stream: None,
            origin: std::time::Instant::now(),
            rx: BytesMut::new(),
            tx: BytesMut::new(),
        }
    }

    fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// The connection failed or closed: tell the core.
    fn disconnected(&mut self) {
        self.stream = None;
        let now = self.now();
        self.client.handle_disconnected(now);
    }

    /// One turn: fire a due timer, drain the outputs in the contract's order
    /// (transport commands, bytes to send, events), then block in one read
    /// no longer than the next deadline. Returns the events drained.
    fn turn(&mut self) -> Result<Vec<ClientEvent>, Box<dyn Error>> {
        let now = self.now();
        if self.client.poll_timeout().is_some_and(|t| t <= now) {
            self.client.handle_timeout(now);
        }
        while let Some(command) = self.client.poll_io() {
            self.stream = None;
            if let IoCommand::Connect { addr, .. } = command {
                // Dialing blocks; the core's connect deadline bounds it.
                let target = (addr.host.as_str(), addr.port).to_socket_addrs().ok().and_then(|mut a| a.next());
                match target.map(|t| TcpStream::connect_timeout(&t, Duration::from_secs(2))) {
                    Some(Ok(stream)) => {
                        stream.set_nodelay(true)?;
                        self.stream = Some(stream);
                        self.rx.clear();
                        let now = self.now();
                        self.client.handle_connected(now);
                    }
                    // Unresolved or refused: the core picks the next host.
                    _ => self.disconnected(),
                }
            } // IoCommand::Close: dropping the stream was all.
        }
        let _ = self.client.poll_transmit(&mut self.tx);
        if let Some(stream) = self.stream.as_mut() {
            if stream.write_all(&self.tx).is_err() {
                self.disconnected();
            }
        }
        self.tx.clear();
        let events: Vec<ClientEvent> = std::iter::from_fn(|| self.client.poll_event()).collect();
        if !events.is_empty() {
            // Handling them may queue commands: come back before blocking.
            return Ok(events);
        }
        // Never block past the core's next deadline.
        let wait = match self.client.poll_timeout() {
            Some(t) => t.saturating_duration_since(self.now()),
            None => Duration::from_millis(100),
        }
        .max(Duration::from_millis(1));
        let Some(stream) = self.stream.as_mut() else {
            std::thread::sleep(wait);
            return Ok(events);
        };
        stream.set_read_timeout(Some(wait))?;
        let mut chunk = [0u8; 16 * 1024];
        match stream.read(&mut chunk) {
            Ok(0) => self.disconnected(),
            Ok(n) => {
                self.rx.extend_from_slice(&chunk[..n]);
                let now = self.now();
                // An error: the core dropped the connection (a Close follows).
                let _ = self.client.handle_bytes(now, &mut self.rx);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => self.disconnected(),
        }
        Ok(events)
    }

    /// Turns the loop until `want` picks an event. Fails if the session
    /// ends first (expired, closed, refused) or the step takes too long.
    fn wait_for<T>(&mut self, mut want: impl FnMut(&ClientEvent) -> Option<T>) -> Result<T, Box<dyn Error>> {
        let started = std::time::Instant::now();
        while started.elapsed() < STEP {
            for event in self.turn()? {
                if let Some(out) = want(&event) {
                    return Ok(out);
                }
                if let ClientEvent::State(state) = event {
                    if let Some(error) = state.end_error() {
                        return Err(error.into());
                    }
                }
            }
        }
        Err("timed out".into())
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let server = server::Server::from_env()?;
    let connect = server.connect.clone();
    let path = std::env::var("ZOOLOCK_LOCK_PATH").unwrap_or_else(|_| "/zoolock-examples/hand-driven".into());
    // The core draws no randomness of its own: seed it from the OS.
    let seed = std::collections::hash_map::RandomState::new().hash_one(0u8);

    let mut l = Loop::new(SessionConfig::new(ConnectString::parse(&connect)?, seed));
    l.wait_for(|e| matches!(e, ClientEvent::State(ConnectionState::Connected)).then_some(()))?;
    println!("connected, session 0x{:x}", l.client.session().session_id());

    // Curator writes the holder's address into its lock node; so do we.
    let local = l.stream.as_ref().and_then(|s| s.local_addr().ok()).map(|a| a.ip().to_string());
    let lock_config = LockConfig::new(seed).with_data(Bytes::from(local.unwrap_or_default()));
    // The one way to register and drive a recipe: `add`, then `with`.
    let now = l.now();
    let mutex = l.client.add(now, Mutex::new(ZkPath::new(&path)?, lock_config));
    l.client.with(now, mutex, |m, now| m.acquire(now, None))??;
    let (node, token) = l.wait_for(|e| match e {
        ClientEvent::Recipe { event: RecipeEvent::Acquired { node, token }, .. } => Some(Ok((node.clone(), *token))),
        ClientEvent::Recipe { event: RecipeEvent::Failed(e), .. } => Some(Err(e.clone())),
        _ => None,
    })??;
    println!("acquired {node} with fencing token {}", token.0);

    let now = l.now();
    l.client.with(now, mutex, |m, now| m.release(now))??;
    l.wait_for(|e| matches!(e, ClientEvent::Recipe { event: RecipeEvent::Released, .. }).then_some(()))?;
    println!("released");

    let now = l.now();
    l.client.close(now);
    l.wait_for(|e| matches!(e, ClientEvent::State(ConnectionState::Closed)).then_some(()))?;
    println!("closed");
    Ok(())
}
