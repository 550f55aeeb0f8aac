//! zoolock's sans-IO core driven by hand: no async runtime, no driver crate,
//! just a blocking `std::net::TcpStream` loop and the core's [`Client`].
//!
//! The loop is `zoolock_conformance::blocking::BlockingDriver`, about a
//! hundred lines of `std::net` written once against the core's `Endpoint`
//! trait (the I/O surface `Session` and `Client` share): it dials when asked,
//! writes what `poll_transmit` gives, reads until the next `poll_timeout`
//! and fires timers. The same loop fits an embedded target with its own
//! socket and clock.
//!
//! ```sh
//! ZOOLOCK_CONNECT=127.0.0.1:2181 cargo run -p zoolock-examples --example hand_driven
//! ```
//!
//! Without `ZOOLOCK_CONNECT` it starts an embedded in-memory ZooKeeper;
//! `ZOOLOCK_LOCK_PATH` defaults to `/zoolock-examples/hand-driven`.

mod server;

use std::error::Error;
use std::hash::BuildHasher;
use std::time::Duration;

use zoolock_conformance::blocking::BlockingDriver;
use zoolock_core::wire::Bytes;
use zoolock_core::{
    Client, ClientEvent, ConnectString, ConnectionState, LockConfig, Mutex, RecipeEvent, SessionConfig, ZkPath,
};

/// How long any one step may take before the example gives up.
const STEP: Duration = Duration::from_secs(30);

/// Runs the loop until `want` picks an event. Fails if the session ends
/// first (expired, closed, refused) or the step takes too long.
fn wait_for<T>(
    d: &mut BlockingDriver<Client>,
    mut want: impl FnMut(&ClientEvent) -> Option<T>,
) -> Result<T, Box<dyn Error>> {
    let mut found = None;
    let mut ended = None;
    d.run_until(STEP, |event| {
        if let ClientEvent::State(state) = event {
            ended = state.end_error();
        }
        found = want(event);
        found.is_some() || ended.is_some()
    })?;
    match (found, ended) {
        (Some(out), _) => Ok(out),
        (None, Some(error)) => Err(error.into()),
        (None, None) => Err("the loop stopped without the event".into()),
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let server = server::Server::from_env()?;
    let connect = server.connect.clone();
    let path = std::env::var("ZOOLOCK_LOCK_PATH").unwrap_or_else(|_| "/zoolock-examples/hand-driven".into());
    // The core draws no randomness of its own: seed it from the OS.
    let seed = std::collections::hash_map::RandomState::new().hash_one(0u8);

    let config = SessionConfig::new(ConnectString::parse(&connect)?, seed);
    let mut d = BlockingDriver::new(|now| Client::new(config, now));

    wait_for(&mut d, |e| matches!(e, ClientEvent::State(ConnectionState::Connected)).then_some(()))?;
    println!("connected, session 0x{:x}", d.machine().session().session_id());

    // Curator writes the holder's address into its lock node; so do we.
    let local = d.local_addr().map(|a| a.ip().to_string());
    let lock_config = LockConfig::new(seed).with_data(Bytes::from(local.unwrap_or_default()));
    let now = d.now();
    let mutex = d.machine().add_recipe(now, Box::new(Mutex::new(ZkPath::new(&path)?, lock_config)));

    d.machine().command(now, mutex, |m: &mut Mutex, now| m.acquire(now, None))??;
    let (node, token) = wait_for(&mut d, |e| match e {
        ClientEvent::Recipe { event: RecipeEvent::Acquired { node, token }, .. } => Some(Ok((node.clone(), *token))),
        ClientEvent::Recipe { event: RecipeEvent::Failed(e), .. } => Some(Err(e.clone())),
        _ => None,
    })??;
    println!("acquired {node} with fencing token {}", token.0);

    let now = d.now();
    d.machine().command(now, mutex, |m: &mut Mutex, now| m.release(now))??;
    wait_for(&mut d, |e| matches!(e, ClientEvent::Recipe { event: RecipeEvent::Released, .. }).then_some(()))?;
    println!("released");

    let now = d.now();
    d.machine().close(now);
    wait_for(&mut d, |e| matches!(e, ClientEvent::State(ConnectionState::Closed)).then_some(()))?;
    println!("closed");
    Ok(())
}
