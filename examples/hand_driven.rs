//! zoolock's sans-IO core driven by hand: no async runtime, no driver crate,
//! just a blocking `std::net::TcpStream` and the core's poll loop. The same
//! loop fits an embedded target with its own socket and clock.
//!
//! ```sh
//! ZOOLOCK_CONNECT=127.0.0.1:2181 cargo run -p zoolock-examples --example hand_driven
//! ```
//!
//! `ZOOLOCK_CONNECT` defaults to `127.0.0.1:2181`; `ZOOLOCK_LOCK_PATH` to
//! `/zoolock-examples/hand-driven`.

use std::error::Error;
use std::hash::BuildHasher;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use zoolock_core::wire::{Bytes, BytesMut};
use zoolock_core::{
    Client, ClientEvent, ConnectString, ConnectionState, Instant, IoCommand, LockConfig, Mutex, RecipeEvent,
    SessionConfig, ZkPath,
};

/// The core plus the I/O it asks for: one socket and a clock.
struct Driver {
    client: Client,
    /// Core time is nanoseconds since this moment.
    origin: std::time::Instant,
    stream: Option<TcpStream>,
    rx: BytesMut,
    tx: BytesMut,
}

impl Driver {
    /// Maps the OS clock onto core time.
    fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// Drains events until `want` picks one, running the loop as needed.
    /// Fails if the session ends first (expired, closed, refused).
    fn wait_for<T>(&mut self, mut want: impl FnMut(&ClientEvent) -> Option<T>) -> Result<T, Box<dyn Error>> {
        loop {
            while let Some(event) = self.client.poll_event() {
                if let Some(out) = want(&event) {
                    return Ok(out);
                }
                if let ClientEvent::State(state) = event {
                    if let Some(error) = state.end_error() {
                        return Err(error.into());
                    }
                }
            }
            self.turn();
        }
    }

    /// One pass in the core's drain order: transport commands, bytes out,
    /// then block for bytes in until the next deadline, then fire timers.
    fn turn(&mut self) {
        while let Some(command) = self.client.poll_io() {
            match command {
                IoCommand::Connect { addr, .. } => match TcpStream::connect((addr.host.as_str(), addr.port)) {
                    Ok(stream) => {
                        let _ = stream.set_nodelay(true);
                        self.stream = Some(stream);
                        self.rx.clear();
                        self.client.handle_connected(self.now());
                    }
                    Err(e) => {
                        eprintln!("connect {addr}: {e}");
                        self.client.handle_disconnected(self.now());
                    }
                },
                // The session already knows; just drop the socket.
                IoCommand::Close => self.stream = None,
                _ => {}
            }
        }
        self.tx.clear();
        if self.client.poll_transmit(&mut self.tx) > 0 {
            if let Some(stream) = &mut self.stream {
                if stream.write_all(&self.tx).is_err() {
                    self.lost_connection();
                }
            }
        }
        // Sleep on the socket (or plain sleep) until the next deadline.
        let now = self.now();
        let wait = self.client.poll_timeout().map_or(Duration::from_secs(1), |t| t - now).max(Duration::from_millis(1));
        match &mut self.stream {
            Some(stream) => {
                let mut buf = [0u8; 16 * 1024];
                let _ = stream.set_read_timeout(Some(wait));
                match stream.read(&mut buf) {
                    Ok(0) => self.lost_connection(),
                    Ok(n) => {
                        self.rx.extend_from_slice(&buf[..n]);
                        // On an error the session has queued Close and will reconnect.
                        if let Err(e) = self.client.handle_bytes(self.now(), &mut self.rx) {
                            eprintln!("bad bytes from the server: {e}");
                        }
                    }
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                    Err(_) => self.lost_connection(),
                }
            }
            None => std::thread::sleep(wait),
        }
        self.client.handle_timeout(self.now());
    }

    fn lost_connection(&mut self) {
        self.stream = None;
        self.client.handle_disconnected(self.now());
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let connect = std::env::var("ZOOLOCK_CONNECT").unwrap_or_else(|_| "127.0.0.1:2181".into());
    let path = std::env::var("ZOOLOCK_LOCK_PATH").unwrap_or_else(|_| "/zoolock-examples/hand-driven".into());
    // The core draws no randomness of its own: seed it from the OS.
    let seed = std::collections::hash_map::RandomState::new().hash_one(0u8);

    let origin = std::time::Instant::now();
    let config = SessionConfig::new(ConnectString::parse(&connect)?, seed);
    let client = Client::new(config, Instant::ZERO);
    let mut d = Driver { client, origin, stream: None, rx: BytesMut::new(), tx: BytesMut::new() };

    d.wait_for(|e| matches!(e, ClientEvent::State(ConnectionState::Connected)).then_some(()))?;
    println!("connected, session 0x{:x}", d.client.session().session_id());

    // Curator writes the holder's address into its lock node; so do we.
    let local = d.stream.as_ref().and_then(|s| s.local_addr().ok()).map(|a| a.ip().to_string());
    let lock_config = LockConfig::new(seed).with_data(Bytes::from(local.unwrap_or_default()));
    let now = d.now();
    let mutex = d.client.add_recipe(now, Box::new(Mutex::new(ZkPath::new(&path)?, lock_config)));

    d.client.command(now, mutex, |m: &mut Mutex, now| m.acquire(now, None))??;
    let (node, token) = d.wait_for(|e| match e {
        ClientEvent::Recipe { event: RecipeEvent::Acquired { node, token }, .. } => Some(Ok((node.clone(), *token))),
        ClientEvent::Recipe { event: RecipeEvent::Failed(e), .. } => Some(Err(e.clone())),
        _ => None,
    })??;
    println!("acquired {node} with fencing token {}", token.0);

    let now = d.now();
    d.client.command(now, mutex, |m: &mut Mutex, now| m.release(now))??;
    d.wait_for(|e| matches!(e, ClientEvent::Recipe { event: RecipeEvent::Released, .. }).then_some(()))?;
    println!("released");

    let now = d.now();
    d.client.close(now);
    d.wait_for(|e| matches!(e, ClientEvent::State(ConnectionState::Closed)).then_some(()))?;
    println!("closed");
    Ok(())
}
