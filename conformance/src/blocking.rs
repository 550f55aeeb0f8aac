//! A minimal blocking driver over `std::net` for any sans-IO [`Endpoint`] (a
//! [`Session`] or a [`Client`]): a hand-written I/O loop outside the
//! async driver, used by the real-server tests. (The `hand_driven` example
//! carries its own loop, so that it builds from published crates.)
//! It follows the core's drain order and reads with a socket timeout bounded
//! by the machine's next deadline.
//!
//! [`Client`]: zoolock_core::Client

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::BytesMut;
use zoolock_core::{Endpoint, Instant, IoCommand, Session};

/// Drives one machine over blocking TCP.
#[derive(Debug)]
pub struct BlockingDriver<E = Session> {
    machine: E,
    stream: Option<TcpStream>,
    origin: std::time::Instant,
    rx: BytesMut,
    tx: BytesMut,
}

impl<E: Endpoint> BlockingDriver<E> {
    /// Wraps a machine created with [`BlockingDriver::now`]-compatible time
    /// (its origin is this driver's creation).
    pub fn new(make: impl FnOnce(Instant) -> E) -> BlockingDriver<E> {
        let origin = std::time::Instant::now();
        BlockingDriver { machine: make(Instant::ZERO), stream: None, origin, rx: BytesMut::new(), tx: BytesMut::new() }
    }

    /// The session's clock: time since this driver started.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// The machine, for commands.
    pub fn machine(&mut self) -> &mut E {
        &mut self.machine
    }

    /// The local address of the current connection, if any.
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.stream.as_ref().and_then(|s| s.local_addr().ok())
    }

    /// Runs the loop until `done` accepts an event or `limit` passes. Returns
    /// every event seen, or an error naming what was seen when time ran out.
    pub fn run_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&E::Event) -> bool,
    ) -> Result<Vec<E::Event>, String>
    where
        E::Event: std::fmt::Debug,
    {
        let start = std::time::Instant::now();
        let mut seen = Vec::new();
        loop {
            for event in self.step(Duration::from_millis(20))? {
                let finished = done(&event);
                seen.push(event);
                if finished {
                    return Ok(seen);
                }
            }
            if start.elapsed() > limit {
                return Err(format!("timed out after {limit:?}; events so far: {seen:?}"));
            }
        }
    }

    /// One turn of the loop: timers, transport commands, writes, one read.
    pub fn step(&mut self, max_wait: Duration) -> Result<Vec<E::Event>, String> {
        let now = self.now();
        if self.machine.poll_timeout().is_some_and(|t| t <= now) {
            self.machine.handle_timeout(now);
        }
        while let Some(cmd) = self.machine.poll_io() {
            match cmd {
                IoCommand::Connect { addr, .. } => {
                    let target = (addr.host.as_str(), addr.port).to_socket_addrs().ok().and_then(|mut a| a.next());
                    match target.and_then(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).ok()) {
                        Some(stream) => {
                            stream.set_nodelay(true).map_err(|e| e.to_string())?;
                            self.stream = Some(stream);
                            self.rx.clear();
                            let now = self.now();
                            self.machine.handle_connected(now);
                        }
                        None => {
                            let now = self.now();
                            self.machine.handle_disconnected(now);
                        }
                    }
                }
                IoCommand::Close => self.stream = None,
                _ => return Err(String::from("unknown IoCommand")),
            }
        }
        let _ = self.machine.poll_transmit(&mut self.tx);
        if let Some(stream) = self.stream.as_mut() {
            if !self.tx.is_empty() {
                if stream.write_all(&self.tx).is_err() {
                    self.stream = None;
                    let now = self.now();
                    self.machine.handle_disconnected(now);
                }
                self.tx.clear();
            }
        } else {
            self.tx.clear();
        }
        let wait = match self.machine.poll_timeout() {
            Some(t) => t.saturating_duration_since(self.now()).min(max_wait),
            None => max_wait,
        }
        .max(Duration::from_millis(1));
        if let Some(stream) = self.stream.as_mut() {
            stream.set_read_timeout(Some(wait)).map_err(|e| e.to_string())?;
            let mut chunk = [0u8; 64 * 1024];
            match stream.read(&mut chunk) {
                Ok(0) => {
                    self.stream = None;
                    let now = self.now();
                    self.machine.handle_disconnected(now);
                }
                Ok(n) => {
                    self.rx.extend_from_slice(chunk.get(..n).unwrap_or_default());
                    let now = self.now();
                    if let Err(e) = self.machine.handle_bytes(now, &mut self.rx) {
                        return Err(format!("session error: {e}"));
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => {
                    self.stream = None;
                    let now = self.now();
                    self.machine.handle_disconnected(now);
                }
            }
        } else {
            std::thread::sleep(wait);
        }
        Ok(std::iter::from_fn(|| self.machine.poll_event()).collect())
    }
}
