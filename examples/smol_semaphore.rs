//! Take a lease of a Curator-compatible semaphore (`InterProcessSemaphoreV2`
//! layout) on smol, work while watching the connection, return the lease,
//! close.
//!
//! ```sh
//! ZOOLOCK_CONNECT=127.0.0.1:2181 cargo run -p zoolock-examples --example smol_semaphore
//! ```
//!
//! `ZOOLOCK_CONNECT` defaults to `127.0.0.1:2181`; `ZOOLOCK_LOCK_PATH` to
//! `/zoolock-examples/semaphore`.

use std::time::Duration;

use smol::stream::StreamExt;
use zoolock_smol::{ConnectionState, Options};

/// How many holders the semaphore admits at once.
const LEASES: usize = 2;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let connect = std::env::var("ZOOLOCK_CONNECT").unwrap_or_else(|_| "127.0.0.1:2181".into());
    let path = std::env::var("ZOOLOCK_LOCK_PATH").unwrap_or_else(|_| "/zoolock-examples/semaphore".into());

    smol::block_on(async {
        let client = zoolock_smol::connect(&connect, Options::default()).await?;
        let semaphore = client.semaphore(&path, LEASES).await?;
        let lease = semaphore.acquire_one().await?;
        println!("acquired lease {} with fencing token {}", lease.node(), lease.fencing_token());

        // A lease has no loss signal of its own: it lives as long as the
        // session, so watch the connection and stop once it is uncertain.
        let mut states = client.state_changes()?;
        let trouble = async {
            while let Some(state) = states.next().await {
                if matches!(state, ConnectionState::Suspended | ConnectionState::Lost) {
                    return Some(state);
                }
            }
            None
        };
        let work = async {
            work().await;
            None
        };
        match smol::future::or(work, trouble).await {
            None => println!("work done"),
            Some(state) => {
                eprintln!("connection became {state:?}: stopped working");
                if state == ConnectionState::Lost {
                    return Err("session lost".into());
                }
            }
        }

        lease.release().await?;
        println!("released");
        client.close().await?;
        Ok(())
    })
}

/// Stands in for the protected work.
async fn work() {
    smol::Timer::after(Duration::from_millis(200)).await;
}
